"""The device heap of a launch: malloc and free called from a kernel (CUDA C++ Programming Guide, "Dynamic Global
Memory Allocation and Operations"). Each block is a global allocation of its own, so an access past its end or
after its free faults as any other; the heap holds HEAP_BYTES (cudaLimitMallocHeapSize's default, 8 MiB, or what
the launch was given) and malloc returns NULL once a request does not fit. The GPU allocator's own overhead is not
modelled, so a nearly full heap takes more blocks than a GPU's: an H200's 4 MiB heap held 400 blocks of 4,096 bytes
(session 12's probe), tcemu's holds 1,024. Blocks live until freed or the launch ends: a pointer kept for a later
launch is not modelled (that launch faults on it)."""
import numpy as np

from .errors import KernelFault

HEAP_BYTES = 8 << 20
HEAP_MIN = 4 << 20   # cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1000) left 4,194,304 (an H200, session 12)


class Heap:
    def __init__(self, gmem, limit: int = HEAP_BYTES):
        self.gmem, self.limit, self.used, self.count = gmem, int(limit), 0, 0
        self.blocks = {}   # base -> Allocation

    def malloc(self, size: int, who: str) -> int:
        """A new block's address, or 0 (NULL) where the heap cannot hold it. malloc(0) returns a block of no bytes
        (an H200 returned non-NULL), which any access faults on."""
        if size < 0 or self.used + size > self.limit:
            return 0
        self.count += 1
        base = self.gmem.allocate(np.zeros(size, np.uint8), f"malloc#{self.count} ({size} bytes, {who})")
        self.blocks[base] = self.gmem.allocs[-1]   # allocate appends it (holding() finds no byte of a 0-byte block)
        self.used += size
        return base

    def free(self, ptr: int, who: str, where: str) -> None:
        if ptr == 0:   # free(NULL) does nothing
            return
        a = self.blocks.pop(ptr, None)
        if a is None:
            gone = next((a for a, _ in self.gmem.gone if a.base == ptr), None)
            what = (f"'{gone.name}', which was freed already (double free)" if gone is not None else
                    f"which no device-side malloc returned (in {self.gmem.describe(ptr)})")
            raise KernelFault(where, f"{who} frees {ptr:#x}, {what}")
        self.used -= a.data.size
        self.gmem.unmap(a, f"freed by {who}")


def heap(launch) -> Heap:
    """The launch's heap, made on first use."""
    h = getattr(launch, "heap", None)
    if h is None:
        h = launch.heap = Heap(launch.gmem, getattr(launch, "heap_bytes", HEAP_BYTES))
    return h
