"""Which CTAs of a launch may be resident at once, and the order they start in.

Warps running in lock-step (lockstep.py), a wave of clusters starts at once (`wave`: the limit, within WAVE_BYTES of
tcemu's state, or WAVE_CTAS within WAVE_BYTES_MAX); otherwise tcemu runs one cluster at a time, to completion, as
long as it makes progress (results and traces do not depend on how many CTAs a GPU holds). CTAs that wait on each
other (a grid barrier, a stream-K fix-up, a producer and a consumer in different CTAs) need the others to be
running: when the resident warps are proven stuck (machine.run_ctas, hang.py), the next clusters start, in grid
order (x, then y, then z), up to `limit` resident clusters; finished clusters leave and free their slots. The limit
is an H100's occupancy for the kernel (launch(resident="occupancy")), the whole grid (resident="grid") or a number
of CTAs (resident=int).
"""
from ..core.validate import show
from .errors import BudgetExceeded, PtxError, PtxLimit

SMS = 132                 # H100 SXM
CTAS_PER_SM = 32          # compute capability 9.0 (CUDA programming guide, "Technical Specifications")
THREADS_PER_SM = 2048
WARPS_PER_SM = 64
SMEM_PER_SM = 228 * 1024  # shared memory of one SM; each CTA also takes 1 KB the system reserves
SMEM_PER_CTA_RESERVED = 1024
WAVE_BYTES = 64 << 20
# ... but at least WAVE_CTAS clusters within WAVE_BYTES_MAX: a warp-specialised kernel's gangs are one role's warps
# of each CTA (CUTLASS ping-pong: 3 CTAs of 12 warps a wave in 64 MB made gangs of 12 warps); session 27, device
# duel of CUTLASS 512^3: 12 CTAs a wave x0.82 of 3 (6: x0.95; 1024 MB, 32 CTAs, was slower: NOTES)
WAVE_CTAS = 16
WAVE_BYTES_MAX = 256 << 20
# lower bounds of the CPU time a CTA and a warp cost before any instruction (a one-warp CTA that only returns:
# ~40-50 us on the 2-core VM, 2026-11-27, and about half that on the device machine's Xeon: a third of the faster
# one, for faster CPUs); a grid over timeout is refused
CTA_FLOOR_S = 6e-6
WARP_FLOOR_S = 3e-6
# a launch whose finished CTAs' pace projects more than PACE_MARGIN times its timeout stops once PACE_AFTER of the
# timeout has passed (check_pace)
PACE_AFTER = 0.1
PACE_MARGIN = 1.5


def occupancy(nthreads: int, smem_bytes: int):
    """(CTAs per SM, the limiting resource in words) of an H100 for CTAs of nthreads threads and smem_bytes of
    shared memory (static + dynamic). Registers per thread are not known before ptxas and are not counted."""
    warps = -(-nthreads // 32)
    by = {"32 CTAs per SM": CTAS_PER_SM,
          f"{THREADS_PER_SM} threads per SM ({warps * 32} per CTA)": THREADS_PER_SM // (warps * 32),
          f"{SMEM_PER_SM // 1024} KB of shared memory per SM ({(smem_bytes + SMEM_PER_CTA_RESERVED) / 1024:g} KB "
          f"per CTA, 1 KB reserved included)": SMEM_PER_SM // (smem_bytes + SMEM_PER_CTA_RESERVED),
          f"{WARPS_PER_SM} warps per SM": WARPS_PER_SM // warps}
    why = min(by, key=by.get)
    return by[why], why


class Corners:
    """The clusters of a whole grid in launch order (x fastest), by index, made as they are asked for: shape, the
    grid in clusters."""

    def __init__(self, shape):
        self.shape = shape

    def __len__(self):
        return self.shape[0] * self.shape[1] * self.shape[2]

    def __getitem__(self, i: int):
        if not 0 <= i < len(self):
            raise IndexError(i)
        gx, gy = self.shape[0], self.shape[1]
        return (i % gx, i // gx % gy, i // (gx * gy))


class Residency:
    """The clusters of a launch not yet started (admitted in order) and how many may be resident at once."""

    def __init__(self, resident, corners, build, nthreads: int, smem_bytes: int, cluster_size: int,
                 cluster_bytes: int, memory_limit: int, finished=None):
        self.corners = corners if isinstance(corners, Corners) else list(corners)
        self.build = build              # corner -> the cluster's CTAs
        self.on_finish = finished
        self.next = 0
        self.cluster_size = cluster_size
        self.total = len(self.corners) * cluster_size
        per_sm, why = occupancy(nthreads, smem_bytes)
        self.occupancy = SMS * per_sm // cluster_size * cluster_size
        self.occupancy_why = f"{per_sm} CTAs per SM x {SMS} SMs, limited by {why}"
        self.gpu = True                 # the limit is a GPU's: a launch stuck at it hangs on the GPU too
        if isinstance(resident, bool) or not (resident in ("occupancy", "grid") or isinstance(resident, int)):
            raise PtxError("resident", f"must be 'occupancy', 'grid' or a number of CTAs, got {show(resident)}")
        if resident == "occupancy":
            self.limit = SMS * per_sm // cluster_size
            self.holder = "an H100 holds"
            self.why = f"{self.occupancy_why}; registers per thread are unknown before ptxas and not counted"
        elif resident == "grid":
            self.limit = len(self.corners)
            self.holder = "the whole grid"
            self.why = "resident='grid'"
        else:
            if resident < cluster_size:
                raise PtxError("resident", f"{resident} CTAs: at least one cluster ({cluster_size} CTAs) must fit")
            self.limit = resident // cluster_size
            self.holder = f"resident={resident} allows"
            self.why = f"an H100 holds {self.occupancy:,} of these CTAs at once"
        cap = max(1, memory_limit // max(cluster_bytes, 1))
        if cap < self.limit:   # the CPU's memory, not the GPU, bounds the resident set
            self.limit = cap
            self.gpu = False
            self.holder = "tcemu keeps resident within its memory limit (tcemu.ptx.module.MEMORY_LIMIT)"
            self.why = f"an H100 holds {self.occupancy:,} of these CTAs at once"
        self.limit = max(1, self.limit)
        # clusters admitted at once when warps run in lock-step (lockstep.py): as many as the limit and
        # WAVE_BYTES of the CPU's memory allow, at least WAVE_CTAS where WAVE_BYTES_MAX allows
        cb = max(cluster_bytes, 1)
        self.wave = max(1, min(self.limit, max(WAVE_BYTES // cb, min(WAVE_CTAS, WAVE_BYTES_MAX // cb))))

    def pending(self) -> bool:
        return self.next < len(self.corners)

    def admit(self):
        corner = self.corners[self.next]
        self.next += 1
        return self.build(corner)

    def finished(self, ctas):
        if self.on_finish is not None:
            self.on_finish(ctas)


def check_pace(done: int, total: int, elapsed: float, timeout: float) -> None:
    """Stop a launch whose finished CTAs' pace says it would outlast its timeout by far (PACE_MARGIN times), once
    PACE_AFTER of the timeout has passed, rather than running into it: the message gives the estimate."""
    if done >= total or elapsed < PACE_AFTER * timeout:
        return
    projected = elapsed * total / done
    if projected > PACE_MARGIN * timeout:
        raise BudgetExceeded("grid", f"{total:,} CTAs would take about {projected:,.0f} s on the CPU ({done:,} "
                                     f"finished in {elapsed:.1f} s, {elapsed / done * 1e6:,.0f} us a CTA), over "
                                     f"timeout={timeout:g} s: stopped now rather than at the limit; raise timeout, "
                                     "choose some CTAs with ctas=, or spread the grid over dask workers (scheduler="
                                     f"). Memory stays bounded: CTAs start in waves of at most {WAVE_BYTES_MAX >> 20} MB "
                                     "of state")


def check_floor(n_ctas: int, nthreads: int, timeout) -> None:
    """Refuse up front a grid whose bookkeeping alone (making and retiring each CTA and warp, before any
    instruction) outlasts the launch's timeout, rather than running into it."""
    if timeout is None:
        return
    warps = -(-nthreads // 32)
    floor = n_ctas * (CTA_FLOOR_S + warps * WARP_FLOOR_S)
    if floor > timeout:
        raise PtxLimit("grid", f"{n_ctas:,} CTAs of {warps} warp{'s' if warps != 1 else ''}: at least "
                               f"{floor:,.0f} s on the CPU before any instruction ({CTA_FLOOR_S * 1e6:.0f} us a CTA "
                               f"and {WARP_FLOOR_S * 1e6:.0f} us a warp, a lower bound), over timeout={timeout:g} s; "
                               "choose some CTAs with ctas=, raise timeout, or spread the grid over dask workers "
                               "(scheduler=). Memory is bounded either way: CTAs start in waves of at most "
                               f"{WAVE_BYTES_MAX >> 20} MB of state")
