"""Hardware traces: read them (never executing anything in them) and replay them against tcemu.

A trace is a NumPy .npz archive (a zip of .npy members). Its `meta` member is UTF-8 JSON (bytes as uint8)
naming the format ("tcemu-trace"), version, kind, arch and provenance; the other members are plain numeric
columns documented in meta["columns"] and traces/README.md. load_trace reads the archive itself (zipfile
and numpy's .npy header reader, never numpy.load): object arrays are refused before their bytes are read,
and nothing in a trace is ever unpickled or evaluated.
"""
import hashlib
import json
import os
import stat
import struct
import tokenize
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from ..layout.addressing import operand_addresses
from ..core.arch import ARCHES, SMEM_WINDOW
from ..layout.descriptors import GmmaDescriptor
from ..arith.dtypes import SM90_OPERAND_DTYPES
from ..core.errors import TcemuError, TraceError
from ..layout.smem import SharedMemory
from ..core.validate import as_int, is_int, show
from .kinds.zero_sign import COLUMNS as ZERO_SIGN_COLUMNS

FORMAT, VERSION = "tcemu-trace", 1

# What a trace may declare, checked before anything is decompressed (the bundled traces are far below).
MAX_FILE_BYTES = 1 << 30      # the archive on disk
MAX_MEMBERS = 256             # entries in its central directory (a kernel_outputs trace: 2 per fixture)
MAX_COLUMN_BYTES = 1 << 28    # one column, uncompressed (the largest bundled column holds 36 MB)
MAX_META_BYTES = 1 << 20      # the JSON meta
MAX_META_DEPTH = 16           # nesting of the JSON meta (the bundled ones nest 2 deep)
MAX_STEPS = 16                # wgmma chained per numerics case (the capture issues 1 or 4)
MAX_GLOBAL_BYTES = 1 << 26    # the TMA capture's global buffer (8 MiB bundled)
MAX_FIXTURES = 64             # kernels embedded in one kernel_outputs trace (8 bundled)
MAX_KERNEL_ELEMENTS = 1 << 24  # elements of one input or output tensor of a captured launch (1024^2 bundled)
MAX_KERNEL_CTAS = 1 << 16     # CTAs of one captured launch (10 bundled)
MAX_LAUNCHES = 64             # launch records in one fixture json (4 bundled)
MAX_LAUNCH_BYTES = 1 << 28    # all buffers of one recorded launch (about 400 KB bundled)
MAX_PARAM_BYTES = 32764       # a kernel's parameter space (CUDA 12.1+; the bundled blobs hold 1,536 bytes)
MAX_POOL = 1 << 22            # pattern pool of a wgmma_zero_sign trace (9,628 values bundled)
MAX_GEMM_DIM = 1 << 16        # M, N or K of one captured GEMM (1024 bundled)
MAX_GEMM_MACS = 1 << 33       # M * N * K of one captured GEMM (2^30 bundled): bounds the replay's work


@dataclass
class Trace:
    path: str
    meta: dict
    columns: Dict[str, np.ndarray]

    @property
    def kind(self) -> str:
        return self.meta["kind"]


# A kind is registered in three places: its columns here, a consistency check in _CHECKS, a replayer in
# _REPLAYERS (load_trace refuses kinds missing here; a kind here without a check is a bug in tcemu).
_REQUIRED = {"wgmma_operand_addresses": ("desc", "operand", "dtype", "major", "rows", "k", "n", "offsets",
                                         "addresses"),
             "wgmma_numerics": ("seed", "inst", "steps", "scale_d", "digest", "diag_case", "diag_offsets",
                                "diag_regs"),
             "smem_wavefronts": ("op", "mask", "addr", "ld_wavefronts", "st_wavefronts"),
             "tma_tile_loads": ("case", "refused", "timed_out", "offsets", "positions", "values"),
             "wgmma_sp_operand_addresses": ("desc", "operand", "dtype", "major", "rows", "k", "n",
                                            "check_mismatches", "offsets", "addresses"),
             "wgmma_sp_metadata": ("inst", "cls", "walk", "sp_meta", "d_offsets", "d_regs"),
             "wgmma_sp_numerics": ("seed", "inst", "steps", "scale_d", "cls", "digest", "diag_case", "diag_offsets",
                                   "diag_regs"),
             "ptx_alu": ("op", "a", "b", "c", "e", "d", "d1"),
             "kernel_outputs": ("seed", "status", "offsets", "bits"),
             "launch_outputs": ("seed", "status", "offsets", "bits"),
             "gemm_outputs": ("seed", "status", "m", "n", "k", "stored_rows", "offsets", "bits", "digest_offsets",
                              "row_digests"),
             "wgmma_zero_sign": ZERO_SIGN_COLUMNS,
             "sfu_proof": ("form", "a", "b", "out"),
             "program_outputs": ("ptx", "bits", "offsets")}
_OPTIONAL = {"wgmma_operand_addresses": ("replica_mismatches",), "kernel_outputs": ("m", "n", "k", "grid"),
             "launch_outputs": ("m", "n", "k", "grid")}


def _fixture_members(meta) -> List[str]:
    """The members a kernel_outputs / launch_outputs trace embeds: each fixture's PTX and json
    (`fixture_<name>_ptx` / `_json`), named by meta.fixtures (checked before any member is read)."""
    fixtures = meta.get("fixtures")
    if not isinstance(fixtures, dict) or not 1 <= len(fixtures) <= MAX_FIXTURES or not all(
            isinstance(n, str) and 0 < len(n) <= 80 and n.replace("_", "").isalnum() and n.isascii()
            for n in fixtures):
        raise TraceError("meta.fixtures", f"must map 1..{MAX_FIXTURES} fixture names (letters, digits, _) to their "
                                          f"digests, got {show(fixtures)}")
    return [f"fixture_{n}_{ext}" for n in fixtures for ext in ("ptx", "json")]


# Members named by the meta rather than fixed by the kind (read, like the columns, only when named).
_EMBEDDED = {"kernel_outputs": _fixture_members, "launch_outputs": _fixture_members}

# The record layout of scripts/capture_tma.py (CASE_DTYPE), field for field.
TMA_CASE = np.dtype([("dtype", "<i4"), ("rank", "<i4"), ("swizzle", "<i4"), ("dst", "<i4"), ("gaddr", "<i8"),
                     ("gdim", "<i8", 5), ("gstride", "<i8", 4), ("box", "<i4", 5), ("estride", "<i4", 5),
                     ("coord", "<i4", 5), ("pad", "<i4")])

# Ways a corrupt or hostile archive makes zipfile / numpy's header reader fail (never a bare Exception).
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError,
                   RuntimeError, struct.error, SyntaxError, tokenize.TokenError)  # numpy reads old headers by tokens


def load_trace(path) -> Trace:
    """Read a trace without executing anything in it: only a regular file, only the members its format
    names, each member's declared size checked against the limits above and against its entry in the
    archive before it is decompressed; no object arrays (pickles) are ever read."""
    path = _regular_file(path)
    name = os.path.basename(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO swapped in after stat: no block
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise TraceError(name, "not a regular file")
        try:
            _check_central_directory(fh, name)
        except OSError as e:  # e.g. /proc files: regular, but not seekable to their end
            raise TraceError(name, f"not a readable .npz archive ({e.strerror or e})") from None
        try:
            zf = zipfile.ZipFile(fh)
        except _ARCHIVE_ERRORS as e:
            raise TraceError(name, f"not a readable .npz archive ({show(str(e), 120)})") from None
        with zf:
            infos = {}
            for info in zf.infolist():
                if info.filename in infos:
                    raise TraceError(name, f"member {show(info.filename)} appears twice")
                infos[info.filename] = info
            meta = _read_meta(zf, infos, name)
            kind = meta["kind"]
            columns = {}
            extra = _EMBEDDED[kind](meta) if kind in _EMBEDDED else ()
            for column in _REQUIRED[kind] + _OPTIONAL.get(kind, ()) + tuple(extra):
                if column + ".npy" in infos:
                    columns[column] = _read_member(zf, infos[column + ".npy"], name, column)
    missing = [c for c in _REQUIRED[kind] + tuple(extra) if c not in columns]
    if missing:
        raise TraceError(", ".join(missing), f"{show(path)}: columns missing")
    trace = Trace(path, meta, columns)
    check_trace(trace)
    return trace


def _regular_file(path) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path or "\0" in path:
        raise TraceError("path", f"must be a file path, got {show(path)}")
    try:
        info = os.stat(path)
    except OSError as e:
        raise TraceError(os.path.basename(path) or "path", f"cannot read it ({e.strerror or e})") from None
    if not stat.S_ISREG(info.st_mode):
        raise TraceError(os.path.basename(path) or "path", "not a regular file (a directory, FIFO or device)")
    if info.st_size > MAX_FILE_BYTES:
        raise TraceError(os.path.basename(path), f"{info.st_size:,} bytes: traces are at most {MAX_FILE_BYTES:,}")
    return path


def _check_central_directory(fh, name):
    """Refuse an archive whose end record declares more entries than a trace has, before zipfile reads them."""
    size = fh.seek(0, os.SEEK_END)
    tail_len = min(size, 22 + 0xFFFF)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    fh.seek(0)
    if at < 0 or at + 22 > len(tail):
        raise TraceError(name, "not a readable .npz archive (no zip end record)")
    entries, cd_size = struct.unpack("<HI", tail[at + 10:at + 16])  # total entries, directory bytes
    if entries > MAX_MEMBERS or cd_size > MAX_MEMBERS * 1024:
        raise TraceError(name, f"declares {entries} members in {cd_size:,} bytes of directory; a trace has at most "
                               f"{MAX_MEMBERS}")


def _read_member(zf, info, name, column, max_bytes=MAX_COLUMN_BYTES) -> np.ndarray:
    """One .npy member: header first (dtype, shape), its declared size checked, then exactly that many bytes."""
    field = f"{name}:{column}"
    if info.flag_bits & 1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise TraceError(field, "encrypted or compressed with a method other than deflate")
    if info.file_size > max_bytes + 4096:
        raise TraceError(field, f"{info.file_size:,} bytes uncompressed; a column holds at most {max_bytes:,}")
    try:
        with zf.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise TraceError(field, f".npy format version {version} is not known")
            header = f.tell()
            if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None:
                raise TraceError(field, f"{dtype} columns are not allowed: plain numbers only (no objects, "
                                        "which would be unpickled)")
            count = 1
            for d in shape:
                count *= d
            nbytes = count * dtype.itemsize
            if nbytes > max_bytes or header + nbytes != info.file_size:
                raise TraceError(field, f"declares {show(shape)} {dtype} ({nbytes:,} bytes) in a "
                                        f"{info.file_size:,}-byte member (at most {max_bytes:,})")
            data = f.read(nbytes)
            if len(data) != nbytes or f.read(1):  # the second read reaches the end: zipfile checks the CRC there
                raise TraceError(field, "truncated or longer than its header says")
    except TraceError:
        raise
    except _ARCHIVE_ERRORS as e:
        raise TraceError(field, f"unreadable ({type(e).__name__}: {show(str(e), 120)})") from None
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")


def _json_depth(text: str) -> int:
    """Deepest nesting of [ and { outside strings (checked before json.loads recurses into it)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _read_meta(zf, infos, name) -> dict:
    if "meta.npy" not in infos:
        raise TraceError("meta", f"{name}: missing")
    raw = _read_member(zf, infos["meta.npy"], name, "meta", MAX_META_BYTES)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise TraceError("meta", f"{name}: not UTF-8 JSON bytes (uint8), got {show(raw)}")
    try:
        text = raw.tobytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceError("meta", f"{name}: not UTF-8 ({e.reason})") from None
    if _json_depth(text) > MAX_META_DEPTH:
        raise TraceError("meta", f"{name}: nested deeper than {MAX_META_DEPTH} levels")
    try:
        meta = json.loads(text)
    except ValueError as e:  # JSONDecodeError, or a number past Python's 4,300-digit limit
        raise TraceError("meta", f"{name}: not valid JSON ({show(str(e), 120)})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise TraceError("meta.format", f"{name}: expected format {FORMAT!r} version {VERSION}")
    if not isinstance(meta.get("kind"), str) or meta["kind"] not in _REQUIRED:
        raise TraceError("meta.kind", f"{name}: unknown kind {show(meta.get('kind'))}; expected one of "
                                      f"{', '.join(_REQUIRED)}")
    return meta


# ---- consistency of meta and columns, per kind (load_trace and replay both check) ----

def _meta_list(meta, key, limit, item):
    """meta[key]: a list of at most `limit` entries, each accepted by item(entry) (True)."""
    value = meta.get(key)
    if not isinstance(value, list) or not 1 <= len(value) <= limit or not all(item(v) for v in value):
        raise TraceError(f"meta.{key}", f"must be a list of 1..{limit} entries of the documented form, got "
                                        f"{show(value)}")
    return value


def _meta_int(meta, key, lo, hi):
    value = meta.get(key)
    if not is_int(value) or not lo <= value <= hi:
        raise TraceError(f"meta.{key}", f"must be an integer in [{lo}, {hi:,}], got {show(value)}")
    return value


def _col(cols, name, lo, hi, shape):
    """cols[name]: an integer (or bool) column of `shape` (None: any length) with values in [lo, hi]."""
    arr = cols.get(name)
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biu":
        raise TraceError(name, f"must be an integer column, got {show(arr)}")
    if arr.ndim != len(shape) or any(want is not None and have != want for have, want in zip(arr.shape, shape)):
        raise TraceError(name, f"must have shape {tuple('n' if w is None else w for w in shape)}, got {arr.shape}")
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        raise TraceError(name, f"values must lie in [{lo}, {hi:,}], found {show(int(arr.min()))}.."
                               f"{show(int(arr.max()))}")
    return arr


def _offsets(cols, name, n, total):
    """An offsets column: n + 1 non-decreasing values from 0 to `total`."""
    off = _col(cols, name, 0, total, (n + 1,)).astype(np.int64)
    if off[0] != 0 or off[-1] != total or np.any(np.diff(off) < 0):
        raise TraceError(name, f"must rise from 0 to {total:,} (the payload's length)")
    return off


def check_trace(trace: Trace) -> None:
    """TraceError unless the meta and the columns have the documented form and agree with each other
    (traces/README.md): counts, indices into meta lists, offsets, sizes and value ranges."""
    if not isinstance(trace, Trace) or not isinstance(trace.meta, dict) or not isinstance(trace.columns, dict):
        raise TraceError("trace", f"must be a Trace (tcemu.traces.load_trace), got {show(trace)}")
    meta, cols = trace.meta, trace.columns
    if meta.get("format") != FORMAT or meta.get("version") != VERSION or meta.get("kind") not in _REQUIRED:
        raise TraceError("meta.format", f"expected format {FORMAT!r} version {VERSION} and a known kind")
    if meta.get("arch") not in ARCHES:
        raise TraceError("meta.arch", f"{show(meta.get('arch'))}: expected one of {', '.join(ARCHES)}")
    _CHECKS[meta["kind"]](meta, cols)


def _check_addresses(meta, cols):
    dtypes = _meta_list(meta, "dtypes", 16, lambda v: v in SM90_OPERAND_DTYPES)
    n = _col(cols, "desc", 0, (1 << 64) - 1, (None,)).size
    for name, hi in (("operand", 1), ("dtype", len(dtypes) - 1), ("major", 1)):
        _col(cols, name, 0, hi, (n,))
    rows, k = _col(cols, "rows", 1, 256, (n,)), _col(cols, "k", 1, 256, (n,))
    _col(cols, "n", 0, 256, (n,))
    payload = _col(cols, "addresses", -(1 << 31), (1 << 31) - 1, (None,))
    off = _offsets(cols, "offsets", n, payload.size)
    if not np.array_equal(np.diff(off), rows.astype(np.int64) * k):
        raise TraceError("offsets", "each case must own rows * k addresses")


def _check_numerics(meta, cols):
    from ..hopper.wgmma import legal_n
    from .seeds import NUMERICS_KINDS
    # the inputs come from seeds.py's generator, which numbers the kinds itself: the trace must agree
    kinds = _meta_list(meta, "kinds", len(NUMERICS_KINDS), lambda v: isinstance(v, list) and len(v) == 4)
    for i, v in enumerate(kinds):
        if v != list(NUMERICS_KINDS[i]) or type(v[3]) is not int:
            raise TraceError("meta.kinds", f"kind {i} is {show(v)}; the generator's kind {i} is "
                                           f"{list(NUMERICS_KINDS[i])}")
    insts = _meta_list(meta, "instantiations", 4096, lambda v: isinstance(v, list) and len(v) == 7 and
                       all(is_int(x) for x in v) and 0 <= v[0] < len(kinds) and legal_n(v[1], "f32") and
                       v[2] in (0, 1) and v[3] in (0, 1) and v[4] in (1, -1) and v[5] in (1, -1) and v[6] in (0, 1))
    n = _col(cols, "seed", 0, (1 << 64) - 1, (None,)).size
    inst = _col(cols, "inst", 0, len(insts) - 1, (n,))
    _col(cols, "steps", 1, MAX_STEPS, (n,))
    _col(cols, "scale_d", 0, 1, (n,))
    _col(cols, "digest", 0, (1 << 32) - 1, (n, 128))
    diag = _col(cols, "diag_case", 0, max(n - 1, 0), (None,))
    regs = _col(cols, "diag_regs", 0, (1 << 32) - 1, (None,))
    off = _offsets(cols, "diag_offsets", diag.size, regs.size)
    for j, case in enumerate(diag.tolist()):
        kind, width = insts[int(inst[case])][0], insts[int(inst[case])][1]
        per_thread = width // 4 if kinds[kind][2] == "f16" else width // 2
        if off[j + 1] - off[j] != 128 * per_thread:
            raise TraceError("diag_offsets", f"diagnostic case {case} must hold 128 x {per_thread} registers")


def _check_wavefronts(meta, cols):
    from ..layout.banks import parse_op
    ops = _meta_list(meta, "ops", 256, lambda v: isinstance(v, str))
    for op in ops:
        try:
            parse_op(op)
        except TcemuError as e:
            raise TraceError("meta.ops", f"{show(op)} is not an op ({e.rule})") from None
    n = _col(cols, "op", 0, len(ops) - 1, (None,)).size
    _col(cols, "mask", 0, (1 << 32) - 1, (n,))
    _col(cols, "addr", 0, (1 << 31) - 1, (n, 32))
    for name in ("ld_wavefronts", "st_wavefronts"):
        _col(cols, name, 0, 1 << 16, (n,))


def _check_tma(meta, cols):
    _meta_int(meta, "global_bytes", 1, MAX_GLOBAL_BYTES)
    window = _meta_int(meta, "window_bytes", 1, max(SMEM_WINDOW.values()))
    case = cols.get("case")
    if not isinstance(case, np.ndarray) or case.dtype != np.uint8 or case.ndim != 2 or \
            case.shape[1] != TMA_CASE.itemsize:
        raise TraceError("case", f"must be (n, {TMA_CASE.itemsize}) uint8 records, got {show(case)}")
    n = case.shape[0]
    records = np.ascontiguousarray(case).view(TMA_CASE).ravel()
    for name, lo, hi in (("dtype", 0, 2), ("rank", 1, 5), ("swizzle", 0, 3), ("dst", 0, window - 1)):
        if n and (records[name].min() < lo or records[name].max() > hi):
            raise TraceError(f"case.{name}", f"must lie in [{lo}, {hi}]")
    for name in ("refused", "timed_out"):
        _col(cols, name, 0, 1, (n,))
    positions = _col(cols, "positions", 0, window - 1, (None,))
    _col(cols, "values", 0, 255, (positions.size,))
    _offsets(cols, "offsets", n, positions.size)


def _sp_kinds(meta):
    """meta.kinds of a sparse trace: sparse_seeds' kinds, index for index (its generator numbers them)."""
    from .sparse_seeds import SP_KINDS
    kinds = _meta_list(meta, "kinds", len(SP_KINDS), lambda v: isinstance(v, list) and len(v) == 4)
    for i, v in enumerate(kinds):
        if v != list(SP_KINDS[i]) or type(v[3]) is not int:
            raise TraceError("meta.kinds", f"kind {i} is {show(v)}; the sparse generator's kind {i} is "
                                           f"{list(SP_KINDS[i])}")
    return kinds


def _sp_instantiations(meta, kinds, limit, n_rule):
    """meta.instantiations of a sparse trace: [kind, N, sp-sel, A in registers, trans-a, trans-b, scale-a,
    scale-b], each a legal wgmma.mma_async.sp form (n_rule(atype, N) says which N the capture issues)."""
    from ..hopper.wgmma import legal_n
    from ..hopper.sparse import SELECTORS

    def ok(v):
        if not (isinstance(v, list) and len(v) == 8 and all(is_int(x) for x in v) and 0 <= v[0] < len(kinds)):
            return False
        atype, _, dtype, _ = kinds[v[0]]
        return (legal_n(v[1], dtype) and n_rule(atype, v[1]) and v[2] in SELECTORS[atype] and v[3] in (0, 1)
                and v[4] in (0, 1) and v[5] in (0, 1) and v[6] in (1, -1) and v[7] in (1, -1))
    return _meta_list(meta, "instantiations", limit, ok)


def _d_registers(kinds, insts, inst_of_case, off, field):
    """Each case's payload holds 128 threads x the D registers of its form (f16: N/4, else N/2)."""
    for j, inst in enumerate(inst_of_case.tolist()):
        kind, width = insts[inst][0], insts[inst][1]
        per_thread = width // 4 if kinds[kind][2] == "f16" else width // 2
        if off[j + 1] - off[j] != 128 * per_thread:
            raise TraceError(field, f"case {j} must hold 128 x {per_thread} registers")


def _check_sp_addresses(meta, cols):
    from ..hopper.sparse import SP_K_OF
    dtypes = _meta_list(meta, "dtypes", 16, lambda v: v in SP_K_OF)
    n = _col(cols, "desc", 0, (1 << 64) - 1, (None,)).size
    for name, hi in (("operand", 2), ("dtype", len(dtypes) - 1), ("major", 1)):
        _col(cols, name, 0, hi, (n,))
    rows, k = _col(cols, "rows", 1, 256, (n,)), _col(cols, "k", 1, 256, (n,))
    _col(cols, "n", 0, 256, (n,))
    _col(cols, "check_mismatches", 0, 1 << 30, (n,))
    # stored A (0) and A from registers (2): 64 x K/2; B (1): N x K
    full = np.array([SP_K_OF[d] for d in dtypes], np.int64)[cols["dtype"].astype(np.int64)]
    operand = cols["operand"].astype(np.int64)
    want_k = np.where(operand == 1, full, full // 2)
    bad = np.flatnonzero((k != want_k) | ((operand != 1) & (rows != 64)) | ((operand == 1) & (rows % 8 != 0)))
    if bad.size:
        i = int(bad[0])
        raise TraceError("rows, k", f"case {i}: {int(rows[i])} x {int(k[i])} is not the extent of operand "
                                    f"{int(operand[i])} of a {dtypes[int(cols['dtype'][i])]} wgmma.mma_async.sp")
    payload = _col(cols, "addresses", -(1 << 31), (1 << 31) - 1, (None,))
    off = _offsets(cols, "offsets", n, payload.size)
    if not np.array_equal(np.diff(off), rows.astype(np.int64) * k):
        raise TraceError("offsets", "each case must own rows * k addresses")


def _check_sp_metadata(meta, cols):
    from ..hopper.sparse import SP_K_OF
    kinds = _sp_kinds(meta)
    insts = _sp_instantiations(meta, kinds, 4096, lambda a, n: n == SP_K_OF[a])  # B is the K x K identity
    classes = _meta_list(meta, "classes", 64, lambda v: isinstance(v, str) and len(v) <= 40)
    n = _col(cols, "inst", 0, len(insts) - 1, (None,)).size
    _col(cols, "cls", 0, len(classes) - 1, (n,))
    _col(cols, "walk", -1, 127, (n,))
    _col(cols, "sp_meta", 0, (1 << 32) - 1, (n, 128))
    regs = _col(cols, "d_regs", 0, (1 << 32) - 1, (None,))
    off = _offsets(cols, "d_offsets", n, regs.size)
    _d_registers(kinds, insts, cols["inst"], off, "d_offsets")


def _check_sp_numerics(meta, cols):
    kinds = _sp_kinds(meta)
    insts = _sp_instantiations(meta, kinds, 4096, lambda a, n: True)
    classes = _meta_list(meta, "classes", 64, lambda v: isinstance(v, str) and len(v) <= 40)
    n = _col(cols, "seed", 0, (1 << 64) - 1, (None,)).size
    inst = _col(cols, "inst", 0, len(insts) - 1, (n,))
    _col(cols, "steps", 1, MAX_STEPS, (n,))
    _col(cols, "scale_d", 0, 1, (n,))
    _col(cols, "cls", 0, min(len(classes) - 1, 4), (n,))  # sparse_seeds.meta_table draws classes 0..4
    _col(cols, "digest", 0, (1 << 32) - 1, (n, 128))
    diag = _col(cols, "diag_case", 0, max(n - 1, 0), (None,))
    regs = _col(cols, "diag_regs", 0, (1 << 32) - 1, (None,))
    off = _offsets(cols, "diag_offsets", diag.size, regs.size)
    _d_registers(kinds, insts, inst[diag], off, "diag_offsets")


def _check_ptx_alu(meta, cols):
    from .kinds.ptx_alu import OPERAND_BITS

    def form(v):
        return (isinstance(v, dict) and isinstance(v.get("name"), str) and 0 < len(v["name"]) <= 80
                and isinstance(v.get("dst"), list) and 1 <= len(v["dst"]) <= 2
                and all(is_int(d) and 0 <= d <= 64 for d in v["dst"])
                and isinstance(v.get("src"), list) and len(v["src"]) <= 4
                and all(isinstance(t, str) and t in OPERAND_BITS for t in v["src"]))
    forms = _meta_list(meta, "forms", 4096, form)
    n = _col(cols, "op", 0, len(forms) - 1, (None,)).size
    for name in ("a", "b", "c", "e", "d", "d1"):
        _col(cols, name, 0, (1 << 64) - 1, (n,))


def _check_sfu_proof(meta, cols):
    """sfu_proof: meta.forms are approximate forms tcemu knows (sfu_forms.LEGAL), the sample's operands fit
    their forms' widths, meta.proof counts every form once."""
    from ..ptx.errors import PtxError
    from ..ptx.sfu_forms import form_bits, parse_form

    def form(v):
        try:
            return isinstance(v, str) and len(v) <= 40 and bool(parse_form(v))
        except PtxError:
            return False
    forms = _meta_list(meta, "forms", 64, form)
    n = _col(cols, "form", 0, len(forms) - 1, (None,)).size
    for name, hi in (("a", (1 << 64) - 1), ("b", (1 << 32) - 1), ("out", (1 << 64) - 1)):
        _col(cols, name, 0, hi, (n,))
    width = np.array([form_bits(parse_form(f)[3]) for f in forms])[cols["form"].astype(np.int64)]
    for name in ("a", "out"):
        over = (width < 64) & (cols[name] >> np.minimum(width, 63).astype(np.uint64) != 0)
        if over.any():
            raise TraceError(name, f"case {int(np.flatnonzero(over)[0])}: wider than its form's operands")
    proof = meta.get("proof")
    if not isinstance(proof, dict) or not isinstance(proof.get("forms"), list) or len(proof["forms"]) > 64 or \
            not all(isinstance(r, dict) and r.get("form") in forms and is_int(r.get("inputs"))
                    and is_int(r.get("mismatches")) for r in proof["forms"]):
        raise TraceError("meta.proof", "must hold {form, inputs, mismatches} per form of meta.forms")


def _check_program_outputs(meta, cols):
    """program_outputs: the embedded PTX is the one meta.ptx_sha256 names; one launch record per output range,
    each a kernel of one output buffer with a bounded grid and block."""
    ptx = _col(cols, "ptx", 0, 255, (None,))
    if hashlib.sha256(ptx.astype(np.uint8).tobytes()).hexdigest() != meta.get("ptx_sha256"):
        raise TraceError("ptx", "the embedded PTX is not the one meta.ptx_sha256 names")

    def launch(v):
        return (isinstance(v, dict) and isinstance(v.get("entry"), str) and 0 < len(v["entry"]) <= 200
                and all(is_int(v.get(k)) and 1 <= v[k] <= lim for k, lim in
                        (("grid", 65535), ("block", 1024), ("words", 1 << 24))))
    launches = _meta_list(meta, "launches", 256, launch)
    bits = _col(cols, "bits", 0, (1 << 32) - 1, (None,))
    off = _offsets(cols, "offsets", len(launches), bits.size)
    if any(int(off[i + 1] - off[i]) != r["words"] for i, r in enumerate(launches)):
        raise TraceError("offsets", "each launch's range must hold its meta.launches words")


def _check_kernels(meta, cols):
    """kernel_outputs: the embedded fixtures are the ones meta.fixtures names (sha256), and every case record
    holds what the replay reads (tcemu.traces.kinds.kernel_outputs.replay_case), with bounded sizes."""
    from .inputs import FORMATS
    from .kinds.kernel_outputs import PARAM_ROLES, STORE_TYPES
    fixtures = _embedded_fixtures(meta, cols)
    for fx, fj in fixtures.items():
        if not isinstance(fj, dict) or not isinstance(fj.get("params"), list) or \
                not is_int(fj.get("num_ctas", 1)) or not 1 <= fj.get("num_ctas", 1) <= 16:
            raise TraceError(f"fixture_{fx}_json", "must hold the kernel's params (a list) and num_ctas (1..16)")
    status = _col(cols, "status", 0, 127, (None,))
    n = status.size
    _col(cols, "seed", 0, (1 << 64) - 1, (n,))
    for name in ("m", "n", "k"):
        if name in cols:
            _col(cols, name, 0, 1 << 20, (n,))
    if "grid" in cols:
        _col(cols, "grid", 1, 1 << 16, (n, 3))
    bits = _col(cols, "bits", 0, 255, (None,))
    off = _offsets(cols, "offsets", n, bits.size)
    cases = meta.get("cases")
    if not isinstance(cases, list) or len(cases) != n:
        raise TraceError("meta.cases", f"one case record per status entry expected ({n}), got {show(cases)}")
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            raise TraceError(f"meta.cases[{i}]", f"must be a record (a JSON object), got {show(case)}")
        size = _kernel_case(case, i, fixtures, FORMATS, STORE_TYPES, PARAM_ROLES) if status[i] == 0 else 0
        if off[i + 1] - off[i] != size:
            raise TraceError("offsets", f"case {i} holds {int(off[i + 1] - off[i]):,} output bytes; its record says "
                                        f"{size:,}")


def _embedded_fixtures(meta, cols) -> dict:
    """name -> the parsed json of each fixture meta.fixtures names; its PTX and json members must have the sha256
    there, the PTX must be UTF-8 text."""
    fixtures = {}
    for name in _fixture_members(meta)[::2]:
        fx = name[len("fixture_"):-len("_ptx")]
        digests = meta["fixtures"][fx]
        for ext in ("ptx", "json"):
            raw = cols.get(f"fixture_{fx}_{ext}")
            if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8 or raw.ndim != 1:
                raise TraceError(f"fixture_{fx}_{ext}", f"must be the fixture's bytes (uint8), got {show(raw)}")
            want = digests.get(f"{ext}_sha256") if isinstance(digests, dict) else None
            if hashlib.sha256(raw.tobytes()).hexdigest() != want:
                raise TraceError(f"fixture_{fx}_{ext}", f"its sha256 differs from meta.fixtures[{fx!r}]")
        try:
            cols[f"fixture_{fx}_ptx"].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            raise TraceError(f"fixture_{fx}_ptx", "is not UTF-8 text") from None
        fixtures[fx] = _json_value(cols[f"fixture_{fx}_json"].tobytes(), f"fixture_{fx}_json")
    return fixtures


def _json_value(raw: bytes, field: str):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError(field, "is not UTF-8 text") from None
    if _json_depth(text) > MAX_META_DEPTH:
        raise TraceError(field, f"nested deeper than {MAX_META_DEPTH} levels")
    try:
        return json.loads(text)
    except ValueError as e:
        raise TraceError(field, f"not valid JSON ({show(str(e), 120)})") from None


def _kernel_case(case, i, fixtures, formats, store_types, roles) -> int:
    """Check one captured case's record (what replay_case, or replay_launches for a multi-launch case, reads); its
    output's size in bytes (a multi-launch case: the sum over its outputs)."""
    field = f"meta.cases[{i}]"

    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def ints(v, n, lo, hi):
        return isinstance(v, list) and (n is None or len(v) == n) and all(is_int(x) and lo <= x <= hi for x in v)

    def tensor(v, dtypes):
        return (isinstance(v, dict) and isinstance(v.get("buffer"), str) and v.get("dtype") in dtypes and
                ints(v.get("shape"), None, 1, MAX_KERNEL_ELEMENTS) and 1 <= len(v["shape"]) <= 4 and
                int(np.prod(v["shape"], dtype=np.float64)) <= MAX_KERNEL_ELEMENTS)
    need(isinstance(case, dict), "must be a record (a JSON object)")
    need(case.get("fixture") in fixtures, "fixture must be one of meta.fixtures")
    multi = "launches" in case
    need(isinstance(case.get("inputs"), list) and len(case["inputs"]) <= 8 and
         all(tensor(t, formats) and ints([t.get("seed"), t.get("stream")], 2, 0, (1 << 64) - 1)
             for t in case["inputs"]), "inputs must be up to 8 (buffer, dtype, shape, seed, stream) records")
    if multi:
        outs = case.get("outputs")
        need(isinstance(outs, list) and 1 <= len(outs) <= MAX_CASE_OUTPUTS and
             all(tensor(o, store_types) and o.get("init", "poison") in ("poison", "zero") for o in outs),
             f"outputs must be 1..{MAX_CASE_OUTPUTS} (buffer, dtype, shape, init poison/zero) records")
        need(isinstance(case["launches"], list) and 1 <= len(case["launches"]) <= MAX_CASE_LAUNCHES and
             all(isinstance(ln, dict) and ln.get("fixture") in fixtures for ln in case["launches"]),
             f"launches must be 1..{MAX_CASE_LAUNCHES} launch records, each naming one of meta.fixtures")
        named_list = [t["buffer"] for t in case["inputs"]] + [o["buffer"] for o in outs]
        need(len(set(named_list)) == len(named_list), "inputs and outputs must name distinct buffers")
        total = sum(int(np.prod(o["shape"])) * np.dtype(store_types[o["dtype"]]).itemsize for o in outs)
        need(total <= MAX_COLUMN_BYTES, f"outputs must fit in {MAX_COLUMN_BYTES:,} bytes")
    else:
        need(tensor(case.get("output"), store_types), "output must be a (buffer, dtype, shape) record")
        named_list = [t["buffer"] for t in case["inputs"]] + [case["output"]["buffer"]]
        total = int(np.prod(case["output"]["shape"])) * np.dtype(store_types[case["output"]["dtype"]]).itemsize
    need(isinstance(case.get("buffers"), dict) and set(case["buffers"]) == set(named_list) and
         all(isinstance(b, dict) and ints([b.get("address")], 1, 0, (1 << 64) - 1) for b in case["buffers"].values()),
         "buffers must give the device address of every input and of the output" + ("s" if multi else ""))
    for j, rec in enumerate(case["launches"] if multi else [case]):
        _kernel_launch(rec, f"{field}.launches[{j}]" if multi else field, fixtures, roles)
    return total


MAX_CASE_LAUNCHES = 16   # launches of one multi-launch kernel_outputs case (4 bundled)
MAX_CASE_OUTPUTS = 16    # output buffers of one (9 bundled)


def _kernel_launch(case, field, fixtures, roles):
    """One launch of a kernel_outputs case (the case itself, or one of its launches): what _launch_one reads."""
    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def ints(v, n, lo, hi):
        return isinstance(v, list) and (n is None or len(v) == n) and all(is_int(x) and lo <= x <= hi for x in v)

    def scalar(v):  # an integer, or a float argument's value (packed as the parameter's float type)
        return is_int(v) or (isinstance(v, float) and np.isfinite(v))
    need(isinstance(case.get("entry"), str) and 0 < len(case["entry"]) <= 200, "entry must be the kernel's name")
    need(ints(case.get("grid"), 3, 1, MAX_KERNEL_CTAS) and int(np.prod(case["grid"])) <= MAX_KERNEL_CTAS,
         f"grid must be 3 integers, at most {MAX_KERNEL_CTAS} CTAs")
    need(ints(case.get("block"), 3, 1, 1024) and int(np.prod(case["block"])) <= 1024,
         "block must be 3 integers, at most 1024 threads")
    need(is_int(case.get("shared_bytes")) and 0 <= case["shared_bytes"] <= max(SMEM_WINDOW.values()),
         "shared_bytes must be the dynamic shared bytes of the launch")
    scratch = case.get("scratch", {})
    need(isinstance(scratch, dict) and len(scratch) <= 4 and all(
        isinstance(s, dict) and ints([s.get("address")], 1, 0, (1 << 64) - 1) and
        ints([s.get("bytes_per_program")], 1, 0, 1 << 20) for s in scratch.values()),
         "scratch must give each scratch buffer's address and bytes_per_program")
    programs = int(np.prod(case["grid"])) * fixtures[case["fixture"]].get("num_ctas", 1)
    need(sum(programs * s["bytes_per_program"] for s in scratch.values()) <= MAX_COLUMN_BYTES,
         f"scratch of all programs must fit in {MAX_COLUMN_BYTES:,} bytes")
    maps = case.get("tensormaps", [])
    need(isinstance(maps, list) and len(maps) <= 16 and all(
        isinstance(t, dict) and isinstance(t.get("arg"), str) and isinstance(t.get("encode"), dict) and
        ints([t["encode"].get(f) for f in ("dtype", "swizzle", "interleave", "oob_fill", "address")], 5, 0,
             (1 << 64) - 1) and ints([t["encode"].get("l2_promotion", 0)], 1, 0, 3) and
        all(ints(t["encode"].get(f), None, 0, (1 << 40)) and 1 <= len(t["encode"][f]) <= 5
            for f in ("dims", "box", "element_strides")) and ints(t["encode"].get("strides_bytes"), None, 0, 1 << 40)
        for t in maps), "tensormaps must be (arg, encode: cuTensorMapEncodeTiled arguments) records")
    map_args = {t["arg"] for t in maps}
    need(isinstance(case.get("params"), list) and len(case["params"]) <= 256 and all(
        isinstance(p, dict) and p.get("role") in roles and
        (p.get("arg") in map_args if p.get("role") == "tensormap" else
         scalar(p.get("value")) if p.get("role") == "scalar" else is_int(p.get("value")))
        for p in case["params"]), "params must be (role, arg, value) records; a tensormap's arg names one of "
                                 "its tensormaps, a scalar is an integer or a finite float, other values are integers")


def _check_gemm(meta, cols):
    """gemm_outputs: every case record holds what tcemu/traces/kinds/gemm_outputs.py reads (op, types, options, kernels, the
    inputs' seeds and shapes, which must be the columns' M x K and K x N), and each case's stored bytes and row
    digests are its record's: stored_rows whole rows of N outputs, M digests; none for a failed case."""
    from .kinds.gemm_outputs import _OUT
    from .inputs import FORMATS
    status = _col(cols, "status", 0, 127, (None,))
    n = status.size
    _col(cols, "seed", 0, (1 << 64) - 1, (n,))
    m, nn, k = (_col(cols, c, 1, MAX_GEMM_DIM, (n,)).astype(np.int64) for c in ("m", "n", "k"))
    rows = _col(cols, "stored_rows", 0, MAX_GEMM_DIM, (n,)).astype(np.int64)
    bits = _col(cols, "bits", 0, 255, (None,))
    off = _offsets(cols, "offsets", n, bits.size)
    digests = _col(cols, "row_digests", 0, (1 << 64) - 1, (None,))
    doff = _offsets(cols, "digest_offsets", n, digests.size)
    cases = meta.get("cases")
    if not isinstance(cases, list) or len(cases) != n:
        raise TraceError("meta.cases", f"one case record per status entry expected ({n}), got {show(cases)}")
    scales = meta.get("scales")
    for i, case in enumerate(cases):
        field = f"meta.cases[{i}]"
        if not isinstance(case, dict):
            raise TraceError(field, f"must be a record (a JSON object), got {show(case)}")
        M, N, K = int(m[i]), int(nn[i]), int(k[i])
        if M * N * K > MAX_GEMM_MACS or max(M * K, K * N, M * N) > MAX_KERNEL_ELEMENTS:
            raise TraceError(field, f"{M} x {N} x {K} is larger than a trace's GEMM ({MAX_GEMM_MACS:,} products, "
                                    f"{MAX_KERNEL_ELEMENTS:,} elements an operand)")
        if status[i] != 0:
            if rows[i] or off[i + 1] != off[i] or doff[i + 1] != doff[i]:
                raise TraceError(field, "a case that was not captured stores no outputs and no digests")
            continue
        _gemm_case(case, field, M, N, K, meta, scales, FORMATS, _OUT)
        size = np.dtype(_OUT[case["out"]]).itemsize
        if rows[i] > M or off[i + 1] - off[i] != rows[i] * N * size:
            raise TraceError("offsets", f"case {i} stores {int(off[i + 1] - off[i]):,} bytes; {int(rows[i])} whole "
                                        f"rows of {N} {case['out']} outputs (at most {M} rows) expected")
        if doff[i + 1] - doff[i] != M:
            raise TraceError("digest_offsets", f"case {i} holds {int(doff[i + 1] - doff[i])} row digests; its "
                                               f"{M} rows expected")


def _gemm_case(case, field, M, N, K, meta, scales, formats, out_types):
    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def finite(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and abs(v) < 1e38
    need(isinstance(case.get("op"), str) and isinstance(case.get("in"), str), "op and in must be names")
    need(case.get("out") in out_types, f"out must be one of {', '.join(out_types)}")
    need(isinstance(case.get("options", {}), dict), "options must be a record")
    need(isinstance(case.get("kernels", []), list) and len(case.get("kernels", [])) <= 64 and
         all(isinstance(x, str) and len(x) <= 400 for x in case.get("kernels", [])),
         "kernels must be a list of kernel names")
    need(case.get("b_layout", "KN") is None or isinstance(case.get("b_layout", "KN"), str),
         "b_layout must be a name")
    if case["op"] == "scaled_mm":
        sc = case.get("scales") or scales
        need(isinstance(sc, list) and len(sc) == 2 and all(finite(v) for v in sc),
             "scaled_mm needs its two per-tensor scales (the case's or meta.scales): finite numbers")
    ins = case.get("inputs")
    need(isinstance(ins, list) and all(isinstance(t, dict) for t in ins) and
         sorted(t.get("buffer") for t in ins) == ["a", "b"], "inputs must be the records of buffers a and b")
    want_b = [K, N] if case.get("b_layout", "KN") == "KN" else [N, K]  # otherwise stored (N, K), passed .t()
    for t in ins:
        shape = [M, K] if t["buffer"] == "a" else want_b
        need(t.get("dtype") == case["in"] and t["dtype"] in formats,
             f"input {t['buffer']}'s dtype must be the case's type ({show(case['in'])}), one of tcemu.kernel_inputs'")
        need(t.get("shape") == shape and all(is_int(x) for x in t["shape"]),
             f"input {t['buffer']}'s shape must be {shape} (M, N, K of the columns)")
        need(is_int(t.get("seed")) and 0 <= t["seed"] < 1 << 64 and is_int(t.get("stream")) and
             0 <= t["stream"] < 1 << 64, f"input {t['buffer']} needs an integer seed and stream below 2^64")


def _check_launches(meta, cols):
    """launch_outputs: the embedded fixtures (sha256) and their launch records (tcemu/traces/launches.py) hold what the
    replay reads, with bounded sizes; every captured case names a fixture, one of its launches, the launch's output
    buffer (its dtype and storage) and the seed of the seed column, and stores exactly that buffer's bytes."""
    fixtures = _embedded_fixtures(meta, cols)
    for fx, fj in fixtures.items():
        if not isinstance(fj, dict) or not isinstance(fj.get("launches"), list) or \
                not 1 <= len(fj["launches"]) <= MAX_LAUNCHES:
            raise TraceError(f"fixture_{fx}_json", f"must hold the fixture's launch records (launches: a list of "
                                                   f"1..{MAX_LAUNCHES})")
    status = _col(cols, "status", 0, 127, (None,))
    n = status.size
    seeds = _col(cols, "seed", 0, (1 << 64) - 1, (n,))
    for name in ("m", "n", "k"):
        if name in cols:
            _col(cols, name, 0, 1 << 20, (n,))
    grid = _col(cols, "grid", 1, MAX_KERNEL_CTAS, (n, 3)) if "grid" in cols else None
    bits = _col(cols, "bits", 0, 255, (None,))
    off = _offsets(cols, "offsets", n, bits.size)
    cases = meta.get("cases")
    if not isinstance(cases, list) or len(cases) != n:
        raise TraceError("meta.cases", f"one case record per status entry expected ({n}), got {show(cases)}")
    checked = {}
    for i, case in enumerate(cases):
        field = f"meta.cases[{i}]"
        if not isinstance(case, dict):
            raise TraceError(field, f"must be a record (a JSON object), got {show(case)}")
        if status[i] != 0:
            if off[i + 1] != off[i]:
                raise TraceError("offsets", f"case {i} was not captured: it stores no output bytes")
            continue
        fx, launch = case.get("fixture"), case.get("launch")
        if not isinstance(fx, str) or fx not in fixtures or not is_int(launch) or \
                not 0 <= launch < len(fixtures[fx]["launches"]):
            raise TraceError(field, "fixture and launch must name one of meta.fixtures and an index into its "
                                    "launch records")
        key = (fx, int(launch))
        if key not in checked:
            checked[key] = _launch_record(fixtures[fx]["launches"][launch], f"fixture_{fx}_json: launches[{launch}]")
        buffers = checked[key]
        if not is_int(case.get("seed")) or case["seed"] != int(seeds[i]):
            raise TraceError(field, f"seed must be the seed column's {int(seeds[i])}")
        # one output buffer (`output`) or several stored one after another (`outputs`, never both)
        if "outputs" in case:
            outs = case["outputs"]
            if "output" in case or not isinstance(outs, list) or not 2 <= len(outs) <= len(buffers):
                raise TraceError(field, "outputs must list two or more output buffers of its launch record "
                                        "(and replace output)")
        else:
            outs = [case.get("output")]
        total, seen = 0, set()
        for out in outs:
            if not isinstance(out, dict) or not isinstance(out.get("buffer"), str) or \
                    buffers.get(out["buffer"], {}).get("role") != "output" or out["buffer"] in seen:
                raise TraceError(field, "output must name an output buffer of its launch record (each once)")
            seen.add(out["buffer"])
            b = buffers[out["buffer"]]
            if out.get("dtype") != b["dtype"] or out.get("storage") != b["storage"]:
                raise TraceError(field, f"output {out['buffer']} must have its launch record's dtype {b['dtype']} "
                                        f"and storage {b['storage']}")
            total += b["bytes"]
        if off[i + 1] - off[i] != total:
            raise TraceError("offsets", f"case {i} holds {int(off[i + 1] - off[i]):,} output bytes; buffer(s) "
                                        f"{', '.join(sorted(seen))} of its launch record hold {total:,}")
        if grid is not None and grid[i].tolist() != fixtures[fx]["launches"][launch]["grid"]:
            raise TraceError("grid", f"case {i}: {grid[i].tolist()} is not its launch record's grid")


def _launch_record(rec, field) -> dict:
    """Check one launch record (tcemu/traces/launches.py reads it) for types and sizes the replay relies on; tcemu.launches
    checks the rest against the PTX when it replays (LaunchRecordError). Its buffers, by name."""
    from .inputs import FORMATS

    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def ints(v, n, lo, hi):
        return isinstance(v, list) and (n is None or len(v) == n) and all(is_int(x) and lo <= x <= hi for x in v)

    def records(key, limit, **fields):
        v = rec.get(key)
        need(isinstance(v, list) and len(v) <= limit and all(
            isinstance(r, dict) and all(check(r.get(f)) for f, check in fields.items()) for r in v),
             f"{key} must be up to {limit} records of {', '.join(fields)}")
        return v
    need(isinstance(rec, dict), f"must be a launch record (a JSON object), got {show(rec)}")
    need(isinstance(rec.get("entry"), str) and 0 < len(rec["entry"]) <= 8192, "entry must be the kernel's name")
    need(ints(rec.get("grid"), 3, 1, MAX_KERNEL_CTAS) and int(np.prod(rec["grid"])) <= MAX_KERNEL_CTAS,
         f"grid must be 3 integers, at most {MAX_KERNEL_CTAS} CTAs")
    need(ints(rec.get("block"), 3, 1, 1024) and int(np.prod(rec["block"])) <= 1024,
         "block must be 3 integers, at most 1024 threads")
    need(ints(rec.get("cluster"), 3, 1, 16) and int(np.prod(rec["cluster"])) <= 16,
         "cluster must be 3 integers, at most 16 CTAs")
    need(is_int(rec.get("shared_bytes")) and 0 <= rec["shared_bytes"] <= max(SMEM_WINDOW.values()),
         "shared_bytes must be the dynamic shared bytes of the launch")
    blob = rec.get("param_blob")
    need(isinstance(blob, str) and len(blob) <= 2 * MAX_PARAM_BYTES and len(blob) % 2 == 0 and
         all(c in "0123456789abcdefABCDEF" for c in blob), f"param_blob must be hex of at most {MAX_PARAM_BYTES} bytes")
    word = (lambda v: is_int(v) and -(1 << 64) < v < 1 << 64)  # noqa: E731
    name = (lambda v: isinstance(v, str) and 0 < len(v) <= 8192)  # noqa: E731
    records("params", 256, name=name, offset=lambda v: is_int(v) and 0 <= v <= MAX_PARAM_BYTES)
    records("pointers", 256, offset=lambda v: is_int(v) and 0 <= v <= MAX_PARAM_BYTES, buffer=name, delta=word)
    records("tensormaps", 16, offset=lambda v: is_int(v) and 0 <= v <= MAX_PARAM_BYTES,
            encode=lambda v: is_int(v) and 0 <= v < 16)
    small = (lambda v: is_int(v) and 0 <= v < 1 << 8)  # noqa: E731
    records("encodes", 16, dtype=small, rank=lambda v: is_int(v) and 1 <= v <= 5, buffer=name, delta=word,
            interleave=small, swizzle=small, l2_promotion=small, oob_fill=small,
            **{f: (lambda v: ints(v, None, 0, 1 << 40) and 1 <= len(v) <= 5)
               for f in ("dims", "strides_bytes", "box", "element_strides")})
    bufs = records("buffers", 16, name=name, role=lambda v: v in ("input", "output", "workspace"),
                   dtype=lambda v: v == "bytes" or v in FORMATS,
                   storage=lambda v: ints(v, None, 1, MAX_LAUNCH_BYTES) and 1 <= len(v) <= 4,
                   bytes=lambda v: is_int(v) and 1 <= v <= MAX_LAUNCH_BYTES, address=lambda v: word(v) and v >= 0)
    out = {}
    for b in bufs:
        need(b["name"] not in out, f"buffer {show(b['name'])} appears twice")
        item = 1 if b["dtype"] == "bytes" else np.dtype(FORMATS[b["dtype"]][0]).itemsize
        need(int(np.prod(b["storage"], dtype=np.float64)) * item == b["bytes"],
             f"buffer {show(b['name'])}: storage {b['storage']} of {b['dtype']} is not {b['bytes']:,} bytes")
        out[b["name"]] = b
    need(sum(b["bytes"] for b in bufs) <= MAX_LAUNCH_BYTES, f"its buffers hold more than {MAX_LAUNCH_BYTES:,} bytes")
    return out


# wgmma kinds a wgmma_zero_sign case may name: the floating-point ones (PTX 9.7.15.5.1)
_ZS_KINDS = {("tf32", "tf32", "f32"), ("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32")} | {
    (a, b, d) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2") for d in ("f16", "f32")}
_BITS = {"tf32": 32, "f32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8}


def _check_zero_sign(meta, cols, registers=True):
    """wgmma_zero_sign (tcemu/traces/kinds/zero_sign.py): kinds are floating-point wgmma kinds, instantiations legal dense or
    sparse forms, every case's A, B and C patterns non-empty slices of the pool holding bits of their types, and
    (`registers`) its registers 128 threads x the D registers of its form."""
    from ..hopper.wgmma import legal_n
    kinds = _meta_list(meta, "kinds", 16, lambda v: isinstance(v, list) and len(v) == 3 and
                       all(isinstance(t, str) for t in v) and tuple(v) in _ZS_KINDS)
    insts = _meta_list(meta, "instantiations", 4096, lambda v: isinstance(v, list) and len(v) == 5 and
                       all(is_int(x) for x in v) and v[0] in (0, 1) and 0 <= v[1] < len(kinds) and
                       legal_n(v[2], kinds[v[1]][2]) and v[3] in (1, -1) and v[4] in (1, -1))
    groups = _meta_list(meta, "groups", 256, lambda v: (isinstance(v, dict) and isinstance(v.get("name"), str)
                                                         and 0 < len(v["name"]) <= 80) or
                        (isinstance(v, str) and 0 < len(v) <= 80))
    n = _col(cols, "inst", 0, len(insts) - 1, (None,)).size
    _col(cols, "group", 0, len(groups) - 1, (n,))
    _col(cols, "scale_d", 0, 1, (n,))
    _col(cols, "sp_meta", 0, (1 << 32) - 1, (n,))
    pool = _col(cols, "pool", 0, (1 << 32) - 1, (None,))
    if pool.size > MAX_POOL:
        raise TraceError("pool", f"{pool.size:,} values; a trace's pool holds at most {MAX_POOL:,}")
    pats = {}
    for p in ("a", "b", "c"):
        o = _col(cols, f"{p}_off", 0, pool.size - 1 if pool.size else 0, (n,)).astype(np.int64)
        ln = _col(cols, f"{p}_len", 1, max(pool.size, 1), (n,)).astype(np.int64)
        if n and (not pool.size or int((o + ln).max()) > pool.size):
            raise TraceError(f"{p}_off, {p}_len", "each pattern must be a non-empty slice of pool")
        pats[p] = (o, ln)
    if not registers:  # a plan's columns (scripts/capture_edges.py): the operands only
        return
    regs = _col(cols, "d_regs", 0, (1 << 32) - 1, (None,))
    off = _offsets(cols, "d_offsets", n, regs.size)
    inst = cols["inst"].astype(np.int64)
    for i in range(n):
        sparse, kind, width, _, _ = insts[int(inst[i])]
        types = dict(zip("abc", kinds[kind]))
        for p, (o, ln) in pats.items():
            values = pool[int(o[i]):int(o[i] + ln[i])]
            if int(values.max()) >> _BITS[types[p]]:
                raise TraceError(f"{p}_off", f"case {i}: its {p.upper()} pattern holds values wider than "
                                             f"{types[p]}'s {_BITS[types[p]]} bits")
        per_thread = width // 4 if kinds[kind][2] == "f16" else width // 2
        if off[i + 1] - off[i] != 128 * per_thread:
            raise TraceError("d_offsets", f"case {i} must hold 128 x {per_thread} registers")


_CHECKS = {"wgmma_operand_addresses": _check_addresses, "wgmma_numerics": _check_numerics,
           "smem_wavefronts": _check_wavefronts, "tma_tile_loads": _check_tma,
           "wgmma_sp_operand_addresses": _check_sp_addresses, "wgmma_sp_metadata": _check_sp_metadata,
           "wgmma_sp_numerics": _check_sp_numerics, "ptx_alu": _check_ptx_alu, "sfu_proof": _check_sfu_proof, "program_outputs": _check_program_outputs, "kernel_outputs": _check_kernels,
           "gemm_outputs": _check_gemm, "launch_outputs": _check_launches, "wgmma_zero_sign": _check_zero_sign}


def check_zero_sign_operands(meta: dict, cols: dict) -> None:
    """The wgmma_zero_sign checks of everything but the captured registers (a capture plan has none yet); meta
    and cols are already a dict of kind wgmma_zero_sign and a dict of columns (tcemu.traces.kinds.zero_sign checks that)."""
    _check_zero_sign(meta, cols, registers=False)


@dataclass
class GroupResult:
    cases: int = 0
    cases_matched: int = 0
    values: int = 0
    values_matched: int = 0


@dataclass
class ReplayResult:
    trace: Trace
    groups: Dict[str, GroupResult] = field(default_factory=dict)
    mismatches: List[str] = field(default_factory=list)  # first few, as readable lines
    notes: List[str] = field(default_factory=list)       # what the replay did not judge, and why

    @property
    def ok(self) -> bool:
        return all(g.cases == g.cases_matched for g in self.groups.values()) and bool(self.groups)


def _case_addresses(cols, i) -> np.ndarray:
    lo, hi = cols["offsets"][i], cols["offsets"][i + 1]
    return np.cumsum(cols["addresses"][lo:hi].astype(np.int64)).reshape(int(cols["rows"][i]), int(cols["k"][i]))


def _replay_addresses(trace: Trace, result: ReplayResult, max_report: int):
    cols, dtypes = trace.columns, trace.meta["dtypes"]
    for i in range(cols["desc"].size):
        desc = GmmaDescriptor.decode(int(cols["desc"][i]))
        dtype, major = dtypes[int(cols["dtype"][i])], "MN" if cols["major"][i] else "K"
        operand = "AB"[int(cols["operand"][i])]
        group = result.groups.setdefault(f"{dtype:<4} {major:<2} {desc.swizzle.value:>4} {operand}", GroupResult())
        hw = _case_addresses(cols, i)
        try:
            model = operand_addresses(desc, rows=hw.shape[0], k=hw.shape[1], dtype=dtype, major=major,
                                      arch=trace.meta["arch"])
            same = model == hw
        except TcemuError as e:
            model, same = None, np.zeros(hw.shape, bool)
            result.mismatches.append(f"case {i}: tcemu raised {e}")
        group.cases += 1
        group.values += hw.size
        group.values_matched += int(same.sum())
        group.cases_matched += bool(same.all())
        if not same.all() and model is not None and len(result.mismatches) < max_report:
            r, c = np.argwhere(~same)[0]
            result.mismatches.append(f"case {i} {desc} {dtype} {major}-major {operand}: element ({r}, {c}) "
                                     f"hardware {int(hw[r, c]):#x}, tcemu {int(model[r, c]):#x}")


def thread_digests(regs: np.ndarray) -> np.ndarray:
    """(128,) uint32: blake2b(digest_size=4) of each thread's raw registers as little-endian words."""
    return np.array([int.from_bytes(hashlib.blake2b(np.ascontiguousarray(r, "<u4").tobytes(), digest_size=4)
                                    .digest(), "little") for r in regs], np.uint32)


# Shared-memory placement used by scripts/capture_numerics.cu: no swizzle, A at +0, B at +4096.
_NUMERICS_BASE, _B_OFF = 0x400, 4096


def _numerics_descriptor(offset, rows, mn_major):
    if mn_major:  # SBO: next 8 MN elements; LBO: next 8 K
        return GmmaDescriptor(_NUMERICS_BASE + offset, lbo=(rows // 8) * 128, sbo=128)
    return GmmaDescriptor(_NUMERICS_BASE + offset, lbo=128, sbo=256)


def _write_numerics_operand(smem, desc, bits, dtype, mn_major):
    if dtype == "b1":  # the capture writes raw bytes of each row's 32-byte K extent
        smem.scatter(operand_addresses(desc, rows=bits.shape[0], k=32, dtype="u8"), bits, "u8")
    else:
        smem.write_operand(desc, bits, dtype=dtype, major="MN" if mn_major else "K")


def numerics_case_registers(trace: Trace, i: int) -> np.ndarray:
    """tcemu's raw D registers (128, nregs) for case i of a wgmma_numerics trace."""
    from . import seeds
    from ..layout.fragments import to_d_registers
    from ..hopper.wgmma import K_OF, OUT_NUMPY, wgmma
    cols = trace.columns
    kind, n, ta, tb, sa, sb, rega = trace.meta["instantiations"][int(cols["inst"][i])]
    atype, btype, dtype, satf = trace.meta["kinds"][kind]
    seed = int(cols["seed"][i])
    K = K_OF[atype]
    c = seeds.c_bits(seed, kind, n).view(OUT_NUMPY[dtype])
    scale_d = bool(cols["scale_d"][i])
    da, db = _numerics_descriptor(0, 64, ta), _numerics_descriptor(_B_OFF, n, tb)
    for step in range(int(cols["steps"][i])):
        smem = SharedMemory()
        a_regs = seeds.a_register_bits(seed, kind, step) if rega else None
        if not rega:
            _write_numerics_operand(smem, da, seeds.operand_bits(seed, kind, step, "A", 64), atype, ta)
        _write_numerics_operand(smem, db, seeds.operand_bits(seed, kind, step, "B", n), btype, tb)
        c = wgmma(smem, None if rega else da, db, shape=f"m64n{n}k{K}", dtype_a=atype, dtype_b=btype,
                  dtype_d=dtype, trans_a=bool(ta), trans_b=bool(tb), c=c, scale_d=scale_d or step > 0,
                  scale_a=sa, scale_b=sb, satfinite=bool(satf), a_regs=a_regs)
    return to_d_registers(c.view(np.uint16 if dtype == "f16" else np.uint32), dtype)


def _replay_numerics(trace: Trace, result: ReplayResult, max_report: int):
    cols, meta = trace.columns, trace.meta
    diag = {int(c): j for j, c in enumerate(cols["diag_case"])}
    for i in range(cols["seed"].size):
        kind, n, ta, tb, sa, sb, rega = meta["instantiations"][int(cols["inst"][i])]
        atype, btype, dtype, satf = meta["kinds"][kind]
        form = (f"{atype}.{btype}->{dtype}{'.sat' if satf else ''}"
                + (" regA" if rega else "") + (" trans" if ta or tb else "") + (" neg" if -1 in (sa, sb) else ""))
        group = result.groups.setdefault(form, GroupResult())
        regs = numerics_case_registers(trace, i)
        same = thread_digests(regs) == cols["digest"][i]
        if i in diag:
            lo, hi = cols["diag_offsets"][diag[i]], cols["diag_offsets"][diag[i] + 1]
            hw = cols["diag_regs"][lo:hi].reshape(regs.shape)
            same &= np.all(hw == regs, axis=1)
        group.cases += 1
        group.values += regs.size
        group.values_matched += int(same.sum()) * regs.shape[1]
        group.cases_matched += bool(same.all())
        if not same.all() and len(result.mismatches) < max_report:
            t = int(np.flatnonzero(~same)[0])
            result.mismatches.append(f"case {i} {form} n={n} steps={int(cols['steps'][i])} seed={int(cols['seed'][i])}: "
                                     f"{int((~same).sum())} of 128 threads differ (first: thread {t})")


def _replay_wavefronts(trace: Trace, result: ReplayResult, max_report: int):
    from ..layout.banks import parse_op, wavefronts_batch
    cols, ops = trace.columns, trace.meta["ops"]
    for index, name in enumerate(ops):
        rows = np.flatnonzero(cols["op"] == index)
        if rows.size == 0:
            continue
        op = parse_op(name)
        masks = np.where(op.matrices, 0xFFFFFFFF, cols["mask"][rows].astype(np.int64))
        model = wavefronts_batch(op, cols["addr"][rows], masks)
        hw = cols[f"{op.metric}_wavefronts"][rows]
        other = cols[f"{'st' if op.metric == 'ld' else 'ld'}_wavefronts"][rows]
        same = (model == hw) & (other == 0)
        group = result.groups.setdefault(op.name, GroupResult())
        group.cases += rows.size
        group.cases_matched += int(same.sum())
        group.values += int(hw.sum())
        group.values_matched += int(np.minimum(model, hw)[same].sum())
        for j in np.flatnonzero(~same)[:max(0, max_report - len(result.mismatches))]:
            i = int(rows[j])
            result.mismatches.append(f"pattern {i} {op.name} mask {int(cols['mask'][i]):#010x}: ncu {int(hw[j])} "
                                     f"wavefronts, tcemu {int(model[j])}")


def _replay_tma(trace: Trace, result: ReplayResult, max_report: int):
    from ..layout.tma import capture_global_bytes, capture_prefill, tensor_view, tma_load
    cols, meta = trace.columns, trace.meta
    cases = np.ascontiguousarray(cols["case"]).view(TMA_CASE).ravel()
    gbytes = capture_global_bytes(int(meta["global_bytes"]))
    window = int(meta["window_bytes"])
    prefill = capture_prefill(window)
    for i, cs in enumerate(cases):
        rank, es = int(cs["rank"]), (1, 2, 4)[int(cs["dtype"])]
        mode = ("none", "32B", "64B", "128B")[int(cs["swizzle"])]
        group = result.groups.setdefault(f"rank {rank} u{8 * es} {mode}", GroupResult())
        want = prefill.copy()
        lo, hi = cols["offsets"][i], cols["offsets"][i + 1]
        want[cols["positions"][lo:hi]] = cols["values"][lo:hi]
        smem = SharedMemory()
        smem.write(0, prefill)  # dst is relative to a 1024-aligned base: absolute address bits agree
        if not (cols["refused"][i] or cols["timed_out"][i]):
            tensor = tensor_view(gbytes, int(cs["gaddr"]), es, [int(x) for x in cs["gdim"][:rank]],
                                 [int(x) for x in cs["gstride"][:rank - 1]])
            tma_load(smem, int(cs["dst"]), tensor, box=[int(x) for x in cs["box"][:rank]],
                     coords=[int(x) for x in cs["coord"][:rank]],
                     element_strides=[int(x) for x in cs["estride"][:rank]], swizzle=mode)
        same = smem.data[:window] == want
        group.cases += 1
        group.cases_matched += bool(same.all())
        group.values += window
        group.values_matched += int(same.sum())
        if not same.all() and len(result.mismatches) < max_report:
            first = int(np.flatnonzero(~same)[0])
            result.mismatches.append(f"case {i} {group_name(cs)}: {int((~same).sum())} bytes differ, first at "
                                     f"+{first:#x}")


def group_name(cs) -> str:
    return f"rank {int(cs['rank'])} box {list(cs['box'][:int(cs['rank'])])} dst {int(cs['dst']):#x}"


# ---- sparse wgmma (scripts/capture_sparse.py)

def _replay_sp_addresses(trace: Trace, result: ReplayResult, max_report: int):
    from ..layout.fragments import a_coords
    cols, dtypes = trace.columns, trace.meta["dtypes"]
    for i in range(cols["desc"].size):
        dtype, operand = dtypes[int(cols["dtype"][i])], int(cols["operand"][i])
        major = "MN" if cols["major"][i] else "K"
        hw = _case_addresses(cols, i)
        if operand == 2:  # A from registers: the register element feeding each stored position
            desc, name = None, f"{dtype:<4} regs      A"
            row, col = a_coords(dtype)
            per = row.shape[2]
            model = np.full(hw.shape, -1, np.int64)
            model[row, col] = np.arange(128 * 4 * per).reshape(128, 4, per)
        else:
            desc = GmmaDescriptor.decode(int(cols["desc"][i]))
            name = f"{dtype:<4} {major:<2} {desc.swizzle.value:>4} {'AB'[operand]}"
            try:
                model = operand_addresses(desc, rows=hw.shape[0], k=hw.shape[1], dtype=dtype, major=major,
                                          arch=trace.meta["arch"])
            except TcemuError as e:
                model = None
                result.mismatches.append(f"case {i}: tcemu raised {e}")
        group = result.groups.setdefault(name, GroupResult())
        same = (model == hw) if model is not None else np.zeros(hw.shape, bool)
        checks = int(cols["check_mismatches"][i])
        group.cases += 1
        group.values += hw.size
        group.values_matched += int(same.sum())
        group.cases_matched += bool(same.all()) and checks == 0
        if (not same.all() or checks) and model is not None and len(result.mismatches) < max_report:
            if checks:
                result.mismatches.append(f"case {i} {name}: {checks} D entries broke the probe's invariants")
            else:
                r, c = np.argwhere(~same)[0]
                result.mismatches.append(f"case {i} {desc} {name}: element ({r}, {c}) hardware {int(hw[r, c]):#x}, "
                                         f"tcemu {int(model[r, c]):#x}")


# stored A (m, s) of the metadata probe: 1 for even s, 2 for odd s (tf32: 1.0), in each type's bits
_SP_CODES = {"tf32": (0x3F800000, 0x3F800000), "f16": (0x3C00, 0x4000), "bf16": (0x3F80, 0x4000),
             "e4m3": (0x38, 0x40), "e5m2": (0x3C, 0x40), "s8": (1, 2), "u8": (1, 2)}
_SP_ONE = {"tf32": 0x3F800000, "f16": 0x3C00, "bf16": 0x3F80, "e4m3": 0x38, "e5m2": 0x3C, "s8": 1, "u8": 1}


def sp_metadata_case_registers(trace: Trace, i: int) -> np.ndarray:
    """tcemu's raw D registers (128, nregs) for case i of a wgmma_sp_metadata trace (invalid metadata: gather)."""
    from ..layout.fragments import from_a_registers, to_d_registers
    from ..hopper.sparse import SP_K_OF, meta_nibbles, sparse_dot
    cols = trace.columns
    kind, n, sel, rega, ta, tb, sa, sb = trace.meta["instantiations"][int(cols["inst"][i])]
    atype, btype, dtype, satf = trace.meta["kinds"][kind]
    K = SP_K_OF[atype]
    lo, hi = _SP_CODES[atype]
    dt = np.uint32 if atype == "tf32" else np.uint16 if atype in ("f16", "bf16") else np.uint8
    a = np.where(np.arange(K // 2) % 2 == 0, lo, hi)[None, :].repeat(64, 0).astype(dt)
    if rega:  # the kernel packs element e of every register with the code of parity e
        bits = 32 if atype == "tf32" else 16 if dt == np.uint16 else 8
        per = 32 // bits
        word = sum(int((lo, hi)[e % 2]) << (bits * e) for e in range(per)) & 0xFFFFFFFF
        a = from_a_registers(np.full((128, 4), word, np.uint32), atype).astype(dt)
    b = (np.eye(K, dtype=np.uint64) * _SP_ONE[btype]).astype(dt)
    nib = meta_nibbles(cols["sp_meta"][i], atype, sel)
    d = sparse_dot(a, b, nib, None, dtype_a=atype, dtype_b=btype, dtype_d=dtype, satfinite=bool(satf))
    return to_d_registers(d.view(np.uint16 if dtype == "f16" else np.uint32), dtype)


def _replay_sp_metadata(trace: Trace, result: ReplayResult, max_report: int):
    cols, meta = trace.columns, trace.meta
    for i in range(cols["inst"].size):
        kind, n, sel, rega, *_ = meta["instantiations"][int(cols["inst"][i])]
        cls = meta["classes"][int(cols["cls"][i])]
        name = f"{meta['kinds'][kind][0]:<4} sel {sel} {'regA' if rega else 'smem'} {cls}"
        group = result.groups.setdefault(name, GroupResult())
        regs = sp_metadata_case_registers(trace, i)
        lo, hi = cols["d_offsets"][i], cols["d_offsets"][i + 1]
        hw = cols["d_regs"][lo:hi].reshape(regs.shape)
        same = hw == regs
        group.cases += 1
        group.values += regs.size
        group.values_matched += int(same.sum())
        group.cases_matched += bool(same.all())
        if not same.all() and len(result.mismatches) < max_report:
            t, j = np.argwhere(~same)[0]
            result.mismatches.append(f"case {i} {name} walk {int(cols['walk'][i])}: {int((~same).sum())} registers "
                                     f"differ (first: thread {t} reg {j}: hardware {int(hw[t, j]):#x}, "
                                     f"tcemu {int(regs[t, j]):#x})")


def _sp_descriptor(offset, rows, mn_major, b_operand):
    if mn_major:  # SBO: next 8 MN elements; LBO: next 8 K
        return GmmaDescriptor(_NUMERICS_BASE + offset, lbo=(rows // 8) * 128, sbo=128)
    return GmmaDescriptor(_NUMERICS_BASE + offset, lbo=128, sbo=512 if b_operand else 256)


def sp_numerics_case_registers(trace: Trace, i: int, rule: str = "selected") -> np.ndarray:
    """tcemu's raw D registers (128, nregs) for case i of a wgmma_sp_numerics trace (invalid metadata: gather)."""
    from . import sparse_seeds as S
    from ..layout.fragments import to_d_registers
    from ..hopper.wgmma import OUT_NUMPY
    from ..hopper.sparse import SP_K_OF, wgmma_sp
    cols = trace.columns
    kind, n, sel, rega, ta, tb, sa, sb = trace.meta["instantiations"][int(cols["inst"][i])]
    atype, btype, dtype, satf = trace.meta["kinds"][kind]
    seed, cls = int(cols["seed"][i]), int(cols["cls"][i])
    K = SP_K_OF[atype]
    c = S.c_bits(seed, kind, n).view(OUT_NUMPY[dtype])
    scale_d = bool(cols["scale_d"][i])
    da, db = _sp_descriptor(0, 64, ta, False), _sp_descriptor(_B_OFF, n, tb, True)
    for step in range(int(cols["steps"][i])):
        smem = SharedMemory()
        a_regs = S.a_register_bits(seed, kind, step) if rega else None
        if not rega:
            smem.write_operand(da, S.stored_a_bits(seed, kind, step), dtype=atype, major="MN" if ta else "K")
        smem.write_operand(db, S.b_bits(seed, kind, step, n), dtype=btype, major="MN" if tb else "K")
        c = wgmma_sp(smem, None if rega else da, db, shape=f"m64n{n}k{K}", dtype_a=atype, dtype_b=btype,
                     dtype_d=dtype, sparse_meta=S.meta_register_bits(seed, kind, step, cls), sparsity_selector=sel,
                     trans_a=bool(ta), trans_b=bool(tb), c=c, scale_d=scale_d or step > 0, scale_a=sa, scale_b=sb,
                     satfinite=bool(satf), a_regs=a_regs, invalid_meta="gather", rule=rule)
    return to_d_registers(c.view(np.uint16 if dtype == "f16" else np.uint32), dtype)


def sp_numerics_case_matches(trace: Trace, i: int, rule: str = "selected") -> np.ndarray:
    """(128,) bool: which threads of case i match the trace under `rule` (digest and, if stored, raw registers)."""
    cols = trace.columns
    regs = sp_numerics_case_registers(trace, i, rule)
    same = thread_digests(regs) == cols["digest"][i]
    diag = np.flatnonzero(cols["diag_case"] == i)
    if diag.size:
        lo, hi = cols["diag_offsets"][diag[0]], cols["diag_offsets"][diag[0] + 1]
        same &= np.all(cols["diag_regs"][lo:hi].reshape(regs.shape) == regs, axis=1)
    return same


def _replay_sp_numerics(trace: Trace, result: ReplayResult, max_report: int):
    cols, meta = trace.columns, trace.meta
    for i in range(cols["seed"].size):
        kind, n, sel, rega, ta, tb, sa, sb = meta["instantiations"][int(cols["inst"][i])]
        atype, btype, dtype, satf = meta["kinds"][kind]
        form = (f"{atype}.{btype}->{dtype}{'.sat' if satf else ''} {meta['classes'][int(cols['cls'][i])]}"
                + (" regA" if rega else "") + (f" sel{sel}" if sel else "") + (" trans" if ta or tb else "")
                + (" neg" if -1 in (sa, sb) else ""))
        group = result.groups.setdefault(form, GroupResult())
        same = sp_numerics_case_matches(trace, i)
        nregs = n // 4 if dtype == "f16" else n // 2
        group.cases += 1
        group.values += 128 * nregs
        group.values_matched += int(same.sum()) * nregs
        group.cases_matched += bool(same.all())
        if not same.all() and len(result.mismatches) < max_report:
            t = int(np.flatnonzero(~same)[0])
            result.mismatches.append(f"case {i} {form} n={n} steps={int(cols['steps'][i])} seed={int(cols['seed'][i])}: "
                                     f"{int((~same).sum())} of 128 threads differ (first: thread {t})")



def _replay_ptx_alu(trace: Trace, result: ReplayResult, max_report: int):
    """ALU instructions one form at a time through the interpreter's exact arithmetic (tcemu.ptx)."""
    from .kinds.ptx_alu import replay_alu_columns
    alu = replay_alu_columns(trace.meta, trace.columns)
    refused = []
    for name, f in alu.forms.items():
        if f.status == "refused":  # approximate forms tcemu does not model: not judged
            refused.append(name)
            continue
        g = result.groups.setdefault(name, GroupResult())
        g.cases += f.cases
        g.cases_matched += f.matched
        g.values += f.cases
        g.values_matched += f.matched
        if f.status != "match" and len(result.mismatches) < max_report:
            result.mismatches.append(f"{name}: {f.status} {f.first_mismatch or ''}")
    if refused:
        result.notes.append(f"{len(refused)} approximate forms refused by tcemu, not judged: {', '.join(refused)}")


def _replay_sfu_proof(trace: Trace, result: ReplayResult, max_report: int):
    """The approximate forms' sample (special values of every class, seeded random inputs) through
    tcemu.ptx.fparith, every result bit demanded; the exhaustive GPU counts are reported as notes."""
    from ..ptx import fparith
    from ..ptx.sfu_forms import form_bits, parse_form
    cols, forms = trace.columns, trace.meta["forms"]
    for i, name in enumerate(forms):
        sel = np.flatnonzero(cols["form"] == i)
        if not sel.size:
            continue
        op, rounding, ftz, ftype = parse_form(name)
        dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[form_bits(ftype)]
        ops = [cols["a"][sel].astype(dt)] + ([cols["b"][sel].astype(np.uint32)] if op == "div" else [])
        got = np.asarray(fparith.float_op(op, ftype, *ops, rounding=rounding, ftz=ftz)).astype(np.uint64)
        same = got == cols["out"][sel]
        g = result.groups.setdefault(name, GroupResult())
        g.cases += sel.size
        g.cases_matched += int(same.sum())
        g.values += sel.size
        g.values_matched += int(same.sum())
        if not same.all() and len(result.mismatches) < max_report:
            j = sel[int(np.flatnonzero(~same)[0])]
            result.mismatches.append(f"{name}: in 0x{int(cols['a'][j]):x} 0x{int(cols['b'][j]):x}: hardware "
                                     f"0x{int(cols['out'][j]):x}, tcemu 0x{int(got[np.flatnonzero(~same)[0]]):x}")
    proved = trace.meta["proof"]["forms"]
    result.notes.append(f"exhaustive GPU proof (meta.proof): {sum(r['inputs'] for r in proved):,} inputs over "
                        f"{len(proved)} forms, {sum(r['mismatches'] for r in proved):,} mismatches")


def _replay_program_outputs(trace: Trace, result: ReplayResult, max_report: int):
    """Each launch of the embedded module rerun on the PTX interpreter (one output buffer, zeroed first, as the
    capture did), every output word demanded."""
    from .. import ptx as P
    cols = trace.columns
    mod = P.load(cols["ptx"].astype(np.uint8).tobytes().decode("utf-8"))
    for i, r in enumerate(trace.meta["launches"]):
        want = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
        out = np.zeros(want.size, np.uint32)
        mod.launch(r["entry"], grid=r["grid"], block=r["block"], args=[out])
        same = out == want
        g = result.groups.setdefault(r["entry"], GroupResult())
        g.cases += 1
        g.cases_matched += bool(same.all())
        g.values += want.size
        g.values_matched += int(same.sum())
        if not same.all() and len(result.mismatches) < max_report:
            j = int(np.flatnonzero(~same)[0])
            result.mismatches.append(f"{r['entry']}: word {j}: hardware 0x{int(want[j]):08x}, tcemu 0x{int(out[j]):08x}")


def _replay_kernels(trace: Trace, result: ReplayResult, max_report: int):
    """Whole kernels: each captured launch rerun on the PTX interpreter, every output byte compared."""
    from .kinds.kernel_outputs import fixture_from_trace, replay_case, replay_launches
    cols = trace.columns
    cases = trace.meta.get("cases")
    if not isinstance(cases, list) or len(cases) != cols["status"].size:
        raise TraceError("meta.cases", f"{trace.path}: one case record per status entry expected")
    mods = {}

    class _Z:  # the embedded fixtures, by member name
        def __getitem__(self, key):
            if key not in cols:
                raise TraceError(key, f"{trace.path}: fixture member missing")
            return cols[key]

    def get(name):
        if name not in mods:  # a fixture whose PTX does not parse fails each of its cases
            mods[name] = fixture_from_trace(_Z(), name)
        return mods[name]

    def run(i, case, name):
        if "launches" in case:  # a multi-launch case: every launch in order, every output buffer compared
            return replay_launches(get, case)
        return replay_case(*get(name), case)
    _replay_output_bytes(trace, cases, result, max_report, run)


def _replay_output_bytes(trace: Trace, cases, result: ReplayResult, max_report: int, run):
    """kernel_outputs / launch_outputs: each captured case's output bytes (run(i, case, fixture name), a
    TcemuError counting as all differing) against the trace's, one group per fixture."""
    cols = trace.columns
    for i, case in enumerate(cases):
        if int(cols["status"][i]) != 0:
            result.notes.append(f"case {i} ({show(case.get('fixture'))}): not captured ({show(case.get('status'))})")
            continue
        name = case["fixture"]
        hw = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
        try:
            got = run(i, case, name)
        except TcemuError as e:
            got = None
            if len(result.mismatches) < max_report:
                result.mismatches.append(f"case {i} {name}: {type(e).__name__}: {e}"[:400])
        g = result.groups.setdefault(name, GroupResult())
        g.cases += 1
        g.values += hw.size
        if got is not None:
            same = int(np.count_nonzero(got == hw)) if got.size == hw.size else 0
            g.values_matched += same
            g.cases_matched += same == hw.size
            if same != hw.size and len(result.mismatches) < max_report:
                label = case.get("name") if isinstance(case.get("name"), str) else \
                    f"{name} {case.get('M')}x{case.get('N')}x{case.get('K')}"
                result.mismatches.append(f"case {i} {label[:120]}: {hw.size - same} of {hw.size} output bytes differ")


def _replay_gemm(trace: Trace, result: ReplayResult, max_report: int):
    """cuBLAS GEMMs (gemm_outputs) through tcemu.matmul; the model of each case comes from its record
    (tcemu/traces/kinds/gemm_outputs.py), and cases it does not claim are noted, not judged."""
    from .kinds.gemm_outputs import case_model, compare, run_case
    cols = trace.columns
    for i, case in enumerate(trace.meta["cases"]):  # check_trace has held every record to _check_gemm
        label = f"case {i} {case.get('op')} {case.get('in')}->{case.get('out')} {case.get('M')}x{case.get('N')}x" \
                f"{case.get('K')}"
        if int(cols["status"][i]) != 0:
            result.notes.append(f"{label}: not captured ({case.get('error') or case.get('status')})")
            continue
        kw, reason = case_model(case, trace.meta)
        if kw is None:
            result.notes.append(f"{label}: not judged ({reason})")
            continue
        opts = case.get("options") or {}
        name = f"{case['op']} {case['in']}->{case['out']}" + (
            "" if case["op"] != "scaled_mm" else " fast_accum" if opts.get("use_fast_accum") else " promote")
        g = result.groups.setdefault(name, GroupResult())
        try:
            rows_eq, same, stored, rows = compare(cols, i, case, run_case(case, kw))
        except TcemuError as e:  # the model refuses the case: every value of it counts as differing
            g.cases += 1
            g.values += int(cols["m"][i]) + int(cols["stored_rows"][i]) * int(cols["n"][i])
            if len(result.mismatches) < max_report:
                result.mismatches.append(f"{label}: tcemu raised {type(e).__name__}: {e}"[:400])
            continue
        g.cases += 1
        g.values += rows + stored
        g.values_matched += rows_eq + same
        g.cases_matched += rows_eq == rows and same == stored
        if (rows_eq != rows or same != stored) and len(result.mismatches) < max_report:
            result.mismatches.append(f"{label}: {rows - rows_eq} of {rows} row digests and {stored - same} of "
                                     f"{stored} stored outputs differ")


def _replay_launches(trace: Trace, result: ReplayResult, max_report: int):
    """Recorded launches (launch_outputs): each captured case rerun from the fixture embedded in the trace and
    its seed (tcemu.launches.replay_trace_case), every output byte compared."""
    from .launches import replay_trace_case
    modules = {}
    # check_trace has held every record to _check_launches
    _replay_output_bytes(trace, trace.meta["cases"], result, max_report,
                         lambda i, case, name: replay_trace_case(trace, i, modules))


def _replay_zero_sign(trace: Trace, result: ReplayResult, max_report: int):
    """Exact-zero signs and the zero floor of wgmma (wgmma_zero_sign): tcemu.traces.kinds.zero_sign's replay, one group per
    question and form, every D register compared."""
    from .kinds.zero_sign import replay_zero_sign
    for case in replay_zero_sign(trace.meta, trace.columns).cases:
        g = result.groups.setdefault(case.group_key, GroupResult())
        g.cases += 1
        g.cases_matched += case.ok
        g.values += case.values
        g.values_matched += case.values_matched
        if not case.ok and len(result.mismatches) < max_report:
            result.mismatches.append(case.describe()[:400])


_REPLAYERS = {"ptx_alu": _replay_ptx_alu, "kernel_outputs": _replay_kernels, "gemm_outputs": _replay_gemm,
              "launch_outputs": _replay_launches, "wgmma_zero_sign": _replay_zero_sign,
              "wgmma_operand_addresses": _replay_addresses, "wgmma_numerics": _replay_numerics,
              "smem_wavefronts": _replay_wavefronts, "tma_tile_loads": _replay_tma,
              "wgmma_sp_operand_addresses": _replay_sp_addresses, "wgmma_sp_metadata": _replay_sp_metadata,
              "wgmma_sp_numerics": _replay_sp_numerics, "sfu_proof": _replay_sfu_proof,
              "program_outputs": _replay_program_outputs}


def replay(trace, max_report: int = 10) -> ReplayResult:
    max_report = as_int(max_report, "max_report", 0, 1 << 20, TraceError)
    trace = trace if isinstance(trace, Trace) else load_trace(trace)
    check_trace(trace)  # a Trace built by hand is held to the same rules
    result = ReplayResult(trace)
    _REPLAYERS[trace.kind](trace, result, max_report)
    return result


def trace_paths(paths) -> List[str]:
    """Expand directories to the .npz traces inside them, sorted."""
    if isinstance(paths, (str, os.PathLike)) or not isinstance(paths, (list, tuple)):
        raise TraceError("paths", f"must be a list of paths, got {show(paths)}")
    out = []
    for p in paths:
        if isinstance(p, os.PathLike):
            p = os.fspath(p)
        if not isinstance(p, str) or not p or "\0" in p:
            raise TraceError("paths", f"must be file or directory paths, got {show(p)}")
        if os.path.isdir(p):
            try:
                out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".npz"))
            except OSError as e:
                raise TraceError(os.path.basename(p) or "paths", f"cannot list it ({e.strerror or e})") from None
        else:
            out.append(p)
    return out
