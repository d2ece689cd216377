"""Run MMA-Sim's published tcgen05 models (github microsoft/MMA-Sim, arXiv 2511.10909) on seeded inputs and
store their output bits, so that CI can check tcemu's Blackwell arithmetic against the model it follows
(tests/test_mmasim_fixture.py). MMA-Sim needs PyTorch, which tcemu does not depend on: run this where
torch is installed (we used the device machine's image) with MMA-Sim's source on PYTHONPATH:

    PYTHONPATH=<MMA-Sim checkout> python3 scripts/mmasim_crosscheck.py --out tests/fixtures/mmasim_tcgen05.npz

Inputs are not stored: `case_inputs(i)` regenerates them from the case index with splitmix64 in numpy
alone (no numpy Generator, whose streams may change between releases), here and in the test.
The output is an .npz of plain arrays plus a JSON "meta" string (no pickles).
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

M, N = 128, 8
# (kind, D type, A type, B type, scale type, block): the forms MMA-Sim models (fp6 and f8f6f4 e2m1 it does not)
FORMS = [("tf32", "f32", "tf32", "tf32", None, None), ("f16", "f32", "f16", "f16", None, None),
         ("f16", "f32", "bf16", "bf16", None, None), ("f16", "f16", "f16", "f16", None, None)]
FORMS += [("f8f6f4", d, a, b, None, None) for d in ("f32", "f16") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
FORMS += [("mxf8f6f4", "f32", a, b, "ue8m0", 32) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
FORMS += [("mxf4nvf4", "f32", "e2m1", "e2m1", s, bs) for s, bs in (("ue8m0", 32), ("ue8m0", 16), ("ue4m3", 16))]
MODES = ("narrow", "medium", "wide", "tiny")  # exponent spreads of A and B; C varies with the case
PER_FORM_MODE = 6
K_OF = {"tf32": 8, "f16": 16, "f8f6f4": 32, "mxf8f6f4": 32, "mxf4nvf4": 64}
FIELDS = {"tf32": (32, 8, 23, 13), "f16": (16, 5, 10, 0), "bf16": (16, 8, 7, 0), "e4m3": (8, 4, 3, 0),
          "e5m2": (8, 5, 2, 0), "e2m1": (4, 2, 1, 0), "f32": (32, 8, 23, 0)}  # bits, exponent, mantissa, ignored


def splitmix64(counter):
    z = (np.asarray(counter, np.uint64) + np.uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def stream(case, salt, n):
    return splitmix64(np.arange(n, dtype=np.uint64) + np.uint64(case * 1_000_003 + salt * 65_537) * np.uint64(1 << 20))


def patterns(case, salt, shape, dtype, mode):
    """Raw bit patterns of `dtype`: the exponent field drawn within a spread around the bias ('tiny': near 0)."""
    bits, e, m, _ = FIELDS[dtype]
    r = stream(case, salt, int(np.prod(shape)))
    x = (r & np.uint64((1 << bits) - 1)).astype(np.int64)
    bias = (1 << (e - 1)) - 1
    spread = {"narrow": 1, "medium": 4, "wide": None, "tiny": None}[mode]
    field = (x >> m) & ((1 << e) - 1)
    if spread is not None and e > 2:
        field = bias - spread + ((r >> np.uint64(40)).astype(np.int64) % (2 * spread + 1))
    elif mode == "tiny" and e > 2:
        field = (r >> np.uint64(40)).astype(np.int64) % 3
    x = (x & ~(((1 << e) - 1) << m)) | (field << m)
    return x.reshape(shape)


def case_inputs(i):
    """(form, mode, A bits (M, K), B bits (N, K), C bits (M, N), scale_A bytes, scale_B bytes) of case i."""
    form = FORMS[i // (len(MODES) * PER_FORM_MODE)]
    mode = MODES[i // PER_FORM_MODE % len(MODES)]
    kind, dtype_d, ta, tb, st, bs = form
    K = K_OF[kind]
    a = patterns(i, 1, (M, K), ta, mode)
    b = patterns(i, 2, (N, K), tb, mode)
    c_mode = ("zero", "narrow", "wide")[i % 3]
    c = np.zeros((M, N), np.int64) if c_mode == "zero" else patterns(i, 3, (M, N), dtype_d, c_mode)
    sa = sb = None
    if st is not None:
        r_a, r_b = stream(i, 4, M * (K // bs)).reshape(M, -1), stream(i, 5, N * (K // bs)).reshape(N, -1)
        if st == "ue8m0":  # around 2^0, sometimes anywhere (0xFF is NaN)
            wide = i % 2 == 0
            sa = ((r_a % 256) if wide else 127 - 12 + (r_a % 25)).astype(np.int64)
            sb = ((r_b % 256) if wide else 127 - 12 + (r_b % 25)).astype(np.int64)
        else:  # ue4m3: any byte (the sign bit is ignored; 0x7F/0xFF are NaN)
            sa, sb = (r_a % 256).astype(np.int64), (r_b % 256).astype(np.int64)
    return form, mode, a, b, c, sa, sb


def n_cases():
    return len(FORMS) * len(MODES) * PER_FORM_MODE


def _run_case(i):
    import torch
    from mmasim.simulator.nv_ptx import tcgen05mma, tcgen05mma_block_scale
    (kind, dtype_d, ta, tb, st, bs), _, a, b, c, sa, sb = case_inputs(i)
    K = K_OF[kind]
    views = {"tf32": (np.int32, torch.int32, torch.float32), "f32": (np.int32, torch.int32, torch.float32),
             "f16": (np.int16, torch.int16, torch.float16), "bf16": (np.int16, torch.int16, torch.bfloat16),
             "e4m3": (np.uint8, torch.uint8, torch.float8_e4m3fn), "e5m2": (np.uint8, torch.uint8, torch.float8_e5m2),
             "ue8m0": (np.uint8, torch.uint8, torch.float8_e8m0fnu), "ue4m3": (np.uint8, torch.uint8, torch.float8_e4m3fn)}

    def tensor(x, t):  # raw bit patterns -> a torch tensor of that type (uint64 -> intN wraps to the pattern)
        npt, tt, ft = views[t]
        return torch.from_numpy(np.ascontiguousarray(x.astype(np.uint64).astype(npt))).view(tt).view(ft)

    C = tensor(c, dtype_d)
    if st is None:
        op = tcgen05mma("Blackwell", f"m{M}n{N}k{K}.{dtype_d}.{ta}.{tb}")
        D = op(tensor(a, ta), tensor(b, tb).T.contiguous(), C)
    else:
        op = tcgen05mma_block_scale("Blackwell", f"m{M}n{N}k{K}.block{bs}.{dtype_d}.{ta}.{tb}.{st}")
        if kind == "mxf4nvf4":  # two e2m1 per byte, even k in the low nibble
            A = torch.from_numpy((a[:, 0::2] | a[:, 1::2] << 4).astype(np.uint8))
            B = torch.from_numpy((b[:, 0::2] | b[:, 1::2] << 4).astype(np.uint8).T.copy())
        else:
            A, B = tensor(a, ta), tensor(b, tb).T.contiguous()
        D = op(A, B, C, tensor(sa, st), tensor(sb, st).T.contiguous())
    out = D.view(torch.int32 if dtype_d == "f32" else torch.int16).numpy()
    return out.astype(np.int64) & (0xFFFFFFFF if dtype_d == "f32" else 0xFFFF)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--cases", type=int, default=None, help="only the first N cases (a smoke run)")
    args = ap.parse_args()
    import torch
    from concurrent.futures import ProcessPoolExecutor
    t0 = time.time()
    with ProcessPoolExecutor(args.workers) as pool:
        outs = list(pool.map(_run_case, range(args.cases or n_cases()), chunksize=4))
    d = np.stack(outs).astype(np.uint32)
    meta = {"what": "MMA-Sim tcgen05 model outputs on case_inputs(i) of scripts/mmasim_crosscheck.py",
            "mmasim": os.environ.get("MMASIM_COMMIT", "unknown"), "torch": torch.__version__,
            "python": platform.python_version(), "numpy": np.__version__, "date": time.strftime("%Y-%m-%d"),
            "command": " ".join(sys.argv), "cases": len(outs), "m": M, "n": N, "seconds": round(time.time() - t0, 1)}
    np.savez_compressed(args.out, d=d, meta=np.array(json.dumps(meta)))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
