"""The MUFU tables measured on an H100-class GPU (sm_90), as shipped in `mufu_sm90.npz`, decoded and checked.

The file is a numpy .npz of uint8 members (read with allow_pickle=False; nothing in it is executed):
`meta` (UTF-8 JSON: provenance and, per table, its length, dtype, predictor, residual dtype and the sha256
of the decoded words) and one lzma-compressed residual array per table. A table with a predictor decodes as
prediction + residual (tcemu.sfu.predict: float64 basic operations only, the same bits on every machine);
one without is delta-coded (cumulative sum of the residuals). Every decoded table is checked against its
sha256, so a machine whose arithmetic disagreed would get a clear error, never different bits.

Decoding runs the predictors over every pattern (the 2^24-word sin table: about 3 s), so a decoded table is kept
in the cache folder (~/.cache/tcemu/sfu, TCEMU_CACHE moves the root) as a .npy file named by its sha256; a file
found there is read without pickle and used only if its bits hash to that sha256 (0.05 s), else decoded afresh.
"""
import hashlib
import json
import lzma
import os
from functools import lru_cache

import numpy as np

from ..core.cachedir import cache_root
from . import predict

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mufu_sm90.npz")
MAX_WORDS = 1 << 25   # the largest table (bounded decode)


class SfuTableError(ValueError):
    """The shipped table file is missing, damaged or decodes to other bits than were captured."""


def _f32(bits):
    return np.asarray(bits, np.uint32).view(np.float32).astype(np.float64)


def _binade(n, first):
    """float64 values of n consecutive f32 patterns starting at `first`."""
    return _f32(np.uint32(first) + np.arange(n, dtype=np.uint32))


def _tanh_cells(name, n):
    exp, k = (int(v) for v in name.split("_")[1:3])
    return predict.tanh(_f32((np.uint32(exp) << 23) | (np.arange(n, dtype=np.uint32) << k)))


# predictor name -> (n -> float64 values, rounded to the table's f32 patterns)
PREDICTORS = {
    "rcp": lambda n, name: 1.0 / _binade(n, 0x3F800000),
    "rsqrt": lambda n, name: 1.0 / np.sqrt(_binade(n, 0x3F800000)),
    "sqrt": lambda n, name: np.sqrt(_binade(n, 0x3F800000)),
    "ex2": lambda n, name: predict.exp2(np.arange(n) / float(n)),
    "lg2_0": lambda n, name: predict.log2_near1(_binade(n, 0x3F800000)),
    "lg2_m1": lambda n, name: predict.log2_near1(_binade(n, 0x3F000000)),
    "sin": lambda n, name: predict.sin_turns(np.arange(n) / float(2 * n)),
    "tanh": lambda n, name: _tanh_cells(name, n),
}


def predicted(predictor, n, name):
    return predict.to_f32_bits(PREDICTORS[predictor](n, name))


def encode(words, predictor=None, name=""):
    """-> (lzma blob, residual dtype name, sha256): the inverse of decode."""
    words = np.asarray(words)
    if predictor is None:
        res = np.diff(words.astype(np.int64), prepend=0)
    else:
        res = words.astype(np.int64) - predicted(predictor, words.size, name).astype(np.int64)
    for dt in ("int8", "int16", "int32", "int64"):
        info = np.iinfo(dt)
        if res.min() >= info.min and res.max() <= info.max:
            break
    blob = lzma.compress(res.astype(dt).tobytes(), preset=9 | lzma.PRESET_EXTREME)
    return np.frombuffer(blob, np.uint8), dt, hashlib.sha256(words.tobytes()).hexdigest()


def decode(blob, spec, name):
    n, dtype = int(spec["n"]), np.dtype(spec["dtype"])
    if not 0 < n <= MAX_WORDS or dtype not in (np.uint16, np.uint32):
        raise SfuTableError(f"table {name}: length {n} or dtype {dtype} out of range")
    rdt = np.dtype(spec["residual"])
    if rdt not in (np.int8, np.int16, np.int32, np.int64):
        raise SfuTableError(f"table {name}: residual dtype {rdt} is not a signed integer type")
    try:
        raw = lzma.LZMADecompressor().decompress(blob.tobytes(), max_length=n * rdt.itemsize + 1)
    except lzma.LZMAError as exc:
        raise SfuTableError(f"table {name}: damaged ({exc})") from None
    if len(raw) != n * rdt.itemsize:
        raise SfuTableError(f"table {name}: {len(raw)} bytes decompressed, {n * rdt.itemsize} expected")
    res = np.frombuffer(raw, rdt).astype(np.int64)
    if spec.get("predictor"):
        words = predicted(spec["predictor"], n, name).astype(np.int64) + res
    else:
        words = np.cumsum(res)
    words = (words & (2 ** (8 * dtype.itemsize) - 1)).astype(dtype)
    if hashlib.sha256(words.tobytes()).hexdigest() != spec["sha256"]:
        raise SfuTableError(f"table {name}: decoded bits differ from the captured ones (sha256 mismatch); "
                            "this machine's float64 arithmetic disagrees with IEEE 754, or the file is damaged")
    return words


@lru_cache(maxsize=None)
def _archive(path=PATH):
    if not os.path.isfile(path):
        raise SfuTableError(f"{path}: the MUFU table file is missing (reinstall tcemu)")
    try:
        with np.load(path, allow_pickle=False) as z:
            members = {k: z[k] for k in z.files}
        meta = json.loads(members.pop("meta").tobytes().decode("utf-8"))
    except (OSError, ValueError, KeyError) as exc:
        raise SfuTableError(f"{path}: not a readable MUFU table file ({exc})") from None
    return meta, members


def meta():
    """The file's provenance and table specs."""
    return _archive()[0]


@lru_cache(maxsize=None)
def table(name):
    """The decoded words of one table (read-only numpy array)."""
    info, members = _archive()
    spec = info["tables"].get(name)
    if spec is None or name not in members:
        raise SfuTableError(f"no MUFU table named {name!r}")
    path = os.path.join(cache_root(), "sfu", f"{spec['sha256']}.npy")
    words = _load(path, spec)
    if words is None:
        words = decode(members[name], spec, name)
        _save(path, words)
    words.setflags(write=False)
    return words


def _load(path, spec):
    """The decoded table kept at `path`, or None: no file, or one whose length, dtype or bits are not the table's."""
    try:
        words = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if words.shape != (int(spec["n"]),) or words.dtype != np.dtype(spec["dtype"]) or \
            hashlib.sha256(words.tobytes()).hexdigest() != spec["sha256"]:
        return None
    return words


def _save(path, words):
    """Keep a decoded table for the next process (written beside, then renamed: readers never see half a file);
    a folder that cannot be written leaves every process decoding for itself."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            np.save(f, words, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass
