"""Grids over dask.distributed (issue 24, tcemu/ptx/distribute.py): Module.launch(..., scheduler=) runs the grid's
clusters as tasks and merges what each chunk wrote; bits identical to a local run; kernels whose CTAs may talk
through global memory refused up front; two chunks leaving one byte different refused naming the byte; a failing
chunk raises its own error, naming its CTA and chunk, and leaves the caller's arrays untouched.

The cluster here runs its two workers as threads of this process (processes=False: starting worker processes
takes ~10 s on this machine); the worker side still gets copies of every array (distribute.py copies them).
"""
import json
import os
import re

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.cli import main
from tcemu.frontends.triton import run_compiled
from tcemu.ptx import distribute, module
from tcemu.ptx.distribute import communication
from tcemu.ptx.errors import HazardError, MemoryFault, PtxError
from tcemu.traces.inputs import input_bits

from paths import PTX_FIXTURES
from ptxkit import entry, matmul_args

distributed = pytest.importorskip("distributed")

# out[32 ctaid + tid] = 1000 ctaid + tid + inp[32 ctaid + tid]
SPREAD = """\
  ld.param.u64 %rd5, [inp];
  cvta.to.global.u64 %rd5, %rd5;
  mov.u32 %r1, %ctaid.x;
  mad.lo.u32 %r2, %r1, 32, %r0;
  mul.wide.u32 %rd1, %r2, 4;
  add.s64 %rd6, %rd5, %rd1;
  ld.global.u32 %r4, [%rd6];
  add.s64 %rd1, %rd0, %rd1;
  mad.lo.u32 %r3, %r1, 1000, %r0;
  add.u32 %r3, %r3, %r4;
  st.global.u32 [%rd1], %r3;
  ret;
"""
PARAMS = ".param .u64 out, .param .u64 inp"


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc) as c:
        yield c


def _spread_inputs():
    return np.zeros(256, np.uint32), np.arange(256, dtype=np.uint32) * 7919


def test_eight_ctas_identical_to_the_local_run(client):
    mod = ptx.load(entry(SPREAD, params=PARAMS))
    want, inp = _spread_inputs()
    local = mod.launch("k", grid=8, block=32, args=[want, inp])
    got, inp2 = _spread_inputs()
    st = mod.launch("k", grid=8, block=32, args=[got, inp2], scheduler=client)
    assert np.array_equal(got, want) and got.tobytes() == want.tobytes()
    assert np.array_equal(inp2, inp)   # read-only in effect: the input comes back unchanged
    assert (st["ctas"], st["warp_instructions"], st["chunks"], st["workers"]) == \
        (8, local["warp_instructions"], 2, 2)
    assert st["seconds"] > 0 and st["printf"] == []


def test_scheduler_address_ctas_subset_and_a_captured_launch(client):
    mod = ptx.load(entry(SPREAD, params=PARAMS))
    want, inp = _spread_inputs()
    mod.launch("k", grid=8, block=32, args=[want, inp], ctas=[1, 2, 6])
    got, _ = _spread_inputs()
    st = mod.launch("k", grid=8, block=32, args=[got, inp], ctas=[1, 2, 6], scheduler=client.scheduler.address)
    assert np.array_equal(got, want) and st["ctas"] == 3 and st["chunks"] == 2
    # param_bytes + buffers (a launch record's form): the buffers keep their device addresses
    out, base = np.zeros(256, np.uint32), 0x7F00_1000_0000
    blob = base.to_bytes(8, "little") + (base + 0x10_0000).to_bytes(8, "little")
    mod.launch("k", grid=8, block=32, param_bytes=blob, buffers=[(base, want), (base + 0x10_0000, inp)])
    mod.launch("k", grid=8, block=32, param_bytes=blob, buffers=[(base, out), (base + 0x10_0000, inp, "inp")],
               scheduler=client)
    assert np.array_equal(out, want)


def _matmul_bf16(M, N, K, **kw):
    with open(os.path.join(PTX_FIXTURES, "matmul_bf16.json")) as f:
        meta = json.load(f)
    with open(os.path.join(PTX_FIXTURES, "matmul_bf16.ptx")) as f:
        mod = ptx.load(f.read())
    a, b = input_bits("bf16", (M, K), 1, 0), input_bits("bf16", (K, N), 1, 1)
    c = np.zeros((M, N), np.uint16)
    st = run_compiled(mod, meta, {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": M, "N": N, "K": K, "stride_am": K,
                                  "stride_bk": N, "stride_cm": N}, **kw)
    return c, st


@pytest.mark.slow   # 8 s here: the fixture's compile and two launches of 2 CTAs x 16 wgmma k-steps
def test_triton_bf16_matmul_identical_to_the_local_run(client):
    want, local = _matmul_bf16(256, 256, 256)
    got, st = _matmul_bf16(256, 256, 256, scheduler=client)
    assert want.any() and np.array_equal(got, want)
    assert (st["ctas"], st["warp_instructions"], st["chunks"]) == (2, local["warp_instructions"], 2)


@pytest.mark.slow   # ~5 s: two compiles and launches
@pytest.mark.parametrize("name", ["matmul_tma_bf16", "matmul_dtma_bf16"])
def test_tensor_maps_host_and_device_identical_to_the_local_run(client, name):
    # host TMA: the tensor maps' arrays travel as arguments; device TMA: each CTA writes its descriptors into
    # its own part of the global scratch buffer
    with open(os.path.join(PTX_FIXTURES, name + ".json")) as f:
        meta = json.load(f)
    mod = ptx.load(os.path.join(PTX_FIXTURES, name + ".ptx"))
    a, b = input_bits("bf16", (256, 64), 7, 0), input_bits("bf16", (256, 64), 7, 1)   # B stored (N, K)
    want, got = np.zeros((256, 256), np.uint16), np.zeros((256, 256), np.uint16)
    run_compiled(mod, meta, matmul_args(meta, a, b, want, 256, 256, 64, False))
    st = run_compiled(mod, meta, matmul_args(meta, a, b, got, 256, 256, 64, False), scheduler=client)
    assert want.any() and np.array_equal(got, want) and st["chunks"] == 2


def test_read_only_arrays_stay_read_only_on_the_workers(client):
    mod = ptx.load(entry(SPREAD, params=PARAMS))
    out, inp = _spread_inputs()
    out.setflags(write=False)
    with pytest.raises(MemoryFault, match="writes to read-only 'out'") as e:
        mod.launch("k", grid=8, block=32, args=[out, inp], scheduler=client)
    # both chunks fault: the first to come back is reported, with its own CTA
    assert re.search(r"CTA \(\d, 0, 0\), warp 0: thread 0 writes to read-only 'out' \[chunk [12] of 2 \(CTAs ",
                     str(e.value))
    assert not out.any()


ATOM = """\
  atom.global.add.u32 %r3, [%rd0], 1;
  ret;
"""


def test_global_atomics_are_refused_unless_one_chunk(client):
    mod = ptx.load(entry(ATOM))
    out = np.full(4, 5, np.uint32)
    with pytest.raises(PtxError) as e:
        mod.launch("k", grid=4, block=32, args=[out], scheduler=client)
    assert e.value.field == "scheduler"
    assert str(e.value) == ("scheduler: k cannot be split across processes: CTAs that communicate through global "
                            "memory must share it, and line 17: 'atom.global.add.u32 %r3, [%rd0], 1' is atom on "
                            "global memory (PTX 9.7.13.5); 2 chunks (run it locally, or on a one-thread cluster)")
    assert (out == 5).all()
    # one cluster is one chunk: allowed, and the same bits as a local run
    st = mod.launch("k", grid=4, block=32, cluster=4, args=[out], scheduler=client)
    want = np.full(4, 5, np.uint32)
    mod.launch("k", grid=4, block=32, cluster=4, args=[want])
    assert st["chunks"] == 1 and np.array_equal(out, want) and out[0] == 5 + 128
    # cooperative launches are refused the same way
    with pytest.raises(PtxError, match="cooperative=True' is a cooperative launch"):
        mod.launch("k", grid=4, block=32, args=[out], cooperative=True, scheduler=client)


def test_which_instructions_count_as_communication():
    def found(body):
        return [why for _, _, why in communication(ptx.load(entry(body)).program("k").instrs)]
    assert found("  atom.add.release.gpu.u32 %r2, [%rd0], 1;\n  ret;\n") == ["atom on global memory (PTX 9.7.13.5)"]
    assert found("  red.global.add.u32 [%rd0], 1;\n  ret;\n") == ["red on global memory (PTX 9.7.13.6)"]
    assert found("  ld.acquire.gpu.global.u32 %r2, [%rd0];\n  ret;\n") == \
        ["a strong ld of global memory, as a flag is read or set (PTX 8.6)"]
    assert found("  st.volatile.u32 [%rd0], %r0;\n  ret;\n") == \
        ["a strong st of global memory, as a flag is read or set (PTX 8.6)"]
    assert found("  fence.acq_rel.gpu;\n  ret;\n") == \
        ["a gpu- or system-scope fence, which orders writes for other CTAs (PTX 9.7.13.4)"]
    assert found("  mov.u32 %r2, %envreg1;\n  ret;\n") == \
        ["%envreg: the cooperative grid workspace of grid.sync() (PTX 10.27)"]
    # controls: CTA-local forms are not communication
    assert found("  mov.u32 %r5, 0;\n  atom.shared.add.u32 %r2, [%r5], 1;\n  ld.volatile.shared.u32 %r3, [%r5];\n"
                 "  fence.proxy.async.shared::cta;\n  fence.mbarrier_init.release.cluster;\n  fence.acq_rel.cta;\n"
                 "  ld.global.u32 %r4, [%rd0];\n  st.global.u32 [%rd0], %r4;\n  ret;\n") == []


@pytest.mark.parametrize("name,talks", [("cg_grid_sync", True), ("layernorm_bwd_dx", True), ("atomics_sm90", True),
                                        ("matmul_bf16", False), ("matmul_dtma_bf16", False),
                                        ("cutlass_pingpong_bf16", False), ("attn_fwd_f16", False)])
def test_fixtures_refused_only_where_ctas_talk(name, talks):
    mod = ptx.load(os.path.join(PTX_FIXTURES, name + ".ptx"))
    instrs = [ins for f in mod.tree.functions.values() for ins in f.body]
    assert bool(communication(instrs)) == talks


# CTA c (of 2) writes c + 1 to out[tid]: each chunk alone is race-free, together they leave out[0] 1 or 2
CONFLICT = """\
  mov.u32 %r1, %ctaid.x;
  add.u32 %r2, %r1, {value};
  st.global.u32 [%rd1], %r2;
  ret;
"""


def test_two_chunks_writing_one_byte_differently_are_refused(client):
    mod = ptx.load(entry(CONFLICT.format(value=1)))
    out = np.full((4, 8), 0xEE, np.uint32)
    with pytest.raises(HazardError) as e:
        mod.launch("k", grid=2, block=32, args=[out], scheduler=client)
    assert str(e.value) == (
        "global memory: byte 0 of 'out' (element [0, 0] of its uint32 (4, 8)) is left 0x01 by chunk 1 of 2 (CTAs "
        "(0, 0, 0) .. (0, 0, 0), 1 listed) and 0x02 by chunk 2 of 2 (CTAs (1, 0, 0) .. (1, 0, 0), 1 listed): CTAs "
        "writing one byte with different values race (PTX 8.7: nothing orders two CTAs' writes), the result is "
        "whichever lands last; the caller's arrays are unchanged")
    assert (out == 0xEE).all()
    with pytest.raises(HazardError):   # the local run's global racecheck refuses it too
        mod.launch("k", grid=2, block=32, args=[out.copy()])
    # control: both chunks leave the same value (tid): no race to report, the same bits as one CTA's run
    same = ptx.load(entry("  st.global.u32 [%rd1], %r0;\n  ret;\n"))
    st = same.launch("k", grid=2, block=32, args=[out], scheduler=client)
    assert st["chunks"] == 2 and np.array_equal(out.reshape(-1), np.arange(32))


# CTA 5 writes one word past the end of out (64 words: CTAs 0-1 fill it; 2-4 and 6-7 write inside it too)
FAULT = """\
  mov.u32 %r1, %ctaid.x;
  setp.eq.u32 %p1, %r1, 5;
  selp.u32 %r2, 64, 0, %p1;
  add.u32 %r2, %r2, %r0;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd2, %rd0, %rd2;
  st.global.u32 [%rd2], %r1;
  ret;
"""


def test_a_faulting_chunk_names_its_cta_and_leaves_the_arrays_untouched(client):
    mod = ptx.load(entry(FAULT))
    out = np.full(64, 7, np.uint32)
    with pytest.raises(MemoryFault) as local:
        mod.launch("k", grid=(8,), block=32, args=[out.copy()], ctas=[5])
    with pytest.raises(MemoryFault) as e:
        mod.launch("k", grid=(8,), block=32, args=[out], ctas=[0, 5], scheduler=client)
    msg = str(e.value)
    assert msg.startswith(str(local.value)) and "CTA (5, 0, 0)" in msg
    assert msg.endswith("[chunk 2 of 2 (CTAs (5, 0, 0) .. (5, 0, 0), 1 listed); the caller's arrays are unchanged]")
    assert (out == 7).all()   # chunk 1 wrote out[0:32], but nothing is merged


def test_launch_settings_checked_with_a_scheduler(client):
    mod = ptx.load(entry(SPREAD, params=PARAMS))
    out, inp = _spread_inputs()
    with pytest.raises(PtxError, match="^trace: runs in the caller's process"):
        mod.launch("k", grid=8, block=32, args=[out, inp], trace=lambda *a: None, scheduler=client)
    with pytest.raises(PtxError, match=r"^cluster: grid \(8, 1, 1\) is not a multiple of the cluster shape"):
        mod.launch("k", grid=8, block=32, cluster=3, args=[out, inp], scheduler=client)
    with pytest.raises(PtxError, match="^scheduler: 'out' and 'inp' are distinct arrays over the same memory"):
        mod.launch("k", grid=8, block=32, args=[out[:128], out[64:]], scheduler=client)
    with pytest.raises(PtxError) as e:   # checked on the worker: the chunk is named
        mod.launch("k", grid=8, block=32, args=[out], scheduler=client)
    # both chunks fail; the first to come back is named (either, by the workers' timing)
    assert re.match(r"args: k takes 2 parameters \(out, inp\), got 1 \[chunk [12] of 2 \(CTAs \([04], 0, 0\) \.\. "
                    r"\([37], 0, 0\), 4 listed\); the caller's arrays are unchanged\]$", str(e.value)), str(e.value)
    with pytest.raises(PtxError, match=r"^grid: 2,147,483,647 CTAs; the CPU runs at most 1,048,576"):
        mod.launch("k", grid=(1 << 31) - 1, block=32, args=[out, inp], scheduler=client)
    assert distribute.MAX_CTAS == module.MAX_CTAS
    with pytest.raises(ValueError, match="^scheduler: a dask scheduler address"):
        mod.launch("k", grid=8, block=32, args=[out, inp], scheduler=3)
    assert not out.any()


def test_printf_lines_come_back_in_chunk_order(client, capsys):
    mod = ptx.load(os.path.join(PTX_FIXTURES, "calls.ptx"))   # thread 5 of each CTA prints a line
    want, got = np.zeros(64, np.int32), np.zeros(64, np.int32)
    mod.launch("_Z1kPii", grid=2, block=64, args=[want, 64], printf="collect")
    st = mod.launch("_Z1kPii", grid=2, block=64, args=[got, 64], printf="collect", scheduler=client)
    assert st["printf"] == ["t=5 v=15 c=1 f=7.500000 s=hi\n"] * 2 and np.array_equal(got, want)
    assert capsys.readouterr().out == ""
    mod.launch("_Z1kPii", grid=2, block=64, args=[got, 64], scheduler=client)   # printf="stdout": written at the end
    assert capsys.readouterr().out == "t=5 v=15 c=1 f=7.500000 s=hi\n" * 2


def test_cli_scheduler(client, tmp_path, capsys):
    path = tmp_path / "spread.ptx"
    path.write_text(entry(SPREAD, params=PARAMS))
    args = ["run", str(path), "--grid", "8", "--block", "32", "--arg", "zeros:u32:256", "--arg", "zeros:u32:256",
            "--quiet", "--json", "--save", str(tmp_path)]
    assert main(args) == 0
    local = json.loads(capsys.readouterr().out)
    want = np.load(tmp_path / "arg0.npy")
    os.remove(tmp_path / "arg0.npy")
    assert main(args + ["--scheduler", client.scheduler.address]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["warp_instructions"] == local["warp_instructions"] and doc["ctas"] == 8
    assert np.array_equal(np.load(tmp_path / "arg0.npy"), want) and want[33] == 1001


@pytest.mark.slow   # ~15 s: two worker processes start (each imports tcemu), one is killed and restarted
def test_worker_processes_and_a_worker_that_dies():
    import dask
    mod = ptx.load(entry(SPREAD, params=PARAMS))
    want, inp = _spread_inputs()
    mod.launch("k", grid=8, block=32, args=[want, inp])

    def plant():   # runs in each worker process: the chunk holding CTA 4 kills its worker
        import os as os_
        import tcemu.ptx.distribute as d
        run = d._run_chunk

        def dying(job, ctas):
            if (4, 0, 0) in ctas:
                os_._exit(3)
            return run(job, ctas)
        d._run_chunk = dying
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as lc, distributed.Client(lc) as c:
        got, _ = _spread_inputs()
        st = mod.launch("k", grid=8, block=32, args=[got, inp], scheduler=lc.scheduler_address)
        assert np.array_equal(got, want) and (st["workers"], st["chunks"]) == (2, 2)
        c.run(plant)
        out = np.full(256, 9, np.uint32)
        with pytest.raises(ValueError) as e:
            mod.launch("k", grid=8, block=32, args=[out, inp], scheduler=c)
        assert str(e.value).startswith("scheduler: chunk 2 of 2 (CTAs (4, 0, 0) .. (7, 0, 0), 4 listed): its worker "
                                       "died (")
        assert str(e.value).endswith("the caller's arrays are unchanged") and (out == 9).all()
