"""Writer versus reader: does a descriptor read the elements the writer (TMA, stores) put there?

`written` is a (rows, k) integer array: the absolute shared address where the writer put element
(row, k) of the operand (row = M for A, N for B), for example tma.tma_placement(tcemu.tma_load(...)).
fp4 / fp6 placements follow dtypes' packed / padded rule: a packed e2m1 element's address is the byte that
holds it, a padded one's its 8-bit slot (what TMA's 16U4_ALIGN8B and 16U4_ALIGN16B loads return). With e2m1
named but neither `padded` nor the instruction given, the form is read from the placement itself: two K
neighbours sharing each byte is packed, one byte per element is padded (DeepGEMM's sm100 fp8 x fp4 kernel loads
its fp4 operand padded, 16U4_ALIGN16B, for kind::mxf8f6f4); the report says which form it took and why.

check_operand checks one instruction's K slice; check_tile checks the whole tile against the sequence of
descriptors a kernel issues over K, and says which K block's data each instruction read.
"""
from dataclasses import dataclass, field, replace
from itertools import product
from typing import List, Optional

import numpy as np

from ..layout.addressing import operand_addresses
from ..core.arch import check_arch, is_blackwell
from ..layout.descriptors import (SM90_SWIZZLES, SM100_SWIZZLES, GmmaDescriptor, SwizzleMode, UmmaDescriptor,
                                  as_arch_descriptor)
from ..arith.dtypes import (FP4_FP6, OPERAND_DTYPES, PACKED_KINDS, PADDED_KINDS, element_type, form_text, is_padded,
                            parse_major, placement_dtype)
from ..core.errors import LayoutError, TcemuError
from .operand import instruction_k, operand_spec
from ..core.validate import as_array, as_bool, as_int, as_int_array, show


@dataclass
class CheckReport:
    desc: GmmaDescriptor
    operand: str
    total: int
    wrong: int
    lines: List[str] = field(default_factory=list)  # the first mismatches, in words, then hints

    @property
    def ok(self) -> bool:
        return self.wrong == 0

    def __str__(self) -> str:
        head = (f"{self.desc}: all {self.total} elements of {self.operand} read as written" if self.ok else
                f"{self.desc}: {self.wrong} of {self.total} elements of {self.operand} are read from the wrong place")
        return "\n".join([head] + self.lines)


def _written(written) -> np.ndarray:
    w = as_array(written, "written", LayoutError)
    if w.ndim != 2 or w.dtype.kind not in "iu" or not w.size:
        raise LayoutError("written", f"must be a (rows, k) integer array of addresses, not empty, got {w.dtype} "
                                     f"{w.shape}")
    return as_int_array(w, "written", 0, 1 << 40, LayoutError)


@dataclass(frozen=True)
class _Operand:
    """What the checks need to know of the operand (given directly, or read from an instruction descriptor)."""
    name: str
    dtype: str      # the value type, as the caller named it
    padded: bool
    major: str
    arch: str
    k: Optional[int] = None         # one instruction's K (None: the caller's k / written's width)
    rows: Optional[int] = None      # this CTA's rows (instruction given)
    cta_group: int = 1
    spec: object = None

    @property
    def addressing(self) -> str:  # the element type whose addressing gives the placement
        return placement_dtype(self.dtype, self.padded, major=self.major)

    @property
    def label(self) -> str:
        return form_text(self.dtype, self.padded)


def _operand(dtype, major, operand, arch, padded, instr, kind, cta_group) -> _Operand:
    if instr is not None:
        spec = operand_spec(instr, kind=kind, operand=operand, cta_group=cta_group)
        if dtype is not None and dtype != spec.dtype:
            raise LayoutError("dtype", f"{show(dtype)} disagrees with the instruction's {spec.name} type {spec.dtype}")
        if padded is not None and as_bool(padded, "padded", LayoutError) != spec.padded:
            is_padded(spec.dtype, padded, kind=spec.instr.kind)  # raises, naming the kind's form
        return _Operand(spec.name, spec.dtype, spec.padded, spec.major, "sm100", spec.k, spec.rows, spec.cta_group,
                        spec)
    if dtype is None:
        raise LayoutError("dtype", "name the operand's type (dtype=...) or give the instruction descriptor (instr=...)")
    if cta_group not in (None, 1):
        raise LayoutError("cta_group", "the CTA pair needs the instruction descriptor (instr=...)")
    arch = check_arch(arch)
    element_type(dtype, allowed=OPERAND_DTYPES[arch])
    if not isinstance(operand, str) or not operand or len(operand) > 8:
        raise LayoutError("operand", f"a short operand name such as 'A' or 'B', got {show(operand)}")
    return _Operand(operand, dtype, is_padded(dtype, padded), major, arch)


def written_form(w: np.ndarray):
    """How fp4 values were written, read from their addresses: "packed" when K neighbours 2j, 2j + 1 share every
    byte, "padded" when every element has a byte of its own, None when the placement cannot tell."""
    if w.ndim != 2 or w.shape[1] < 2:
        return None
    if w.shape[1] % 2 == 0 and np.array_equal(w[:, 0::2], w[:, 1::2]):
        return "packed"
    if np.unique(w).size == w.size:
        return "padded"
    return None


def _form_from_placement(w, op: _Operand, padded):
    """(operand, note): e2m1 without `padded` or an instruction takes the form its placement shows (a note says
    so when that is the padded form, not the default packed one)."""
    if padded is not None or op.spec is not None or FP4_FP6.get(op.dtype) != 4 or not parse_major(op.major):
        return op, None
    if written_form(w) != "padded" or op.padded:
        return op, None
    note = (f"note: {op.dtype} read padded, as the placement shows: one byte per element (16 values then padding "
            f"per 16 bytes, as TMA's 16U4_ALIGN16B writes it for {' / '.join('kind::' + k for k in PADDED_KINDS)}); "
            "say so with padded=True or the instruction (instr=)")
    return replace(op, padded=True), note


def _kinds_hint(padded: bool) -> str:
    kinds = PADDED_KINDS if padded else PACKED_KINDS
    return f", or with the instruction (instr=: {' and '.join('.kind::' + k for k in kinds)} read it so)"


def _holders(w: np.ndarray):
    """address -> (row, k) of the first element the writer put there."""
    holder = {}
    for (r, c), a in np.ndenumerate(w):
        holder.setdefault(int(a), (r, c))
    return holder


def _compare(w, read, op: _Operand, desc, max_lines, row0=0, where=""):
    holder = _holders(w)
    bad = np.argwhere(read != w)
    lines = []
    for r, c in bad[:max_lines]:
        a = int(read[r, c])
        what = (f"which holds {op.name}[{holder[a][0] + row0}, {holder[a][1]}]" if a in holder
                else "which the writer never wrote")
        lines.append(f"{op.name}[{r + row0}, {c}]{where} read from {a:#x}, {what}")
    return len(bad), lines


def check_operand(written, desc, *, dtype: Optional[str] = None, major: str = "K", operand: str = "A",
                  max_lines: int = 8, arch: str = "sm90", padded=None, instr=None, kind=None,
                  cta_group=None) -> CheckReport:
    """Compare where the writer put every element with where the descriptor reads it.

    padded: fp4 / fp6 form (dtypes' rule; None: the usual one). instr (an InstrDescriptor, or its value with
    kind=): take the operand's type, form, major-ness and K from the instruction (operand 'A' or 'B'); with
    cta_group::2 `written` is one CTA's placement (M / 2 rows of A, N / 2 of B) or both CTAs' stacked (each
    half checked in its own CTA's shared memory)."""
    max_lines = as_int(max_lines, "max_lines", 0, 1 << 16, LayoutError)
    w = _written(written)
    op = _operand(dtype, major, operand, arch, padded, instr, kind, cta_group)
    op, note = _form_from_placement(w, op, padded)
    desc = as_arch_descriptor(desc, op.arch)
    rows, k = w.shape
    if op.rows is not None:
        if k != op.k:
            raise LayoutError("written", f"{k} columns, but one .kind::{op.spec.instr.kind} instruction reads K = "
                                         f"{op.k} of {op.name} (use check_tile for a whole tile)")
        if rows not in (op.rows, op.rows * op.cta_group):
            pair = (f" (cta_group::2: {op.rows} per CTA, or {op.rows * 2} for both CTAs stacked)"
                    if op.cta_group == 2 else "")
            raise LayoutError("written", f"{rows} rows, but this instruction's {op.name} has {op.rows}{pair}")
    parts = [(w, 0, "")]
    if op.cta_group == 2 and rows == 2 * op.rows:
        parts = [(w[:op.rows], 0, " (CTA 0)"), (w[op.rows:], op.rows, " (CTA 1)")]
    wrong, lines = 0, []
    for part, row0, where in parts:
        read = operand_addresses(desc, rows=part.shape[0], k=k, dtype=op.addressing, major=op.major, arch=op.arch)
        n, more = _compare(part, read, op, desc, max_lines - len(lines), row0, where)
        wrong, lines = wrong + n, lines + more
    report = CheckReport(desc, op.name, w.size, wrong, lines)
    if wrong:
        report.lines += _hints(w if len(parts) == 1 else parts[0][0], desc, op)
    if note:
        report.lines.insert(0, note)
    return report


def _hints(w, desc, op: _Operand) -> List[str]:
    """Why the descriptor misreads the placement, where one simple slip explains it: the other fp4 form, or a
    descriptor that differs from the one that reads the placement exactly by a unit, a swap or a shift."""
    out = []
    if op.dtype in FP4_FP6 and FP4_FP6[op.dtype] == 4 and op.spec is None:
        other = replace(op, padded=not op.padded)
        try:
            read = operand_addresses(desc, rows=w.shape[0], k=w.shape[1], dtype=other.addressing, major=op.major,
                                     arch=op.arch)
        except TcemuError:
            read = None
        if read is not None and np.array_equal(read, w):
            how = ("16 values then padding per 16 bytes, as TMA's 16U4_ALIGN16B writes it for kind::f8f6f4"
                   if other.padded else "two values per byte, as TMA's 16U4_ALIGN8B writes it for kind::mxf4*")
            out.append(f"hint: the placement is {other.label} ({how}); this descriptor reads it exactly with "
                       f"padded={other.padded}{_kinds_hint(other.padded)}")
            return out
    try:
        want = _suggest(w, op)
    except LayoutError:
        return out
    return out + [f"hint: {text}" for text in diagnose(desc, want, op.major)]


def diagnose(desc, want, major: str = "K") -> List[str]:
    """The slips that turn descriptor `want` (which reads the placement) into `desc`, in words: a field in bytes
    not 16-byte units (16x), shifted twice (1/16), LBO and SBO swapped, the start shifted twice, the base offset."""
    out = []
    lbo_used = not (parse_major(major) and desc.swizzle is not SwizzleMode.NONE)
    # a swizzled K-major `want` with LBO other than suggest's 16 spans more than one swizzled row (sparse B)
    wide = parse_major(major) and want.swizzle is not SwizzleMode.NONE and want.lbo != 16
    if wide and desc.lbo != want.lbo:
        out.append(f"LBO {desc.lbo:#x}: K spans more than one {want.swizzle.value}-swizzled row, so LBO places the "
                   f"next atom column; this placement needs {want.lbo:#x}")
    for name in ("lbo", "sbo") if lbo_used and not wide else ("sbo",):
        have, need = getattr(desc, name), getattr(want, name)
        if have == need or not need:
            continue
        if have == 16 * need:
            out.append(f"{name.upper()} {have:#x} is 16x the {need:#x} this placement needs: a byte count written "
                       "into the field without the >> 4?")
        elif have * 16 == need:
            out.append(f"{name.upper()} {have:#x} is 1/16 of the {need:#x} this placement needs: shifted twice?")
        elif (desc.lbo, desc.sbo) != (want.sbo, want.lbo):  # (a swap is named below)
            out.append(f"{name.upper()} {have:#x}: this placement needs {need:#x}")
    if lbo_used and (desc.lbo, desc.sbo) == (want.sbo, want.lbo) and desc.lbo != desc.sbo:
        out.append(f"LBO and SBO are swapped: this placement needs LBO {want.lbo:#x}, SBO {want.sbo:#x}")
    if desc.start_address != want.start_address:
        if desc.start_address * 16 == want.start_address:
            out.append(f"start address {desc.start_address:#x} is 1/16 of {want.start_address:#x}: shifted twice?")
        elif desc.swizzle == want.swizzle and (desc.lbo, desc.sbo) == (want.lbo, want.sbo):
            out.append(f"start address {desc.start_address:#x}: this placement starts at {want.start_address:#x} "
                       f"({desc.start_address - want.start_address:+d} bytes)")
    if desc.swizzle != want.swizzle:
        out.append(f"swizzle {desc.swizzle.value}: the writer's placement is {want.swizzle.value}")
    elif desc.base_offset != want.base_offset and desc.swizzle is not SwizzleMode.NONE:
        out.append(f"base offset {desc.base_offset}: this placement needs {want.base_offset}")
    return out


def suggest_descriptor(written, *, dtype: Optional[str] = None, major: str = "K", arch: str = "sm90", padded=None,
                       instr=None, kind=None, operand: str = "A", cta_group=None) -> Optional[GmmaDescriptor]:
    """A descriptor (GmmaDescriptor; UmmaDescriptor on sm100) that reads every element exactly where `written`
    puts it, or LayoutError saying why none exists (the closest candidate and what it gets wrong).

    padded, instr, kind, operand, cta_group: as for check_operand (with instr, `written` is one CTA's
    placement)."""
    w = _written(written)
    op = _operand(dtype, major, operand, arch, padded, instr, kind, cta_group)
    op, _ = _form_from_placement(w, op, padded)
    try:
        return _suggest(w, op)
    except LayoutError as e:
        if op.dtype in FP4_FP6 and FP4_FP6[op.dtype] == 4 and op.spec is None:
            other = replace(op, padded=not op.padded)
            try:
                found = _suggest(w, other)
            except LayoutError:
                raise e from None
            raise LayoutError("written", f"no {op.label} layout reads this placement, but it is {other.label}: "
                                         f"suggest_descriptor(..., padded={other.padded}) gives {found}") from None
        raise


def _suggest(w, op: _Operand):
    rows, k = w.shape
    arch, dtype = op.arch, op.addressing
    etype = element_type(dtype, allowed=OPERAND_DTYPES[arch])
    k_major = parse_major(op.major)
    T = etype.per_chunk
    best, best_wrong = None, w.size + 1
    make = (lambda *f: UmmaDescriptor(*f, version=1)) if is_blackwell(arch) else GmmaDescriptor
    for mode, b0 in product(SM100_SWIZZLES if is_blackwell(arch) else SM90_SWIZZLES, range(8)):
        if (mode is SwizzleMode.NONE and b0) or (mode is SwizzleMode.B128_BASE32B and k_major):
            continue
        sw = mode.swizzle
        atom_rows = 1 << sw.shift  # K rows of an MN-major atom: 8, or 4 for 128B_base32B
        hi = sw.base + sw.shift    # the swizzle is an involution: apply it again to undo it
        unswz = w ^ (((((w >> hi) - b0) & ((1 << sw.bits) - 1)) << sw.base) if sw.bits else 0)
        start = int(unswz[0, 0])
        # strides from the unswizzled placement (K-major: rows 8 apart, K chunks; MN-major: the other way)
        if k_major:
            sbo = int(unswz[8, 0] - start) if rows > 8 else 0
            row_k = T * (mode.bytes // 16)  # K elements one swizzled row holds
            lbo = int(unswz[0, T] - start) if (mode is SwizzleMode.NONE and k > T) else \
                int(unswz[0, row_k] - start) if k > row_k else 16  # sparse B: next atom column
        else:
            per = T * (mode.bytes // 16)
            sbo = (int(unswz[T, 0] - start) if rows > T else 0) if mode is SwizzleMode.NONE else \
                (int(unswz[0, atom_rows] - start) if k > atom_rows else 0)
            lbo = (int(unswz[0, 8] - start) if k > 8 else 0) if mode is SwizzleMode.NONE else \
                (int(unswz[per, 0] - start) if rows > per else 0)
        try:
            cand = make(start, lbo, sbo, b0, mode)
            got = operand_addresses(cand, rows=rows, k=k, dtype=dtype, major=op.major, arch=arch)
        except TcemuError:
            continue
        wrong = int(np.count_nonzero(got != w))
        if wrong == 0:
            return cand
        if wrong < best_wrong:
            best, best_wrong = cand, wrong
    if best is None:
        raise LayoutError("written", "no descriptor of any swizzle mode can even be formed for this placement")
    read = operand_addresses(best, rows=rows, k=k, dtype=dtype, major=op.major, arch=arch)
    n, lines = _compare(w, read, op, best, 3)
    report = CheckReport(best, op.name, w.size, n, lines)
    raise LayoutError("written", f"no canonical {'K' if k_major else 'MN'}-major layout reads this placement; "
                                 f"closest: {report}")


# ---- whole-tile mode ---------------------------------------------------------------------------------------

@dataclass
class BlockReport:
    index: int             # K block, in issue order
    desc: GmmaDescriptor
    ok: bool
    read_block: Optional[int]  # the K block whose data this instruction read whole, if one
    text: str
    lines: List[str] = field(default_factory=list)


@dataclass
class TileReport:
    operand: str
    blocks: List[BlockReport]
    advance: Optional[int]           # the start advance per K block the descriptors show, if constant
    expected_advance: Optional[int]  # the one the writer's placement needs, if constant
    notes: List[str] = field(default_factory=list)  # how the operand was read (fp4 form from the placement)

    @property
    def ok(self) -> bool:
        return all(b.ok for b in self.blocks)

    def __str__(self) -> str:
        good = sum(b.ok for b in self.blocks)
        head = (f"all {len(self.blocks)} K blocks of {self.operand} read as written" if self.ok else
                f"{len(self.blocks) - good} of {len(self.blocks)} K blocks of {self.operand} read the wrong data")
        out = [head] + self.notes
        for b in self.blocks:
            out.append(b.text)
            out += ["  " + line for line in b.lines]
        return "\n".join(out)


def k_block_descriptors(desc, blocks: int, start_advance: int, *, arch: str = "sm90") -> list:
    """The descriptors a kernel issues for K blocks 0..blocks-1 when it adds `start_advance` bytes to the start
    address per block (DeepGEMM's advance_umma_desc_lo, CUTLASS's descriptor iterator, ...)."""
    desc = as_arch_descriptor(desc, check_arch(arch))
    blocks = as_int(blocks, "blocks", 1, 1 << 12, LayoutError)  # at least one K block
    start_advance = as_int(start_advance, "start_advance", -(1 << 18), 1 << 18, LayoutError)
    return [replace(desc, start_address=desc.start_address + int(i) * int(start_advance)) for i in range(int(blocks))]


def check_tile(written, descs, *, dtype: Optional[str] = None, major: str = "K", operand: str = "A",
               arch: str = "sm90", padded=None, k=None, start_advance=None, instr=None, kind=None, cta_group=None,
               max_lines: int = 3) -> TileReport:
    """Check a whole tile: `written` (rows, tile K) is where the writer put every element of this CTA's tile;
    `descs` the descriptors the kernel issues over K, one per K block in order (or one descriptor with
    `start_advance`, the bytes the kernel adds to the start per block). Each instruction reads `k` columns (one
    instruction's K by default); the report says, per K block, whether it read its own columns and, if not,
    whose data it read ("K block 2 read the data of K block 1"), and the start advance the placement needs."""
    max_lines = as_int(max_lines, "max_lines", 0, 1 << 16, LayoutError)
    w = _written(written)
    op = _operand(dtype, major, operand, arch, padded, instr, kind, cta_group)
    op, note = _form_from_placement(w, op, padded)
    rows, tile_k = w.shape
    if op.rows is not None and rows != op.rows:
        raise LayoutError("written", f"{rows} rows, but each CTA holds {op.rows} of {op.name}"
                                     + (" (cta_group::2: check each CTA's tile)" if op.cta_group == 2 else ""))
    if k is None:
        k = op.k if op.k is not None else _instruction_k(op)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0 or tile_k % k:
        raise LayoutError("k", f"{show(k)}: the tile's {tile_k} columns must split into K blocks of k columns")
    k = int(k)
    nblocks = tile_k // k
    if start_advance is not None:
        if isinstance(descs, (list, tuple)):
            raise LayoutError("start_advance", "give one descriptor with start_advance, or the list of descriptors")
        descs = k_block_descriptors(descs, nblocks, start_advance, arch=op.arch)
    else:
        descs = [as_arch_descriptor(d, op.arch) for d in (descs if isinstance(descs, (list, tuple)) else [descs])]
    if len(descs) != nblocks:
        raise LayoutError("descs", f"{len(descs)} descriptors for {nblocks} K blocks of {k} columns")
    holder = _holders(w)
    wanted = []
    for kb in range(nblocks):
        try:
            wanted.append(_suggest(w[:, kb * k:(kb + 1) * k], op))
        except LayoutError:
            wanted.append(None)
    advance = _constant([d.start_address for d in descs])
    expected = _constant([d.start_address for d in wanted]) if None not in wanted else None
    if expected is not None and any((d.lbo, d.sbo, d.swizzle, d.base_offset) !=
                                    (wanted[0].lbo, wanted[0].sbo, wanted[0].swizzle, wanted[0].base_offset)
                                    for d in wanted):
        expected = None
    blocks = []
    for kb, desc in enumerate(descs):
        cols = slice(kb * k, (kb + 1) * k)
        try:
            read = operand_addresses(desc, rows=rows, k=k, dtype=op.addressing, major=op.major, arch=op.arch)
        except TcemuError as e:
            blocks.append(BlockReport(kb, desc, False, None, f"K block {kb}: {desc} cannot be read: {e}"))
            continue
        if np.array_equal(read, w[:, cols]):
            blocks.append(BlockReport(kb, desc, True, kb, f"K block {kb}: reads tile columns {kb * k}-{kb * k + k - 1}"))
            continue
        blocks.append(_describe_block(kb, desc, read, w, holder, k, op, advance, expected, wanted[kb], max_lines))
    return TileReport(op.name, blocks, advance, expected, [note] if note else [])


def _constant(values):
    steps = {b - a for a, b in zip(values, values[1:])}
    return steps.pop() if len(steps) == 1 else (0 if len(values) == 1 else None)


def _instruction_k(op: _Operand) -> int:
    return instruction_k(op.dtype, op.arch, padded=op.padded)


def _describe_block(kb, desc, read, w, holder, k, op, advance, expected, want, max_lines) -> BlockReport:
    rows = w.shape[0]
    held = np.full(read.shape + (2,), -1)
    for (r, c), a in np.ndenumerate(read):
        if int(a) in holder:
            held[r, c] = holder[int(a)]
    unwritten = int(np.count_nonzero(held[..., 0] < 0))
    same_rows = unwritten == 0 and np.array_equal(held[..., 0], np.broadcast_to(np.arange(rows)[:, None], read.shape))
    shift = held[..., 1] - (kb * k + np.arange(k))[None, :]
    why = ""
    if advance is not None and expected is not None and advance != expected:
        why = f" (start advanced {advance} bytes per block, expected {expected})"
    elif want is not None and desc.start_address != want.start_address:
        why = f" (start {desc.start_address:#x}, expected {want.start_address:#x})"
    if same_rows and np.all(shift == shift.flat[0]):
        delta = int(shift.flat[0])
        if delta % k == 0:
            other = kb + delta // k
            return BlockReport(kb, desc, False, other, f"K block {kb} read the data of K block {other}{why}")
        lo = kb * k + delta
        return BlockReport(kb, desc, False, None,
                           f"K block {kb} read tile columns {lo}-{lo + k - 1} (expected {kb * k}-{kb * k + k - 1}: "
                           f"the data of K blocks {lo // k} and {(lo + k - 1) // k}){why}")
    blocks = sorted({int(c) // k for c in held[..., 1][held[..., 0] >= 0].ravel()})
    parts = []
    if unwritten:
        parts.append(f"{unwritten} elements from bytes the writer never wrote")
    if blocks:
        parts.append(("the rest " if unwritten else "") + "from K block" + ("s " if len(blocks) > 1 else " ")
                     + ", ".join(map(str, blocks)))
    text = f"K block {kb} read {int(np.count_nonzero(read != w[:, kb * k:(kb + 1) * k]))} of {read.size} elements " \
           f"from the wrong place: {'; '.join(parts)}{why}"
    lines = []
    for r, c in np.argwhere(read != w[:, kb * k:(kb + 1) * k])[:max_lines]:
        a = int(read[r, c])
        what = (f"which holds {op.name}[{holder[a][0]}, {holder[a][1]}]" if a in holder
                else "which the writer never wrote")
        lines.append(f"{op.name}[{r}, {kb * k + c}] read from {a:#x}, {what}")
    if want is not None:
        lines += [f"hint: {t}" for t in diagnose(desc, want, op.major)]
    return BlockReport(kb, desc, False, None, text, lines)
