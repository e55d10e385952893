# SPDX-License-Identifier: MIT
"""What every ``betacal`` subcommand shares: the usage error, exit codes,
the output-path check, the signal handling and the confidence-type check."""

import argparse
import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path

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


def check_confidence_kind(values, column):
    """Refuse booleans, timestamps and durations as confidences (one line).

    pandas turns ``True`` into 1.0 and a timestamp into its count of
    nanoseconds, so such a column would be read as numbers silently.
    """
    import pandas as pd

    api = pd.api.types
    dtype = values.dtype
    kind = None
    if api.is_bool_dtype(dtype):
        kind = "booleans (True/False)"
    elif api.is_datetime64_any_dtype(dtype) or isinstance(dtype, pd.PeriodDtype):
        kind = "timestamps"
    elif api.is_timedelta64_dtype(dtype):
        kind = "durations"
    elif api.is_object_dtype(dtype):
        inferred = api.infer_dtype(values, skipna=True)
        kind = {
            "boolean": "booleans (True/False)",
            "datetime": "timestamps",
            "datetime64": "timestamps",
            "date": "timestamps",
            "period": "timestamps",
            "timedelta": "durations",
            "timedelta64": "durations",
        }.get(inferred)
        if kind is None and inferred.startswith("mixed"):
            import numpy as np

            if values.map(lambda v: isinstance(v, bool | np.bool_)).any():
                kind = "booleans (True/False) among its values"
    if kind is not None:
        raise UsageError(
            f"confidence column {column!r} holds {kind}, not confidences; give "
            "numbers in [0, 1] (or 0-100 with --percent)"
        )


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
