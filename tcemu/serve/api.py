"""The views of `tcemu serve` as functions: request fields in, a JSON-ready dict out (the API is documented in
tcemu/serve/__init__.py). Each one only calls tcemu's own models; nothing here computes a layout itself
except where it says which model's rule it restates (and tests/test_serve_api.py checks it against that model).
"""
from contextlib import contextmanager

import numpy as np

from ..layout.addressing import canonical_layout, core_matrix_rows, operand_addresses
from ..core.arch import ARCHES, BLACKWELL
from ..layout.banks import bank_conflicts, parse_op, pattern_from_descriptor, pattern_from_expression
from ..blackwell.mma import K_OF_KIND, block_size, check_form
from ..tools.check import suggest_descriptor
from ..layout.descriptors import GmmaDescriptor, SwizzleMode, UmmaDescriptor, as_arch_descriptor
from ..arith.dtypes import OPERAND_DTYPES, element_type
from ..core.errors import TcemuError, TmemError
from ..tools.commands import findings_of
from ..tools.explain import describe_instruction, explain, instruction_k
from ..blackwell.instr import BLOCK_SCALED, D_CODES, KINDS, SCALE_CODES, TYPE_CODES, InstrDescriptor, instr_value
from ..layout.tma import SM100_TMA_SWIZZLES, plan_tile
from ..blackwell.tmem import COLUMNS, LANES, TensorMemory, d_cells, row_lanes, split_address
from .params import REQUIRED, Params, ServeError

MAX_ELEMENTS = 1 << 16      # a 256 x 256 operand
MAX_TENSOR_BYTES = 1 << 26  # the TMA view's global tensor (allocated lazily: only the box is read)


@contextmanager
def renamed(names):
    """Re-raise a TcemuError whose field is a model's parameter under the name of the form field it came from."""
    try:
        yield
    except TcemuError as e:
        if e.field in names:
            raise type(e)(names[e.field], e.rule) from None
        raise


def _hex(v: int, width: int = 0) -> str:
    return f"{int(v):#0{width + 2}x}" if width else f"{int(v):#x}"


def _desc_fields(desc) -> dict:
    out = {"start_address": desc.start_address, "lbo": desc.lbo, "sbo": desc.sbo, "base_offset": desc.base_offset,
           "swizzle": desc.swizzle.value, "reserved_bits": desc.reserved_bits}
    if isinstance(desc, UmmaDescriptor):
        out.update(version=desc.version, lbo_mode=desc.lbo_mode)
    return out


# ---- descriptor: the operand's shared-memory map, with tcemu explain's text and lints ----------------------

DESCRIPTOR_FIELDS = ("arch", "input", "descriptor", "start_address", "lbo", "sbo", "base_offset", "swizzle", "version",
                     "lbo_mode", "dtype", "major", "rows", "k", "instr", "kind", "operand", "sparse", "element")


def descriptor_view(raw) -> dict:
    p = Params(raw, DESCRIPTOR_FIELDS)
    arch = p.choice("arch", ARCHES, "sm90")
    instr = p.text("instr", None, max_len=20)
    kind = p.choice("kind", KINDS, None)
    operand = p.choice("operand", ("a", "b"), "a")
    sparse = p.flag("sparse")
    if instr is not None and arch not in BLACKWELL:
        raise ServeError("instr", "a tcgen05 instruction descriptor goes with arch sm100 or sm103")
    if p.choice("input", ("hex", "fields"), "hex") == "hex":
        desc = as_arch_descriptor(p.text("descriptor", REQUIRED, max_len=40), arch)
    else:
        cls = UmmaDescriptor if arch in BLACKWELL else GmmaDescriptor
        kw = {name: p.integer(name, 0, lo=0, hi=1 << 40) for name in ("start_address", "lbo", "sbo", "base_offset")}
        kw["swizzle"] = p.text("swizzle", "none", max_len=20)
        if arch in BLACKWELL:
            kw.update(version=p.integer("version", 1, lo=0, hi=3), lbo_mode=p.integer("lbo_mode", 0, lo=0, hi=1))
        desc = cls(**kw)
    value = desc.encode()
    dtype = p.text("dtype", "bf16", max_len=8)
    major = p.choice("major", ("K", "MN"), "K")
    rows = p.integer("rows", 64, lo=1, hi=1024)
    k = p.integer("k", None, lo=1, hi=1024)
    asked = dict(dtype=dtype, major=major, rows=rows, k=k)
    # the operand explain() reads (its rules: an instruction descriptor sets type, major-ness and extent)
    if instr is not None:
        d = InstrDescriptor.decode(instr, kind)
        dtype, mn = (d.dtype_a, d.transpose_a) if operand == "a" else (d.dtype_b, d.transpose_b)
        major, rows, k = ("MN" if mn else "K"), (d.m if operand == "a" else d.n), K_OF_KIND[d.kind]
        if dtype == "e2m1" and d.kind in ("f8f6f4", "mxf8f6f4"):
            dtype = "u8"
    etype = element_type(dtype, allowed=OPERAND_DTYPES[arch])
    if sparse:
        k = k or instruction_k(etype.name, arch, sparse=True, operand=operand)
    k = k or instruction_k(etype.name, arch)
    if rows * k > MAX_ELEMENTS:
        raise ServeError("rows", f"{rows} x {k} = {rows * k} elements; the page draws at most {MAX_ELEMENTS} "
                                 "(256 x 256)")
    text = explain(value, arch=arch, instr=instr, kind=kind, operand=operand, sparse=sparse, **asked)
    out = {"view": "descriptor", "arch": arch, "descriptor": _hex(value, 16), "fields": _desc_fields(desc),
           "summary": str(desc), "dtype": etype.name, "element_bits": etype.bits, "per_chunk": etype.per_chunk,
           "major": major, "rows": rows, "k": k, "operand": "B" if operand == "b" else "A",
           "explain": text, "findings": findings_of(text),
           "command": _explain_command(value, arch, dtype, major, rows, raw, instr, kind, operand, sparse)}
    try:
        out["layout"] = canonical_layout(desc, dtype=etype.name, major=major, arch=arch)
        addrs = operand_addresses(desc, rows=rows, k=k, dtype=etype.name, major=major, arch=arch)
        cm = core_matrix_rows(desc, rows=rows, k=k, dtype=etype.name, major=major, arch=arch)
    except TcemuError as e:  # the lints still say why
        out.update(addresses=None, core_matrix_rows=None, map_error={"field": e.field, "rule": e.rule})
        return out
    out.update(addresses=addrs.tolist(), core_matrix_rows=cm.tolist(), map_error=None)
    if p.given("element"):
        out["element"] = element_probe(p, addrs, etype.per_chunk, major)
    return out


def element_probe(p, addrs, per_chunk: int, major: str) -> dict:
    """Where element (i, k) of the operand lives: its byte, bank, 16-byte chunk and core matrix (the core matrix
    rule of tcemu.core_matrix_rows: K-major (i // 8, k // per_chunk), MN-major (i // per_chunk, k // 8))."""
    rows, k = addrs.shape
    ik = p.int_list("element", None, min_len=2, max_len=2, lo=0, hi=1023)
    if ik[0] >= rows or ik[1] >= k:
        raise ServeError("element", f"({ik[0]}, {ik[1]}) is outside the {rows} x {k} operand")
    i, kk = ik
    a = int(addrs[i, kk])
    cm = (i // 8, kk // per_chunk) if major == "K" else (i // per_chunk, kk // 8)
    return {"i": i, "k": kk, "address": a, "bank": (a >> 2) & 31, "chunk": (a & 127) >> 4, "line": a - a % 128,
            "core_matrix": list(cm), "core_matrix_row": i % 8 if major == "K" else kk % 8}


def _explain_command(value, arch, dtype, major, rows, raw, instr, kind, operand, sparse) -> str:
    cmd = [f"tcemu explain {value:#x}"]
    if instr is not None:
        cmd += [f"--instr {instr}", f"--kind {kind}"] + ([f"--operand {operand}"] if operand != "a" else [])
    else:
        cmd += [f"--dtype {dtype}", f"--major {major}", f"--rows {rows}"]
        if raw.get("k") not in (None, ""):
            cmd.append(f"--k {raw['k']}")
        if sparse:
            cmd += ["--sparse"] + ([f"--operand {operand}"] if operand != "a" else [])
    if arch != "sm90":
        cmd.append(f"--arch {arch}")
    return " ".join(cmd)


# ---- swizzle atom -------------------------------------------------------------------------------------------

SWIZZLE_FIELDS = ("mode", "base_offset")


def swizzle_view(raw) -> dict:
    p = Params(raw, SWIZZLE_FIELDS)
    with renamed({"swizzle": "mode"}):
        mode = SwizzleMode.parse(p.text("mode", "128B", max_len=20))
    base_offset = p.integer("base_offset", 0, lo=0, hi=7)
    sw = mode.swizzle
    width = mode.bytes // 16
    rows = 8 if sw.bits else 1
    placed = []  # placed[r][c]: physical chunk of logical chunk c of row r (the swizzle maps a row into itself)
    for r in range(rows):
        placed.append([(sw(r * mode.bytes + 16 * c, base_offset if sw.bits else 0) - r * mode.bytes) // 16
                       for c in range(width)])
    grid = [[0] * width for _ in range(rows)]
    for r in range(rows):
        for c, phys in enumerate(placed[r]):
            grid[r][phys] = c
    hi = sw.base + sw.shift
    text = ("no swizzle: 16-byte core-matrix rows in place" if not sw.bits else
            f"{mode.value} = {sw}: bits [{sw.base}, {sw.base + sw.bits}) of the absolute address are XORed with "
            f"bits [{hi}, {hi + sw.bits}) minus the base offset {base_offset}; the pattern repeats every "
            f"{1 << (hi + sw.bits)} bytes")
    return {"view": "swizzle", "mode": mode.value, "swizzle": str(sw), "base_offset": base_offset,
            "row_bytes": mode.bytes, "rows": rows, "chunks": width, "placed": placed, "grid": grid, "text": text}


# ---- TMA box: where each element lands, and the descriptor that reads it back -------------------------------

TMA_FIELDS = ("arch", "dtype", "dims", "box", "coords", "element_strides", "swizzle", "smem_addr", "major", "k",
              "kblock")
TMA_DTYPES = ("tf32", "f16", "bf16", "e4m3", "e5m2", "s8", "u8")


def tma_view(raw) -> dict:
    p = Params(raw, TMA_FIELDS)
    arch = p.choice("arch", ARCHES, "sm90")
    dtype = p.choice("dtype", TMA_DTYPES, "bf16")
    es = element_type(dtype, allowed=OPERAND_DTYPES[arch]).bits // 8
    dims = p.int_list("dims", REQUIRED, lo=1, hi=1 << 31)
    rank = len(dims)
    box = p.int_list("box", REQUIRED, min_len=rank, max_len=rank, lo=1, hi=256)
    coords = p.int_list("coords", [0] * rank, min_len=rank, max_len=rank, lo=-(1 << 31), hi=(1 << 31) - 1)
    strides = p.int_list("element_strides", None, min_len=rank, max_len=rank, lo=1, hi=8)
    swizzles = ("none", "32B", "64B", "128B") + (tuple(SM100_TMA_SWIZZLES) if arch == "sm100" else ())
    swizzle = p.choice("swizzle", swizzles, "none")
    smem_addr = p.integer("smem_addr", 0x400, lo=0, hi=(1 << 32) - 1)
    major = p.choice("major", ("K", "MN"), "K")
    if int(np.prod(dims, dtype=np.float64)) * es > MAX_TENSOR_BYTES:
        raise ServeError("dims", f"a global tensor of {dims} {dtype} is more than {MAX_TENSOR_BYTES >> 20} MiB")
    tensor = np.zeros(dims[::-1], np.dtype(f"<u{es}"))  # calloc'd: only the box's pages are touched
    with renamed({"tensor": "dims"}):
        addr, _, flat, counts, _ = plan_tile(smem_addr, tensor, box, coords, strides, swizzle, "zero", arch)
    written = addr.reshape(-1, counts[0])  # (box rows, dimension 0): box row r is dimensions >= 1, dim 1 fastest
    if written.size > MAX_ELEMENTS:
        raise ServeError("box", f"{written.size} elements; the page draws at most {MAX_ELEMENTS}")
    out = {"view": "tma", "arch": arch, "dtype": dtype, "element_bytes": es, "dims": dims, "box": box,
           "coords": coords, "element_strides": strides or [1] * rank, "swizzle": swizzle, "smem_addr": smem_addr,
           "counts": counts, "addresses": written.tolist(), "global_index": flat.reshape(written.shape).tolist(),
           "out_of_bounds": int((flat < 0).sum())}
    # the operand it holds: K-major, box row = M/N row and dimension 0 = K; MN-major, dimension 0 = M/N
    operand = written if major == "K" else written.T
    k_total = operand.shape[1]
    k = p.integer("k", k_total, lo=1, hi=k_total)
    kblock = p.integer("kblock", 0, lo=0, hi=k_total // k - 1 if k_total // k else 0)
    sub = np.ascontiguousarray(operand[:, kblock * k:(kblock + 1) * k])
    out.update(major=major, operand_rows=int(sub.shape[0]), k=k, kblock=kblock)
    try:
        desc = suggest_descriptor(sub, dtype=dtype, major=major, arch=arch)
    except TcemuError as e:
        out.update(descriptor=None, suggest_error={"field": e.field, "rule": e.rule})
        return out
    out.update(descriptor=_hex(desc.encode(), 16), descriptor_fields=_desc_fields(desc), summary=str(desc),
               suggest_error=None)
    return out


# ---- tcgen05 instruction descriptor -------------------------------------------------------------------------

INSTR_FIELDS = ("instr", "kind", "cta_group")

# (label, lowest bit, width, InstrDescriptor attribute or None for reserved bits): PTX 9.7.16.4.2 Tables 42-44,
# as tcemu/blackwell/instr.py decodes them.
_TABLE42 = (("sparsity selector", 0, 2, "sparsity_selector"), ("sparse", 2, 1, "sparse"),
            ("saturate", 3, 1, "saturate"), ("D type", 4, 2, "dtype_d"), ("reserved", 6, 1, None),
            ("A type", 7, 3, "dtype_a"), ("B type", 10, 3, "dtype_b"), ("negate A", 13, 1, "negate_a"),
            ("negate B", 14, 1, "negate_b"), ("transpose A", 15, 1, "transpose_a"),
            ("transpose B", 16, 1, "transpose_b"), ("N >> 3", 17, 6, "n"), ("reserved", 23, 1, None),
            ("M >> 4", 24, 5, "m"), ("reserved", 29, 1, None), ("max shift (.ws)", 30, 2, "max_shift"))
_TABLE43 = (("sparsity selector", 0, 2, "sparsity_selector"), ("sparse", 2, 1, "sparse"), ("reserved", 3, 1, None),
            ("B scale-factor id", 4, 2, "b_scale_id"), ("reserved", 6, 1, None), ("A type", 7, 3, "dtype_a"),
            ("B type", 10, 3, "dtype_b"), ("negate A", 13, 1, "negate_a"), ("negate B", 14, 1, "negate_b"),
            ("transpose A", 15, 1, "transpose_a"), ("transpose B", 16, 1, "transpose_b"), ("N >> 3", 17, 6, "n"),
            ("scale type", 23, 1, "scale_type"), ("reserved", 24, 3, None), ("M >> 7", 27, 2, "m"),
            ("A scale-factor id", 29, 2, "a_scale_id"), ("reserved", 31, 1, None))
_TABLE44 = _TABLE43[:6] + (("B type", 10, 2, "dtype_b"), ("reserved", 12, 1, None)) + _TABLE43[7:-1] + \
    (("K = 96 (sm_103a)", 31, 1, "k96"),)


def instr_bit_fields(kind: str):
    return _TABLE42 if kind not in BLOCK_SCALED else (_TABLE43 if kind == "mxf8f6f4" else _TABLE44)


def _bit_value(kind: str, attr: str, raw: int):
    """(value, rule or None) of one field's raw bits as .kind::`kind` reads them (tcemu/blackwell/instr.py's
    decode, one field at a time, so that an undefined code in one field leaves the others readable)."""
    codes = {"dtype_a": TYPE_CODES[kind], "dtype_b": TYPE_CODES[kind], "dtype_d": D_CODES.get(kind, {}),
             "scale_type": SCALE_CODES.get(kind, {})}.get(attr)
    if codes is not None:
        for name, c in codes.items():
            if c == raw:
                return name, None
        return None, f"code {raw} is not defined ({', '.join(f'{n} = {c}' for n, c in codes.items())})"
    if attr == "m":
        return raw << (7 if kind in BLOCK_SCALED else 4), None
    if attr == "n":
        return raw << 3, None
    if attr in ("sparse", "saturate", "negate_a", "negate_b", "transpose_a", "transpose_b", "k96"):
        return bool(raw), None
    return raw, None


def instr_view(raw) -> dict:
    """Every field of the word, bit by bit, whatever it breaks: an undefined code, a reserved bit or a broken rule
    is a finding on its field (the page marks that row), not a refusal (PTX 9.7.16.4.2, Tables 42-44)."""
    p = Params(raw, INSTR_FIELDS)
    kind = p.choice("kind", KINDS, REQUIRED)
    with renamed({"descriptor": "instr"}):
        v = instr_value(p.text("instr", REQUIRED, max_len=20))
    cta_group = p.choice("cta_group", ("1", "2"), None)
    cta_group = int(cta_group) if cta_group else None
    bits, findings, values = [], [], {}
    for label, lo, width, attr in instr_bit_fields(kind):
        r = v >> lo & ((1 << width) - 1)
        value, rule = (None, None) if attr is None else _bit_value(kind, attr, r)
        if attr is None and r:
            rule = f"bits {lo}-{lo + width - 1} are reserved for .kind::{kind} and must be 0" if width > 1 else \
                f"bit {lo} is reserved for .kind::{kind} and must be 0"
        if rule:
            findings.append({"severity": "error", "field": attr or "reserved", "rule": rule, "lo": lo})
        elif attr is not None:
            values[attr] = value
        bits.append({"label": label, "lo": lo, "width": width, "raw": r, "attr": attr,
                     "value": None if attr is None else _plain(value)})
    d = None
    if not findings:  # every code defined: the descriptor's own rules (its validate) name what else is wrong
        d = InstrDescriptor(kind, **values)
        for f, rule in d.validate(cta_group=cta_group):
            lo = next((b["lo"] for b in bits if b["attr"] == f), None)
            findings.append({"severity": "error", "field": f, "rule": rule, "lo": lo})
    fields = {name: _plain(getattr(d, name)) for name in d.__dataclass_fields__} if d is not None else None
    try:
        lines = describe_instruction(d) if d is not None else []
    except TcemuError as e:
        lines = [f"{e.field}: {e.rule}"]
    return {"view": "instr", "instr": _hex(v, 8), "kind": kind, "cta_group": cta_group, "valid": not findings,
            "fields": fields, "bits": bits, "description": lines, "findings": findings,
            "command": f"tcemu instr {_hex(v, 8)} --kind {kind}"}


def _plain(x):
    return bool(x) if isinstance(x, (bool, np.bool_)) else (int(x) if isinstance(x, (int, np.integer)) else x)


# ---- tensor memory: D, A and the scale factors of one tcgen05.mma ------------------------------------------

TMEM_FIELDS = ("instr", "kind", "cta_group", "d_tmem", "a_tmem", "scale_a", "scale_b", "block_size")
# owner codes of the grid (one character per 32-bit cell)
# (SHARED: scale factors of A and B in different bytes of one cell; CLASH: two regions on the same bytes)
EMPTY, OWN_D, OWN_A, OWN_SFA, OWN_SFB, SHARED, CLASH = ".", "D", "A", "a", "b", "s", "!"


def tmem_view(raw) -> dict:
    p = Params(raw, TMEM_FIELDS)
    kind = p.choice("kind", KINDS, REQUIRED)
    with renamed({"descriptor": "instr"}):
        d = InstrDescriptor.decode(p.text("instr", REQUIRED, max_len=20), kind)
    cta = p.choice("cta_group", ("1", "2"), None)
    cta_group = int(cta) if cta else (2 if d.m == 256 else 1)
    addr = {name: p.integer(name, 0 if name == "d_tmem" else None, lo=0, hi=(1 << 32) - 1)
            for name in ("d_tmem", "a_tmem", "scale_a", "scale_b")}
    for name, a in addr.items():
        if a is not None:
            split_address(a, name)
    bs = p.choice("block_size", ("16", "32"), None)
    out = {"view": "tmem", "instr": _hex(d.encode(), 8), "kind": kind, "cta_group": cta_group, "m": d.m, "n": d.n,
           "lanes": LANES, "columns": COLUMNS, **{k: (None if v is None else _hex(v, 8)) for k, v in addr.items()},
           "d": None, "a": None, "scale_a": None, "scale_b": None, "grid": None}
    findings = [{"severity": "error", "field": f, "rule": rule} for f, rule in d.validate(cta_group=cta_group)]
    if not findings:
        try:
            check_form(d, cta_group, addr["a_tmem"] is not None, None, None, 0)
        except TcemuError as e:
            findings.append({"severity": "error", "field": e.field, "rule": e.rule})
    out["findings"] = findings
    if findings:
        return out
    M, N = d.m, d.n
    mc, nc = M // cta_group, N // cta_group
    tm = TensorMemory()  # the model's own writes check every region's bounds
    owner = np.full((LANES, COLUMNS), EMPTY)
    used = np.zeros((LANES, COLUMNS), np.int64)  # bytes of each cell taken (D and A take all four)
    names = {}

    def claim(lanes, cols, code, name, byte_mask=0xF):
        lanes, cols = np.asarray(lanes).ravel(), np.asarray(cols).ravel()
        clash = (used[lanes, cols] & byte_mask) != 0
        if clash.any():
            i = int(np.argmax(clash))
            other = names.get(owner[lanes[i], cols[i]], "another region")
            findings.append({"severity": "error", "field": f"{other}, {name}",
                             "rule": f"both use tensor memory lane {lanes[i]}, column {cols[i]} "
                                     f"({int(clash.sum())} cells)"})
        prev = owner[lanes, cols]
        owner[lanes, cols] = np.where(clash, CLASH, np.where(prev == EMPTY, code, SHARED))
        used[lanes, cols] |= byte_mask
        names[code] = name

    # D (tmem.d_cells: CuTe's layouts D, F, A and B)
    try:
        lane0, col0 = split_address(addr["d_tmem"], "d_tmem")
        tm.write_d(addr["d_tmem"], np.zeros((mc, N), np.uint32), M, d.dtype_d, cta_group)
        lanes, cols = d_cells(M, N, cta_group, lane0)
        cols = cols + col0
        out["d"] = {"rows": int(lanes.shape[0]), "n": N, "lanes": lanes.tolist(), "columns": cols.tolist()}
        claim(lanes, cols, OWN_D, "d_tmem")
    except TcemuError as e:
        findings.append({"severity": "error", "field": e.field if e.field != "address" else "d_tmem", "rule": e.rule})
    # A (tmem.TensorMemory.write_a: row r in D's lane for r, element k in column k // (32 / bits), low bits first)
    if addr["a_tmem"] is not None:
        bits = {"tf32": 32, "f16": 16, "bf16": 16}.get(d.dtype_a, 4 if kind in ("mxf4", "mxf4nvf4") else 8)
        K = K_OF_KIND[kind]
        try:
            lane0, col0 = split_address(addr["a_tmem"], "a_tmem")
            tm.write_a(addr["a_tmem"], np.zeros((mc, K), np.int64), bits, cta_group)
            lanes = row_lanes(mc * cta_group, cta_group, lane0)
            per = 32 // bits
            kk = np.arange(K)
            out["a"] = {"rows": mc, "k": K, "bits": bits, "lanes": lanes.tolist(),
                        "columns": (col0 + kk // per).tolist(), "shift": ((kk % per) * bits).tolist()}
            claim(np.repeat(lanes, K // per), np.tile(col0 + np.arange(K // per), lanes.size), OWN_A, "a_tmem")
        except TcemuError as e:
            findings.append({"severity": "error", "field": "a_tmem", "rule": e.rule})
    # scale factors (tmem.TensorMemory.write_scales: factor j of row r in lane r % 32 + 32 q, column r // 32,
    # byte sf_id + j, in all four sub-partitions q)
    if kind in BLOCK_SCALED:
        try:
            with renamed({"block_size_k": "block_size"}):
                nsf = K_OF_KIND[kind] // block_size(d, int(bs) if bs else None)
        except TcemuError as e:
            findings.append({"severity": "error", "field": e.field, "rule": e.rule})
            nsf = None
        for name, rows, sf_id, code in (("scale_a", mc, d.a_scale_id, OWN_SFA), ("scale_b", nc, d.b_scale_id, OWN_SFB)):
            if addr[name] is None or nsf is None:
                continue
            if cta_group != 1:
                findings.append({"severity": "error", "field": name, "rule": "scale factors from tensor memory are "
                                 "modelled for cta_group::1 only (blackwell._scales)"})
                continue
            if sf_id + nsf > 4:
                findings.append({"severity": "error", "field": "a_scale_id" if code == OWN_SFA else "b_scale_id",
                                 "rule": f"{nsf} scale factor(s) per row from byte {sf_id} overrun the 32-bit cell"})
                continue
            try:
                lane0, col0 = split_address(addr[name], name)
                if lane0:
                    raise TmemError(name, f"scale factors start at lane 0 (they fill every sub-partition), not {lane0}")
                tm.write_scales(addr[name], np.zeros((rows, nsf), np.int64), sf_id)
            except TcemuError as e:
                findings.append({"severity": "error", "field": name, "rule": e.rule})
                continue
            r = np.arange(rows)
            out[name] = {"rows": rows, "nsf": nsf, "sf_id": sf_id, "lanes": (r % 32).tolist(),
                         "columns": (col0 + r // 32).tolist(), "bytes": list(range(sf_id, sf_id + nsf)),
                         "copies": [0, 32, 64, 96]}
            mask = ((1 << nsf) - 1) << sf_id
            claim(np.concatenate([r % 32 + 32 * q for q in range(4)]), np.tile(col0 + r // 32, 4), code, name, mask)
    out["grid"] = ["".join(row) for row in owner.tolist()]
    return out


# ---- banks: one warp's shared-memory access -------------------------------------------------------------------

BANK_FIELDS = ("op", "source", "addresses", "pattern", "descriptor", "rows_expr", "cols_expr", "tile_rows", "tile_k",
               "dtype", "major", "mask")


def banks_view(raw) -> dict:
    p = Params(raw, BANK_FIELDS)
    op = parse_op(p.text("op", REQUIRED, max_len=80))
    source = p.choice("source", ("addresses", "pattern", "descriptor"), "pattern")
    if source == "addresses":
        text = p.text("addresses", REQUIRED, max_len=1200)
        addrs = []
        for item in text.replace(",", " ").split():
            try:
                addrs.append(int(item, 0))
            except ValueError:
                raise ServeError("addresses", f"{item[:20]!r} is not an integer (hex needs 0x)") from None
        if len(addrs) > 32 or any(not 0 <= a < 1 << 32 for a in addrs):
            raise ServeError("addresses", f"{len(addrs)} addresses: at most 32, each 0..2^32-1")
        addrs = np.array(addrs, np.int64)
    elif source == "pattern":
        addrs = pattern_from_expression(p.text("pattern", REQUIRED, max_len=400))
    else:
        with renamed({"pattern": "rows_expr"}):
            rows = pattern_from_expression(p.text("rows_expr", "t % 8", max_len=400))
        with renamed({"pattern": "cols_expr"}):
            cols = pattern_from_expression(p.text("cols_expr", "0", max_len=400))
        with renamed({"rows": "rows_expr", "desc": "descriptor"}):
            addrs = pattern_from_descriptor(p.text("descriptor", REQUIRED, max_len=40), rows, cols,
                                            tile_rows=p.integer("tile_rows", 64, lo=1, hi=256),
                                            tile_k=p.integer("tile_k", 64, lo=1, hi=256),
                                            dtype=p.text("dtype", "bf16", max_len=8),
                                            major=p.choice("major", ("K", "MN"), "K"))
    mask = p.integer("mask", 0xFFFFFFFF, lo=0, hi=(1 << 32) - 1)
    with renamed({"shape": "addresses"}):
        report = bank_conflicts(op, addrs, mask=mask)
    full = np.zeros(32, np.int64)
    full[:len(addrs)] = addrs
    used = [t for t in range(op.threads_used) if op.matrices or mask >> t & 1]
    words = max(op.width // 4, 1)
    heat = np.zeros((32, 32), np.int64)  # lanes x banks: 4-byte words each thread asks of each bank
    for t in used:
        for w in range(words):
            heat[t, (int(full[t]) // 4 + w) % 32] += 1
    return {"view": "banks", "op": op.name, "width": op.width, "threads_used": op.threads_used,
            "addresses": full.tolist(), "mask": mask, "active": used, "wavefronts": report.wavefronts,
            "ideal": report.ideal, "conflicts": report.conflicts,
            "phases": [{"threads": ph.threads, "wavefronts": ph.wavefronts, "degree": ph.degree,
                        "bank_words": ph.bank_words.tolist()} for ph in report.phases],
            "heat": heat.tolist(), "table": report.table()}


VIEWS = {"descriptor": descriptor_view, "swizzle": swizzle_view, "tma": tma_view, "instr": instr_view,
         "tmem": tmem_view, "banks": banks_view}
FIELDS = {"descriptor": DESCRIPTOR_FIELDS, "swizzle": SWIZZLE_FIELDS, "tma": TMA_FIELDS, "instr": INSTR_FIELDS,
          "tmem": TMEM_FIELDS, "banks": BANK_FIELDS}
