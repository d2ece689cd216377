"""The tcemu command line: decode, instr, addresses, explain, swizzle, banks, fuzz, replay."""
import argparse
import json
import sys

import numpy as np

from .layout.addressing import canonical_layout, core_matrix_rows, operand_addresses
from .core.arch import ARCHES
from .layout.descriptors import UmmaDescriptor, as_arch_descriptor
from .arith.dtypes import OPERAND_DTYPES, element_type
from .core.errors import TcemuError, TraceError
from .blackwell.instr import KINDS, InstrDescriptor
from .traces.archive import trace_paths
from .core.validate import output_path, show

PICTURE_SUFFIXES = (".png", ".svg")


def _int_arg(text: str, field: str, lo: int, hi: int) -> int:
    """An integer command-line value (0x.. for hex) in [lo, hi]; TcemuError naming the option otherwise."""
    try:
        value = int(text.replace("_", ""), 0) if len(text) <= 80 else None
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        raise TcemuError(field, f"{show(text)} is not an integer in [{lo}, {hi:#x}] (0x.. for hex)")
    return value


def _decode(args) -> int:
    desc = as_arch_descriptor(args.descriptor, args.arch)
    if args.dtype is not None:
        element_type(args.dtype, allowed=OPERAND_DTYPES[args.arch])
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
    unit = args.dtype or "bytes"
    for major in ([args.major] if args.major else ["K", "MN"]):
        try:
            print(f"{major}-major layout ({unit}): {canonical_layout(desc, dtype=args.dtype, major=major, arch=args.arch)}")
        except TcemuError as e:
            print(f"{major}-major layout: {e}")
    findings = desc.validate(args.arch, major=args.major)
    for f in findings:
        print(f)
    if not findings:
        print("no findings")
    return 1 if any(f.severity == "error" for f in findings) else 0


def _addresses(args) -> int:
    kw = dict(rows=args.rows, k=args.k, dtype=args.dtype, major=args.major, arch=args.arch)
    addrs = operand_addresses(args.descriptor, **kw)
    if args.json:
        json.dump({"descriptor": args.descriptor, **kw, "addresses": addrs.tolist(),
                   "core_matrix_rows": core_matrix_rows(args.descriptor, **kw).tolist()}, sys.stdout)
        print()
        return 0
    with np.printoptions(threshold=sys.maxsize, linewidth=200, formatter={"int": lambda v: f"{v:#07x}"}):
        print("# rows: M (operand A) or N (operand B) index; columns: K index")
        print(addrs)
    return 0


def _banks(args) -> int:
    from .layout.banks import bank_conflicts, parse_op, pattern_from_descriptor, pattern_from_expression
    op = parse_op(args.op)
    mask = _int_arg(args.mask, "mask", 0, (1 << 32) - 1)
    if args.png is not None:
        output_path(args.png, "png", PICTURE_SUFFIXES)
    if sum(x is not None for x in (args.addresses, args.pattern, args.desc)) != 1:
        print("tcemu: error: give exactly one of --addresses, --pattern, --desc", file=sys.stderr)
        return 2
    if args.addresses is not None:
        words = args.addresses.replace(",", " ").split()
        if len(words) > 32:
            raise TcemuError("addresses", f"32 addresses at most, got {len(words)}")
        addrs = [_int_arg(a, "addresses", 0, (1 << 40) - 1) for a in words]
    elif args.pattern is not None:
        addrs = pattern_from_expression(args.pattern)
    else:
        rows = pattern_from_expression(args.rows_expr)
        cols = pattern_from_expression(args.cols_expr)
        addrs = pattern_from_descriptor(args.desc, rows, cols, tile_rows=args.tile_rows, tile_k=args.tile_k,
                                        dtype=args.dtype, major=args.major)
    report = bank_conflicts(op, addrs, mask=mask)
    print(report.table())
    if args.png is not None:
        from .tools.pictures import bank_heatmap
        bank_heatmap(report, np.asarray(addrs), mask, args.png)
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


def _explain(args) -> int:
    from .tools.explain import explain, has_errors, instruction_k
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
    text = explain(args.descriptor, rows=args.rows, k=args.k, tile=_tile(args.tile), sparse=args.sparse,
                   **kw)
    print(text)
    for path in (p for p in (args.png, args.svg) if p is not None):
        from .tools.pictures import operand_map
        shape = {} if args.instr is not None else dict(
            rows=args.rows, k=args.k if args.k is not None else instruction_k(args.dtype, args.arch, args.sparse,
                                                                              args.operand, padded=padded))
        operand_map(args.descriptor, path, **shape, **{k: v for k, v in kw.items() if k != "ws"})
        print(f"wrote {path}")
    if getattr(args, "html", None):
        from .serve.export import explain_html
        explain_html(args, args.html)
        print(f"wrote {args.html}")
    return 1 if has_errors(text) else 0


def _instr(args) -> int:
    from .tools.explain import describe_instruction, has_errors
    d = InstrDescriptor.decode(args.value, args.kind)
    text = "\n".join(describe_instruction(d, ws=args.ws))
    raw = int(args.value.replace("_", ""), 0)  # decode has parsed it already
    runtime = "" if raw == d.encode() else f", from the 64-bit runtime form {raw:#018x} >> 32"
    print(f"instruction descriptor {d.encode():#010x} (.kind::{d.kind}{runtime})\n{text}")
    for name in ("sparse", "saturate", "max_shift", "k96", "sparsity_selector"):
        if getattr(d, name):
            print(f"{name}: {getattr(d, name)}")
    return 1 if has_errors(text) else 0


def _swizzle_picture(args) -> int:
    from .tools.pictures import swizzle_atom
    output_path(args.png, "png", PICTURE_SUFFIXES)
    swizzle_atom(args.mode, args.png, base_offset=args.base_offset)
    print(f"wrote {args.png}")
    return 0


def _fuzz(args) -> int:
    from .testing.fuzz import campaign
    result = campaign(seconds=args.seconds, seed=args.seed, arch=args.arch)
    rate = result["cases"] / max(result["seconds"], 1e-9)
    print(f"{result['cases']} cases ({result['elements']:,} addresses) in {result['seconds']:.1f} s, {rate:,.0f} cases/s")
    if result["disagreement"]:
        print("DISAGREEMENT, minimal reproducer:\n  " + result["disagreement"])
        return 1
    print("tcemu and the pycute formulation agree on every case")
    return 0


def _replay(args) -> int:
    from .traces.registry import replay  # start-up cost: the trace kinds import the PTX interpreter (tcemu.ptx)
    paths = trace_paths(args.paths)
    if not paths:
        raise TraceError("paths", "no .npz traces found there")
    ok = True
    for i, path in enumerate(paths):
        result = replay(path)
        if i == 0:  # after the first trace loads: a file that is no trace gives one error line, no table
            print(f"{'trace':<32} {'group':<16} {'cases':>7} {'matched':>7} {'values':>10} {'matched':>10}")
        name = path.rsplit("/", 1)[-1]
        many = len(result.groups) > 30  # e.g. one group per ALU form: list only the mismatching ones
        for group, g in sorted(result.groups.items()):
            flag = "" if g.cases == g.cases_matched else "  MISMATCH"
            if many and not flag:
                continue
            print(f"{name:<32} {group:<16} {g.cases:>7} {g.cases_matched:>7} {g.values:>10} "
                  f"{g.values_matched:>10}{flag}")
        total = [sum(getattr(g, f) for g in result.groups.values())
                 for f in ("cases", "cases_matched", "values", "values_matched")]
        print(f"{name:<32} {'total':<16} {total[0]:>7} {total[1]:>7} {total[2]:>10} {total[3]:>10}")
        if many:
            print(f"{name:<32} {len(result.groups)} groups, {sum(g.cases == g.cases_matched for g in result.groups.values())}"
                  " match in full")
        for line in result.mismatches:
            print("  " + line)
        for line in getattr(result, "notes", []):
            print("  note: " + line[:300])
        ok &= result.ok
    print("all traces match" if ok else "MISMATCHES FOUND")
    return 0 if ok else 1


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (`tcemu decode: error: ...`) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def main(argv=None) -> int:
    ap = _Parser(prog="tcemu", description="Bit-accurate CPU emulator of tensor-core operand reads.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("decode", help="decode and validate a matrix descriptor")
    p.add_argument("descriptor", help="64-bit descriptor, e.g. 0x4000004000010040")
    p.add_argument("--arch", default="sm90", choices=ARCHES)
    p.add_argument("--dtype", help="element type for the layout's units (default: bytes)")
    p.add_argument("--major", choices=["K", "MN"], help="operand major-ness (default: show both)")
    p.set_defaults(run=_decode)
    p = sub.add_parser("addresses", help="absolute shared-memory address of every operand element")
    p.add_argument("descriptor")
    p.add_argument("--rows", type=int, required=True, help="M (operand A) or N (operand B)")
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--dtype", required=True)
    p.add_argument("--major", default="K", choices=["K", "MN"])
    p.add_argument("--arch", default="sm90", choices=ARCHES)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_addresses)
    p = sub.add_parser("explain", help="a descriptor in plain words, with lints for known traps")
    p.add_argument("descriptor")
    p.add_argument("--arch", default="sm90", choices=ARCHES)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--major", default="K", choices=["K", "MN"])
    p.add_argument("--rows", type=int, default=64, help="M (A) or N (B)")
    p.add_argument("--k", type=int, help="K elements (default: one instruction's K)")
    p.add_argument("--instr", help="sm100: a tcgen05 instruction descriptor (32-bit); with --kind, it sets the "
                                   "operand's type, major-ness and extent")
    p.add_argument("--kind", choices=KINDS)
    p.add_argument("--operand", default="a", choices=["a", "b", "A", "B"],
                   help="which operand the descriptor is (with --sparse: A's K/2 stored elements or B's K)")
    p.add_argument("--cta-group", type=int, choices=[1, 2], help="with --instr: cta_group::1 or ::2 (default: 2 for "
                                                                "M = 256, else 1); each CTA of a pair holds half of "
                                                                "A's rows and B's columns")
    p.add_argument("--form", choices=["packed", "padded"], help="fp4 / fp6 in shared memory (default: fp6 padded, "
                                                               "e2m1 packed; with --instr the kind decides)")
    p.add_argument("--tile", help="ROWSxK of the whole tile the kernel keeps in shared memory: the read must fit")
    p.add_argument("--sparse", action="store_true", help="sm90 wgmma.mma_async.sp: A's K/2 stored elements, B's K")
    p.add_argument("--ws", action="store_true", help="with --instr: tcgen05.mma.ws (its shapes)")
    p.add_argument("--png", help="draw the operand's shared-memory map")
    p.add_argument("--svg", help="the same as SVG")
    p.add_argument("--html", help="the operand's map, text and lints as one self-contained HTML file")
    p.set_defaults(run=_explain)
    p = sub.add_parser("instr", help="decode and check a tcgen05 instruction descriptor (sm100)")
    p.add_argument("value", help="the 32-bit value, e.g. 0x8400490 (or CuTe's 64-bit runtime form, value << 32)")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--ws", action="store_true", help="check the shape rules of tcgen05.mma.ws (M 32 / 64 / 128)")
    p.set_defaults(run=_instr)
    p = sub.add_parser("swizzle", help="draw a swizzle atom")
    p.add_argument("mode", help="none, 32B, 64B, 128B or 128B_base32B (sm100)")
    p.add_argument("--base-offset", type=int, default=0)
    p.add_argument("--png", required=True)
    p.set_defaults(run=lambda a: _swizzle_picture(a))
    p = sub.add_parser("banks", help="bank conflicts of one warp-wide shared-memory instruction")
    p.add_argument("--op", required=True, help="e.g. ld.shared.v4.b32, ldmatrix.x4.trans, stmatrix.x2")
    p.add_argument("--addresses", help="32 byte addresses, space- or comma-separated")
    p.add_argument("--pattern", help="address as an expression of the thread index t, e.g. '(t%%8)*128+(t//8)*16'")
    p.add_argument("--desc", help="descriptor of a tile; thread t accesses (--rows-expr, --cols-expr) of it")
    p.add_argument("--rows-expr", default="t % 8")
    p.add_argument("--cols-expr", default="0")
    p.add_argument("--tile-rows", type=int, default=64)
    p.add_argument("--tile-k", type=int, default=64)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--major", default="K", choices=["K", "MN"])
    p.add_argument("--mask", default="0xffffffff", help="active threads (ld/st)")
    p.add_argument("--png", help="write a lanes x banks heat map")
    p.set_defaults(run=_banks)
    p = sub.add_parser("fuzz", help="fuzz address resolution against CuTe's layout algebra (pycute)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arch", default="sm90", choices=ARCHES)
    p.set_defaults(run=_fuzz)
    from .tools.run import add_parser as add_run
    add_run(sub)
    from .serve.cli import add_parser as add_serve
    add_serve(sub)
    p = sub.add_parser("replay", help="replay hardware traces and print a match table")
    p.add_argument("paths", nargs="+", help="trace files or directories of them")
    p.set_defaults(run=_replay)
    args = ap.parse_args(argv)
    try:
        return args.run(args)
    except TcemuError as e:  # bad input: one line naming the field and the rule, never a traceback
        print(f"tcemu: error: {type(e).__name__}: {e}".replace("\n", "; "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        print("tcemu: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
