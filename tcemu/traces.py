"""Hardware traces: read them (never executing anything in them) and replay them against tcemu.

A trace is a NumPy .npz archive read with allow_pickle=False. Its `meta` member is UTF-8 JSON
(bytes as uint8) naming the format ("tcemu-trace"), version, kind, arch and provenance; the other
members are plain numeric columns documented in meta["columns"] and traces/README.md.
"""
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from .addressing import operand_addresses
from .descriptors import GmmaDescriptor
from .errors import TcemuError, TraceError
from .smem import SharedMemory

FORMAT, VERSION = "tcemu-trace", 1


@dataclass
class Trace:
    path: str
    meta: dict
    columns: Dict[str, np.ndarray]

    @property
    def kind(self) -> str:
        return self.meta["kind"]


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
             "gemm_outputs": ("seed", "status", "m", "n", "k", "stored_rows", "offsets", "bits", "digest_offsets",
                              "row_digests")}

# The record layout of scripts/capture_tma.py (CASE_DTYPE), field for field.
TMA_CASE = np.dtype([("dtype", "<i4"), ("rank", "<i4"), ("swizzle", "<i4"), ("dst", "<i4"), ("gaddr", "<i8"),
                     ("gdim", "<i8", 5), ("gstride", "<i8", 4), ("box", "<i4", 5), ("estride", "<i4", 5),
                     ("coord", "<i4", 5), ("pad", "<i4")])


def load_trace(path: str) -> Trace:
    try:
        with np.load(path, allow_pickle=False) as z:
            columns = {name: z[name] for name in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise TraceError(os.path.basename(path), f"not a readable .npz archive ({e})") from None
    if "meta" not in columns or columns["meta"].dtype != np.uint8:
        raise TraceError("meta", f"{path}: missing, or not UTF-8 JSON bytes")
    try:
        meta = json.loads(columns.pop("meta").tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TraceError("meta", f"{path}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise TraceError("meta.format", f"{path}: expected format {FORMAT!r} version {VERSION}")
    missing = [c for c in _REQUIRED.get(meta.get("kind"), ()) if c not in columns]
    if meta.get("kind") not in _REQUIRED or missing:
        raise TraceError("meta.kind" if not missing else ", ".join(missing),
                         f"{path}: unknown kind {meta.get('kind')!r}" if not missing else f"{path}: columns missing")
    return Trace(path, meta, columns)


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
    from .fragments import to_d_registers
    from .hopper import K_OF, OUT_NUMPY, wgmma
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
    from .banks import parse_op, wavefronts_batch
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
    from .tma import capture_global_bytes, capture_prefill, tensor_view, tma_load
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
    from .fragments import a_coords
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
    from .fragments import from_a_registers, to_d_registers
    from .sparse import SP_K_OF, meta_nibbles, sparse_dot
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
    from .fragments import to_d_registers
    from .hopper import OUT_NUMPY
    from .sparse import SP_K_OF, wgmma_sp
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
    from .ptx.alu_trace import replay_alu_columns
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


def _replay_kernels(trace: Trace, result: ReplayResult, max_report: int):
    """Whole kernels: each captured launch rerun on the PTX interpreter, every output byte compared."""
    from .ptx.replay import fixture_from_trace, replay_case
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
    for i, case in enumerate(cases):
        if int(cols["status"][i]) != 0:
            result.notes.append(f"case {i} ({case.get('fixture')}): not captured ({case.get('status')})")
            continue
        name = case["fixture"]
        if name not in mods:
            mods[name] = fixture_from_trace(_Z(), name)
        module, fixture = mods[name]
        hw = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
        try:
            got = replay_case(module, fixture, case)
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
                result.mismatches.append(f"case {i} {name} {case.get('M')}x{case.get('N')}x{case.get('K')}: "
                                         f"{hw.size - same} of {hw.size} output bytes differ")


def _replay_gemm(trace: Trace, result: ReplayResult, max_report: int):
    """cuBLAS GEMMs (gemm_outputs) through tcemu.matmul; the model of each case comes from its record
    (tcemu/gemm_trace.py), and cases it does not claim are noted, not judged."""
    from .gemm_trace import case_model, compare, run_case
    cols = trace.columns
    cases = trace.meta.get("cases")
    if not isinstance(cases, list) or len(cases) != cols["status"].size:
        raise TraceError("meta.cases", f"{trace.path}: one case record per status entry expected")
    for i, case in enumerate(cases):
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
        rows_eq, same, stored, rows = compare(cols, i, case, run_case(case, kw))
        g = result.groups.setdefault(name, GroupResult())
        g.cases += 1
        g.values += rows + stored
        g.values_matched += rows_eq + same
        g.cases_matched += rows_eq == rows and same == stored
        if (rows_eq != rows or same != stored) and len(result.mismatches) < max_report:
            result.mismatches.append(f"{label}: {rows - rows_eq} of {rows} row digests and {stored - same} of "
                                     f"{stored} stored outputs differ")


_REPLAYERS = {"ptx_alu": _replay_ptx_alu, "kernel_outputs": _replay_kernels, "gemm_outputs": _replay_gemm,
              "wgmma_operand_addresses": _replay_addresses, "wgmma_numerics": _replay_numerics,
              "smem_wavefronts": _replay_wavefronts, "tma_tile_loads": _replay_tma,
              "wgmma_sp_operand_addresses": _replay_sp_addresses, "wgmma_sp_metadata": _replay_sp_metadata,
              "wgmma_sp_numerics": _replay_sp_numerics}


def replay(trace, max_report: int = 10) -> ReplayResult:
    trace = trace if isinstance(trace, Trace) else load_trace(trace)
    result = ReplayResult(trace)
    _REPLAYERS[trace.kind](trace, result, max_report)
    return result


def trace_paths(paths) -> List[str]:
    """Expand directories to the .npz traces inside them, sorted."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".npz"))
        else:
            out.append(p)
    return out
