"""`texture` traces (scripts/capture/capture_texture.cu and .py, traces/README.md): texture and surface reads of an
H100, case by case: a CUDA array (or linear memory) of a channel format, a texture object (address mode, filter,
read mode, normalized coordinates, border colour) or surface object of it, coordinates and the 4 result words
each coordinate gave; and the cudaError_t each object's creation returned. Replayed through the PTX interpreter:
per case a texture_object over the case's texels and a kernel that runs tex / tld4 / suld at every coordinate.
Linear-filter cases are judged like the rest (grouped by dimensions and read)."""
import numpy as np

from ...core.errors import TraceError
from ..archive import Trace
from .base import GroupResult, Kind, ReplayResult, col

COLUMNS = ("dims", "resource", "bits0", "bits1", "bits2", "bits3", "kind", "read_mode", "filter", "addr",
           "normalized", "width", "height", "result", "op", "n", "data_off", "data_bytes", "coord_off")
TEX, FETCH, GATHER0, SURF_CLAMP, SURF_ZERO = 0, 1, 2, 6, 7
_RESULT = ("f32", "s32", "u32")
_DTYPES = {(2, 32): np.float32, (2, 16): np.float16, (0, 8): np.int8, (1, 8): np.uint8, (0, 16): np.int16,
           (1, 16): np.uint16, (0, 32): np.int32, (1, 32): np.uint32}


def _check(meta, cols):
    if meta.get("case_columns") != list(COLUMNS):
        raise TraceError("meta.case_columns", f"must be {list(COLUMNS)}")
    b = meta.get("border")
    if not isinstance(b, list) or len(b) != 4 or not all(isinstance(v, (int, float)) for v in b):
        raise TraceError("meta.border", "must be the 4 border colour floats")
    cases = col(cols, "cases", -(1 << 31), (1 << 31) - 1, (None, len(COLUMNS)))
    n = len(cases)
    col(cols, "status", 0, 1000, (n,))
    data = col(cols, "data", 0, 255, (None,))
    x = col(cols, "x", 0, (1 << 32) - 1, (None,))
    col(cols, "y", 0, (1 << 32) - 1, (x.size,))
    col(cols, "result", 0, (1 << 32) - 1, (4 * x.size,))
    c = {k: cases[:, i].astype(np.int64) for i, k in enumerate(COLUMNS)}
    if (c["data_off"] < 0).any() or (c["data_off"] + c["data_bytes"] > data.size).any() or \
            (c["coord_off"] < 0).any() or (c["n"] < 1).any() or (c["coord_off"] + c["n"] > x.size).any():
        raise TraceError("cases", "a case's data or coordinates run past their column")
    bad = ~np.isin(c["op"], (TEX, FETCH, GATHER0, GATHER0 + 1, GATHER0 + 2, GATHER0 + 3, SURF_CLAMP, SURF_ZERO)) | \
        ~np.isin(c["dims"], (1, 2)) | ~np.isin(c["result"], (0, 1, 2)) | ~np.isin(c["resource"], (0, 1)) | \
        (c["width"] < 1) | (c["width"] > 4096) | (c["height"] < 0) | (c["height"] > 4096)
    if bad.any():
        raise TraceError("cases", f"case {int(np.flatnonzero(bad)[0])} has an op, dims, result, resource or "
                                  "extent outside the documented values")


def _kernel(geom, dt, op, dims):
    """One coordinate per thread: result words of tex / tld4 / suld at (x[i], y[i])."""
    if op >= SURF_CLAMP:
        mode = "clamp" if op == SURF_CLAMP else "zero"
        c = "%r10" if dims == 1 else "%r10, %r11"
        body = f"suld.b.{geom}.b32.{mode} {{%r0}}, [%rd1, {{{c}}}];\n  mov.b32 %r1, 0;\n  mov.b32 %r2, 0;\n" \
               "  mov.b32 %r3, 0;"
    elif op == FETCH:
        body = f"tex.1d.v4.{dt}.s32 {{%r0, %r1, %r2, %r3}}, [%rd1, {{%r10}}];"
    else:
        c = "%f10" if dims == 1 else "%f10, %f11"
        head = f"tld4.{'rgba'[op - GATHER0]}.2d" if op != TEX else f"tex.{geom}"
        body = f"{head}.v4.{dt}.f32 {{%r0, %r1, %r2, %r3}}, [%rd1, {{{c}}}];"
    return f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry s(.param .u64 t, .param .u64 px, .param .u64 py, .param .u64 po, .param .u32 n)
{{
  .reg .pred %p;
  .reg .b32 %r<12>;
  .reg .f32 %f<12>;
  .reg .b64 %rd<8>;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.u32 %r4, %r4, 128, %r5;
  ld.param.u32 %r6, [n];
  setp.ge.u32 %p, %r4, %r6;
  @%p ret;
  ld.param.u64 %rd1, [t];
  ld.param.u64 %rd2, [px];
  ld.param.u64 %rd3, [py];
  ld.param.u64 %rd4, [po];
  mul.wide.u32 %rd5, %r4, 4;
  add.s64 %rd2, %rd2, %rd5;
  add.s64 %rd3, %rd3, %rd5;
  ld.global.b32 %r10, [%rd2];
  ld.global.b32 %r11, [%rd3];
  mov.b32 %f10, %r10;
  mov.b32 %f11, %r11;
  {body}
  mul.wide.u32 %rd5, %r4, 16;
  add.s64 %rd4, %rd4, %rd5;
  st.global.v4.b32 [%rd4], {{%r0, %r1, %r2, %r3}};
  ret;
}}
"""


def case_object(c, data, border):
    """The texture_object (or surface_object) of a case: its texels as a numpy array of the channel format."""
    from ... import ptx   # the interpreter: imported here only (the trace reader needs none of it)
    nch = sum(1 for k in ("bits0", "bits1", "bits2", "bits3") if c[k])
    dt = _DTYPES[(c["kind"], c["bits0"])]
    raw = np.asarray(data[c["data_off"]:c["data_off"] + c["data_bytes"]], np.uint8).copy()
    shape = ([c["height"]] if c["dims"] == 2 else []) + [c["width"]] + ([nch] if nch > 1 else [])
    arr = raw.view(dt).reshape(shape)
    if c["op"] >= SURF_CLAMP:
        return ptx.surface_object(arr, channels=nch)
    return ptx.texture_object(arr, channels=nch, address=["wrap", "clamp", "mirror", "border"][c["addr"]],
                              filter=["point", "linear"][c["filter"]], normalized_coords=bool(c["normalized"]),
                              normalized_read=bool(c["read_mode"]), border=border,
                              resource="linear" if c["resource"] == 1 else "array")


def group_of(c):
    op = c["op"]
    if op >= SURF_CLAMP:
        return f"suld {c['dims']}d .{'clamp' if op == SURF_CLAMP else 'zero'}"
    if op == FETCH:
        return "tex1Dfetch (linear memory)"
    if op != TEX:
        return "tld4 (tex2Dgather)"
    read = ["element", "normalized-float"][c["read_mode"]]
    return f"tex {c['dims']}d {['point', 'linear'][c['filter']]}, {read} read"


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    from ... import ptx   # the interpreter: imported here only (start-up cost; the reader needs none of it)
    meta, cols = trace.meta, trace.columns
    border = tuple(float(v) for v in meta["border"])
    kernels = {}
    for i, row in enumerate(cols["cases"]):
        c = {k: int(v) for k, v in zip(COLUMNS, row)}
        status = int(cols["status"][i])
        if status:   # CUDA refused the object: tcemu's descriptor check must refuse it too
            g = result.groups.setdefault("descriptors CUDA refuses", GroupResult())
            g.cases += 1
            g.values += 1
            try:
                case_object(c, cols["data"], border)
                refused = False
            except ptx.PtxError:
                refused = True
            g.values_matched += refused
            g.cases_matched += refused
            if not refused and len(result.mismatches) < max_report:
                result.mismatches.append(f"case {i}: CUDA refused the descriptor (error {status}), tcemu accepts it")
            continue
        o, n = c["coord_off"], c["n"]
        x = cols["x"][o:o + n].astype(np.uint32)
        y = cols["y"][o:o + n].astype(np.uint32)
        hw = cols["result"][4 * o:4 * (o + n)].astype(np.uint32).reshape(n, 4)
        geom = f"{c['dims']}d"
        key = (geom, _RESULT[c["result"]], c["op"], c["dims"])
        if key not in kernels:
            kernels[key] = ptx.load(_kernel(*key))
        out = np.zeros((n, 4), np.uint32)
        kernels[key].launch("s", grid=(n + 127) // 128, block=128,
                            args=[case_object(c, cols["data"], border), x, y, out, n])
        same = out == hw
        g = result.groups.setdefault(group_of(c), GroupResult())
        g.cases += 1
        g.values += same.size
        g.values_matched += int(same.sum())
        g.cases_matched += bool(same.all())
        if not same.all() and len(result.mismatches) < max_report:
            k = int(np.flatnonzero(~same.all(axis=1))[0])
            result.mismatches.append(
                f"case {i} ({group_of(c)}, bits {c['bits0']} x {sum(1 for q in 'bits0 bits1 bits2 bits3'.split() if c[q])}"
                f", kind {c['kind']}, address mode {c['addr']}, normalized {c['normalized']}): coordinate "
                f"({x[k]:#010x}, {y[k]:#010x}): tcemu {[hex(v) for v in out[k]]}, hardware {[hex(v) for v in hw[k]]}")


TRACE_KINDS = (Kind("texture", ("cases", "status", "data", "x", "y", "result"), _check, _replay),)
