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

Nothing in a file is used before it is checked: the zip's central directory
(sizes, compression ratios, member count) before anything is decompressed,
the header and skops' schema (size, nesting) and every member's checksum and
``.npy`` shape before any object is built, every partitioner's node arrays
before a row is routed through them, and the class of the object built
against the header's. A file that fails a check is refused with one
:class:`ModelFileError` line.

The file can also be opened with skops directly::

    import skops.io
    est = skops.io.load(path, trusted=sklearn_betacal.io.trusted_types())

skops is the optional extra ``skops`` (``pip install sklearn-betacal[skops]``);
it is imported only when a model is saved or loaded.
"""

import io as _stdio
import json
import os
import stat
import struct
import threading
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from . import __version__
from ._io import atomic_write

#: Name of the header member inside the zip archive.
HEADER_NAME = "betacal.json"
#: Name of skops' own description of the object inside the archive.
SCHEMA_NAME = "schema.json"
#: Value of the header's ``"format"`` field.
FORMAT_NAME = "sklearn_betacal-model"
#: Layout version of the file; raised when the header or the stored state of
#: an estimator changes incompatibly.
FORMAT_VERSION = 1

#: Default of :func:`load`'s ``max_size``: the most bytes the archive's
#: members may hold once decompressed. A calibrator with a kd-tree of 1024
#: cells is ~1 MiB, a text pipeline with a 20,000-word vocabulary ~150 MiB
#: (loading takes about 4.5 times the size in memory).
MAX_SIZE = 256 * 2**20
#: Most bytes of the header member (the version header and the user's
#: metadata); :func:`read_header` reads nothing else.
MAX_HEADER_SIZE = 2**20
#: Most members of an archive (one per array of the model).
MAX_MEMBERS = 2**17
#: Highest decompressed / compressed size of a member larger than 1 MiB: the
#: arrays skops writes are stored uncompressed, the header compresses ~2x;
#: a zip bomb's ratio is ~1000.
MAX_RATIO = 100
#: Most JSON values (separators) and objects per byte of ``max_size`` in the
#: schema, and its deepest nesting: a schema's memory once parsed is then
#: bounded like the arrays' (the largest real schemas hold one value per
#: ~60 bytes and one object per ~400 bytes, nested ~25 deep).
_VALUE_BYTES, _OBJECT_BYTES, MAX_DEPTH = 32, 128, 200

#: Every error reading a member can raise: zipfile's and zlib's (a corrupt
#: deflate stream), an unsupported compression method, a truncated file.
_READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    OSError,
    EOFError,
    ValueError,
    NotImplementedError,
    RuntimeError,
    struct.error,
)
#: Most bytes the members but the header may hold once decompressed, per
#: byte of the file (plus ``_SLACK``): skops stores arrays uncompressed and
#: its schema ~2x compressible, so a real model stays near 1; a member
#: compressed 1000 times (below the per-member ratio check's 1 MiB) is a
#: bomb. Loading then takes at most a few times the file's size in memory.
MAX_TOTAL_RATIO = 3
_SLACK = 2**20

_SKOPS_HINT = (
    "model files need the optional skops extra: pip install sklearn-betacal[skops]"
)


class ModelFileError(ValueError):
    """A model file that cannot be loaded: the message says why and what to do."""


#: This thread is inside :func:`load`: skops' default trust of scikit-learn
#: estimators is empty there (:func:`_untrusted` decides each type itself).
_LOADING = threading.local()


class _SklearnEstimatorNames(list):
    """skops' list of trusted scikit-learn estimators, computed on first use.

    skops computes it when ``skops.io`` is imported, by calling scikit-learn's
    ``all_estimators()``, which imports every scikit-learn module (and torch,
    where it is installed): seconds before a model file is read. :func:`_skops`
    imports skops without it and puts this list in its place, so that skops
    still trusts exactly its default types for anyone who calls it directly
    (the list is computed then), while :func:`load` never needs the list.
    """

    def _full(self):
        if list.__len__(self) == 0 and not getattr(_LOADING, "active", False):
            from sklearn.utils import all_estimators

            self.extend(_sklearn_estimator_names(all_estimators()))
        return self

    def __add__(self, other):
        if getattr(_LOADING, "active", False):
            return list(other)
        return list.__add__(self._full(), other)

    def __iter__(self):
        return list.__iter__(self._full())

    def __contains__(self, item):
        return list.__contains__(self._full(), item)

    def __len__(self):
        return list.__len__(self._full())

    def __getitem__(self, item):
        return list.__getitem__(self._full(), item)


def _sklearn_estimator_names(estimators):
    """skops' names of ``all_estimators()``' classes (its own expression)."""
    from skops.io._utils import get_type_name

    names = (get_type_name(cls) for _, cls in estimators)
    return [n for n in names if n.startswith("sklearn.")]


def _skops():
    """``skops.io``, imported without computing skops' scikit-learn trust list.

    See :class:`_SklearnEstimatorNames`. If skops is already imported, or its
    layout is not the one this relies on, skops is used as it is.
    """
    import sys

    if sys.modules.get("skops.io") is not None:
        return sys.modules["skops.io"]
    import sklearn.utils

    real = sklearn.utils.all_estimators
    sklearn.utils.all_estimators = lambda *args, **kwargs: []
    try:
        import skops.io as sio
    except ImportError:
        raise ImportError(_SKOPS_HINT) from None
    finally:
        sklearn.utils.all_estimators = real
    from skops.io import _general, _trusted_types

    names = _SklearnEstimatorNames()
    if (
        _trusted_types.SKLEARN_ESTIMATOR_TYPE_NAMES == []
        and getattr(_general, "SKLEARN_ESTIMATOR_TYPE_NAMES", None)
        is _trusted_types.SKLEARN_ESTIMATOR_TYPE_NAMES
    ):
        _general.SKLEARN_ESTIMATOR_TYPE_NAMES = names
        _trusted_types.SKLEARN_ESTIMATOR_TYPE_NAMES = names
    else:  # another layout: skops' own list, computed now
        _trusted_types.SKLEARN_ESTIMATOR_TYPE_NAMES[:] = _sklearn_estimator_names(
            real()
        )
    return sio


def _is_default_estimator(name):
    """Whether skops trusts scikit-learn type ``name`` by default, or None.

    skops trusts the classes of ``all_estimators()``: public
    ``BaseEstimator`` subclasses, not abstract, found in a public
    scikit-learn module. A class its defining module's public parent exports
    under its own name is one of them (True); anything else is left to the
    full list (None), so nothing beyond skops' defaults is trusted.
    """
    import importlib
    import inspect

    module, _, cls_name = name.rpartition(".")
    parts = module.split(".")
    if parts[0] != "sklearn" or not all(p.isidentifier() for p in parts + [cls_name]):
        return None
    from ._compat import all_estimators_skipped_modules

    ignore = all_estimators_skipped_modules()
    if ignore is None:
        return None
    public = []
    for part in parts:
        if part.startswith("_"):
            break
        public.append(part)
    if len(public) < 2 or any(p in ignore for p in parts) or cls_name[0] == "_":
        return None
    try:
        cls = getattr(importlib.import_module(module), cls_name, None)
        parent = importlib.import_module(".".join(public))
    except Exception:
        return None
    from sklearn.base import BaseEstimator

    if (
        not inspect.isclass(cls)
        or getattr(parent, cls_name, None) is not cls
        or cls.__module__ != module
        or not issubclass(cls, BaseEstimator)
        or cls_name == "BaseEstimator"
        or inspect.isabstract(cls)
        or getattr(cls, "__abstractmethods__", None)  # all_estimators' own test
    ):
        return None
    return True


def _is_public_estimator(name):
    """Whether ``name`` is one of :func:`trusted_types`, importing only its
    module (False: decide with the full list)."""
    import sklearn_betacal as pkg

    module, _, cls_name = name.rpartition(".")
    if not module.startswith("sklearn_betacal.") or cls_name not in pkg._LAZY:
        return False
    cls = getattr(pkg, cls_name)
    return (
        isinstance(cls, type)
        and hasattr(cls, "get_params")
        and cls.__module__ == module
        and cls.__qualname__ == cls_name
    )


def _untrusted(sio, data, allowed):
    """``(untrusted, trusted)`` types of skops archive ``data``.

    ``untrusted``: those outside ``allowed``, :func:`trusted_types` and skops'
    defaults; ``trusted``: what :func:`skops.io.loads` is then given. Only the
    modules the file names are imported: this package's types are checked
    one at a time (:func:`_is_public_estimator`), and skops' default scikit-learn
    estimators are decided one type at a time (:func:`_is_default_estimator`),
    importing only the modules the file names; the full list is computed only
    for a type that check cannot place.
    """
    _LOADING.active = True
    try:
        found = sio.get_untrusted_types(data=data)
    finally:
        _LOADING.active = False
    full = ours = None
    untrusted = []
    for name in found:
        if name in allowed or _is_public_estimator(name):
            continue
        if name.startswith("sklearn_betacal."):
            if ours is None:
                ours = set(trusted_types())
            if name in ours:
                continue
        if name.startswith("sklearn."):
            if _is_default_estimator(name):
                continue
            if full is None:
                from sklearn.utils import all_estimators

                full = set(_sklearn_estimator_names(all_estimators()))
            if name in full:
                continue
        untrusted.append(name)
    return untrusted, sorted(set(allowed) | set(found))


def _public_estimator_classes():
    import sklearn_betacal as pkg

    classes = []
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        if isinstance(obj, type) and hasattr(obj, "get_params"):
            classes.append(obj)
    return classes


#: scikit-learn's ``Tree`` (of a fitted tree or forest) is not trusted:
#: skops would build it from the file's arguments unchecked.
_SKLEARN_TREE = "sklearn.tree._tree.Tree"


def trusted_types():
    """Types a sklearn_betacal model file may hold beyond skops' defaults.

    These are the public estimators of the package, named as skops names
    them (``module.ClassName`` of their defining module). skops already
    trusts NumPy, SciPy and most scikit-learn types (``Pipeline``,
    ``FrozenEstimator``, ``TfidfVectorizer``, ...). The fitted state of
    every estimator here is plain arrays, numbers, strings and dicts (the
    partitioners' trees too), so no private class of this package and no
    scikit-learn ``Tree`` is ever needed.

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
    return sorted(
        f"{c.__module__}.{c.__qualname__}" for c in _public_estimator_classes()
    )


def _member_hash(data):
    import hashlib

    return hashlib.sha256(data).digest()


def _digest(hashes):
    """SHA-256 of the archive's members but the header, from ``(name,
    _member_hash(data))`` pairs in any order."""
    import hashlib

    parts = sorted(name.encode() + b"\0" + h for name, h in hashes)
    return hashlib.sha256(b"".join(parts)).hexdigest()


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
    data = sio.dumps(estimator)
    _warn_untrusted(sio, data, path)
    buffer = _stdio.BytesIO(data)
    with zipfile.ZipFile(buffer) as archive:
        digest = _digest((n, _member_hash(archive.read(n))) for n in archive.namelist())
    header = {
        "digest": digest,
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
    if len(header_text.encode()) > MAX_HEADER_SIZE:
        raise ValueError(
            f"metadata takes {len(header_text.encode())} bytes in the header, "
            f"more than the {MAX_HEADER_SIZE} a model file's header may hold; "
            "keep large data out of the metadata."
        )
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(HEADER_NAME, header_text)
    atomic_write(path, buffer.getvalue())
    return path


def _warn_untrusted(sio, data, path):
    """Warn at save time of the types :func:`load` will ask to be trusted."""
    untrusted, _ = _untrusted(sio, data, set())
    with zipfile.ZipFile(_stdio.BytesIO(data)) as archive:
        raw = archive.read(SCHEMA_NAME)
    if b'"sklearn.tree._tree"' in raw and b'"Tree"' in raw:
        untrusted = sorted(set(untrusted) | {_SKLEARN_TREE})
    if untrusted:
        warnings.warn(
            f"{path} holds types that sklearn_betacal.io.load does not trust by "
            f"default: {', '.join(untrusted)}. Loading it will need "
            f"load(path, trusted={untrusted!r}); pass that only for a file you "
            "wrote yourself, since skops builds these types without checking "
            "their content.",
            UserWarning,
            stacklevel=3,
        )


def _mib(n):
    return f"{n / 2**20:.1f} MiB"


def _open_file(file):
    """``(path, binary file)`` of a regular file, or the error that says why not."""
    path = Path(file)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"model file {path} does not exist") from None
    if stat.S_ISDIR(st.st_mode):
        raise FileNotFoundError(f"model file {path} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise ModelFileError(
            f"model file {path} is not a regular file (a pipe or a device); "
            "give the path of a model file"
        )
    return path, open(path, "rb")  # closed by the callers


def _member_count(fh, size):
    """Members the archive declares in its end record (zip64 too), or None."""
    tail = min(size, 22 + 2**16)
    fh.seek(size - tail)
    end = fh.read(tail)
    at = end.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(end):
        return None
    count = struct.unpack("<H", end[at + 10 : at + 12])[0]
    locator = end[at - 20 : at] if at >= 20 else b""
    if count == 0xFFFF and locator[:4] == b"PK\x06\x07":
        offset = struct.unpack("<Q", locator[8:16])[0]
        if offset + 40 > size:
            return None
        fh.seek(offset)
        record = fh.read(40)
        if record[:4] != b"PK\x06\x06":
            return None
        count = struct.unpack("<Q", record[32:40])[0]
    return count


def _archive(path, fh, max_size):
    """The open :class:`zipfile.ZipFile` after its central directory's checks.

    Before anything is decompressed: the file is a zip archive of at most
    ``MAX_MEMBERS`` members, unencrypted, with unique names, every member
    compressed at most ``MAX_RATIO`` times (above 1 MiB) and all of them
    together at most ``max_size`` bytes once decompressed. zipfile then never
    returns more than a member's declared size.
    """
    size = os.fstat(fh.fileno()).st_size
    if not zipfile.is_zipfile(fh):  # reads only the end of the file
        raise ModelFileError(
            f"{path} is not a sklearn_betacal model file (not a skops zip "
            "archive); write one with sklearn_betacal.io.dump or 'betacal fit'. "
            "Pickle files are never loaded."
        )
    count = _member_count(fh, size)
    if count is not None and count > MAX_MEMBERS:
        raise ModelFileError(
            f"{path} declares {count} members, more than a model file holds "
            f"({MAX_MEMBERS}); it was not written by sklearn_betacal.io.dump"
        )
    fh.seek(0)
    try:
        archive = zipfile.ZipFile(fh)
    except _READ_ERRORS as exc:
        raise ModelFileError(
            f"{path} is a damaged model file ({exc}); write it again"
        ) from None
    infos = archive.infolist()
    names = [i.filename for i in infos]
    if len(infos) > MAX_MEMBERS or len(set(names)) != len(names):
        raise ModelFileError(
            f"{path} is a damaged model file (more than {MAX_MEMBERS} or "
            "duplicate members); write it again"
        )
    for info in infos:
        if info.flag_bits & 0x1:
            raise ModelFileError(f"{path} has an encrypted member {info.filename!r}")
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > 2**20 and ratio > MAX_RATIO:
            raise ModelFileError(
                f"{path} has a member {info.filename!r} that decompresses "
                f"{ratio:.0f} times ({_mib(info.file_size)}), more than the "
                f"{MAX_RATIO} of a model file: refused as a zip bomb"
            )
    total = sum(i.file_size for i in infos)
    body = sum(i.file_size for i in infos if i.filename != HEADER_NAME)
    if body > MAX_TOTAL_RATIO * size + _SLACK:
        raise ModelFileError(
            f"{path} decompresses to {_mib(body)}, more than {MAX_TOTAL_RATIO} "
            f"times its {_mib(size)}: refused as a zip bomb"
        )
    # beyond the members, a zip holds ~100 bytes of records per member
    if max_size is not None and size > max(total, max_size) + 2**10 * len(infos):
        raise ModelFileError(
            f"{path} is {_mib(size)}, more than its members and max_size="
            f"{max_size} ({_mib(max_size)}) account for; it was not written by "
            "sklearn_betacal.io.dump"
        )
    if max_size is not None and total > max_size:
        raise ModelFileError(
            f"{path} holds {_mib(total)} once decompressed, more than "
            f"max_size={max_size} ({_mib(max_size)}); if you trust the file, "
            "pass load(..., max_size=<bytes>)"
        )
    return archive


def _read_member(path, archive, name, limit, what):
    """The bytes of member ``name`` (at most ``limit``), damage as one line."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    if info.file_size > limit:
        raise ModelFileError(
            f"{path} has a {what} of {_mib(info.file_size)}, more than the "
            f"{_mib(limit)} a model file's {what} may take; it was not "
            "written by sklearn_betacal.io.dump"
        )
    try:
        return archive.read(info)
    except _READ_ERRORS as exc:
        raise ModelFileError(
            f"{path} is a damaged model file ({name}: {exc}); write it again"
        ) from None


def _parse_json(path, raw, what):
    try:
        return json.loads(raw)
    except (ValueError, RecursionError, MemoryError):
        raise ModelFileError(
            f"{path} has a damaged {what} (not JSON, or nested too deep); "
            "write it again"
        ) from None


def _check_header(path, header):
    """The header dict, each field of the type :func:`dump` writes."""
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ModelFileError(
            f"{path} is not a sklearn_betacal model file (unknown header)"
        )
    fields = {
        "digest": str,
        "format_version": int,
        "versions": dict,
        "estimator": str,
        "metadata": dict,
    }
    for key, kind in fields.items():
        value = header.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ModelFileError(
                f"{path} has a damaged {HEADER_NAME} header ({key!r} is "
                f"{type(value).__name__}, not {kind.__name__}); write it again"
            )
    if not all(isinstance(v, str) for v in header["versions"].values()):
        raise ModelFileError(
            f"{path} has a damaged {HEADER_NAME} header (versions); write it again"
        )
    return header


def _header(path, archive):
    raw = _read_member(path, archive, HEADER_NAME, MAX_HEADER_SIZE, "header")
    if raw is None:
        raise ModelFileError(
            f"{path} has no {HEADER_NAME} header: it was not written by "
            "sklearn_betacal.io.dump ('betacal fit'); save the model with "
            "sklearn_betacal.io.dump, or load it with skops.io.load yourself."
        )
    return _check_header(path, _parse_json(path, raw, f"{HEADER_NAME} header"))


def read_header(file):
    """The version header of a model file, without loading the model.

    Only the zip archive's central directory and the header member are read
    (at most ``MAX_HEADER_SIZE`` bytes), whatever the size of the model.

    Parameters
    ----------
    file : str or path-like

    Returns
    -------
    header : dict
        ``format``, ``format_version``, ``versions`` (sklearn_betacal,
        scikit-learn, numpy that wrote it), ``estimator`` (class name) and
        ``metadata`` (as given to :func:`dump`).

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFileError
        Not a model file, or a damaged one (a ``ValueError``).
    """
    path, fh = _open_file(file)
    with fh:
        with _archive(path, fh, None) as archive:
            return _header(path, archive)


_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def _check_schema(path, raw, max_size):
    """skops' schema, checked before skops builds anything from it.

    At most ``max_size / 32`` JSON values and ``max_size / 128`` objects,
    nested at most ``MAX_DEPTH`` deep: its parsed size is then bounded like
    the arrays', and skops' recursive reading stays far from Python's
    recursion limit. (Whether the object built is the estimator the header
    names is checked on the object: parsing the schema twice more would cost
    a third of the load time of a large text model.)
    """
    if raw is None:
        raise ModelFileError(
            f"{path} is a damaged model file (no {SCHEMA_NAME}); write it again"
        )
    values = raw.count(b",") + raw.count(b":")
    objects = raw.count(b"{")
    if max_size is not None and (
        values > max_size // _VALUE_BYTES or objects > max_size // _OBJECT_BYTES
    ):
        raise ModelFileError(
            f"{path} has a {SCHEMA_NAME} of {values} values and {objects} "
            f"objects, more than max_size={max_size} allows; if you trust the "
            "file, pass load(..., max_size=<bytes>)"
        )
    # an upper bound of the nesting: brackets inside strings count too
    brackets = np.frombuffer(raw.translate(None, _NOT_BRACKETS), dtype=np.uint8)
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    if brackets.size and int(np.cumsum(steps).max()) > MAX_DEPTH:
        raise ModelFileError(
            f"{path} has a {SCHEMA_NAME} nested more than {MAX_DEPTH} deep; it "
            "was not written by sklearn_betacal.io.dump"
        )


def _check_members(path, archive, done, digests):
    """Every member but ``done`` (already read) decompresses to its declared
    size and CRC-32, and every ``.npy`` member declares a shape that its size
    holds exactly.

    skops reads an array's bytes without reaching the end that checks the
    CRC (a flipped byte would load as a wrong value), and NumPy allocates an
    array from its header's shape before reading it (a small member claiming
    a huge shape would allocate it). One member is in memory at a time.
    """
    from numpy.lib import format as npy

    for info in archive.infolist():
        if info.filename in done:
            continue
        try:
            data = archive.read(info)  # checks the size and the CRC-32
            digests.append((info.filename, _member_hash(data)))
            if not info.filename.endswith(".npy"):
                continue
            member = _stdio.BytesIO(data)
            version = npy.read_magic(member)
            read = {(1, 0): npy.read_array_header_1_0}.get(
                version, npy.read_array_header_2_0
            )
            shape, _, dtype = read(member)
        except _READ_ERRORS as exc:
            raise ModelFileError(
                f"{path} is a damaged model file ({info.filename}: "
                f"{' '.join(str(exc).split())}); write it again"
            ) from None
        n = 1
        for k in shape:
            n *= int(k)
        if dtype.hasobject or member.tell() + n * dtype.itemsize != len(data):
            raise ModelFileError(
                f"{path} is a damaged model file ({info.filename} declares an "
                f"array of shape {shape} {dtype} that its "
                f"{info.file_size} bytes do not hold); write it again"
            )


def load(file, *, trusted=None, max_size=MAX_SIZE):
    """Load a model file written by :func:`dump`, without running pickle.

    The header is checked first: a file from another sklearn_betacal
    release series (another ``major.minor``) or a newer file format is
    refused with a message naming both versions. Then the archive's sizes,
    skops' schema and the arrays' declared shapes are checked (see
    :ref:`model_files`), and the archive's types against
    :func:`trusted_types` (plus skops' defaults and ``trusted``); a file
    that asks for anything else is refused before any object is built. The
    fitted state of every partitioner is checked when it is rebuilt.

    Parameters
    ----------
    file : str or path-like
        A model file.
    trusted : list of str, default=None
        Further fully qualified type names to trust, e.g. a user-defined
        partitioner stored inside the model.
    max_size : int or None, default=MAX_SIZE
        Most bytes the archive may hold once decompressed (256 MiB; loading
        takes up to about 4.5 times that in memory). Raise it for a larger
        model you trust; ``None``: no limit.

    Returns
    -------
    estimator : estimator
        The fitted estimator.

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFileError
        (a ``ValueError``) Not a model file, a damaged or altered one, one
        beyond ``max_size``, from an incompatible version, or holding
        untrusted types.
    """
    sio = _skops()
    if max_size is not None and (
        isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1
    ):
        raise ValueError(f"max_size must be a positive int or None, got {max_size!r}")
    path, fh = _open_file(file)
    with fh:
        with _archive(path, fh, max_size) as archive:
            header = _header(path, archive)
            written = header["versions"].get("sklearn_betacal", "unknown")
            fmt = header["format_version"]
            if fmt > FORMAT_VERSION:
                raise ModelFileError(
                    f"{path} uses model-file format {fmt!r}, newer than this "
                    f"sklearn_betacal {__version__} reads ({FORMAT_VERSION}); "
                    f"upgrade sklearn-betacal to {written} or refit the model "
                    "with this version."
                )
            if not _compatible(written, __version__):
                raise ModelFileError(
                    f"{path} was written by sklearn_betacal {written}, this is "
                    f"{__version__}: fitted state is not compatible across "
                    "releases. Refit the model with this version, or install "
                    f"sklearn-betacal=={written} to use it."
                )
            limit = max_size if max_size is not None else 2**63
            raw = _read_member(path, archive, SCHEMA_NAME, limit, "schema")
            _check_schema(path, raw, max_size)
            hashes = [(SCHEMA_NAME, _member_hash(raw))]
            _check_members(path, archive, {HEADER_NAME, SCHEMA_NAME}, hashes)
        fh.seek(0)
        data = fh.read()  # at most max_size plus the zip's own records
    allowed = set(trusted or ())  # and trusted_types(), see _untrusted
    try:
        untrusted, trusted_now = _untrusted(sio, data, allowed)
    except Exception as exc:  # skops' own schema reading: any damage
        raise ModelFileError(
            f"{path} is a damaged model file ({type(exc).__name__}: {exc}); "
            "write it again"
        ) from None
    if (
        _SKLEARN_TREE not in allowed
        and _SKLEARN_TREE not in untrusted
        and b'"sklearn.tree._tree"' in raw
        and b'"Tree"' in raw
    ):
        # skops < 0.13 trusts scikit-learn's Tree by default: refuse it here
        # whatever the installed skops trusts (its node arrays are unchecked)
        untrusted.append(_SKLEARN_TREE)
    if _SKLEARN_TREE in untrusted:
        raise ModelFileError(
            f"{path} holds a scikit-learn Tree object (a scikit-learn tree or "
            "forest model), which is not trusted: skops would build it "
            "unchecked. If you wrote this file yourself, pass "
            f"load(path, trusted=['{_SKLEARN_TREE}']); otherwise refit the "
            "model."
        )
    if untrusted:
        raise ModelFileError(
            f"{path} holds types that are not trusted: {', '.join(untrusted)}. "
            "If you wrote this file yourself and trust these types, pass them as "
            "load(..., trusted=[...])."
        )
    _LOADING.active = True
    try:
        estimator = sio.loads(data, trusted=trusted_now)
    except Exception as exc:  # damage skops or a fitted-state check found
        raise ModelFileError(
            f"{path} is a damaged model file ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())}); write it again"
        ) from None
    finally:
        _LOADING.active = False
    if type(estimator).__name__ != header["estimator"]:
        raise ModelFileError(
            f"{path} holds a {type(estimator).__name__!r} where its header names "
            f"{header['estimator']!r}: the file was altered; write it again"
        )
    from ._state import check_composite

    try:
        check_composite(estimator)
    except ValueError as exc:
        raise ModelFileError(f"{path}: {' '.join(str(exc).split())}") from None
    # last: a file altered on purpose is refused by the checks above with
    # the reason; the digest refuses any other change of its members
    if _digest(hashes) != header["digest"]:
        raise ModelFileError(
            f"{path} was altered after it was written (its members do not match "
            "the digest in its header); write it again"
        )
    return estimator


__all__ = [
    "FORMAT_VERSION",
    "HEADER_NAME",
    "MAX_HEADER_SIZE",
    "MAX_MEMBERS",
    "MAX_RATIO",
    "MAX_SIZE",
    "ModelFileError",
    "dump",
    "load",
    "read_header",
    "trusted_types",
]
