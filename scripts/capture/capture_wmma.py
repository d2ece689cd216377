"""Inputs for capture_wmma.cu's numerics run, and the trace traces/wmma_sm90.npz from its two outputs
(traces/README.md, `wmma`): the fragment layouts (which matrix element each lane's x[e] holds) and D = A B + C for
CASES random cases of each of CONFIGS.

    python scripts/capture/capture_wmma.py inputs IN.bin            # seeded: SEED, CASES
    ./capture_wmma layouts.bin && ./capture_wmma numerics IN.bin OUT.bin 64     # on the GPU
    python scripts/capture/capture_wmma.py trace layouts.bin IN.bin OUT.bin traces/wmma_sm90.npz GPU DRIVER CUDA DATE
"""
import json
import sys

import numpy as np

SEED, CASES = 2026, 64
# (M, N, K, operand type, accumulator type), as numerics() in capture_wmma.cu
CONFIGS = [(16, 16, 16, "f16", "f32"), (16, 16, 16, "f16", "f16"), (16, 16, 16, "bf16", "f32"),
           (32, 8, 16, "f16", "f32"), (8, 32, 16, "f16", "f32"), (32, 8, 16, "f16", "f16")]
# layouts(): (shape, fragment, type, layout), as written
LAYOUTS = [((m, n, k), frag, t, lay) for (m, n, k) in [(16, 16, 16), (32, 8, 16), (8, 32, 16)]
           for frag, t, lay in [("a", "f16", "row"), ("a", "f16", "col"), ("b", "f16", "row"), ("b", "f16", "col"),
                                ("c", "f16", "row"), ("c", "f16", "col"), ("c", "f32", "row"), ("c", "f32", "col")]] + \
          [((16, 16, 16), frag, "bf16", lay) for frag in "ab" for lay in ("row", "col")]


def elements(frag, t, m, n, k):
    """Elements per lane of a fragment (CUDA's fragment<...>::num_elements)."""
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n)}[frag]
    return 16 if frag in "ab" and t == "f16" else rows * cols // 32   # f16 operands: 16 in every shape


def random_bits(rng, t, size):
    """Finite values with mixed signs, zeros and subnormals among them."""
    if t == "f32":
        e = rng.integers(118, 138, size)
        return (rng.integers(0, 2, size) << 31 | e << 23 | rng.integers(0, 1 << 23, size)).astype(np.uint32)
    if t == "bf16":
        e = rng.integers(118, 136, size)
        return (rng.integers(0, 2, size) << 15 | e << 7 | rng.integers(0, 1 << 7, size)).astype(np.uint16)
    e = rng.integers(0, 21, size)   # f16: exponent 0 is zero or a subnormal
    return (rng.integers(0, 2, size) << 15 | e << 10 | rng.integers(0, 1 << 10, size)).astype(np.uint16)


def inputs(path):
    rng = np.random.default_rng(SEED)
    with open(path, "wb") as fh:
        for m, n, k, ta, tc in CONFIGS:
            fh.write(random_bits(rng, ta, CASES * 512).tobytes())
            fh.write(random_bits(rng, ta, CASES * 512).tobytes())
            c = random_bits(rng, tc, CASES * 512)   # the kernel reads case j's C from byte j * 2048: with f16,
            fh.write(c.tobytes() + (b"" if tc == "f32" else bytes(CASES * 1024)))   # cases 32 on read zeros


def trace(layouts_bin, in_bin, out_bin, dest, gpu, driver, cuda, date):
    """The tcemu-trace archive (kind `wmma`): columns layout (int32, every table of LAYOUTS in order, (32, count)
    row-major), a and b (uint16 bits: per config, CASES matrices A row-major, B column-major), c and d (uint32 bits,
    f16 in the low half: C and D row-major)."""
    import hashlib
    import os
    lay = np.fromfile(layouts_bin, np.int32)
    raw = np.fromfile(in_bin, np.uint8)
    out = np.fromfile(out_bin, np.uint8)
    want = sum(32 * elements(f, t, *s) for s, f, t, _ in LAYOUTS)
    assert want == lay.size, (want, lay.size)
    na, nc = CASES * 1024, CASES * 2048
    cols = {"layout": lay, "a": [], "b": [], "c": [], "d": []}
    for i, (m, n, k, ta, tc) in enumerate(CONFIGS):
        base = raw[i * (2 * na + nc):(i + 1) * (2 * na + nc)]
        cols["a"].append(base[:na].view(np.uint16).reshape(CASES, 512)[:, :m * k].ravel())
        cols["b"].append(base[na:2 * na].view(np.uint16).reshape(CASES, 512)[:, :k * n].ravel())
        cw = np.uint32 if tc == "f32" else np.uint16   # case j's C and D: 2048 bytes from j * 2048, either type
        size = m * n * np.dtype(cw).itemsize
        for name, src in (("c", base[2 * na:2 * na + nc]), ("d", out[i * nc:(i + 1) * nc])):
            cols[name].append(np.ascontiguousarray(src.reshape(CASES, 2048)[:, :size]).view(cw).ravel()
                              .astype(np.uint32))
    for name in "abcd":
        cols[name] = np.concatenate(cols[name])
    here = os.path.dirname(os.path.abspath(__file__))
    sources = {}
    for f in ("capture_wmma.cu", "capture_wmma.py"):
        with open(os.path.join(here, f), "rb") as fh:
            sources["scripts/capture/" + f] = hashlib.sha256(fh.read()).hexdigest()
    meta = {"format": "tcemu-trace", "version": 1, "kind": "wmma", "arch": "sm90", "gpu": gpu, "driver": driver,
            "cuda": cuda, "date": date, "seed": SEED, "cases": CASES,
            "configs": [list(c) for c in CONFIGS], "layouts": [[f"m{s[0]}n{s[1]}k{s[2]}", f, t, o]
                                                              for s, f, t, o in LAYOUTS],
            "build": "nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -O2 scripts/capture/capture_wmma.cu "
                     "-o capture_wmma",
            "command": "python3 scripts/capture/capture_wmma.py inputs wmma_in.bin; ./capture_wmma wmma_layouts.bin; "
                       "./capture_wmma numerics wmma_in.bin wmma_out.bin 64",
            "columns": {"layout": "int32: for each meta.layouts entry in order, (32 lanes, elements) the memory "
                                  "index (row * width + col for .row, col * height + row for .col) of the element "
                                  "wmma.load put in each lane's fragment element",
                        "a": "uint16 A bits, per meta.configs entry: cases x (M x K) row-major",
                        "b": "uint16 B bits, per config: cases x (K x N) column-major",
                        "c": "uint32 C bits (f16: low half), per config: cases x (M x N) row-major",
                        "d": "uint32 D bits from the GPU, as c"},
            "sources": sources}
    np.savez_compressed(dest, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)


if __name__ == "__main__":
    if sys.argv[1] == "inputs":
        inputs(sys.argv[2])
    else:
        trace(*sys.argv[2:10])
