"""Global racecheck (tcemu/ptx/graces.py): conflicting global accesses by different CTAs that no release/acquire
pattern orders, reported naming both accesses even though tcemu ran CTA 0 before CTA 1; each planted race beside a
correct control that must stay silent. Hand-written PTX."""
import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import graces
from tcemu.ptx.errors import HazardError

from ptxkit import two_cta_kernel as kernel


def launch(body, **kw):
    data, flag = np.zeros(32, np.uint32), np.zeros(1, np.uint32)
    ptx.load(kernel(body)).launch("k", grid=2, block=32, args=[data, flag], **kw)
    return data, flag


def line(body, text):
    return next(i + 1 for i, ln in enumerate(kernel(body).splitlines()) if ln.strip() == text)


# ------------------------------------------------------------------------------------------------ WAW

WAW = " st.global.u32 [%rd1], %r3;"


def test_waw_between_ctas_names_both_stores():
    with pytest.raises(HazardError) as e:
        launch(WAW)
    msg, n = str(e.value), line(WAW, WAW.strip())
    assert msg.startswith(f"st.global.u32 [%rd1], %r3 (line {n}), CTA (1, 0, 0), warp 0")
    assert (f"WAW race on global address 0x7f0000000000 (0 bytes into 'data'): thread 0 (warp 0, CTA (1, 0, 0)) "
            f"writes it here; thread 0 (warp 0, CTA (0, 0, 0)) at st.global.u32 [%rd1], %r3 (line {n}) wrote it; "
            "no synchronisation orders the two CTAs' accesses") in msg
    assert "use atomics, a release/acquire flag" in msg


def test_waw_control_atomics_are_silent():
    data, _ = launch(" atom.global.add.u32 %r4, [%rd1], %r3;")
    assert data.tolist() == [2 * t + 102 for t in range(32)]


def test_waw_control_same_value_is_benign():
    data, _ = launch(" st.global.u32 [%rd1], %r1;")
    assert data.tolist() == list(range(32))


def test_waw_with_check_races_false_is_silent():
    data, _ = launch(WAW, check_races=False)
    assert data.tolist() == [t + 101 for t in range(32)]


# ------------------------------------------------------------------------------------------------ RAW

RAW = """\
 @!%p1 bra $READ;
 st.global.u32 [%rd1], %r3;
{release}
 bra $END;
$READ:
{acquire}
 ld.global.u32 %r5, [%rd1];
 st.global.u32 [%rd1+128], %r5;
$END:"""

SPIN = """\
 setp.ne.u32 %p2, %r1, 0;
 @%p2 bra $SKIP;
$SPIN:
 {load} %r6, [%rd2];
 setp.eq.u32 %p3, %r6, 0;
 @%p3 bra $SPIN;
$SKIP:
 {fence}
 bar.sync 0;"""


THREAD0 = " bar.sync 0;\n setp.ne.u32 %p2, %r1, 0;\n @%p2 bra $END;\n"   # thread 0 of CTA 0 releases


def raw(release="", acquire=""):
    data, flag = np.zeros(64, np.uint32), np.zeros(1, np.uint32)
    ptx.load(kernel(RAW.format(release=release, acquire=acquire))).launch("k", grid=2, block=32,
                                                                          args=[data, flag])
    return data


def test_raw_without_flag_is_reported_though_cta0_ran_first():
    with pytest.raises(HazardError) as e:
        raw()
    msg = str(e.value)
    body = RAW.format(release="", acquire="")
    assert (f"RAW race on global address 0x7f0000000000 (0 bytes into 'data'): thread 0 (warp 0, CTA (1, 0, 0)) "
            f"reads it here; thread 0 (warp 0, CTA (0, 0, 0)) at st.global.u32 [%rd1], %r3 (line "
            f"{line(body, 'st.global.u32 [%rd1], %r3;')}) wrote it") in msg


@pytest.mark.parametrize("release, load, fence", [
    (" st.release.gpu.global.u32 [%rd2], 1;", "ld.acquire.gpu.global.u32", ""),
    (" fence.acq_rel.gpu;\n st.relaxed.gpu.global.u32 [%rd2], 1;", "ld.volatile.global.u32", "fence.acq_rel.gpu;"),
    (" membar.gl;\n atom.global.exch.b32 %r7, [%rd2], 1;", "ld.relaxed.gpu.global.u32", "membar.gl;"),
])
def test_raw_control_release_acquire_flag_is_silent(release, load, fence):
    data = raw(release=THREAD0 + release, acquire=SPIN.format(load=load, fence=fence))
    assert data[32:].tolist() == [t + 1 for t in range(32)]


def test_raw_strong_flag_without_release_fence_is_a_race():
    # st.relaxed alone is no release: the plain data store is not ordered before the reader (PTX: release pattern)
    with pytest.raises(HazardError, match=r"RAW race on global address 0x7f0000000000 \(0 bytes into 'data'\)"):
        raw(release=THREAD0 + " st.relaxed.gpu.global.u32 [%rd2], 1;",
            acquire=SPIN.format(load="ld.acquire.gpu.global.u32", fence=""))


def test_raw_acquire_without_fence_after_relaxed_load_is_a_race():
    # ld.volatile + no fence is no acquire pattern
    with pytest.raises(HazardError, match="RAW race on global address"):
        raw(release=THREAD0 + " st.release.gpu.global.u32 [%rd2], 1;",
            acquire=SPIN.format(load="ld.volatile.global.u32", fence=""))


def test_war_between_ctas():
    body = """\
 @%p1 ld.global.u32 %r5, [%rd1];
 @!%p1 st.global.u32 [%rd1], %r3;"""
    with pytest.raises(HazardError, match=r"WAR race on global address 0x7f0000000000 \(0 bytes into 'data'\): "
                                          r"thread 0 \(warp 0, CTA \(1, 0, 0\)\) writes it here; thread 0 \(warp 0, "
                                          r"CTA \(0, 0, 0\)\) at @%p1 ld.global.u32"):
        launch(body)


LOOKBACK = """\
 @!%p1 bra $WRITE;
 ld.global.nc.u32 %r5, [%rd1];
 bar.sync 0;
 setp.ne.u32 %p2, %r1, 0;
 @%p2 bra $END;
 st.relaxed.gpu.global.v2.u32 [%rd2], {{%r5, %r5}};
 bra $END;
$WRITE:
{wait}
 st.global.u32 [%rd1], %r3;
$END:"""


def lookback(wait):
    """CTA 0 reads data[t] (ld.global.nc), then thread 0 publishes a word with st.relaxed, no fence; CTA 1 (after
    `wait`) overwrites data[t] in place: CUB's decoupled look-back under thrust::unique."""
    data, flag = np.zeros(32, np.uint32), np.zeros(2, np.uint32)
    data[:] = np.arange(32) + 7
    ptx.load(kernel(LOOKBACK.format(wait=wait))).launch("k", grid=2, block=32, args=[data, flag])
    return data, flag


def test_war_after_observing_a_relaxed_flag_is_silent():
    # dependency order: CTA 0's reads come before its strong store; CTA 1 writes after its strong load saw it
    data, flag = lookback(SPIN.format(load="ld.relaxed.gpu.global.u32", fence=""))
    assert data.tolist() == [t + 101 for t in range(32)] and flag.tolist() == [7, 7]


def test_war_without_observing_the_flag_is_reported():
    with pytest.raises(HazardError, match=r"WAR race on global address 0x7f0000000000 \(0 bytes into 'data'\): "
                                          r"thread 0 \(warp 0, CTA \(1, 0, 0\)\) writes it here; thread 0 "
                                          r"\(warp 0, CTA \(0, 0, 0\)\) at ld.global.nc.u32"):
        lookback("")


def test_raw_after_observing_a_relaxed_flag_stays_a_race():
    # dependency order covers reads before the flag, not writes: CTA 0's store may still be in flight
    body = LOOKBACK.replace("ld.global.nc.u32 %r5, [%rd1];", "st.global.u32 [%rd1], %r3;\n mov.u32 %r5, 1;") \
        .replace(" st.global.u32 [%rd1], %r3;\n$END", " ld.global.u32 %r6, [%rd1];\n$END")
    data, flag = np.zeros(32, np.uint32), np.zeros(2, np.uint32)
    with pytest.raises(HazardError, match=r"RAW race on global address 0x7f0000000000"):
        ptx.load(kernel(body.format(wait=SPIN.format(load="ld.relaxed.gpu.global.u32", fence="")))).launch(
            "k", grid=2, block=32, args=[data, flag])


# ------------------------------------------------------------------------------------- split-K style fix-up

def fixup(fence):
    """3 CTAs: each writes its partial (data[32 c + t] = t + 1 + 100 c), then thread 0 counts itself in with an
    atomic; the CTA that arrives last (old == 2) sums the three partials with plain loads into data[96 + t]."""
    return kernel(f"""\
 mul.wide.u32 %rd5, %r2, 128;
 add.s64 %rd5, %rd1, %rd5;
 st.global.u32 [%rd5], %r3;
 bar.sync 0;
 setp.ne.u32 %p2, %r1, 0;
 @%p2 bra $WAIT;
 {fence}
 atom.global.add.u32 %r7, [%rd2], 1;
 {fence}
 st.volatile.shared.u32 [last], %r7;
$WAIT:
 bar.sync 0;
 ld.volatile.shared.u32 %r7, [last];
 setp.ne.u32 %p3, %r7, 2;
 @%p3 bra $END;
 ld.global.u32 %r8, [%rd1];
 ld.global.u32 %r9, [%rd1+128];
 ld.global.u32 %r10, [%rd1+256];
 add.u32 %r8, %r8, %r9;
 add.u32 %r8, %r8, %r10;
 st.global.u32 [%rd1+384], %r8;
$END:""").replace(".visible .entry", ".shared .align 4 .u32 last;\n.visible .entry")


def test_split_k_fixup_with_fences_is_silent():
    # fence + atomic: a release pattern in each CTA; atomic + fence: the last CTA's acquire; the counter's atomics
    # carry every earlier CTA's release to the last (a release sequence)
    data, flag = np.zeros(128, np.uint32), np.zeros(1, np.uint32)
    ptx.load(fixup("fence.acq_rel.gpu;")).launch("k", grid=3, block=32, args=[data, flag])
    assert data[96:].tolist() == [3 * (t + 1) + 300 for t in range(32)] and flag[0] == 3


def test_split_k_fixup_without_fences_is_a_race():
    data, flag = np.zeros(128, np.uint32), np.zeros(1, np.uint32)
    with pytest.raises(HazardError, match=r"RAW race on global address 0x7f0000000000 \(0 bytes into 'data'\): "
                                          r"thread 0 \(warp 0, CTA \(2, 0, 0\)\) reads it here; thread 0 \(warp 0, "
                                          r"CTA \(0, 0, 0\)\) at st.global.u32 \[%rd5\], %r3"):
        ptx.load(fixup("")).launch("k", grid=3, block=32, args=[data, flag])


def test_flag_reset_after_acquire_is_silent():
    # CTA 1 observes the release store, then clears the flag with a plain store: ordered after it
    body = RAW.format(release=THREAD0 + " st.release.gpu.global.u32 [%rd2], 1;",
                      acquire=SPIN.format(load="ld.acquire.gpu.global.u32", fence="") + "\n st.global.u32 [%rd2], 0;")
    data, flag = np.zeros(64, np.uint32), np.zeros(1, np.uint32)
    ptx.load(kernel(body)).launch("k", grid=2, block=32, args=[data, flag])
    assert flag[0] == 0 and data[32:].tolist() == [t + 1 for t in range(32)]


@pytest.mark.parametrize("n", [1, 2, 4, 8, 12, 16, 32, 64, 128])
def test_all_any_of_rows_of_every_width(n):
    # graces._all_any reads rows of 1-8 bytes as one word and rows of up to 8 words column by column
    rng = np.random.default_rng(n)
    b = rng.random((4000, n)) < 0.97   # most rows mixed, some whole, a few none
    b[:50] = True
    b[50:60] = False
    b[60:300] = False   # one byte set, anywhere in the row; one byte clear
    b[np.arange(60, 180), rng.integers(0, n, 120)] = True
    b[np.arange(180, 300), rng.integers(0, n, 120)] = True
    b[180:300] = ~b[180:300]
    every, some = graces._all_any(b)
    assert np.array_equal(every, b.all(axis=1)) and np.array_equal(some, b.any(axis=1))
    assert every[:50].all() and not some[50:60].any() and some[60:180].all()
