"""`tcemu exec`: the runtime calls beyond launches and plain memory (tcemu/frontends/cuda/cudart_misc.cpp):
cooperative launches, a device assert's cudaErrorAssert, peer / registered / managed / 3-D / pool memory, stream
attributes, occupancy and small queries, and the CUDA-array calls that stay refused by name (array-to-array
copies, resource views; arrays and texture objects themselves: test_exec_texture.py).

The programs are tests/fixtures/cuda/cooperative.cu and runtime_misc.cu, compiled once per session (needs_nvcc);
every value they print is computed here, every error checked by its cudaGetErrorName."""
import os
import subprocess

import pytest

import buildcache
from cudakit import ROOT, exec_nvcc, outputs, replay_recorded, tcemu_exec, unmatched

SOURCES = os.path.join(ROOT, "tests", "fixtures", "cuda")
GENCODE = "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"


@pytest.fixture(scope="module")
def programs():
    """cooperative, runtime_misc and cdp, compiled (or taken from the test cache): name -> path."""
    nvcc = exec_nvcc()
    compiler = "".join(subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
                       for tool in (nvcc, "g++"))
    out = {}
    for name in ("cooperative", "runtime_misc", "cdp"):
        source = os.path.join(SOURCES, name + ".cu")
        flags = ["-cudart", "shared", GENCODE] + (["-rdc=true", "-lcudadevrt"] if name == "cdp" else []) + [source]

        def make(path, flags=flags):
            p = subprocess.run([nvcc, *flags, "-o", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=900)
            assert p.returncode == 0, f"nvcc {name}: {p.stdout[-3000:]}"
        with open(source, "rb") as fh:
            key = buildcache.digest(compiler, *flags[:-1], fh.read())
        out[name] = buildcache.cached("cuda", name, key, make)
    return out


# ----------------------------------------------------------------------------------------------- cooperative

def _neighbours(k, ctas=8, threads=64):
    """The kernel of cooperative.cu: a[i] = i*k + 1; sync; b[i] = 2 a[i + one CTA] + i; sync; a[i] = b[i-1] - b[i]."""
    n = ctas * threads
    a = [i * k + 1 for i in range(n)]
    b = [a[(i + threads) % n] * 2 + i for i in range(n)]
    a = [b[(n + i - 1) % n] - b[i] for i in range(n)]
    return (f"cudaSuccess cudaSuccess a[0]={a[0]} a[{n - 1}]={a[-1]} b[{threads - 1}]={b[threads - 1]} "
            f"sum(i*a[i])={sum(i * v for i, v in enumerate(a))} sum(b)={sum(b)}")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_cooperative_launch_grid_sync(programs):
    out = tcemu_exec("--", programs["cooperative"])
    assert out.returncode == 0, out.stderr
    # 8 CTAs per SM (2048 threads / 256) x 132 SMs, the query and the interpreter's occupancy agree
    assert out.stdout == (f"cooperative: {_neighbours(3)}\n"
                          f"attribute: {_neighbours(5)}\n"
                          f"graph: {_neighbours(7)}\n"
                          "node attribute: cudaSuccess, cooperative 1\n"
                          f"node: {_neighbours(13)}\n"
                          "too large: 1057 CTAs: cudaErrorCooperativeLaunchTooLarge, last error "
                          "cudaErrorCooperativeLaunchTooLarge, then cudaSuccess\n"
                          # 228 KiB // (48 + 1) KiB = 4 CTAs; the dynamic memory that keeps 4: 228 KiB / 4 - 1 - 48 KiB
                          "static shared memory 49152: 4 CTAs per SM, dynamic for 4: "
                          f"{233472 // 4 - 1024 - 49152}, at that 4, "
                          "one byte more 3; 529 CTAs: cudaErrorCooperativeLaunchTooLarge\n"
                          f"after: {_neighbours(11)}\n")
    assert ("tcemu exec: cudaLaunchCooperativeKernel of _Z10neighboursPiS_i returns cudaErrorCooperativeLaunchTooLarge:"
            " 1,057 CTAs; a cooperative launch may have at most as many as the GPU holds at once (1,056 on an H100 "
            "here: 8 CTAs per SM x 132 SMs") in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_grid_sync_without_a_cooperative_launch_traps(programs):
    out = tcemu_exec("--", programs["cooperative"], "plain")
    assert out.returncode == 1 and out.stdout == ""
    assert "KernelFault: trap (line " in out.stderr
    assert "trap executed by threads [0, 1, 2, 3, 4, 5, 6, 7]" in out.stderr



@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_record_of_a_cooperative_launch_replays_cooperatively(programs, tmp_path):
    import json
    from tcemu import launches
    from tcemu.ptx.errors import KernelFault
    path = tmp_path / "coop.json"
    out = tcemu_exec("--record", str(path), "--", programs["cooperative"])
    assert out.returncode == 0, out.stderr
    records = json.loads(path.read_text())["launches"]
    first = records[0]
    assert first["cooperative"] is True
    assert outputs(first) and unmatched(replay_recorded(first, tmp_path), first) == []
    plain = {k: v for k, v in first.items() if k != "cooperative"}   # the flag is what grid.sync() needs
    with pytest.raises(KernelFault, match="trap"):
        replay_recorded(plain, tmp_path)
    with pytest.raises(launches.LaunchRecordError, match="cooperative"):
        replay_recorded(dict(first, cooperative="yes"), tmp_path)

# ------------------------------------------------------------------------------------------------ device assert

@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_device_assert_is_cudaErrorAssert_and_sticky(programs):
    out = tcemu_exec("--continue-on-fault", "--", programs["runtime_misc"], "assert")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("assert: launch cudaErrorAssert, synchronize cudaErrorAssert, copy cudaErrorAssert, "
                          "last cudaErrorAssert\n")
    assert "thread 5: Assertion `p[i] != 37` failed." in out.stderr   # thread 5 of CTA 1 holds 37
    out = tcemu_exec("--", programs["runtime_misc"], "assert")   # without the flag: tcemu's report ends it
    assert out.returncode == 1 and out.stdout == ""
    assert "CTA (1, 0, 0), thread 5: Assertion `p[i] != 37` failed." in out.stderr
    assert out.stderr.endswith("tcemu exec: the program ends at this kernel fault\n")


# ------------------------------------------------------------------------------------------- the small calls

def _expected_misc():
    peer = [i * i for i in range(16)]
    h = [(i - 50) * 2 + 1 for i in range(100)]
    # 3-D: a 10 x 3 x 2 box of floats, columns 0-7 uploaded (1000 (z+1) + x), the kernel adds 100 z + 10 y + x,
    # and the 9 x 2 x 2 box from (x 1, y 1) comes back into back[z][y][x]
    dev = [[[(1000 * (z + 1) + x if x < 8 else 0) + 100 * z + 10 * y + x for x in range(10)] for y in range(3)]
           for z in range(2)]
    back = [[[dev[z][y + 1][x + 1] if x < 9 and y < 2 else 0 for x in range(10)] for y in range(3)] for z in range(2)]
    weighted = sum(back[z][y][x] * (1 + x + 10 * y + 100 * z) for z in range(2) for y in range(3) for x in range(10))
    smem_sm, optin = 233472, 232448
    two = smem_sm // 2 - 1024
    return [
        f"peer: cudaSuccess cudaSuccess sum {sum(peer)} h[15] {peer[15]}; device 1: cudaErrorInvalidDevice; enable 0: "
        "cudaErrorInvalidDevice; p2p attribute: cudaErrorInvalidDevice; can access 0 0: cudaSuccess 0, 0 1: "
        "cudaErrorInvalidDevice",
        f"registered: cudaSuccess cudaSuccess same pointer 1, cudaSuccess h[0] {h[0]} h[99] {h[99]} weighted sum "
        f"{sum((i + 1) * v for i, v in enumerate(h))}; again cudaErrorHostMemoryAlreadyRegistered; unregister "
        "cudaSuccess, twice cudaErrorHostMemoryNotRegistered",
        # read-mostly on the first half only; prefetched to the device, then the second half to the host (-1,
        # cudaCpuDeviceId): the whole range is mixed (-2, cudaInvalidDeviceId); type 1: cudaMemLocationTypeDevice
        "managed: cudaSuccess cudaSuccess cudaSuccess cudaSuccess; read-mostly half 1 all 0; preferred 0; last "
        "prefetch all -2 second half -1 first half type 1; device memory cudaErrorInvalidValue; device 1 "
        "cudaErrorInvalidDevice; attach cudaSuccess, inside cudaErrorInvalidValue, single to NULL "
        "cudaErrorInvalidValue, global cudaSuccess; accessed by cudaSuccess cudaSuccess: all -1 -2 -2, second half "
        f"0 -1 -2; m[4095] {4095 * 2 + 1}",
        f"3d: cudaSuccess pitch 512 xsize 40 ysize 3; cudaSuccess cudaSuccess cudaSuccess; back[1][1][7] "
        f"{back[1][1][7]} back[0][1][8] {back[0][1][8]} weighted sum {weighted:.1f}; too wide "
        "cudaErrorInvalidPitchValue; "
        f"peer cudaSuccess, device 1 cudaErrorInvalidDevice, [1][2][9] {dev[1][2][9]}",
        f"pools: cudaSuccess current is default 1; cudaSuccess threshold {2**64 - 1}; cudaSuccess cudaSuccess used "
        f"{(1 << 20) + 4096}, after free 4096, high {(1 << 20) + 4096}, reset 4096, reserved 4096; read-only "
        "cudaErrorInvalidValue; trim cudaSuccess; device 1 cudaErrorInvalidDevice; access cudaSuccess "
        "cudaErrorInvalidDevice 3",
        # 20 CTAs of 128 threads cannot share an SM (2048 threads: 16): 0; two CTAs with one byte more: one fits
        f"occupancy: dynamic smem for 1, 2, 20 blocks {min(smem_sm - 1024, optin)} {two} 0; blocks at that 2, one byte "
        "more 1; cluster 8, non-portable 16; host function cudaErrorInvalidDeviceFunction",
        # the fourth stream the program created; cudaFuncCachePreferNone, cudaSharedMemBankSizeFourByte
        "more: stream id 4; copied attributes cudaSuccess 4096 bytes; cache config 0, banks 1; kernel cudaSuccess "
        "cudaSuccess cudaErrorInvalidDevice, max dynamic smem 100000; flush RDMA cudaSuccess",
        "queries: cudaSuccess cudaSuccess cudaSuccess cudaSuccess; window cudaSuccess cudaSuccess 4096 bytes hit ratio "
        "0.625, props 2 1, hit ratio 1.5 cudaErrorInvalidValue; priority 0; max window 134213632; capture mode was 0, "
        "then 2; chosen 0 stream device 0; valid cudaSuccess cudaErrorInvalidDevice; bus 0000:18:00.0 -> 0; function "
        "cudaSuccess, host cudaErrorInvalidDeviceFunction; name cudaSuccess _Z5scalePii",
    ]


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_runtime_calls_return_what_cuda_returns(programs):
    out = tcemu_exec("--", programs["runtime_misc"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == _expected_misc()
    # each error comes with a line naming the rule and the caller
    for line in ("cudaMemcpyPeer: one GPU (device 0) only (cudaErrorInvalidDevice); called from peers() in ",
                 "cudaHostRegister: the range overlaps pinned host memory (registered, or from cudaMallocHost / "
                 "cudaHostAlloc) "
                 "(cudaErrorHostMemoryAlreadyRegistered); called from registered() in ",
                 "cudaMemPrefetchAsync: the range is not inside one cudaMallocManaged allocation "
                 "(cudaErrorInvalidValue); called from managed() in ",
                 "cudaMemcpy3D: a row (position x + extent width) runs past its pitch (cudaErrorInvalidPitchValue); "
                 "called from three_d() in "):
        assert "tcemu exec: " + line + programs["runtime_misc"] in out.stderr
    assert "leaked" not in out.stderr   # registered memory is the program's, pool memory was freed


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_unregistered_host_memory_is_out_of_reach(programs):
    out = tcemu_exec("--", programs["runtime_misc"], "unregistered")
    assert out.returncode == 1 and out.stdout == ""
    assert "MemoryFault: ld.global.u32 " in out.stderr and "outside every allocation" in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("mode, call", [("array", "cudaMemcpy2DArrayToArray"),
                                        ("texture", "cudaGetTextureObjectResourceViewDesc")])
def test_array_calls_not_modelled_stop_naming_the_call(programs, mode, call):
    # arrays, texture and surface objects themselves run (tests/frontends/test_exec_texture.py)
    out = tcemu_exec("--", programs["runtime_misc"], mode)
    assert out.returncode == 2 and "unreachable" not in out.stdout
    assert out.stderr.startswith(f"tcemu exec: unsupported CUDA runtime call {call} (called from main in "
                                 + programs["runtime_misc"])


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_device_malloc_free_and_the_heap_limit(programs):
    out = tcemu_exec("--continue-on-fault", "--", programs["runtime_misc"], "heap")
    # 1000 bytes asked leaves the 4 MiB floor (an H200 reported 4,194,304); thread t's block sums t + 0 .. t + 11
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"heap: limit {8 << 20}, set cudaSuccess, now {4 << 20}; cudaSuccess, 64 blocks, sums "
        f"{sum(12 * t + 66 for t in range(64))}; malloc(0) non-NULL, 5 MiB NULL",
        "heap twice: cudaErrorLaunchFailure"]
    assert "free() by thread 3 of CTA (0, 0, 0) frees 0x" in out.stderr and "(double free)" in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_dynamic_parallelism_is_refused_by_name(programs):
    out = tcemu_exec("--", programs["cdp"])
    assert out.returncode == 2 and "unreachable" not in out.stdout
    assert "CudaExecError: dynamic parallelism: the program links the CUDA device runtime (libcudadevrt" in out.stderr
