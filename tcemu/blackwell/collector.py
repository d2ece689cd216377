"""Collector buffers of tcgen05.mma (PTX 9.7.16.10, 9.7.16.10.9.1-4).

The tensor core may keep the A matrix (activation stationary, .collector::a::op) or, in the weight-stationary
form tcgen05.mma.ws, the B matrix in one of four buffers (.collector::b0..b3::op) and reuse it in a later MMA:

  fill     the operand read from memory is filled into the buffer
  use      the operand may be read from the buffer: needs an earlier fill still valid
  lastuse  as use, then the buffer may be discarded
  discard  the buffer may be discarded (the default: .collector::a::discard, .ws .collector::b0::discard)

Reuse is opportunistic: the hardware may reload the operand even when allowed to reuse it, so the source must not
change while the buffer is live. tcemu therefore always computes with the operand read from memory now and turns
every way the two could differ into an error: use / lastuse without a valid fill, an operand read from other places
than the fill read (a different descriptor or shifted B columns the buffer does not hold; with the instruction
descriptor's max shift > 0 the buffer may hold more columns than the fill read, so places it did not read are not
held against the use), or bytes that changed since the fill. The buffer's contents are kept per source place
(shared-memory address and bit, or tensor-memory address) with the element bits read there.
"""
from dataclasses import dataclass

import numpy as np

from ..core.errors import LayoutError
from ..core.validate import show

OPS = ("fill", "use", "lastuse", "discard")


@dataclass(frozen=True)
class CollectorOp:
    buffer: str  # "a", or "b0".."b3" (.ws)
    op: str

    @classmethod
    def parse(cls, text, ws: bool) -> "CollectorOp":
        """'b1::fill', '.collector::b1::fill', 'a::use' (None: the default discard)."""
        if text is None:
            return cls("b0" if ws else "a", "discard")
        if isinstance(text, CollectorOp):
            parts = [text.buffer, text.op]
        elif isinstance(text, str):
            parts = [p for p in text.strip().lstrip(".").split("::") if p and p != "collector"]
        else:
            raise LayoutError("collector_op", f"{show(text)}: a string such as 'b0::fill' or 'a::use'")
        buffers = ("b0", "b1", "b2", "b3") if ws else ("a",)
        if len(parts) != 2 or parts[0] not in buffers or parts[1] not in OPS:
            form = "tcgen05.mma.ws takes .collector::b0..b3" if ws else "tcgen05.mma takes .collector::a"
            raise LayoutError("collector_op", f"{show(text)}: {form}::fill / use / lastuse / discard (PTX 9.7.16.10.9)")
        return cls(parts[0], parts[1])


class CollectorBuffers:
    """One CTA's collector buffers: what each holds since its fill (None: nothing valid)."""

    def __init__(self):
        self.buffers = {}

    def apply(self, op: CollectorOp, places, bits, *, may_hold_more: bool = False, operand: str = "B") -> None:
        """Check `op` against the operand read now (`places`: int64 keys of where each element was read, `bits`:
        its raw bits, same shape) and update the buffer."""
        places = np.asarray(places, np.int64).ravel()
        bits = np.asarray(bits).astype(np.int64).ravel()
        name = f".collector::{op.buffer}::{op.op}"
        if op.op == "fill":
            order = np.argsort(places, kind="stable")
            self.buffers[op.buffer] = (places[order], bits[order])
            return
        if op.op == "discard":
            self.buffers.pop(op.buffer, None)
            return
        held = self.buffers.get(op.buffer)
        if held is None:
            raise LayoutError("collector_op", f"{name} needs an earlier .collector::{op.buffer}::fill that is still "
                                              "valid (PTX 9.7.16.10.9: none since the last lastuse / discard)")
        keys, vals = held
        pos = np.clip(np.searchsorted(keys, places), 0, max(keys.size - 1, 0))
        found = keys.size > 0
        present = (keys[pos] == places) if found else np.zeros(places.shape, bool)
        if not may_hold_more and not present.all():
            i = int(np.argmin(present))
            raise LayoutError("collector_op", f"{name}: {operand} element {i} is read from a place the fill did not read "
                                              "(a different descriptor or column shift): the buffer does not hold it")
        changed = present & (vals[pos] != bits)
        if changed.any():
            i = int(np.argmax(changed))
            raise LayoutError("collector_op", f"{name}: {operand} element {i} changed since the fill (was "
                                              f"{int(vals[pos[i]]):#x}, is {int(bits[i]):#x}); the tensor core may use "
                                              "either, so PTX requires the source to stay unchanged")
        if op.op == "lastuse":
            self.buffers.pop(op.buffer, None)
