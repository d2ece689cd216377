"""Issue 21: bounded time and memory on every input. Each hostile input is refused (or stopped) by a named
limit with a tcemu error class, within a few seconds and a few tens of MB, before anything large is allocated."""
import copy
import json
import os
import re
import signal
import time
import tracemalloc
from contextlib import contextmanager

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu import LimitError, TcemuError
from tcemu.cli import main
from tcemu.traces.launches import LaunchRecordError, blob_for
from tcemu.ptx import BudgetExceeded, Deadlock, KernelFault, PtxError, PtxLimit, PtxUnsupported
from tcemu.ptx import parser as P
from tcemu.ptx.memory import GlobalMemory
from tcemu.blackwell.tmem import TensorMemory
from tcemu.core.errors import TmemError, TraceError

from paths import PTX_FIXTURES

FIXTURES = PTX_FIXTURES
HEAD = ".version 8.3\n.target sm_90\n.address_size 64\n"


def kernel(body="", params="", decl=""):
    return HEAD + decl + f".visible .entry k({params})\n{{\n{body}\nret;\n}}\n"


@contextmanager
def bounded(seconds=10, megabytes=64):
    """The block finishes within `seconds` (SIGALRM) and its Python/numpy allocations peak under `megabytes`."""
    def expired(*_):
        raise TimeoutError(f"took more than {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    tracemalloc.start()
    try:
        yield
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert peak < megabytes << 20, f"peak {peak / 2**20:.0f} MB"


def refused(cls, fn, *a, phrase, **kw):
    with bounded():
        with pytest.raises(cls) as e:
            fn(*a, **kw)
    assert phrase in str(e.value), str(e.value)
    return e.value


# ---- 1. register ranges

@pytest.mark.parametrize("count", ["0xFFFFFFFFFFFFFFFFFFFF", "10000000", "65537"])
def test_register_range_over_the_limit(count):
    e = refused(PtxLimit, ptx.load, kernel(f".reg .b64 %rd<{count}>;"), phrase="per declaration")
    assert e.field == "line 6, column 15" and "%rd<" in str(e) and f"{P.MAX_REGS_PER_DECLARATION:,}" in str(e)
    assert isinstance(e, LimitError) and isinstance(e, PtxError)


def test_register_total_per_function(monkeypatch):
    monkeypatch.setattr(P, "MAX_REGS_PER_FUNCTION", 1000)  # the same rule as at 262,144, faster
    decls = "".join(f".reg .b32 %r{chr(97 + i)}<300>;\n" for i in range(4))  # 1,200 in all
    e = refused(PtxLimit, ptx.load, kernel(decls), phrase="k declares 1,200 registers so far; tcemu allows at most "
                                                           "1,000 per function")
    assert e.field == "line 9, column 15"
    refused(PtxLimit, ptx.load, kernel(".reg .v4 .b32 %v<200>;\n" * 2), phrase="1,600 registers so far")
    refused(PtxError, ptx.load, kernel(".reg .b32 %r<-3>;"), phrase="non-negative count")


@pytest.mark.slow
def test_bundled_fixtures_stay_well_under_the_register_limits():
    most = 0
    for root, _, files in os.walk(FIXTURES):
        for f in files:
            if f.endswith(".ptx"):
                with open(os.path.join(root, f)) as fh:
                    tree = P.parse(fh.read())
                most = max([most] + [fn.nregs_declared for fn in tree.functions.values()])
    assert 1000 < most < P.MAX_REGS_PER_FUNCTION // 30   # 7,490 today


def test_allowed_register_range_still_loads():
    with bounded(megabytes=200):
        mod = ptx.load(kernel(".reg .b32 %r<65536>;\nmov.u32 %r65535, 1;"))
        assert mod.program("k").nregs[32] == 65536


# ---- 2. .b128

def test_b128_is_unsupported_not_a_keyerror():
    text = kernel(".reg .b64 %rd<3>;\natom.global.cas.b128 %rd0, [%rd1], %rd2, %rd2;")
    mod = ptx.load(text)
    assert [u[1] for u in mod.unsupported("k")] == ["atom.global.cas.b128"]
    with pytest.raises(PtxUnsupported) as e:
        mod.launch("k", grid=1, block=32)
    assert ".b128" in str(e.value)
    refused(PtxUnsupported, lambda: ptx.load(kernel(".reg .b128 %q;")).program("k"), phrase=".b128")


# ---- 3. sizes

def test_huge_global_variable_is_refused_by_the_memory_estimate():
    mod = ptx.load(kernel(decl=".global .b8 g[1099511627776];\n"))
    e = refused(PtxLimit, mod.launch, "k", grid=1, block=1, phrase="would need about 1.0 TiB")
    assert "module variables 1.0 TiB" in str(e) and "MEMORY_LIMIT" in str(e)


def test_param_space_over_cuda_limit():
    mod = ptx.load(kernel(params=".param .align 8 .b8 p[1073741824]"))
    refused(PtxLimit, mod.launch, "k", grid=1, block=1, args=[bytes(16)], phrase="at most 32,764 bytes")


def test_const_local_shared_limits():
    refused(PtxLimit, ptx.load(kernel(decl=".const .b8 c[70000];\n")).launch, "k", grid=1, block=1,
            phrase="at most 65,536")
    refused(PtxLimit, ptx.load(kernel(".local .b8 l[1000000000];")).launch, "k", grid=1, block=32,
            phrase="per thread; at most 524,288")
    refused(PtxLimit, ptx.load(kernel(".shared .b8 s[1000000000];")).launch, "k", grid=1, block=32,
            phrase="bytes a CTA may have")


@pytest.mark.slow
def test_register_file_estimate():
    decls = "".join(f".reg .b64 %r{chr(97 + i)}<65536>;\n" for i in range(4))  # 262,144 64-bit registers
    mod = ptx.load(kernel(decls))  # 64 MiB per warp: a 1024-thread CTA would need 2 GiB, a cluster of 4 8 GiB
    e = refused(PtxLimit, mod.launch, "k", grid=4, block=1024, cluster=4, phrase="registers 8.0 GiB")
    assert "would need about" in str(e)


def test_grid_and_block_limits():
    mod = ptx.load(kernel())
    refused(PtxLimit, mod.launch, "k", grid=(2**31 - 1, 65535, 65535), block=1, phrase="the CPU runs at most")
    refused(PtxError, mod.launch, "k", grid=(2**31,), block=1, phrase="exceeds CUDA's limits")
    refused(PtxError, mod.launch, "k", grid=1, block=(1, 1, 65), phrase="exceeds CUDA's limits")
    refused(PtxError, mod.launch, "k", grid=1, block=(64, 32), phrase="at most 1024")


def test_cli_arguments_over_the_limit(tmp_path, capsys):
    path = tmp_path / "k.ptx"
    path.write_text(kernel(params=".param .u64 p"))
    with bounded(megabytes=256):  # the command line's own imports included
        assert main(["run", str(path), "--quiet", "--arg", "zeros:f64:2147483648"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PtxLimit" in err and "ARG_BYTES_LIMIT" in err
    header = np.lib.format
    huge = tmp_path / "huge.npy"
    with open(huge, "wb") as fh:
        header.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 12,)})
        fh.write(bytes(64))
    with bounded(megabytes=256):
        assert main(["run", str(path), "--quiet", "--arg", str(huge)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1,000,000,000,000 elements" in err
    short = tmp_path / "short.npy"
    with open(short, "wb") as fh:
        header.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (1000,)})
        fh.write(bytes(64))
    assert main(["run", str(path), "--quiet", "--arg", str(short)]) == 2
    assert "the file holds 64 bytes" in capsys.readouterr().err
    ok = tmp_path / "ok.npy"
    np.save(ok, np.arange(4, dtype=np.uint32))
    assert main(["run", str(path), "--quiet", "--block", "32", "--arg", str(ok)]) == 0


# ---- 4. budgets

def _stopped(kind, ctas, timeout, within, body=""):
    """(module, message) of a launch of `ctas` one-warp CTAs of kernel(body) under `timeout` that `kind` stops within
    `within` seconds, its field the grid."""
    mod = ptx.load(kernel(body))
    t = time.monotonic()
    with pytest.raises(kind) as e:
        mod.launch("k", grid=(ctas,), block=32, timeout=timeout)
    assert time.monotonic() - t < within and e.value.field == "grid"
    return mod, str(e.value)


def test_a_grid_whose_bookkeeping_outlasts_the_timeout_is_refused_up_front():
    # 2^20 one-warp CTAs: at least 2^20 x 9 us = 9 s before any instruction, over timeout=5: refused at once,
    # with the estimate; a small grid under the same timeout runs
    mod, msg = _stopped(PtxLimit, 1 << 20, 5, within=2)
    assert "1,048,576 CTAs of 1 warp: at least 9 s on the CPU before any instruction" in msg
    assert "over timeout=5 s" in msg and "ctas=" in msg
    mod.launch("k", grid=(64,), block=32, timeout=5)


# ~3,000 instructions a warp: a CTA's bookkeeping floor (a few us) is far under what it takes to run (some hundred
# us on the VM, 2026-11-28), so a faster CPU or interpreter still projects far over the timeout
LOOP = """.reg .b32 %r<3>; .reg .pred %p<2>;
mov.u32 %r1, 0;
$L_count:
add.u32 %r1, %r1, 1;
setp.lt.u32 %p1, %r1, 1000;
@%p1 bra $L_count;"""


def test_a_grid_whose_pace_outlasts_the_timeout_stops_early_with_the_estimate():
    # 2^20 one-warp CTAs of a counting loop pass the up-front floor under timeout=10 (9 s) but would take minutes:
    # once a second has passed, the finished CTAs' pace projects more than 1.5 x 10 s and the launch stops at the
    # first finished wave then, with the estimate; a grid that fits runs to the end
    mod, msg = _stopped(BudgetExceeded, 1 << 20, 10, within=5, body=LOOP)
    got = re.search(r"1,048,576 CTAs would take about ([\d,]+) s on the CPU \(([\d,]+) finished in (\d+\.\d) s, "
                    r"([\d,]+) us a CTA\), over timeout=10 s: stopped now", msg)
    assert got, msg
    projected, done, elapsed, per = (float(x.replace(",", "")) for x in got.groups())
    assert projected > 15 and 0 < done < 1 << 20 and abs(projected - per * 1e-6 * (1 << 20)) <= 0.01 * projected + 1
    assert 1.0 <= elapsed < 5
    assert done > 1   # the CTAs of a lock-step wave end together and are counted together (one had read as the pace)
    mod.launch("k", grid=(64,), block=32, timeout=10)


def test_the_pace_check_projects_the_finished_ctas_pace():
    from tcemu.ptx.schedule import check_pace
    check_pace(10, 100, 0.09, 1.0)   # under a tenth of the timeout: too early to judge
    check_pace(10, 100, 0.14, 1.0)   # 1.4 s projected: not 1.5 times the timeout
    check_pace(100, 100, 9.0, 1.0)   # every CTA finished
    with pytest.raises(BudgetExceeded, match=r"100 CTAs would take about 2 s on the CPU \(10 finished in 0\.2 s, "
                                             r"16,000 us a CTA\), over timeout=1 s"):
        check_pace(10, 100, 0.16, 1.0)


def test_timeout_stops_an_infinite_loop():
    mod = ptx.load(kernel(".reg .b32 %r<2>;\n$L_spin:\nadd.u32 %r1, %r1, 1;\nbra $L_spin;"))
    t = time.monotonic()
    with pytest.raises(BudgetExceeded) as e:
        mod.launch("k", grid=2, block=128, timeout=0.5)
    assert time.monotonic() - t < 5
    msg = str(e.value)
    assert isinstance(e.value, Deadlock) and isinstance(e.value, KernelFault)
    assert "time limit of 0.5 s" in msg and "warp 3: pc 0, at add.u32 %r1, %r1, 1 (line 8)" in msg
    assert "instructions executed" in msg
    with pytest.raises(BudgetExceeded) as e:
        mod.launch("k", grid=1, block=32, max_instructions=1000)
    assert "more than 1000 warp instructions" in str(e.value) and "warp 0: pc 1, at bra $L_spin (line 9), 1,001 instructions executed" in str(e.value)
    for bad in (0, -1, "1", True, float("inf")):
        with pytest.raises(PtxError) as e:
            mod.launch("k", grid=1, block=32, timeout=bad)
        assert e.value.field == "timeout"


def test_cli_timeout(tmp_path, capsys):
    path = tmp_path / "spin.ptx"
    path.write_text(kernel("$L:\nbra $L;"))
    with bounded(seconds=15, megabytes=256):
        assert main(["run", str(path), "--quiet", "--block", "32", "--timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "BudgetExceeded" in err and "time limit of 0.5 s" in err
    assert main(["run", str(path), "--quiet", "--block", "32", "--max-instructions", "100"]) == 2
    assert "more than 100 warp instructions" in capsys.readouterr().err


# ---- 5. launch-record addresses

@pytest.mark.parametrize("address", [1 << 63, (1 << 64) - 256, (1 << 63) - 256])
def test_launch_record_addresses(address):
    with open(os.path.join(FIXTURES, "cutlass_cute_tutorial.json")) as fh:
        record = copy.deepcopy(json.load(fh)["launches"][0])
    record["buffers"][0]["address"] = address
    e = refused(LaunchRecordError, blob_for, record, phrase="ends past 2^63")
    assert e.field == "buffers[A].address"


def test_buffers_mapped_past_2_63_are_refused():
    with pytest.raises(KernelFault) as e:
        GlobalMemory().place((1 << 64) - 256, np.zeros(512, np.uint8), "x")
    assert "[0, 2^63)" in str(e.value)


# ---- 6. CLI

def test_ctrl_c_is_one_line_and_130(monkeypatch, capsys):
    import tcemu.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "_replay", interrupted)
    assert main(["replay", "whatever.npz"]) == 130
    out = capsys.readouterr()
    assert out.err == "tcemu: interrupted\n" and out.out == ""


@pytest.mark.parametrize("make", ["text", "proc"])
def test_replay_of_a_non_archive(make, tmp_path, capsys):
    path = "/proc/self/status" if make == "proc" else str(tmp_path / "t.txt")
    if make == "text":
        with open(path, "w") as fh:
            fh.write("hello\n")
    if not os.path.exists(path):
        pytest.skip("no /proc")
    with bounded(megabytes=256):
        assert main(["replay", path]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "TraceError" in out.err and "not a readable .npz" in out.err


def test_tmem_write_a_names_its_parameter():
    tm = TensorMemory()
    with pytest.raises(TmemError) as e:
        tm.write_a(np.float64(0), np.zeros((128, 32), np.int64), 8)
    assert e.value.field == "address"
    with pytest.raises(TmemError) as e:
        tm.write_a(0, np.uint8(3), 8)
    assert e.value.field == "values"
    with pytest.raises(TmemError) as e:
        tm.write_a(0, np.zeros((128, 32), np.int64), np.float32(8))
    assert e.value.field == "bits"


def test_limit_errors_are_tcemu_errors():
    assert issubclass(PtxLimit, TcemuError) and issubclass(LimitError, ValueError)
    assert issubclass(TraceError, TcemuError)


# ---- 7. tcemu serve

@pytest.fixture
def server():
    import threading
    from tcemu.serve.server import make_server
    srv = make_server(0, quiet=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def post(port, path, body, headers=None):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", path, body=body, headers=dict({"Content-Type": "application/json"}, **(headers or {})))
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data)


def test_serve_bounds_json_integers(server):
    for digits in (31, 5000, 200_000):
        with bounded():
            status, body = post(server, "/api/swizzle", '{"mode": "64B", "base_offset": ' + "9" * digits + "}")
        assert status == 400 and body["error"]["field"] == "body" and "at most 30" in body["error"]["rule"]
    status, body = post(server, "/api/swizzle", '{"mode": "64B", "base_offset": NaN}')
    assert status == 400
    assert post(server, "/api/swizzle", '{"mode": "64B", "base_offset": 1}')[0] == 200


def test_serve_refuses_cross_origin_posts(server):
    body = '{"mode": "64B", "base_offset": 1}'
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{server + 1}"):
        status, out = post(server, "/api/swizzle", body, {"Origin": origin})
        assert status == 403 and out["error"]["field"] == "Origin"
    for origin in (f"http://127.0.0.1:{server}", f"http://localhost:{server}"):
        assert post(server, "/api/swizzle", body, {"Origin": origin})[0] == 200
    assert post(server, "/api/swizzle", body)[0] == 200  # no Origin: not a browser's cross-site request


def test_serve_slow_request_does_not_block_others(server, monkeypatch):
    import threading
    from tcemu.serve import server as S
    started, release = threading.Event(), threading.Event()

    def slow(fields):
        started.set()
        release.wait(10)
        return {"slow": True}
    monkeypatch.setitem(S._API, "slow", slow)
    monkeypatch.setattr(S, "REQUEST_SECONDS", 1.0)
    got = []
    t = threading.Thread(target=lambda: got.append(post(server, "/api/slow", "{}")))
    t.start()
    assert started.wait(10)
    t0 = time.monotonic()
    assert post(server, "/api/swizzle", '{"mode": "64B", "base_offset": 1}')[0] == 200  # while slow runs
    assert time.monotonic() - t0 < 5
    t.join(10)
    status, body = got[0]
    assert status == 503 and body["error"]["type"] == "Timeout" and "more than 1 s" in body["error"]["rule"]
    release.set()
