"""The tcemu command line."""
import json
import os

import pytest

from tcemu import GmmaDescriptor, operand_addresses
from tcemu.cli import main

from paths import FIXTURES


def test_decode(capsys):
    assert main(["decode", "0x4000004000010040", "--dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    assert "start_address  0x400" in out and "sbo            0x400 (1024 bytes)" in out
    assert "K-major layout (bf16): Swizzle<3,4,3> o ((8,m),(8,2k)):((64,512),(1,8))" in out
    assert "MN-major layout (bf16): Swizzle<3,4,3> o ((8,8,m),(8,k)):((1,8,8),(64,512))" in out
    assert "no findings" in out


def test_decode_reports_findings_and_fails(capsys):
    value = GmmaDescriptor(start_address=0x39000, base_offset=2).encode() | 1 << 15
    assert main(["decode", hex(value)]) == 1
    out = capsys.readouterr().out
    assert "error: start_address: 0x39000 lies beyond" in out
    assert "error: reserved_bits: bit 15 is reserved and must be 0" in out
    assert "warning: base_offset: 2 is ignored without swizzle" in out


def test_addresses_json(capsys):
    desc = hex(GmmaDescriptor(0x400, 16, 512, 0, "64B").encode())
    assert main(["addresses", desc, "--rows", "64", "--k", "16", "--dtype", "bf16", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["addresses"] == operand_addresses(desc, rows=64, k=16, dtype="bf16").tolist()
    assert len(doc["core_matrix_rows"]) == 8 and len(doc["core_matrix_rows"][0]) == 2


def test_addresses_error_names_field(capsys):
    assert main(["addresses", "0x0", "--rows", "64", "--k", "8", "--dtype", "tf32", "--major", "MN"]) == 2
    assert "LayoutError: major: tf32 must be K-major on sm90 (PTX: imm-trans only for .f16/.bf16)" in capsys.readouterr().err


def test_replay_table_and_exit_codes(capsys, tmp_path):
    # one small trace (tests/traces/test_traces.py replays them all): its groups, its totals, the verdict
    assert main(["replay", "traces/smem_wavefronts_targeted_sm90.npz"]) == 0
    out = capsys.readouterr().out
    assert "smem_wavefronts_targeted_sm90.npz" in out and " total " in out
    assert out.rstrip().endswith("all traces match")
    assert main(["replay", str(tmp_path)]) == 2


def test_decode_sm100(capsys):
    assert main(["decode", "0x4000404000010040", "--arch", "sm100", "--dtype", "bf16", "--major", "K"]) == 0
    out = capsys.readouterr().out
    assert "version        1" in out and "K-major layout (bf16): Swizzle<3,4,3>" in out and "no findings" in out
    assert main(["decode", "0x4000004000010040", "--arch", "sm100"]) == 1  # the sm90 value: no version bit
    assert "error: version: 0: sm100 descriptors carry version 1" in capsys.readouterr().out


def test_instr(capsys):
    assert main(["instr", "0x8400490", "--kind", "f16"]) == 0
    assert "instruction: .kind::f16 M = 128, N = 256; A bf16 K-major, B bf16 K-major, D f32" in capsys.readouterr().out
    bad = hex(__import__("tcemu").InstrDescriptor("i8", "s8", "s8", m=64, n=40, dtype_d="s32").encode())
    assert main(["instr", bad, "--kind", "i8"]) == 1
    assert "error: n: N = 40" in capsys.readouterr().out
    assert main(["instr", "0x20400490", "--kind", "f16"]) == 2
    assert "DescriptorError: reserved: 0x20400490 sets bits that are reserved" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["swizzle", "128B", "--png", "/nonexistent/dir/x.png"],
    ["swizzle", "128B", "--png", "noextension"],
    ["swizzle", "128B", "--png", "/"],
    ["decode", "0x" + "f" * 5000],
    ["decode", "9" * 5000],
    ["decode", "0x40", "--arch", "sm80"],
    ["decode", "0x4000004000010040", "--dtype", "nonsense"],
    ["banks", "--op", "ld.shared.b32", "--pattern", "t * 4", "--mask", "zz"],
    ["banks", "--op", "ld.shared.b32", "--pattern", "(" * 300 + "t" + ")" * 300],
    ["banks", "--op", "ld.shared.b32", "--pattern", "*".join(["(t<<63)"] * 50)],
    ["fuzz", "--seed", "-1"],
    ["fuzz", "--seconds", "1e400"],
    ["fuzz", "--seconds", "nan"],
    ["addresses", "0x40", "--rows", "1e400", "--k", "8", "--dtype", "bf16"],
    ["explain", "0x4000004000010040", "--tile", "9" * 5000],
    ["explain", "0x4000004000010040", "--html", "/nonexistent/dir/x.html"],
    ["run", "/nonexistent/k.ptx"],
    ["run", os.path.join(FIXTURES, "ptx", "calls.ptx"), "--save", "/proc/tcemu_save"],
    ["serve", "--port", "70000"],
], ids=lambda argv: " ".join(a[:20] for a in argv)[:60])
def test_cli_errors_are_one_line(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("tcemu") and "error" in lines[0], err


def test_cli_instr_takes_the_runtime_form(capsys):
    from tcemu.cli import main
    assert main(["instr", "0x0840049000000000", "--kind", "f16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("instruction descriptor 0x08400490 (.kind::f16, from the 64-bit runtime form "
                          "0x0840049000000000 >> 32)")
    assert main(["instr", "0x0840049000000001", "--kind", "f16"]) == 2
    assert "shift right by 32 (0x08400490)" in capsys.readouterr().err
