"""Shared memory a tcgen05.mma or tcgen05.cp reads through its descriptor, checked before the read (PTX 9.7.16.6.5)."""
import numpy as np

from ....core.errors import TcemuError
from ....layout.addressing import operand_addresses
from ....layout.descriptors import UmmaDescriptor
from ....layout.smem import SUBBYTE
from ...errors import KernelFault, MemoryFault
from ...provenance import check_tile
from ..wgmma import check_async_proxy_read


def smem_spots(cta, desc_value, rows, k, dtype, major, padded, which, wh, W, arch="sm100", keep=None, rule="tile"):
    """Byte indices of shared memory an operand reads (checked: inside the allocation, not in flight, fenced for the
    async proxy, TMA-guard phases observed by the issuing warp, layout provenance). Fewer than 8 rows (tcgen05.cp
    .4x256b) are the first rows of one core-matrix group; `keep` (rows,) bool: only those rows are read (B under a
    zero-column mask); `arch` "sm103" reads LBO mode 1 descriptors; `rule`: the provenance rule (tcemu.ptx.provenance:
    "tile" for MMA operands, "rows" for tcgen05.cp sources)."""
    sh = cta.shared
    try:
        desc = UmmaDescriptor.decode(int(desc_value))
        addr_dtype = "u8" if padded else dtype
        addrs = operand_addresses(desc, rows=max(rows, 8), k=k, dtype=addr_dtype, major=major, arch=arch)[:rows]
    except TcemuError as e:
        raise KernelFault(wh, f"{which}: {e}") from None
    if keep is not None:
        addrs = addrs[np.asarray(keep, bool)]
    if padded:
        width = SUBBYTE[dtype]
        bit = width * (addrs & 15)
        lo = (addrs & ~15) + (bit >> 3)
        spots = np.unique(np.concatenate([lo.ravel(), (lo + (((bit & 7) + width - 1) >> 3)).ravel()]))
        ebytes = 0
    elif dtype in SUBBYTE:
        spots, ebytes = np.unique(addrs), 0
    else:
        ebytes = {"tf32": 4, "f16": 2, "bf16": 2}.get(dtype, 1)
        spots = (addrs.reshape(-1, 1) + np.arange(ebytes)).reshape(-1)
    lo_, hi_ = int(spots.min()), int(spots.max()) + 1
    if lo_ < sh.lo or hi_ > sh.hi:
        raise MemoryFault(wh, f"{which} reads shared bytes [{lo_:#x}, {hi_:#x}) of CTA rank {cta.rank} through "
                              f"descriptor {int(desc_value):#018x}, outside the kernel's shared memory "
                              f"[{sh.lo:#x}, {sh.hi:#x})")
    check_async_proxy_read(sh, spots, wh, which, "", "st.shared / cp.async", "PTX 9.7.16.6.5")
    if sh.guarded:
        sh.check_guard([W], spots, wh, f"({which}) reads")
    if ebytes and cta.launch.check_layouts:
        check_tile(cta.launch.gmem, sh.sources(addrs), ebytes, which, desc, wh, rule, memo=cta.launch.tiles)
    return spots

