# SPDX-License-Identifier: MIT
"""The ``betacal`` command line: one module per subcommand.

``betacal report`` audits the calibration of a confidence column: reliability
table, ECE, MCE, Brier score with its calibration/refinement split, NLL, AUC,
AUAC and, given a group column, the beta-calibration error CE(h; beta). With
no file it reports on the bundled TriviaQA data
(:func:`sklearn_betacal.datasets.load_triviaqa_confidence`).

Exit status: 0 on success, 2 on bad input (missing file or column,
non-binary labels, confidences outside [0, 1], NaN, refused output path),
130 after Ctrl-C and 143 after SIGTERM, always with a one-line message on
stderr and never a traceback; an interrupted command leaves no partial
output and no temporary file.

Subcommands register themselves in :data:`COMMANDS`: a function that adds its
sub-parser and sets ``func`` (called with the parsed arguments, returns the
exit status). A new subcommand is one more function in that list.
"""

import sys

from .. import __version__
from ._apply import add_apply
from ._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Terminated,
    UsageError,
    _Parser,
    message_line,
    one_line_warnings,
    signals_unwind,
)
from ._demo import add_demo
from ._fit import add_fit
from ._report import compute_report, format_json, format_markdown
from ._report_set import add_report

#: Subcommand registrars, in the order ``betacal --help`` lists them.
COMMANDS = [add_demo, add_report, add_fit, add_apply]


def build_parser():
    """The ``betacal`` argument parser with every subcommand of COMMANDS."""
    parser = _Parser(
        prog="betacal",
        description="Calibration audits for LLM question-answering confidences.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser
    )
    for register in COMMANDS:
        register(subparsers)
    names = ", ".join(subparsers.choices)
    parser.set_defaults(func=lambda args: _no_command(names))
    return parser


def _no_command(names):
    raise UsageError(f"choose a command: {names} (see 'betacal --help')")


def _never_fail_on_encoding():
    """Print what the terminal cannot encode as escapes instead of failing.

    Under ``PYTHONIOENCODING=ascii`` (or a C locale) a column named
    ``confiança`` made ``print`` raise ``UnicodeEncodeError`` after the work
    was done.
    """
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream
                pass


def main(argv=None):
    """Run ``betacal`` with ``argv`` (default ``sys.argv[1:]``); return the status.

    Parameters
    ----------
    argv : list of str, default=None

    Returns
    -------
    status : int
        0 on success, 2 on bad input, 130 after Ctrl-C, 143 after SIGTERM (a
        one-line message was written to stderr).

    Examples
    --------
    >>> from sklearn_betacal.cli import main
    >>> main(["report", "--n-bins", "5"])  # doctest: +ELLIPSIS
    # Calibration report
    ...
    0
    """
    _never_fail_on_encoding()
    parser = build_parser()
    try:
        with signals_unwind(), one_line_warnings():
            args = parser.parse_args(argv)
            return args.func(args)
    except (UsageError, ValueError, OSError) as exc:
        # UsageError: our own checks; ValueError: the library's input
        # validation (e.g. --n-bins beyond the rows); OSError: a folder that
        # cannot be read or written. One line, never a traceback.
        print(f"betacal: error: {message_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("betacal: interrupted (Ctrl-C); no partial output left", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("betacal: terminated (SIGTERM); no partial output left", file=sys.stderr)
        return EXIT_TERMINATED
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "COMMANDS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "compute_report",
    "format_json",
    "format_markdown",
    "main",
]
