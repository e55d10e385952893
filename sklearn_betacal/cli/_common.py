# SPDX-License-Identifier: MIT
"""What every ``betacal`` subcommand shares: the usage error, exit codes,
the output-path check, the signal handling and the confidence-type check."""

import argparse
import contextlib
import os
import re
import signal
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

EXIT_OK = 0
EXIT_USAGE = 2
#: Ctrl-C (SIGINT) and SIGTERM: 128 + the signal number, as a shell reports
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
#: the longest message printed (user content in it is cut to 200 characters
#: where it is quoted; this is the last guard, keeping head and tail)
MAX_MESSAGE = 1000


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt, so that every
    ``except BaseException`` cleanup (temporary files and folders) runs."""


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` whose errors are one line and never exit directly."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def one_line(message):
    return " ".join(str(message).split())


def message_line(message):
    """``message`` on one line and at most :data:`MAX_MESSAGE` characters."""
    text = one_line(message)
    if len(text) <= MAX_MESSAGE:
        return text
    tail = MAX_MESSAGE // 4
    return text[: MAX_MESSAGE - tail - 3] + " … " + text[-tail:]


@contextlib.contextmanager
def one_line_warnings():
    """Show every warning of the run as ``betacal: warning: ...``: one line
    (Python's own display takes two, the second a line of the library's
    source code), and each text once (a warning repeated per fold or per
    figure said the same thing each time).

    A plain ``warnings.showwarning`` replacement for the run (not
    ``catch_warnings``), so that it also serves the warnings of ``apply``'s
    writer threads; restored afterwards.
    """
    seen = set()
    lock = threading.Lock()

    def show(message, category, filename, lineno, file=None, line=None):
        text = f"betacal: warning: {message_line(message)}"
        with lock:
            if text in seen:
                return
            seen.add(text)
        try:
            print(text, file=sys.stderr if file is None else file)
        except OSError:  # stderr gone (a closed pipe): the warning is lost
            pass

    before = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = before


@contextlib.contextmanager
def signals_unwind():
    """SIGTERM raises :class:`Terminated`, SIGINT KeyboardInterrupt, once each.

    The exception unwinds the work, so that the atomic writers remove their
    temporary files; a second signal during that cleanup is ignored (SIGKILL
    still stops the process). The previous handlers are restored at the end.
    Only in the main thread (where Python runs signal handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    def on_int(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, on_term),
        signal.SIGINT: signal.signal(signal.SIGINT, on_int),
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


_DECIMAL_COMMA = re.compile(r"\s*[+-]?\d*,\d+\s*")


def decimal_comma_hint(example):
    """A fix for a number written with a decimal comma (``'0,7'``), else ``None``."""
    if _DECIMAL_COMMA.fullmatch(str(example)) is None:
        return None
    return (
        "it looks like a decimal comma: write the file with '.' as the "
        "decimal separator (e.g. pandas to_csv(decimal='.'))"
    )


def check_confidence_kind(values, column):
    """Refuse booleans, timestamps and durations as confidences (one line).

    The library's own check (:func:`~sklearn_betacal._validation.check_confidence_kind`,
    by dtype and, for an object column, by its values): pandas turns ``True``
    into 1.0 and a timestamp into its count of nanoseconds, so such a column
    would be read as numbers silently. Text is left to the reader of
    ``--percent`` / ``--verbalized``.
    """
    from .._validation import check_confidence_kind as check

    try:
        check(
            values,
            f"confidence column {column!r}",
            fix="Give the column of the model's confidences: numbers in [0, 1] "
            "(or 0-100 with --percent).",
        )
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None


def check_output(output, input_path, force, *, name="--output"):
    """Refuse to clobber the input (ever) or another file (without --force).

    Also checks, before any work starts, that a file can be created in the
    output's folder (a read-only folder or file system fails here, not after
    a long computation).
    """
    output = Path(output)
    if output.is_dir():
        raise UsageError(f"{name} {output} is a directory; give a file name")
    if not output.parent.is_dir():
        raise UsageError(f"{name} folder {output.parent} does not exist")
    if input_path is not None and (
        output.resolve() == Path(input_path).resolve()
        or (output.exists() and os.path.samefile(output, input_path))
    ):
        raise UsageError(f"{name} {output} is the input file; refusing to overwrite it")
    if output.exists() and not output.is_file():
        raise UsageError(
            f"{name} {output} exists and is not a regular file (a FIFO, device "
            "or socket); only a regular file is replaced: choose another name"
        )
    if output.exists() and not force:
        raise UsageError(f"{name} {output} exists; pass --force to replace it")
    check_can_create_in(output.parent, name)
    return output


def check_can_create_in(folder, name):
    """Fail now, not after the work, when no file can be created in ``folder``."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UsageError(
            f"cannot write to folder {folder} ({exc.strerror or exc}); choose "
            f"a writable folder for {name}"
        ) from None


def check_writable_folder(folder, flag):
    """Fail before the work when ``folder`` could not be written later.

    Probes the nearest existing ancestor with a temporary file (removed at
    once; nothing is created when the check fails or passes): an ancestor
    that is a file, a read-only or a missing mount all fail here, not after
    a long run.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{flag} {folder} exists and is not a folder")
    probe = folder
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{flag} {folder}: {probe} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise UsageError(
            f"{flag} {folder} cannot be written ({exc.strerror or exc} in {probe})"
        ) from None
    return folder


# --------------------------------------------------------------------------
# labels: 0/1, bool, yes/no ... or any two labels with --pos-label
# --------------------------------------------------------------------------


def add_pos_label(parser):
    """The ``--pos-label`` flag of ``fit`` and ``report``."""
    parser.add_argument(
        "--pos-label",
        metavar="LABEL",
        help="the label value of a correct answer (default: 1/True, or the "
        "evident word of yes/no, true/false, correct/incorrect, right/wrong)",
    )


def add_confidence_scale(parser, verbalized_help=""):
    """``--percent`` | ``--verbalized``: how the confidence column is written
    (``fit`` and ``report``); ``verbalized_help`` ends the latter's help."""
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--percent", action="store_true", help="confidences are 0-100")
    scale.add_argument(
        "--verbalized",
        action="store_true",
        help="confidences are model text ('Probability: 0.8', 'I am 90%% sure', "
        "'likely', ...)" + verbalized_help,
    )
    parser.add_argument(
        "--scale",
        type=_scale_flag,
        metavar="LOW,HIGH|percent",
        help="with --verbalized: read a plain number in the text on this scale "
        "('Confidence: 5' with --scale 1,6 is 0.8; 'percent' for 0-100); "
        "default: numbers are probabilities in [0, 1]",
    )
    parser.add_argument(
        "--table",
        type=_words_flag,
        metavar="FILE.json",
        help="with --verbalized: expressions and their probabilities "
        '({"likely": 0.7, ...}) instead of the survey table',
    )
    parser.add_argument(
        "--qualitative",
        type=_words_flag,
        metavar="FILE.json|none",
        help='with --verbalized: the words of an ordinal scale ({"high": 0.7, '
        "...}) instead of the default very low ... very high; 'none' reads none",
    )


def _scale_flag(text):
    """``--scale``: ``percent`` or ``LOW,HIGH`` (``1,5``, ``1,10``)."""
    if text.strip().lower() == "percent":
        return "percent"
    parts = [p for p in re.split(r"[,:]|\.\.", text) if p.strip()]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'percent' or LOW,HIGH such as 1,5 or 1,10; got {text!r}"
        ) from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise argparse.ArgumentTypeError(
            f"LOW,HIGH needs finite LOW < HIGH; got {text!r}"
        )
    return (low, high)


def _words_flag(text):
    """``--table``/``--qualitative``: a JSON file ``{"expression": p}``, or
    ``none`` for no words."""
    import json

    if text.strip().lower() == "none":
        return {}
    try:
        with open(text, encoding="utf-8") as fh:
            table = json.load(fh)
    except OSError as exc:
        raise argparse.ArgumentTypeError(
            f"cannot read {text!r}: {exc.strerror or exc}"
        ) from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not JSON: {one_line(exc)}"
        ) from None
    if not isinstance(table, dict):
        raise argparse.ArgumentTypeError(
            f'{text!r} must hold a JSON object {{"expression": probability}}'
        )
    return table


def verbalized_options(args):
    """``{"scale", "table", "qualitative"}`` of ``--scale``/``--table``/
    ``--qualitative`` (``None`` where not given), checked as the parser
    checks them; they read model text, so they need ``--verbalized``."""
    options = {
        "scale": getattr(args, "scale", None),
        "table": getattr(args, "table", None),
        "qualitative": getattr(args, "qualitative", None),
    }
    given = [f"--{k}" for k, v in options.items() if v is not None]
    if given and not getattr(args, "verbalized", False):
        raise UsageError(
            f"{', '.join(given)} tell(s) how to read model text: pass "
            "--verbalized too (for numbers in 0-100 use --percent)"
        )
    if given:
        from .._elicitation import parse_verbalized_confidence

        try:
            parse_verbalized_confidence([], **options)
        except ValueError as exc:
            raise UsageError(one_line(exc)) from None
    return options


def separator(text):
    """``--sep``: one character; the two characters ``\\t`` (a tab typed
    as its escape, as shells pass it) mean a tab. Anything else was a
    TypeError traceback from the CSV reader."""
    if text in ("\\t", "tab"):
        return "\t"
    if len(text) != 1:
        raise argparse.ArgumentTypeError(
            f"must be one character, got {text!r} (for a tab: --sep '\\t' or --sep tab)"
        )
    return text


def _which_is_correct(name, shown):
    return (
        f"{name} holds the labels {_some(shown)}; say which one means a "
        "correct answer with --pos-label LABEL (0/1, True/False, yes/no, "
        "correct/incorrect and right/wrong are read without it)"
    )


def _more_than_two(name, shown):
    return (
        f"Only binary classification is supported. {name} holds "
        f"{len(shown)} labels ({_some(shown)}); give a column with a correct "
        "and an incorrect label"
    )


def check_labels_present(values, column):
    """A label column with a missing value: one line, the ``--dropna`` way out."""
    missing = int(values.isna().sum())
    if missing:
        raise UsageError(
            f"label column {column!r} has {missing} missing value(s); pass "
            "--dropna to leave those rows out, or fill them in"
        )


def read_labels(values, column, pos_label=None):
    """0/1 float labels ("correct") from a label column, or a one-line error.

    0/1 and bool are read as they are; two strings of a
    :data:`~sklearn_betacal._validation.EVIDENT_LABEL_PAIRS` pair (any case)
    by their evident word (the library's one rule); any
    other two labels (``{1, 2}``, ``{"A", "B"}``) need ``pos_label``, the
    value (as text) of a correct answer.
    """
    import pandas as pd

    from .._validation import check_binary_labels

    name = f"label column {column!r}"
    values = pd.Series(values).reset_index(drop=True)
    # before the labels are compared as text: pandas keeps NaN through
    # astype(str), and sorting it among strings was a TypeError traceback
    check_labels_present(values, column)
    numeric = pd.api.types.is_numeric_dtype(values.dtype)
    if pos_label is None:
        if numeric:
            try:
                return check_binary_labels(values.to_numpy(), name=name)
            except ValueError as exc:
                shown = sorted(values.astype(str).unique().tolist())
                if len(shown) > 2:  # --pos-label would not help
                    raise UsageError(_more_than_two(name, shown)) from None
                if len(shown) == 2:  # two labels, not 0/1: which is correct?
                    raise UsageError(_which_is_correct(name, shown)) from None
                raise UsageError(
                    f"{one_line(exc)} Or name the label of a correct answer with "
                    "--pos-label LABEL."
                ) from None
        from .._validation import EVIDENT_LABEL_PAIRS

        text = values.astype(str).str.strip().str.lower()
        found = frozenset(text.unique().tolist())
        for pair, word in EVIDENT_LABEL_PAIRS.items():
            if found <= pair:
                return (text == word).to_numpy(dtype=np.float64)
        shown = sorted(values.astype(str).unique().tolist())
        if len(shown) > 2:  # --pos-label would not help: say that first
            raise UsageError(_more_than_two(name, shown))
        raise UsageError(_which_is_correct(name, shown))
    is_number = numeric and not pd.api.types.is_bool_dtype(values.dtype)
    if is_number:
        from .._validation import check_binary_labels, is_soft_labels

        floats = values.to_numpy(dtype=np.float64)
        if is_soft_labels(floats):  # a judge's probability: 1 or 0 is "correct"
            try:
                return check_binary_labels(
                    floats, name=name, pos_label=float(pos_label)
                )
            except ValueError as exc:  # also float("yes")
                raise UsageError(f"--pos-label: {one_line(exc)}") from None
    shown = sorted(values.astype(str).unique().tolist())
    if len(shown) > 2:
        raise UsageError(_more_than_two(name, shown))
    if is_number:
        try:
            hit = floats == float(pos_label)
        except ValueError:
            hit = None
    else:
        low = str(pos_label).strip().lower()
        text = values.astype(str).str.strip()
        exact = (text == str(pos_label).strip()).to_numpy()
        # True/False read as bool by pandas: match --pos-label true too
        hit = exact if exact.any() else (text.str.lower() == low).to_numpy()
    if hit is None or not hit.any():
        raise UsageError(
            f"--pos-label {pos_label!r} is not a label of {name}; its labels are "
            f"{_some(shown)}"
        )
    return hit.astype(np.float64)


def _some(values, n=5):
    shown = ", ".join(repr(v[:40]) for v in values[:n])
    return shown + (", ..." if len(values) > n else "")


# --------------------------------------------------------------------------
# progress of long steps: on a terminal only
# --------------------------------------------------------------------------


def add_progress_flags(parser):
    """``--progress`` / ``--quiet``: progress lines on stderr (default: when
    stderr is a terminal)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--progress",
        action="store_true",
        default=None,
        help="show the progress of long steps on stderr even when it is not a "
        "terminal (default: only on a terminal)",
    )
    group.add_argument(
        "--quiet",
        dest="progress",
        action="store_false",
        help="no progress lines on stderr",
    )


class Progress:
    """What a long step is doing, on stderr, only where a person watches.

    ``enabled=None`` shows it when the stream is a terminal (so a piped or
    redirected run stays clean); ``True`` / ``False`` force it
    (``--progress`` / ``--quiet``). On a terminal a step redraws its line in
    place (carriage return and clear-to-end-of-line) and ends it with the
    seconds it took; forced onto a pipe it writes plain lines.
    """

    def __init__(self, enabled=None, stream=None):
        import sys

        self.stream = sys.stderr if stream is None else stream
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = tty if enabled is None else bool(enabled)
        self.tty = tty

    def _write(self, text, end):
        if self.tty:
            self.stream.write("\r" + text + "\x1b[K" + end)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def update(self, label):
        """One line: ``betacal: label`` (replaced by the next on a terminal)."""
        if self.enabled:
            self._write(f"betacal: {label}", "")

    @contextlib.contextmanager
    def step(self, label):
        """``betacal: label ...`` while the block runs, then its seconds."""
        import time

        if not self.enabled:
            yield self
            return
        start = time.perf_counter()
        self.update(f"{label} ...")
        ok = False
        try:
            yield self
            ok = True
        finally:
            if ok:
                self._write(
                    f"betacal: {label} done ({time.perf_counter() - start:.1f} s)",
                    "\n",
                )
            elif self.tty:  # an error follows on its own line
                self.stream.write("\n")


def open_unit(text):
    """An argparse type: a number strictly between 0 and 1 (``--delta``,
    ``--max-error``, ``--scaler-fraction``, ...)."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {value}")
    return value
