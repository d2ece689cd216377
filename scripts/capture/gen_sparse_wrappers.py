"""Generate scripts/capture/wgmma_sparse_wrappers.inc: one wgmma.mma_async.sp wrapper per instantiation of the sparse
capture (scripts/capture/capture_sparse.cu), and one dispatch macro per probe family.

Run: python scripts/capture/gen_sparse_wrappers.py > scripts/capture/wgmma_sparse_wrappers.inc
An instantiation is (kind, N, sp-sel, A in registers, trans-a, trans-b, imm-scale-a, imm-scale-b); kind indexes
KINDS (tcemu/traces/sparse_seeds.py SP_KINDS mirrors it). Every wrapper has the signature
  void NAME(ACC (&d)[NR], uint64_t da, uint64_t db, const uint32_t (&a)[4], uint32_t e, int scale_d)
"""
KINDS = [("tf32", "tf32", "f32", 0), ("f16", "f16", "f32", 0), ("f16", "f16", "f16", 0), ("bf16", "bf16", "f32", 0)]
KINDS += [(a, b, d, 0) for d in ("f32", "f16") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
KINDS += [(a, b, "s32", s) for s in (0, 1) for a in ("s8", "u8") for b in ("s8", "u8")]
K_OF = {"tf32": 16, "f16": 32, "bf16": 32, "e4m3": 64, "e5m2": 64, "s8": 64, "u8": 64}
TF32, F16, F16F16, BF16, E4M3, U8 = 0, 1, 2, 3, 4, 15   # KINDS indices used by the probes
SELECTORS = {"tf32": (0, 1), "f16": (0, 1), "bf16": (0, 1)}  # 8-bit: 0 only (ptxas rejects the rest)


def addr_instantiations():
    """Address probe: A probe (B = one-hot, N = K), B probe (A = selector), A-from-registers probe; sp-sel 0."""
    out = set()
    for kind, nset in ((TF32, (8, 16, 64, 256)), (F16, (8, 32, 64, 256)), (BF16, (8, 32, 64, 256)),
                       (U8, (8, 64, 256))):
        K = K_OF[KINDS[kind][0]]
        mn = (0, 1) if kind in (F16, BF16) else (0,)
        out |= {(kind, K, 0, 0, ta, 0, 1, 1) for ta in mn}
        out |= {(kind, n, 0, 0, 0, tb, 1, 1) for n in nset for tb in mn}
        out.add((kind, K, 0, 1, 0, 0, 1, 1))
    return sorted(out)


def meta_instantiations():
    """Metadata probe: B = one-hot with N = K; every legal selector; A from shared memory and registers."""
    out = []
    for kind in (TF32, F16, BF16, U8, E4M3):
        K = K_OF[KINDS[kind][0]]
        for sel in SELECTORS.get(KINDS[kind][0], (0,)):
            out += [(kind, K, sel, rega, 0, 0, 1, 1) for rega in (0, 1)]
    return out


def num_instantiations():
    """Numerics: every kind at N = 256 (shared and register A) and N = 24; sp-sel 1, imm-scale -1 and the
    transposes for a few kinds."""
    out = []
    for kind in range(len(KINDS)):
        out += [(kind, 256, 0, 0, 0, 0, 1, 1), (kind, 256, 0, 1, 0, 0, 1, 1), (kind, 24, 0, 0, 0, 0, 1, 1)]
    for kind in (TF32, F16, F16F16, BF16):
        out += [(kind, 256, 1, 0, 0, 0, 1, 1), (kind, 256, 1, 1, 0, 0, 1, 1)]
    for kind in (TF32, F16F16, BF16, 5):  # 5: e4m3.e5m2 -> f32
        out += [(kind, 256, 0, 0, 0, 0, -1, 1), (kind, 256, 0, 0, 0, 0, 1, -1)]
    for kind in (F16, F16F16, BF16):
        out += [(kind, 256, 0, 0, 1, 1, 1, 1), (kind, 256, 0, 1, 0, 1, 1, 1)]
    return out


def all_instantiations():
    return sorted(set(addr_instantiations()) | set(meta_instantiations()) | set(num_instantiations()))


def nregs(kind, n):
    return n // 4 if KINDS[kind][2] == "f16" else n // 2


def name(inst):
    kind, n, sel, rega, ta, tb, sa, sb = inst
    return f"sp_k{kind}_n{n}_s{sel}_r{rega}_t{ta}{tb}_i{sa + 1}{sb + 1}"


def wrapper(inst):
    kind, n, sel, rega, ta, tb, sa, sb = inst
    atype, btype, dtype, satf = KINDS[kind]
    nr = nregs(kind, n)
    cons, ctype = ("f", "float") if dtype == "f32" else ("r", "uint32_t")
    op = f"wgmma.mma_async.sp.sync.aligned.m64n{n}k{K_OF[atype]}"
    if dtype == "s32":
        op += (".satfinite" if satf else "") + f".s32.{atype}.{btype}"
        tail = "p"
    else:
        op += f".{dtype}.{atype}.{btype}"
        tail = f"p, {sa}, {sb}"
        if atype in ("f16", "bf16"):
            tail += f", {tb}" if rega else f", {ta}, {tb}"
    d = ", ".join(f"%{i}" for i in range(nr))
    a = "{" + ", ".join(f"%{nr + i}" for i in range(4)) + "}" if rega else f"%{nr}"
    nxt = nr + 4 if rega else nr + 1
    b, e, p = f"%{nxt}", f"%{nxt + 1}", nxt + 2
    outs = ", ".join(f'"+{cons}"(d[{i}])' for i in range(nr))
    ins = ('"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), ' if rega else '"l"(da), ') + '"l"(db), "r"(e), "r"(scale_d)'
    return (f"__device__ __forceinline__ void {name(inst)}({ctype} (&d)[{nr}], uint64_t da, uint64_t db, "
            f"const uint32_t (&a)[4], uint32_t e, int scale_d) {{\n"
            f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{p}, 0;\\n"\n'
            f'    "{op} {{{d}}}, {a}, {b}, {e}, {sel}, {tail};\\n}}\\n"\n'
            f"    : {outs}\n    : {ins});\n}}\n")


def dispatch(macro, insts):
    lines = [f"#define {macro}(INST, LAUNCH) \\"]
    for i, inst in enumerate(insts):
        kind, n, sel, rega, ta, tb, sa, sb = inst
        ctype = "float" if KINDS[kind][2] == "f32" else "uint32_t"
        lines.append(f"  if (INST == {i}) LAUNCH({kind}, {n}, {rega}, {ta}, {tb}, {nregs(kind, n)}, {ctype}, "
                     f"{name(inst)}) \\")
    lines.append("  {}")
    lines.append(f"#define {macro}_COUNT {len(insts)}")
    return "\n".join(lines)


def main():
    print("// Generated by scripts/capture/gen_sparse_wrappers.py; do not edit.")
    for inst in all_instantiations():
        print(wrapper(inst))
    print(dispatch("ADDR_DISPATCH", addr_instantiations()))
    print(dispatch("META_DISPATCH", meta_instantiations()))
    print(dispatch("NUM_DISPATCH", num_instantiations()))


if __name__ == "__main__":
    main()
