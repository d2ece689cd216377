"""cta_group::2: each CTA of the pair holds half of A's rows and of B's columns (CuTe's 2-SM MMA traits;
tcgen05_mma splits them so). explain, lint, check_operand and the pictures take the pair into account."""
import numpy as np
import pytest

from tcemu import InstrDescriptor, LayoutError, SharedMemory, UmmaDescriptor, tma_load, tma_placement
from tcemu.tools.check import check_operand
from tcemu.cli import main
from tcemu.tools.explain import explain, lint
from tcemu.tools.operand import operand_spec

M256 = InstrDescriptor("f16", "bf16", "bf16", m=256, n=256)   # cta_group::2 (M = 256 exists only there)
M128 = InstrDescriptor("f16", "bf16", "bf16", m=128, n=128)   # ::1 or ::2
K_MAJOR = UmmaDescriptor(start_address=0x400, lbo=16, sbo=1024, swizzle="128B", version=1)


def test_operand_spec_halves_rows_and_columns():
    a, b = operand_spec(M256, operand="a"), operand_spec(M256, operand="B")
    assert (a.rows, a.total_rows, a.cta_group, b.rows, b.total_rows) == (128, 256, 2, 128, 256)
    assert (operand_spec(M128, operand="A").rows, operand_spec(M128, operand="A", cta_group=2).rows,
            operand_spec(M128, operand="B", cta_group=2).rows) == (128, 64, 64)
    with pytest.raises(LayoutError) as e:
        operand_spec(M256, cta_group=1)
    assert e.value.field == "cta_group" and "each CTA holds 128 rows of A" in e.value.rule


def test_explain_m256_reads_128_rows_per_cta(capsys):
    text = explain(K_MAJOR, instr=M256)
    assert "(sm100, operand A, read as 128 x 16 bf16, K-major)" in text
    assert ("cta_group::2: each CTA of the pair holds 128 of A's 256 rows (rows [0, 128) in the first CTA, "
            "[128, 256) in the second, each read through this descriptor from its own shared memory)") in text
    assert text.endswith("no findings")
    # B of a cta_group::2 M = 128 instruction: 64 of its 128 columns per CTA
    assert "operand B, read as 64 x 16 bf16" in explain(K_MAJOR, instr=M128, operand="b", cta_group=2)
    assert main(["explain", hex(K_MAJOR.encode()), "--instr", hex(M128.encode()), "--kind", "f16", "--operand", "a",
                 "--cta-group", "2"]) == 0
    assert "read as 64 x 16 bf16" in capsys.readouterr().out
    assert main(["explain", hex(K_MAJOR.encode()), "--cta-group", "2", "--arch", "sm100"]) == 2
    assert "give --instr and --kind" in capsys.readouterr().err


def test_lint_reads_the_shape_from_the_instruction():
    """SBO 0x200 with 128B swizzle overlaps 8-row groups; the elements named are B's, and with the pair the
    first overlap is found within one CTA's 128 columns."""
    bad = UmmaDescriptor(start_address=0x400, lbo=16, sbo=0x200, swizzle="128B", version=1)
    [f] = lint(bad, instr=M256, operand="b")
    assert f.field == "lbo, sbo" and f.rule.startswith("strides overlap: elements B[4, 0] and B[8, 0] share bytes")
    assert f.rule.endswith("(operand B)")
    # SBO 0x200 < 8 rows x 128 bytes: rows 4-7 of each 8-row group land on rows 0-3 of the next; 128 columns give 15
    # group boundaries x 4 rows x 16 elements = 960 pairs. Element (4, 0) is at 0x400 + 4 * 128 = 0x600, whose
    # 16-byte chunk the 128B swizzle XORs with line bits 7-9 = 4: 0x640. No single slip (x16, /16, swap) gives
    # the dense SBO 0x400 here, so no repair is named.
    assert f.rule == "strides overlap: elements B[4, 0] and B[8, 0] share bytes at 0x640 (960 such pairs) (operand B)"


def _cta_tile(smem, g):
    """One CTA's 128 x 64 bf16 K-major box, TMA 128B (as CuTe's SM100_TMA_2SM_LOAD gives each CTA its half)."""
    return tma_placement(tma_load(smem, 0x400, g, box=[64, 128], coords=[0, 0], swizzle="128B"), rows=1, k=0)


def test_check_operand_takes_one_cta_or_both_stacked():
    g = np.arange(256 * 64, dtype=np.uint16).reshape(256, 64)
    cta0, cta1 = _cta_tile(SharedMemory("sm100"), g[:128]), _cta_tile(SharedMemory("sm100"), g[128:])
    assert check_operand(cta0[:, :16], K_MAJOR, instr=M256).ok
    both = np.concatenate([cta0[:, :16], cta1[:, :16]])
    report = check_operand(both, K_MAJOR, instr=M256)
    assert (report.ok, report.total) == (True, 256 * 16)
    # CTA 1 wrote its half one 128-byte line lower (a per-CTA offset applied twice): only its rows are misread
    shifted = np.concatenate([cta0[:, :16], cta1[:, :16] + 1024])
    report = check_operand(shifted, K_MAJOR, instr=M256)
    assert (report.ok, report.wrong) == (False, 128 * 16)
    assert report.lines[0].startswith("A[128, 0] (CTA 1) read from 0x400, which the writer never wrote")
    with pytest.raises(LayoutError) as e:
        check_operand(np.concatenate([both, both]), K_MAJOR, instr=M256)
    assert e.value.field == "written" and "128 per CTA, or 256 for both CTAs stacked" in e.value.rule


@pytest.mark.slow
def test_picture_of_one_cta(tmp_path):
    pytest.importorskip("matplotlib")
    from tcemu.tools.pictures import operand_map
    lo, labels = operand_map(K_MAJOR, str(tmp_path / "a.png"), instr=M256)
    rows = {int(t[1:].split(",")[0]) for t in labels.values()}
    assert lo == 0x400 and max(rows) == 127 and len(labels) == 128 * 2  # 128 rows x two 16-byte chunks
