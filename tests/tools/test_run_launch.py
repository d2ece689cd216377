"""Issue 27, `tcemu run`: any path; launches from a fixture's .json (Triton metadata) or a launch record, with the
metadata's names; --check against numpy and tcemu.matmul; tidy names, paths and saved-file messages."""
import json
import os
import re
import shutil

import ml_dtypes
import numpy as np
import pytest

from tcemu.cli import main
from tcemu.traces import launches as L
from tcemu.tools.names import demangle, fold_templates, short_name, source_path, tidy

from paths import ROOT
FIX = os.path.join(ROOT, "tests", "fixtures", "ptx")
MATMUL = os.path.join(FIX, "matmul_bf16.json")
SMALL = ["--arg", "M=128", "--arg", "N=256", "--arg", "K=64", "--quiet"]   # one 128 x 256 CTA, K = 64
SBO_512 = ("4611686293305294848", "4611686155866341376")   # the descriptors' SBO 1024 -> 512 (tests/test_ptx_kernels)
TID = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry store_tid(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd0, [out];
  cvta.to.global.u64 %rd0, %rd0;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 4;
  add.s64 %rd1, %rd0, %rd1;
  st.global.u32 [%rd1], %r1;
  ret;
}
"""
RUN_LINE = re.compile(r"^matmul_ptr: 1 CTAs, \d+ warp instructions, \d+\.\d\d s$")


def _err(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


def test_any_path_is_read_as_a_file(tmp_path, capsys):
    path = tmp_path / "kernel.txt"   # PTX under a name that does not end in .ptx
    path.write_text(TID)
    assert main(["run", str(path), "--block", "32", "--arg", "zeros:u32:32", "--quiet", "--save",
                 str(tmp_path) + "//"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"saved arg0.npy to {tmp_path}{os.sep}"
    assert np.array_equal(np.load(tmp_path / "arg0.npy"), np.arange(32, dtype=np.uint32))
    assert main(["run", str(tmp_path / "missing.txt")]) == 2
    assert _err(capsys) == f"tcemu: error: PtxError: ptx: {str(tmp_path / 'missing.txt')!r}: no such file"
    assert main(["run", str(tmp_path)]) == 2
    assert _err(capsys).endswith("is a folder; give a PTX file or a fixture's .json")


def test_help_covers_sm100(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("run ")][0]
    assert "sm_90a, sm_100a, sm_103a" in line


def test_argument_count_names_parameters_as_the_metadata_does(capsys):
    assert main(["run", os.path.join(FIX, "matmul_bf16.ptx"), "--arg", "1", "--quiet"]) == 2
    assert _err(capsys) == (
        "tcemu: error: PtxError: --arg: matmul_ptr takes 11 parameters (a_ptr, b_ptr, c_ptr, M, N, K, stride_am, "
        "stride_bk, stride_cm, global scratch, profile scratch, as matmul_bf16.json names them), got 1 --arg; or run "
        f"{os.path.join(FIX, 'matmul_bf16.json')}, which launches it from its metadata")


def _bf16(bits):
    return bits.view(ml_dtypes.bfloat16).astype(np.float64)


def test_fixture_json_launch_with_both_checks(tmp_path, capsys):
    assert main(["run", MATMUL, *SMALL, "--check", "matmul"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert RUN_LINE.match(out[0]) and out[1:] == [
        "check matmul: 32768 of 32768 outputs of c_ptr bit-identical to tcemu.matmul (bf16 x bf16 -> f16, sm90, "
        "init zero)"]
    assert main(["run", MATMUL, *SMALL, "--check", "numpy", "--save", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    a, b = _bf16(np.load(tmp_path / "a_ptr.npy")), _bf16(np.load(tmp_path / "b_ptr.npy"))
    c = np.load(tmp_path / "c_ptr.npy").view(np.float16).astype(np.float64)
    assert (a.shape, b.shape, c.shape) == ((128, 64), (64, 256), (128, 256))   # the launch shape given by name
    ref = a @ b
    assert out[1] == ("check numpy: 32768 of 32768 outputs of c_ptr within |C - AB| <= 2^-11 |AB| + K 2^-23 (|A| |B|) "
                      f"of the float64 product; max |C - AB| / max |AB| = {np.abs(c - ref).max() / np.abs(ref).max():.2e}")
    assert out[2] == f"saved a_ptr.npy, b_ptr.npy, c_ptr.npy to {tmp_path}{os.sep}"


def test_check_finds_a_silently_wrong_kernel(tmp_path, capsys):
    """SBO 1024 -> 512 with the layout check off: the kernel runs to a wrong C, as on a GPU; --check says so."""
    ptx = tmp_path / "sbo512.ptx"
    with open(os.path.join(FIX, "matmul_bf16.ptx")) as fh:
        ptx.write_text(fh.read().replace(*SBO_512))
    argv = ["run", MATMUL, "--ptx", str(ptx), *SMALL, "--no-check-layouts", "--no-check-races", "--save", str(tmp_path)]
    assert main(argv + ["--check", "matmul"]) == 1
    out = capsys.readouterr().out.splitlines()
    c = np.load(tmp_path / "c_ptr.npy")
    m = re.fullmatch(r"check matmul: (\d+) of 32768 outputs of c_ptr bit-identical to tcemu\.matmul \(bf16 x bf16 -> "
                     r"f16, sm90, init zero\)", out[1])
    assert m and int(m.group(1)) < 32768 // 100
    assert re.fullmatch(rf"  c_ptr\[0, 0\]: kernel {int(c[0, 0]):#06x}, tcemu\.matmul 0x[0-9a-f]{{4}}", out[2])
    assert main(argv + ["--check", "numpy", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["check"]["how"] == "numpy" and doc["check"]["matched"] < 32768 // 100
    # with the layout check on, the fault cites the kernel's source line relative to the repository and the
    # parameter by its metadata name
    assert main(["run", MATMUL, "--ptx", str(ptx), *SMALL]) == 2
    err = _err(capsys)
    assert "(line 752 (scripts/triton_kernels.py:76))" in err and "/work/" not in err
    # SBO 512 for an MN-major B: K rows 8.. read K rows 4..; the first break of the one-stride rule is at k = 8
    assert "element (0, 0) holds b_ptr[0, 0] but element (0, 8) holds b_ptr[4, 0]" in err


def test_metadata_errors_name_the_argument(tmp_path, capsys):
    scale = os.path.join(FIX, "attn_scale_k.json")
    assert main(["run", scale, "--quiet"]) == 2
    assert _err(capsys) == ("tcemu: error: PtxError: K: the metadata gives no shape for this *fp16 argument: pass "
                            "--arg K=random:f16:SHAPE (or zeros:TYPE:SHAPE, or a .npy file)")
    assert main(["run", scale, "--arg", "K=random:f16:32768", "--arg", "ARG_K=zeros:f16:32768", "--check", "numpy"]) == 2
    assert _err(capsys) == ("tcemu: error: PtxError: --check: _attn_scale_k is not a GEMM --check can name (a_ptr, "
                            "b_ptr, c_ptr or a_desc, b_desc, c_desc with M, N, K)")
    assert main(["run", scale, "--arg", "Q=1"]) == 2
    assert _err(capsys) == ("tcemu: error: PtxError: --arg 0: 'Q' is not an argument of the kernel; its arguments: K, "
                            "ARG_K, n_elements, scale")
    assert main(["run", MATMUL, "--arg", "M=-5"]) == 2
    assert _err(capsys) == "tcemu: error: PtxError: M: -5: a GEMM's M, N and K are positive integers"
    assert main(["run", os.path.join(FIX, "sm100", "cute_mma_sm100.json")]) == 2
    assert _err(capsys).endswith("its params carry no roles and argument names (it is not Triton's metadata): run "
                                 "its PTX with the arguments in order (--arg ...)")
    lonely = tmp_path / "matmul_bf16.json"
    shutil.copy(MATMUL, lonely)
    assert main(["run", str(lonely)]) == 2
    assert _err(capsys) == (f"tcemu: error: PtxError: --ptx: no PTX beside {str(lonely)!r} (looked for "
                            f"{str(tmp_path / 'matmul_bf16.ptx')!r}): name it with --ptx")


def test_launch_record_replay_and_check(capsys):
    path = os.path.join(FIX, "cutlass_ws_bf16.json")
    with open(path) as fh:
        record = json.load(fh)["launches"][1]
    M, N = record["notes"]["M"], record["notes"]["N"]
    assert main(["run", path, "--launch", "1", "--check", "matmul", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(short_name(record["entry"]) + ": 4 CTAs, ")
    assert out[1] == (f"check matmul: {M * N} of {M * N} outputs of D bit-identical to tcemu.matmul (bf16 x bf16 -> "
                      "bf16, sm90, init none)")
    assert main(["run", path, "--launch", "2"]) == 2
    assert _err(capsys) == "tcemu: error: PtxError: --launch: 2: cutlass_ws_bf16.json holds launches 0 to 1"
    assert main(["run", path, "--grid", "4"]) == 2
    assert _err(capsys) == "tcemu: error: PtxError: --grid: comes from the launch record; leave it out"


def test_replay_of_a_whole_fixture_json_points_at_its_records():
    with open(os.path.join(FIX, "bench_cutlass_pingpong_bf16_512.json")) as fh:
        bench = json.load(fh)
    with pytest.raises(L.LaunchRecordError) as e:
        L.replay(bench, "unused: the record is refused first")
    assert e.value.field == "record" and "pass its 'launch' value (fixture['launch'])" in e.value.rule
    with open(os.path.join(FIX, "cutlass_ws_bf16.json")) as fh:
        fixture = json.load(fh)
    with pytest.raises(L.LaunchRecordError, match=r"fixture\['launches'\]\[i\]"):
        L.replay(fixture, "unused")


def test_long_names_and_build_paths():
    with open(os.path.join(FIX, "cutlass_cute_tutorial.json")) as fh:
        entry = json.load(fh)["entries"][0]
    short = short_name(entry)
    assert short.startswith(entry[:40] + "… (") and short.endswith(f"; {len(entry):,} characters)") and len(short) < 200
    if demangle(entry) is not None:  # c++filt on PATH, or a Python demangler installed
        assert "(gemm_device<cute::tuple<…>, cute::tuple<…>, cutlass::half_t, cute::ComposedLayout<…>, …>;" in short
    assert fold_templates("a<b<c<d>>, e>", 1) == "a<b<…>, e>"
    assert short_name("matmul_ptr") == "matmul_ptr"
    assert source_path("/home/ci/build/tcemu/scripts/triton_kernels.py") == "scripts/triton_kernels.py"
    assert source_path("/opt/py/lib/python3.11/site-packages/triton/language/standard.py") == \
        "triton/language/standard.py"
    assert source_path("/nowhere/known/kernel.py") == "kernel.py"
    assert tidy(f"at line 3 (/a/b/scripts/triton_kernels.py:45) in {entry} and again {entry}") == \
        f"at line 3 (scripts/triton_kernels.py:45) in {short} and again {entry[:40]}…"


def test_kernel_choice_by_number_or_part(capsys):
    tutorial = os.path.join(FIX, "cutlass_cute_tutorial.ptx")
    assert main(["run", tutorial, "--kernel", "EmptyKernel", "--block", "32", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("_ZN3cub17CUB_300001_SM_9006detail11EmptyKernelIvEEvv: 1 CTAs, ")
    assert main(["run", tutorial, "--quiet"]) == 2
    err = _err(capsys)
    assert err.startswith("tcemu: error: PtxError: --kernel: the module has 3 kernels; name one, or give its number: "
                          "0: _Z11gemm_deviceIN4cute5tupleIJiiiEEENS1_… (") and len(err) < 1200
    assert "[from character 196: …S5_NS3_ILi2EEEEEENS1_IJN…]" in err   # the two gemm_device entries told apart
