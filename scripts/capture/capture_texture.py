"""The plan that capture_texture.cu samples on silicon, and the trace traces/texture_sm90.npz from its results
(traces/README.md, kind `texture`).

    python scripts/capture/capture_texture.py plan DIR          # DIR/plan.bin data.bin coords.bin (seeded: SEED)
    ./capture_texture DIR/plan.bin DIR/data.bin DIR/coords.bin DIR/results.bin DIR/status.bin     # on the GPU
    python scripts/capture/capture_texture.py trace DIR traces/texture_sm90.npz GPU DRIVER CUDA DATE
"""
import json
import struct
import sys

import numpy as np

SEED = 2026
FIELDS = ("dims", "resource", "bits0", "bits1", "bits2", "bits3", "kind", "read_mode", "filter", "addr",
          "normalized", "width", "height", "result", "op", "n", "data_off", "data_bytes", "coord_off")
BORDER = (0.25, -2.0, 7.0, 1.5)
TEX, FETCH, GATHER0, SURF_CLAMP, SURF_ZERO = 0, 1, 2, 6, 7
# (bits per channel, kind 0 signed 1 unsigned 2 float)
FORMATS = [((32, 0, 0, 0), 2), ((32, 32, 32, 32), 2), ((16, 0, 0, 0), 2), ((16, 16, 0, 0), 2),
           ((8, 0, 0, 0), 1), ((8, 8, 8, 8), 1), ((8, 0, 0, 0), 0), ((8, 8, 0, 0), 0), ((16, 0, 0, 0), 1),
           ((16, 16, 0, 0), 0), ((32, 0, 0, 0), 1), ((32, 0, 0, 0), 0)]
SPECIALS = np.array([0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0x7149F2CA, 0xF149F2CA, 0x3EFFFFFF, 0x00000001,
                     0xBF000000, 0x3F000001], np.uint32)   # NaN, +-inf, -0, +-1e30, below 0.5, tiny, -0.5, above 0.5


def texels(rng, bits, kind, count):
    """count texels' bytes: floats finite with mixed signs, magnitudes around 1 (f16 subnormals among them),
    integers every bit pattern."""
    nch = sum(1 for b in bits if b)
    b = bits[0]
    if kind == 2 and b == 32:
        e = rng.integers(118, 134, count * nch)
        v = (rng.integers(0, 2, count * nch) << 31 | e << 23 | rng.integers(0, 1 << 23, count * nch)).astype(np.uint32)
    elif kind == 2:
        e = rng.integers(0, 20, count * nch)
        v = (rng.integers(0, 2, count * nch) << 15 | e << 10 | rng.integers(0, 1 << 10, count * nch)).astype(np.uint16)
    else:
        v = rng.integers(0, 1 << b, count * nch, dtype=np.uint64).astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[b])
    return v.tobytes()


def f32(a):
    return np.asarray(a, np.float32).view(np.uint32)


def plan(out_dir):
    rng = np.random.default_rng(SEED)
    cases, data, xs, ys = [], [], [], []
    off = [0, 0]

    def add(fmt, read_mode, filt, addr, norm, width, height, xw, yw, op=TEX, resource=0, dims=None, raw=None):
        bits, kind = fmt
        nch = sum(1 for b in bits if b)
        esize = sum(bits) // 8
        raw = texels(rng, bits, kind, width * max(height, 1)) if raw is None else raw
        result = 0 if kind == 2 or read_mode == 1 else (1 if kind == 0 else 2)
        if op >= SURF_CLAMP:
            result = 2
        n = len(xw)
        cases.append(dict(dims=dims or (1 if height == 0 else 2), resource=resource, bits=bits, kind=kind,
                          read_mode=read_mode, filter=filt, addr=addr, normalized=norm, width=width,
                          height=height, result=result, op=op, n=n, data_off=off[0], data_bytes=len(raw),
                          coord_off=off[1], nch=nch, esize=esize))
        data.append(raw)
        xs.append(np.asarray(xw, np.uint32))
        ys.append(np.asarray(yw, np.uint32))
        off[0] += len(raw)
        off[1] += n

    def modes(fmt):
        kind, b = fmt[1], fmt[0][0]
        return [0] + ([1] if kind != 2 and b < 32 else [])

    w1 = 16
    coarse_u = np.concatenate([f32(np.arange(-20, 36, 0.25)), SPECIALS])
    coarse_n = np.concatenate([f32(np.arange(-1.25, 2.25, 1 / 64)), SPECIALS])
    zeros = lambda a: np.zeros(len(a), np.uint32)   # noqa: E731
    for fmt in FORMATS:
        for rm in modes(fmt):
            floaty = fmt[1] == 2 or rm == 1
            for filt in ([0, 1] if floaty else [0]):
                for addr in range(4):
                    for norm in (0, 1):
                        c = coarse_n if norm else coarse_u
                        add(fmt, rm, filt, addr, norm, w1, 0, c, zeros(c))
            # tex1Dfetch on linear memory: integer indices
            idx = np.array(list(range(-4, 21)) + [-(1 << 31), (1 << 31) - 1, 1 << 20], np.int64).astype(np.uint32)
            add(fmt, rm, 0, 1, 0, w1, 0, idx, zeros(idx), op=FETCH, resource=1)
            if floaty:   # linear filtering, fine sweeps: every 1/256 step and its neighbours, and random points
                fine = np.arange(0, 4 * 1024) / 1024.0 + 0.25
                rnd = rng.uniform(-1, w1 + 1, 1024)
                xu = np.concatenate([f32(fine), f32(rnd)])
                add(fmt, rm, 1, 1, 0, w1, 0, xu, zeros(xu))
                for wn in (16, 13):
                    xn = np.concatenate([f32(fine / wn), f32(rng.uniform(-0.1, 1.1, 1024))])
                    add(fmt, rm, 1, 1, 1, wn, 0, xn, zeros(xn))
    # 2-D: point and bilinear, every address mode, on a few formats
    gx, gy = np.meshgrid(np.arange(-2, 10, 0.25), np.arange(-2, 6, 0.25))
    fx, fy = np.meshgrid(np.arange(1, 2, 1 / 64), np.arange(1, 2, 1 / 64) + 1 / 128)
    for fmt, rm in [(FORMATS[0], 0), (FORMATS[1], 0), (FORMATS[2], 0), (FORMATS[5], 1), (FORMATS[9], 1),
                    (FORMATS[5], 0), (FORMATS[11], 0)]:
        floaty = fmt[1] == 2 or rm == 1
        for filt in ([0, 1] if floaty else [0]):
            for addr in range(4):
                for norm in (0, 1):
                    sx, sy = (gx / 8, gy / 4) if norm else (gx, gy)
                    add(fmt, rm, filt, addr, norm, 8, 4, f32(sx.ravel()), f32(sy.ravel()))
            if filt:
                add(fmt, rm, 1, 1, 0, 8, 4, f32(fx.ravel()), f32(fy.ravel()))
        for comp in range(4):   # tex2Dgather
            add(fmt, rm, 0, 1, 0, 8, 4, f32(gx.ravel()), f32(gy.ravel()), op=GATHER0 + comp)
    # descriptors CUDA should refuse (their status is the trace's record of the error code)
    one = f32([1.0])
    add(((8, 0, 0, 0), 1), 0, 1, 1, 0, 4, 0, one, zeros(one))          # linear filtering of an integer read
    add(((32, 0, 0, 0), 0), 1, 0, 1, 0, 4, 0, one, zeros(one))         # normalized-float read of 32-bit ints
    add(((32, 0, 0, 0), 2), 1, 0, 1, 0, 4, 0, one, zeros(one))         # normalized-float read of floats
    # surfaces: byte x coordinates, clamp and zero out-of-range modes
    for op in (SURF_CLAMP, SURF_ZERO):
        xb = np.arange(-12, 16 * 4 + 12, 4).astype(np.int64)
        add(((32, 0, 0, 0), 1), 0, 0, 0, 0, 16, 0, xb.astype(np.uint32), zeros(xb), op=op)
        bx, by = np.meshgrid(np.arange(-8, 8 * 4 + 8, 4), np.arange(-2, 6))
        add(((8, 8, 8, 8), 1), 0, 0, 0, 0, 8, 4, bx.ravel().astype(np.int64).astype(np.uint32),
            by.ravel().astype(np.int64).astype(np.uint32), op=op)
    # nearest-point sampling near texel edges: every 1/4096 step, the floats next to each integer, random points;
    # normalized coordinates on widths 16 and 13 (x * 13 rounds)
    edges = np.arange(1, 5, dtype=np.float32)
    near = np.concatenate([np.nextafter(edges, np.float32(-9)), edges, np.nextafter(edges, np.float32(9))])
    for fmt, rm in [(FORMATS[0], 0), (FORMATS[5], 1)]:
        xp = np.concatenate([f32(np.arange(0, 4, 1 / 4096)), f32(near), f32(rng.uniform(-1, 17, 1024))])
        add(fmt, rm, 0, 1, 0, 16, 0, xp, zeros(xp))
        for wn in (16, 13):
            xn = np.concatenate([f32(np.arange(0, 4, 1 / 4096) / wn), f32(near / wn),
                                 np.nextafter(f32(near / wn).view(np.float32), np.float32(9)).view(np.uint32),
                                 f32(rng.uniform(-0.1, 1.1, 1024))])
            add(fmt, rm, 0, 1, 1, wn, 0, xn, zeros(xn))
    # linear filtering with one texel of each pair 0 ((1 - a) t0, a t1 alone) and with equal pairs, every weight
    xl = f32(np.arange(0.5, 16.5, 1 / 256))
    for fmt in (FORMATS[0], FORMATS[2]):
        v = np.frombuffer(texels(rng, fmt[0], 2, 16), np.float32 if fmt[0][0] == 32 else np.float16).copy()
        zero = v.copy()
        zero[1::2] = 0
        pairs = np.repeat(v[::2], 2)
        for texel in (zero, pairs):
            add(fmt, 0, 1, 1, 0, 16, 0, xl, zeros(xl), raw=texel.tobytes())
    with open(f"{out_dir}/plan.bin", "wb") as fh:
        for c in cases:
            vals = [c["dims"], c["resource"], *c["bits"], c["kind"], c["read_mode"], c["filter"], c["addr"],
                    c["normalized"], c["width"], c["height"], c["result"], c["op"], c["n"], c["data_off"],
                    c["data_bytes"], c["coord_off"]]
            fh.write(struct.pack("<19i4f", *vals, *BORDER))
    with open(f"{out_dir}/data.bin", "wb") as fh:
        fh.write(b"".join(data))
    with open(f"{out_dir}/coords.bin", "wb") as fh:
        fh.write(np.concatenate(xs).tobytes() + np.concatenate(ys).tobytes())
    print(len(cases), "cases,", off[1], "coordinates,", off[0], "data bytes")


def read_plan(path):
    raw = open(path, "rb").read()
    size = struct.calcsize("<19i4f")
    out = []
    for i in range(len(raw) // size):
        v = struct.unpack_from("<19i4f", raw, i * size)
        out.append(dict(zip(FIELDS, v[:19]), border=v[19:]))
    return out


def trace(in_dir, dest, gpu, driver, cuda, date):
    """The tcemu-trace archive (kind `texture`): `cases` (int32, one row per case, columns CASE_COLUMNS),
    `status` (the cudaError_t each case's object creation returned), `data` (uint8, every case's texels),
    `x`, `y` (uint32 coordinate words) and `result` (uint32, 4 words per coordinate)."""
    import hashlib
    import os
    cases = read_plan(f"{in_dir}/plan.bin")
    table = np.array([[c[f] for f in FIELDS] for c in cases], np.int32)
    coords = np.fromfile(f"{in_dir}/coords.bin", np.uint32)
    n = coords.size // 2
    here = os.path.dirname(os.path.abspath(__file__))
    sources = {}
    for f in ("capture_texture.cu", "capture_texture.py"):
        with open(os.path.join(here, f), "rb") as fh:
            sources["scripts/capture/" + f] = hashlib.sha256(fh.read()).hexdigest()
    meta = {"format": "tcemu-trace", "version": 1, "kind": "texture", "arch": "sm90", "gpu": gpu, "driver": driver,
            "cuda": cuda, "date": date, "seed": SEED, "border": list(BORDER), "case_columns": list(FIELDS),
            "build": "nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o capture_texture "
                     "scripts/capture/capture_texture.cu",
            "command": "python3 scripts/capture/capture_texture.py plan DIR; ./capture_texture DIR/plan.bin "
                       "DIR/data.bin DIR/coords.bin DIR/results.bin DIR/status.bin",
            "columns": {"cases": "int32 (cases, 19): one row per case, columns meta.case_columns (capture_texture.cu's "
                                 "struct Case: dims, resource 0 array 1 linear, channel bits, channel kind, read mode, "
                                 "filter, address mode, normalized coordinates, width, height, result type 0 f32 1 "
                                 "s32 2 u32, op 0 tex 1 tex1Dfetch 2-5 tex2Dgather of component 0-3 6 surface read "
                                 ".clamp 7 .zero, coordinates n, offsets)",
                        "status": "int32: the cudaError_t the case's object creation returned (not 0: not sampled)",
                        "data": "uint8: every case's texels, row-major",
                        "x": "uint32: coordinate words (float bits; ints for tex1Dfetch and surface byte x)",
                        "y": "uint32: the second coordinate's words, as x",
                        "result": "uint32: 4 result words per coordinate, from the GPU"},
            "sources": sources}
    np.savez_compressed(dest, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), cases=table,
                        status=np.fromfile(f"{in_dir}/status.bin", np.int32),
                        data=np.fromfile(f"{in_dir}/data.bin", np.uint8), x=coords[:n], y=coords[n:],
                        result=np.fromfile(f"{in_dir}/results.bin", np.uint32))


if __name__ == "__main__":
    if sys.argv[1] == "plan":
        plan(sys.argv[2])
    elif sys.argv[1] == "trace":
        trace(*sys.argv[2:8])
    else:
        sys.exit(__doc__)
