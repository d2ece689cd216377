"""Pack the raw tables of scripts/capture/capture_sfu.cu for the trip back: each table delta-coded (first word, then
wrapping differences of consecutive words as int32) and lzma-compressed, grouped into at most 8 .npz files of
at most 15 MB (numpy.savez of uint8 members; no pickles). Usage: python3 pack_sfu.py RAWDIR OUTDIR"""
import lzma
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

LIMIT = 15 << 20


def pack(path):
    raw = np.fromfile(path, dtype=np.uint16 if path.endswith(".u16") else np.uint32)
    d = np.diff(raw.astype(np.int64), prepend=0).astype(raw.dtype).view(np.int16 if raw.dtype == np.uint16
                                                                        else np.int32)
    return os.path.basename(path), np.frombuffer(lzma.compress(d.tobytes(), preset=6), dtype=np.uint8)


def main(rawdir, outdir):
    names = sorted(n for n in os.listdir(rawdir) if n.endswith((".u32", ".u16")))
    first = [n for n in names if not n.startswith(("lg2", "sin", "cos", "tanh"))]
    order = first + [n for n in names if n not in first]
    with ProcessPoolExecutor(16) as ex:
        packed = list(ex.map(pack, [os.path.join(rawdir, n) for n in order]))
    groups, cur, size = [], {}, 0
    for name, blob in packed:
        if size + blob.size > LIMIT and cur:
            groups.append(cur)
            cur, size = {}, 0
        cur[name.replace(".", "_")] = blob
        size += blob.size
    groups.append(cur)
    for i, g in enumerate(groups[:8]):
        np.savez(os.path.join(outdir, f"sfu_{i}.npz"), **g)
        print(f"sfu_{i}.npz: {len(g)} tables, {sum(b.size for b in g.values()) / 1e6:.1f} MB")
    for g in groups[8:]:
        print("LEFT OUT:", ", ".join(g))


if __name__ == "__main__":
    main(*sys.argv[1:3])
