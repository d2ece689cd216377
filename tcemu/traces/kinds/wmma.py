"""`wmma` traces (scripts/capture/capture_wmma.cu, traces/README.md): the H100's wmma fragment layouts (which matrix
element wmma.load puts in each lane's fragment element, for every shape, operand, type and memory layout) and
D = A B + C of random cases per form. Replayed against tcemu.layout.wmma_fragments and, for the products, through the
PTX interpreter: a kernel per form loads A, B and C with wmma.load, runs wmma.mma and stores D with wmma.store."""
import numpy as np

from ...core.errors import TraceError
from ...layout.wmma_fragments import SHAPES, coords, count
from ..archive import Trace
from .base import GroupResult, Kind, ReplayResult, col, meta_int, meta_list

_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "f32"}


def _layouts(meta):
    return [tuple(x) for x in meta_list(meta, "layouts", 64, lambda v: isinstance(v, list) and len(v) == 4 and
                                        v[0] in SHAPES and v[1] in ("a", "b", "c") and v[2] in _TYPES and
                                        v[3] in ("row", "col"))]


def _configs(meta):
    configs = meta_list(meta, "configs", 16, lambda v: isinstance(v, list) and len(v) == 5)
    out = []
    for m, n, k, ta, tc in configs:
        shape = f"m{m}n{n}k{k}"
        if shape not in SHAPES or ta not in ("f16", "bf16") or tc not in ("f16", "f32"):
            raise TraceError("meta.configs", f"{[m, n, k, ta, tc]} is not a modelled wmma form")
        out.append((shape, m, n, k, ta, tc))
    return out


def _check(meta, cols):
    layouts, configs = _layouts(meta), _configs(meta)
    cases = meta_int(meta, "cases", 1, 1 << 16)
    col(cols, "layout", 0, 1023, (sum(32 * count(f, s, t) for s, f, t, _ in layouts),))
    col(cols, "a", 0, 0xFFFF, (cases * sum(m * k for _, m, n, k, _, _ in configs),))
    col(cols, "b", 0, 0xFFFF, (cases * sum(k * n for _, m, n, k, _, _ in configs),))
    for name in "cd":
        col(cols, name, 0, (1 << 32) - 1, (cases * sum(m * n for _, m, n, k, _, _ in configs),))


def _kernel(shape, ta, tc):
    """PTX of one case per CTA: D = A (row) B (col) + C (row), each matrix packed one after the other."""
    m, n, k = SHAPES[shape]
    na, nb, nc = (count(f, shape, t) * (16 if t != "f32" else 32) // 32 for f, t in (("a", ta), ("b", ta),
                                                                                       ("c", tc)))
    ra = ", ".join(f"%a{i}" for i in range(na))
    rb = ", ".join(f"%b{i}" for i in range(nb))
    rc = ", ".join(f"%c{i}" for i in range(nc))
    rd = ", ".join(f"%d{i}" for i in range(nc))
    cbytes = 4 if tc == "f32" else 2
    mma = f"{tc}.{tc}" if ta == "f16" else f"{tc}.{ta}.{ta}.{tc}"
    return f""".version 8.5
.target sm_90a
.address_size 64
.visible .entry w(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{{
  .reg .b32 %a<{na}>, %b<{nb}>, %c<{nc}>, %d<{nc}>, %r<2>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd0, [pa];
  ld.param.u64 %rd1, [pb];
  ld.param.u64 %rd2, [pc];
  ld.param.u64 %rd3, [pd];
  mov.u32 %r0, %ctaid.x;
  mul.wide.u32 %rd4, %r0, {m * k * 2};
  add.s64 %rd4, %rd0, %rd4;
  mul.wide.u32 %rd5, %r0, {k * n * 2};
  add.s64 %rd5, %rd1, %rd5;
  mul.wide.u32 %rd6, %r0, {m * n * cbytes};
  add.s64 %rd7, %rd2, %rd6;
  add.s64 %rd8, %rd3, %rd6;
  wmma.load.a.sync.aligned.row.{shape}.global.{ta} {{{ra}}}, [%rd4];
  wmma.load.b.sync.aligned.col.{shape}.global.{ta} {{{rb}}}, [%rd5];
  wmma.load.c.sync.aligned.row.{shape}.global.{tc} {{{rc}}}, [%rd7];
  wmma.mma.sync.aligned.row.col.{shape}.{mma} {{{rd}}}, {{{ra}}}, {{{rb}}}, {{{rc}}};
  wmma.store.d.sync.aligned.row.{shape}.global.{tc} [%rd8], {{{rd}}};
  ret;
}}
"""


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    from ... import ptx   # the interpreter: imported here only, the layouts need none of it
    meta, cols = trace.meta, trace.columns
    at = 0
    for shape, frag, t, order in _layouts(meta):
        per = count(frag, shape, t)
        hw = cols["layout"][at:at + 32 * per].reshape(32, per).astype(np.int64)
        at += 32 * per
        m, n, k = SHAPES[shape]
        rows, cols_ = {"a": (m, k), "b": (k, n), "c": (m, n)}[frag]
        r, c = coords(frag, shape, t)
        ours = r * cols_ + c if order == "row" else c * rows + r
        same = ours == hw
        g = result.groups.setdefault(f"layout {shape} {frag} .{t}", GroupResult())
        g.cases += 1
        g.values += same.size
        g.values_matched += int(same.sum())
        g.cases_matched += bool(same.all())
        if not same.all() and len(result.mismatches) < max_report:
            lane, e = (int(x) for x in np.argwhere(~same)[0])
            result.mismatches.append(f"layout {shape} {frag} .{t} .{order}: lane {lane} element {e}: tcemu "
                                     f"{int(ours[lane, e])}, hardware {int(hw[lane, e])}")
    cases = meta["cases"]
    ia = ib = ic = 0
    for shape, m, n, k, ta, tc in _configs(meta):
        a = cols["a"][ia:ia + cases * m * k].astype(np.uint16)
        b = cols["b"][ib:ib + cases * k * n].astype(np.uint16)
        wide = np.uint32 if tc == "f32" else np.uint16
        c = cols["c"][ic:ic + cases * m * n].astype(wide)
        hw = cols["d"][ic:ic + cases * m * n].astype(wide)
        ia, ib, ic = ia + a.size, ib + b.size, ic + c.size
        d = np.zeros_like(c)
        ptx.load(_kernel(shape, ta, tc)).launch("w", grid=cases, block=32, args=[a, b, c, d])
        same = (d == hw).reshape(cases, -1)
        g = result.groups.setdefault(f"mma {shape} .{ta} -> .{tc}", GroupResult())
        g.cases += cases
        g.values += same.size
        g.values_matched += int(same.sum())
        g.cases_matched += int(same.all(axis=1).sum())
        if not same.all() and len(result.mismatches) < max_report:
            i, j = (int(x) for x in np.argwhere(~same)[0])
            result.mismatches.append(f"mma {shape} .{ta} -> .{tc} case {i}, D element {j}: tcemu "
                                     f"{int(d.reshape(cases, -1)[i, j]):#x}, hardware "
                                     f"{int(hw.reshape(cases, -1)[i, j]):#x}")


TRACE_KINDS = (Kind("wmma", ("layout", "a", "b", "c", "d"), _check, _replay),)
