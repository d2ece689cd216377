"""The reporting subcommands of `tcemu` (decode, addresses, explain, instr, swizzle, banks): each prints text, or
one JSON object with --json, and returns the exit status (0 ok, 1 findings)."""
import dataclasses
import json
import sys
from enum import Enum

import numpy as np

from ..arith.dtypes import OPERAND_DTYPES, element_type
from ..blackwell.instr import InstrDescriptor
from ..core.errors import TcemuError
from ..core.validate import as_int, output_path, show
from ..layout.addressing import canonical_layout, core_matrix_rows, operand_addresses
from ..layout.banks import bank_conflicts, parse_op, pattern_from_descriptor, pattern_from_expression
from ..layout.descriptors import SwizzleMode, UmmaDescriptor, as_arch_descriptor
from .explain import describe_instruction, explain, has_errors, instruction_k
from .pictures import bank_heatmap, operand_map, swizzle_atom

PICTURE_SUFFIXES = (".png", ".svg")


def emit(doc) -> None:
    """One JSON object on one line of stdout."""
    print(json.dumps(doc, default=_plain))


def _plain(x):
    if isinstance(x, Enum):
        return x.value
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


def findings_of(text: str):
    """explain()'s findings, from its lines "error: field: rule" / "warning: field: rule"."""
    out = []
    for line in text.splitlines():
        for severity in ("error", "warning"):
            if line.startswith(severity + ": "):
                fld, _, rule = line[len(severity) + 2:].partition(": ")
                out.append({"severity": severity, "field": fld, "rule": rule})
    return out


def int_arg(text: str, field: str, lo: int, hi: int) -> int:
    """An integer command-line value (0x.. for hex) in [lo, hi]; TcemuError naming the option otherwise."""
    try:
        value = int(text.replace("_", ""), 0) if len(text) <= 80 else None
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        raise TcemuError(field, f"{show(text)} is not an integer in [{lo}, {hi:#x}] (0x.. for hex)")
    return value


def decode_cmd(args) -> int:
    desc = as_arch_descriptor(args.descriptor, args.arch)
    if args.dtype is not None:
        element_type(args.dtype, allowed=OPERAND_DTYPES[args.arch])
    unit = args.dtype or "bytes"
    layouts = {}
    for major in ([args.major] if args.major else ["K", "MN"]):
        try:
            layouts[major] = canonical_layout(desc, dtype=args.dtype, major=major, arch=args.arch)
        except TcemuError as e:
            layouts[major] = e
    findings = desc.validate(args.arch, major=args.major)
    errors = any(f.severity == "error" for f in findings)
    if args.json:
        fields = {f.name: getattr(desc, f.name) for f in dataclasses.fields(desc)}
        emit({"descriptor": f"{desc.encode():#018x}", "arch": args.arch, "fields": fields,
              "layouts": {m: (str(v) if not isinstance(v, TcemuError) else {"error": str(v)}) for m, v in
                          layouts.items()}, "unit": unit,
              "findings": [f._asdict() for f in findings], "ok": not errors})
        return 1 if errors else 0
    print(f"descriptor     {desc.encode():#018x}  ({args.arch})")
    print(f"start_address  {desc.start_address:#x}")
    print(f"lbo            {desc.lbo:#x} ({desc.lbo} bytes)")
    print(f"sbo            {desc.sbo:#x} ({desc.sbo} bytes)")
    print(f"base_offset    {desc.base_offset}")
    print(f"swizzle        {desc.swizzle.value} ({desc.swizzle.swizzle}, rows of {desc.swizzle.bytes} bytes)")
    if isinstance(desc, UmmaDescriptor):
        print(f"version        {desc.version}")
        print(f"lbo_mode       {desc.lbo_mode}")
    if desc.reserved_bits:
        print(f"reserved bits  {desc.reserved_bits:#x}")
    for major, v in layouts.items():
        print(f"{major}-major layout: {v}" if isinstance(v, TcemuError) else f"{major}-major layout ({unit}): {v}")
    for f in findings:
        print(f)
    if not findings:
        print("no findings")
    return 1 if errors else 0


def addresses_cmd(args) -> int:
    kw = dict(rows=args.rows, k=args.k, dtype=args.dtype, major=args.major, arch=args.arch)
    addrs = operand_addresses(args.descriptor, **kw)
    if args.json:
        emit({"descriptor": args.descriptor, **kw, "addresses": addrs.tolist(),
              "core_matrix_rows": core_matrix_rows(args.descriptor, **kw).tolist()})
        return 0
    with np.printoptions(threshold=sys.maxsize, linewidth=200, formatter={"int": lambda v: f"{v:#07x}"}):
        print("# rows: M (operand A) or N (operand B) index; columns: K index")
        print(addrs)
    return 0


def banks_cmd(args) -> int:
    op = parse_op(args.op)
    mask = int_arg(args.mask, "mask", 0, (1 << 32) - 1)
    if args.png is not None:
        output_path(args.png, "png", PICTURE_SUFFIXES)
    if sum(x is not None for x in (args.addresses, args.pattern, args.desc)) != 1:
        raise TcemuError("banks", "give exactly one of --addresses, --pattern, --desc")
    if args.addresses is not None:
        words = args.addresses.replace(",", " ").split()
        if len(words) > 32:
            raise TcemuError("addresses", f"32 addresses at most, got {len(words)}")
        addrs = [int_arg(a, "addresses", 0, (1 << 40) - 1) for a in words]
    elif args.pattern is not None:
        addrs = pattern_from_expression(args.pattern)
    else:
        rows = pattern_from_expression(args.rows_expr)
        cols = pattern_from_expression(args.cols_expr)
        addrs = pattern_from_descriptor(args.desc, rows, cols, tile_rows=args.tile_rows, tile_k=args.tile_k,
                                        dtype=args.dtype, major=args.major)
    report = bank_conflicts(op, addrs, mask=mask)
    if args.png is not None:
        bank_heatmap(report, np.asarray(addrs), mask, args.png)
    if args.json:
        emit({"op": report.op.name, "mask": f"{mask:#010x}", "addresses": [int(a) for a in addrs],
              "wavefronts": report.wavefronts, "ideal": report.ideal, "conflicts": report.conflicts,
              "phases": [{"threads": list(map(int, p.threads)), "wavefronts": int(p.wavefronts),
                          "degree": int(p.degree), "bank_words": p.bank_words.tolist()} for p in report.phases],
              **({"wrote": args.png} if args.png is not None else {})})
        return 0
    print(report.table())
    if args.png is not None:
        print(f"wrote {args.png}")
    return 0


def _tile(text):
    if text is None:
        return None
    try:
        if len(text) > 40:
            raise ValueError
        rows, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise TcemuError("tile", f"{show(text)}: ROWSxK, e.g. 64x256") from None
    return rows, k


def explain_cmd(args, html_writer=None) -> int:
    """html_writer(args, path): the serve layer's HTML export (cli.py passes it; tools sit below serve)."""
    for option, path in (("png", args.png), ("svg", args.svg), ("html", getattr(args, "html", None))):
        if path is not None:
            output_path(path, option, (f".{option}",))
    padded = {"padded": True, "packed": False, None: None}[args.form]
    kw = dict(dtype=args.dtype, major=args.major, arch=args.arch, padded=padded, operand=args.operand.upper())
    if args.cta_group is not None and args.instr is None:
        raise TcemuError("cta_group", "the CTA pair is read from the instruction: give --instr and --kind")
    if args.instr is not None:  # the operand's type, form, shape and CTA share come from the instruction
        kw = dict(instr=args.instr, kind=args.kind, operand=args.operand, cta_group=args.cta_group, ws=args.ws,
                  arch="sm103" if args.arch == "sm103" else "sm100")
    text = explain(args.descriptor, rows=args.rows, k=args.k, tile=_tile(args.tile), sparse=args.sparse, **kw)
    wrote = []
    for path in (p for p in (args.png, args.svg) if p is not None):
        shape = {} if args.instr is not None else dict(
            rows=args.rows, k=args.k if args.k is not None else instruction_k(args.dtype, args.arch, args.sparse,
                                                                              args.operand, padded=padded))
        operand_map(args.descriptor, path, **shape, **{k: v for k, v in kw.items() if k != "ws"})
        wrote.append(path)
    if getattr(args, "html", None) and html_writer is not None:
        html_writer(args, args.html)
        wrote.append(args.html)
    errors = has_errors(text)
    if args.json:
        emit({"descriptor": args.descriptor, "text": text.splitlines(), "findings": findings_of(text),
              "ok": not errors, "wrote": wrote})
    else:
        print(text)
        for path in wrote:
            print(f"wrote {path}")
    return 1 if errors else 0


def instr_cmd(args) -> int:
    d = InstrDescriptor.decode(args.value, args.kind)
    text = "\n".join(describe_instruction(d, ws=args.ws))
    raw = int(args.value.replace("_", ""), 0)  # decode has parsed it already
    errors = has_errors(text)
    extra = {name: getattr(d, name) for name in ("sparse", "saturate", "max_shift", "k96", "sparsity_selector")
             if getattr(d, name)}
    if args.json:
        emit({"value": f"{d.encode():#010x}", "kind": d.kind, "runtime_form": None if raw == d.encode() else
              f"{raw:#018x}", "fields": dataclasses.asdict(d), "text": text.splitlines(),
              "findings": findings_of(text), "ok": not errors})
        return 1 if errors else 0
    runtime = "" if raw == d.encode() else f", from the 64-bit runtime form {raw:#018x} >> 32"
    print(f"instruction descriptor {d.encode():#010x} (.kind::{d.kind}{runtime})\n{text}")
    for name, value in extra.items():
        print(f"{name}: {value}")
    return 1 if errors else 0


def swizzle_grid(mode, base_offset: int = 0) -> np.ndarray:
    """(rows, 16-byte chunks) of one swizzle atom: the logical chunk each physical chunk of each row holds."""
    mode = SwizzleMode.parse(mode)
    base_offset = as_int(base_offset, "base_offset", 0, 7)
    sw = mode.swizzle
    width = mode.bytes // 16
    rows = max(1, (1 << (sw.base + sw.shift + sw.bits)) // mode.bytes) if sw.bits else 1
    grid = np.zeros((rows, width), np.int64)
    for r in range(rows):
        for c in range(width):
            phys = sw(r * mode.bytes + 16 * c, base_offset if sw.bits else 0) - r * mode.bytes
            grid[r, phys // 16] = c
    return grid


def swizzle_cmd(args) -> int:
    if args.png is not None:
        output_path(args.png, "png", PICTURE_SUFFIXES)
    mode = SwizzleMode.parse(args.mode)
    grid = swizzle_grid(mode, args.base_offset)
    if args.png is not None:
        swizzle_atom(mode, args.png, base_offset=args.base_offset)
    sw = mode.swizzle
    if args.json:
        emit({"mode": mode.value, "swizzle": str(sw), "base_offset": args.base_offset, "row_bytes": mode.bytes,
              "rows": grid.tolist(), **({"wrote": args.png} if args.png is not None else {})})
        return 0
    print(f"{mode.value} swizzle atom ({sw}), base offset {args.base_offset}: {grid.shape[0]} row"
          f"{'s' if grid.shape[0] > 1 else ''} of {mode.bytes} bytes; each cell is the logical 16-byte chunk "
          "stored at that physical chunk")
    print("       " + "".join(f"{'+' + str(16 * c):>6}" for c in range(grid.shape[1])))
    for r, row in enumerate(grid):
        print(f"row {r:<2} " + "".join(f"{int(c):>6}" for c in row))
    if args.png is not None:
        print(f"wrote {args.png}")
    return 0
