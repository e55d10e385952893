# SPDX-License-Identifier: MIT
"""Model files that are safe to load: :func:`dump` and :func:`load`.

A fitted calibrator is saved in the `skops <https://skops.readthedocs.io>`_
format: a zip archive holding a JSON description of the object and its
arrays as ``.npy`` files. Loading it never runs pickle: skops rebuilds only
types that the caller trusts. :func:`trusted_types` lists the types a
sklearn_betacal model needs beyond those skops trusts by default (NumPy,
SciPy and scikit-learn's own): the public estimators of this package. Their
fitted state is plain arrays, numbers, strings and dicts, so nothing else is
needed, and a file that asks for any other type is refused.

Next to skops' own ``schema.json`` the archive holds ``betacal.json``, a
header with the format version, the sklearn_betacal / scikit-learn / NumPy
versions that wrote it and optional user metadata (the ``betacal fit`` command
keeps its column settings there). :func:`load` checks it first and refuses a
file from an incompatible version with a message that says how to fix it.

The file can also be opened with skops directly::

    import skops.io
    est = skops.io.load(path, trusted=sklearn_betacal.io.trusted_types())

skops is the optional extra ``skops`` (``pip install sklearn-betacal[skops]``);
it is imported only when a model is saved or loaded.
"""

import io as _stdio
import json
import zipfile
from pathlib import Path

from . import __version__
from ._io import atomic_write

#: Name of the header member inside the zip archive.
HEADER_NAME = "betacal.json"
#: Value of the header's ``"format"`` field.
FORMAT_NAME = "sklearn_betacal-model"
#: Layout version of the file; raised when the header or the stored state of
#: an estimator changes incompatibly.
FORMAT_VERSION = 1

_SKOPS_HINT = (
    "model files need the optional skops extra: pip install sklearn-betacal[skops]"
)


def _skops():
    try:
        import skops.io as sio
    except ImportError:
        raise ImportError(_SKOPS_HINT) from None
    return sio


def _public_estimator_classes():
    import sklearn_betacal as pkg

    classes = []
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        if isinstance(obj, type) and hasattr(obj, "get_params"):
            classes.append(obj)
    return classes


#: scikit-learn types that fitted estimators of this package hold and skops
#: does not trust by itself: the node arrays of the regression tree inside
#: :class:`~sklearn_betacal.CalibrationTreePartitioner` (skops stores them as
#: plain arrays).
SKLEARN_TYPES = ("sklearn.tree._tree.Tree",)


def trusted_types():
    """Types a sklearn_betacal model file may hold beyond skops' defaults.

    These are the public estimators of the package, named as skops names
    them (``module.ClassName`` of their defining module), and
    ``SKLEARN_TYPES``: scikit-learn's tree node arrays
    (``sklearn.tree._tree.Tree``, held by a fitted
    :class:`~sklearn_betacal.CalibrationTreePartitioner`), which skops does
    not trust by itself. skops already trusts NumPy, SciPy and most
    scikit-learn types (``Pipeline``, ``FrozenEstimator``,
    ``TfidfVectorizer``, ...). The fitted state of every estimator here is
    plain arrays, numbers, strings and dicts, so no private class of this
    package is ever needed.

    Returns
    -------
    types : list of str
        Sorted fully qualified class names, to pass as ``trusted=`` to
        :func:`skops.io.load`.

    Examples
    --------
    >>> from sklearn_betacal.io import trusted_types
    >>> "sklearn_betacal._beta_binning.BetaBinningCalibrator" in trusted_types()
    True
    """
    ours = [f"{c.__module__}.{c.__qualname__}" for c in _public_estimator_classes()]
    return sorted([*ours, *SKLEARN_TYPES])


def _versions():
    import numpy
    import sklearn

    return {
        "sklearn_betacal": __version__,
        "scikit-learn": sklearn.__version__,
        "numpy": numpy.__version__,
    }


def _compatible(written, running):
    """Same release series: equal ``major.minor`` (0.x makes no promise beyond)."""
    return written.split(".")[:2] == running.split(".")[:2]


def dump(estimator, file, *, metadata=None):
    """Save a fitted estimator to a model file (skops format + version header).

    The file is written atomically: it either appears complete or not at all
    (an existing file is replaced only once the new one is fully written).

    Parameters
    ----------
    estimator : estimator
        Usually a fitted calibrator of this package; anything skops can
        save, but :func:`load` accepts only types from :func:`trusted_types`
        and those skops trusts.
    file : str or path-like
        Destination (``.skops`` by convention).
    metadata : dict, default=None
        JSON-serialisable information stored in the header (see
        :func:`read_header`).

    Returns
    -------
    path : pathlib.Path
        The written file.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from sklearn_betacal import PlattScaler
    >>> from sklearn_betacal.io import dump, load
    >>> rng = np.random.default_rng(0)
    >>> h = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < h).astype(int)
    >>> platt = PlattScaler().fit(h, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "platt.skops")
    >>> _ = dump(platt, path, metadata={"note": "demo"})
    >>> loaded = load(path)
    >>> bool((loaded.predict_proba(h) == platt.predict_proba(h)).all())
    True
    """
    sio = _skops()
    path = Path(file)
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "versions": _versions(),
        "estimator": type(estimator).__name__,
        "metadata": {} if metadata is None else metadata,
    }
    try:
        header_text = json.dumps(header, indent=1, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"metadata must be JSON-serialisable (str, numbers, lists, dicts): {exc}"
        ) from None
    buffer = _stdio.BytesIO(sio.dumps(estimator))
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(HEADER_NAME, header_text)
    atomic_write(path, buffer.getvalue())
    return path


def _read_archive(file):
    path = Path(file)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"model file {path} {what}")
    data = path.read_bytes()
    if not zipfile.is_zipfile(_stdio.BytesIO(data)):
        raise ValueError(
            f"{path} is not a sklearn_betacal model file (not a skops zip "
            "archive); write one with sklearn_betacal.io.dump or 'betacal fit'. "
            "Pickle files are never loaded."
        )
    try:
        with zipfile.ZipFile(_stdio.BytesIO(data)) as archive:
            names = set(archive.namelist())
            raw = archive.read(HEADER_NAME) if HEADER_NAME in names else None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ValueError(
            f"{path} is a damaged model file ({exc}); write it again"
        ) from None
    if raw is None:
        raise ValueError(
            f"{path} has no {HEADER_NAME} header: it was not written by "
            "sklearn_betacal.io.dump ('betacal fit'); save the model with "
            "sklearn_betacal.io.dump, or load it with skops.io.load yourself."
        )
    try:
        header = json.loads(raw)
    except ValueError:
        raise ValueError(
            f"{path} has a damaged {HEADER_NAME} header; write it again"
        ) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ValueError(f"{path} is not a sklearn_betacal model file (unknown header)")
    return path, data, header


def read_header(file):
    """The version header of a model file, without loading the model.

    Parameters
    ----------
    file : str or path-like

    Returns
    -------
    header : dict
        ``format``, ``format_version``, ``versions`` (sklearn_betacal,
        scikit-learn, numpy that wrote it), ``estimator`` (class name) and
        ``metadata`` (as given to :func:`dump`).
    """
    return _read_archive(file)[2]


def load(file, *, trusted=None):
    """Load a model file written by :func:`dump`, without running pickle.

    The header is checked first: a file from another sklearn_betacal
    release series (another ``major.minor``) or a newer file format is
    refused with a message naming both versions. Then the archive's types
    are checked against :func:`trusted_types` (plus skops' defaults and
    ``trusted``); a file that asks for anything else is refused before any
    object is built.

    Parameters
    ----------
    file : str or path-like
        A model file.
    trusted : list of str, default=None
        Further fully qualified type names to trust, e.g. a user-defined
        partitioner stored inside the model.

    Returns
    -------
    estimator : estimator
        The fitted estimator.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a model file, a damaged one, one from an incompatible version,
        or one holding untrusted types.
    """
    sio = _skops()
    path, data, header = _read_archive(file)
    written = header.get("versions", {}).get("sklearn_betacal", "unknown")
    fmt = header.get("format_version")
    if not isinstance(fmt, int) or fmt > FORMAT_VERSION:
        raise ValueError(
            f"{path} uses model-file format {fmt!r}, newer than this "
            f"sklearn_betacal {__version__} reads ({FORMAT_VERSION}); upgrade "
            f"sklearn-betacal to {written} or refit the model with this version."
        )
    if not _compatible(str(written), __version__):
        raise ValueError(
            f"{path} was written by sklearn_betacal {written}, this is "
            f"{__version__}: fitted state is not compatible across releases. Refit "
            f"the model with this version, or install sklearn-betacal=={written} "
            "to use it."
        )
    allowed = set(trusted_types()) | set(trusted or ())
    untrusted = [t for t in sio.get_untrusted_types(data=data) if t not in allowed]
    if untrusted:
        raise ValueError(
            f"{path} holds types that are not trusted: {', '.join(untrusted)}. "
            "If you wrote this file yourself and trust these types, pass them as "
            "load(..., trusted=[...])."
        )
    return sio.loads(data, trusted=sorted(allowed))


__all__ = [
    "FORMAT_VERSION",
    "HEADER_NAME",
    "dump",
    "load",
    "read_header",
    "trusted_types",
]
