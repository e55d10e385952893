# SPDX-License-Identifier: MIT
"""What every ``betacal`` subcommand shares: the usage error, exit codes and
the output-path check."""

import argparse
import os
import tempfile
from pathlib import Path

EXIT_OK = 0
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` whose errors are one line and never exit directly."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def one_line(message):
    return " ".join(str(message).split())


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
