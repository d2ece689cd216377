"""`tcemu exec --record OUT.json`: every launch of the run as a launch record (tcemu.traces.records), replayable
with tcemu.launches.replay or `tcemu run OUT.json --launch I`.

Beside the fields of a captured record (entry, grid, block, cluster, shared_bytes, params, param_blob, pointers,
buffers), each buffer (one per live allocation, dtype "bytes") carries `data`, the hex of its bytes before the
launch, and a buffer the launch changed is an "output" with `expected`, the hex of its bytes after: a replay
starts every buffer from `data` and must end each output at `expected`. Tensor maps are already in tcemu's
format in the blob (tensormaps and encodes are empty). Each record's `fixture` names its PTX file, written
beside OUT.json as OUT.mI.ptx (one per fatbinary that launched a kernel). `symbols` lists the module's
__device__ / __constant__ variables the launch mapped ({name, address, bytes}: PTX name, device address, size),
each inside one of the buffers, so a replay maps them where the program had them; `cooperative` marks a
cooperative launch."""
import json
import os

import numpy as np

from ...traces.records import MAX_BUFFER_BYTES


class Recorder:
    def __init__(self, path):
        self.path = path
        self.records = []
        self.ptx = {}      # fatbinary index -> PTX text

    def before(self, buffers):
        """A copy of every buffer before the launch (only when recording)."""
        if not self.path:
            return None
        return [np.array(v, copy=True) for _, v, _ in buffers]

    def add(self, index, text, name, prog, grid, block, cluster, smem, blob, buffers, before, symbols=None,
            cooperative=False):
        if not self.path:
            return
        self.ptx[index] = text
        stem = os.path.splitext(os.path.basename(self.path))[0]
        bufs, spans, seen = [], [], set()
        for (addr, view, label), old in zip(buffers, before):
            if view.size > MAX_BUFFER_BYTES:
                continue
            if label in seen:   # labels the runtime cut short (long symbol names) may repeat: the address tells
                label = f"{label}@{int(addr):#x}"
            seen.add(label)
            changed = not np.array_equal(old, view)
            b = {"name": label, "role": "output" if changed else "input", "dtype": "bytes", "storage": [int(view.size)],
                 "bytes": int(view.size), "address": int(addr), "data": old.tobytes().hex()}
            if changed:
                b["expected"] = view.tobytes().hex()
            bufs.append(b)
            spans.append((int(addr), int(addr) + int(view.size), label))
        pointers = []
        for off in range(0, len(blob) - 7, 8):
            v = int.from_bytes(blob[off:off + 8], "little")
            for lo, hi, label in spans:
                if lo <= v <= hi:
                    pointers.append({"offset": off, "buffer": label, "delta": v - lo})
                    break
        params = [{"name": p.name, "offset": prog.symbols[p.name].address, "bytes": prog.symbols[p.name].size}
                  for p in prog.fn.params]
        self.records.append({
            "entry": name, "launch_api": "tcemu exec", "fixture": f"{stem}.m{index}",
            "grid": list(grid), "block": list(block), "cluster": list(cluster), "shared_bytes": int(smem),
            "params": params, "param_bytes": len(blob), "param_blob": blob.hex(), "pointers": pointers,
            "tensormaps": [], "encodes": [], "buffers": bufs,
            "symbols": [{"name": n, "address": int(a), "bytes": int(b)} for n, (a, b) in (symbols or {}).items()]})
        if cooperative:
            self.records[-1]["cooperative"] = True

    def write(self):
        if not self.path:
            return
        folder = os.path.dirname(os.path.abspath(self.path))
        stem = os.path.splitext(os.path.basename(self.path))[0]
        for index, text in self.ptx.items():
            with open(os.path.join(folder, f"{stem}.m{index}.ptx"), "w", encoding="utf-8") as fh:
                fh.write(text)
        with open(self.path, "w", encoding="utf-8") as fh:
            json.dump({"launches": self.records}, fh, indent=1)
            fh.write("\n")
