"""The trace archive format: read a trace without ever executing anything in it.

A trace is a NumPy .npz archive (a zip of .npy members). Its `meta` member is UTF-8 JSON (bytes as uint8)
naming the format ("tcemu-trace"), version, kind, arch and provenance; the other members are plain numeric
columns documented in meta["columns"] and traces/README.md. read_trace reads the archive itself (zipfile
and numpy's .npy header reader, never numpy.load): object arrays are refused before their bytes are read,
and nothing in a trace is ever unpickled or evaluated. Which members a kind holds, and what they must agree
on, each kind declares (tcemu.traces.kinds); tcemu.traces.registry knows them all (load_trace, check_trace).
"""
import json
import os
import stat
import struct
import tokenize
import zipfile
import zlib
from dataclasses import dataclass
from typing import Dict, List, Mapping

import numpy as np

from ..core.arch import ARCHES
from ..core.errors import TraceError
from ..core.validate import show

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
MAX_CASE_LAUNCHES = 16        # launches of one multi-launch kernel_outputs case (4 bundled)
MAX_CASE_OUTPUTS = 16         # output buffers of one (9 bundled)
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


# Ways a corrupt or hostile archive makes zipfile / numpy's header reader fail (never a bare Exception).
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError,
                   RuntimeError, struct.error, SyntaxError, tokenize.TokenError)  # numpy reads old headers by tokens


def read_trace(path, kinds: Mapping) -> Trace:
    """Read a trace of one of `kinds` (name -> its declaration: tcemu.traces.kinds.base.Kind) without executing
    anything in it: only a regular file, only the members its kind names, each member's declared size checked
    against the limits above and against its entry in the archive before it is decompressed; no object arrays
    (pickles) are ever read. Then held to check_declared (tcemu.traces.load_trace: every registered kind)."""
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
            meta = _read_meta(zf, infos, name, kinds)
            kind = kinds[meta["kind"]]
            columns = {}
            extra = kind.embedded(meta) if kind.embedded else ()
            for column in kind.required + kind.optional + tuple(extra):
                if column + ".npy" in infos:
                    columns[column] = _read_member(zf, infos[column + ".npy"], name, column)
    missing = [c for c in kind.required + tuple(extra) if c not in columns]
    if missing:
        raise TraceError(", ".join(missing), f"{show(path)}: columns missing")
    trace = Trace(path, meta, columns)
    check_declared(trace, kinds)
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


def _read_meta(zf, infos, name, kinds) -> dict:
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
    if not isinstance(meta.get("kind"), str) or meta["kind"] not in kinds:
        raise TraceError("meta.kind", f"{name}: unknown kind {show(meta.get('kind'))}; expected one of "
                                      f"{', '.join(kinds)}")
    return meta


def read_json(raw: bytes, field: str):
    """JSON embedded in a trace (a fixture's json member): UTF-8, nested at most MAX_META_DEPTH deep."""
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


def check_declared(trace: Trace, kinds: Mapping) -> None:
    """TraceError unless `trace` is a Trace whose meta names this format, one of `kinds` (name -> declaration)
    and a known arch, and its meta and columns pass that kind's check (traces/README.md: counts, indices into
    meta lists, offsets, sizes and value ranges)."""
    if not isinstance(trace, Trace) or not isinstance(trace.meta, dict) or not isinstance(trace.columns, dict):
        raise TraceError("trace", f"must be a Trace (tcemu.traces.load_trace), got {show(trace)}")
    meta, cols = trace.meta, trace.columns
    if meta.get("format") != FORMAT or meta.get("version") != VERSION or meta.get("kind") not in kinds:
        raise TraceError("meta.format", f"expected format {FORMAT!r} version {VERSION} and a known kind")
    if meta.get("arch") not in ARCHES:
        raise TraceError("meta.arch", f"{show(meta.get('arch'))}: expected one of {', '.join(ARCHES)}")
    kinds[meta["kind"]].check(meta, cols)


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
