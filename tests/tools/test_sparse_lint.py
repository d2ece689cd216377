"""Sparse wgmma operands under issue 13's lint (merge of `sparse` and `alarms`): one instruction_k for dense,
sparse and tcgen05 operands; explain / lint / CLI name the operand, keep the wide-row LBO rule for sparse B and
judge large strides only against a tile."""
import pytest

from tcemu import GmmaDescriptor, InstrDescriptor, LayoutError, UmmaDescriptor
from tcemu.cli import main
from tcemu.tools.explain import explain, lint
from tcemu.tools import explain as explain_module
from tcemu.tools.operand import instruction_k

CUTE_ONE = GmmaDescriptor(0x400, 16, 256, 0, "32B")    # CuTe's "assumed 1" LBO (16 bytes) on a 32B K-major B
TRITON = GmmaDescriptor(0x400, 256, 256, 0, "32B")     # LBO = 8 rows x 32 bytes: atom columns after all rows


def test_one_instruction_k():
    assert explain_module.instruction_k is instruction_k
    # PTX 9.7.15.5 / 9.7.15.6: dense wgmma k16 for f16, k8 for tf32; .sp doubles K (k32 f16, k16 tf32, k64 8-bit)
    # and A stores half of it per row
    assert (instruction_k("f16"), instruction_k("tf32"), instruction_k("e4m3")) == (16, 8, 32)
    assert (instruction_k("f16", sparse=True, operand="a"), instruction_k("f16", sparse=True, operand="B"),
            instruction_k("tf32", "sm90", True, "b"), instruction_k("e4m3", "sm90", True, "A")) == (16, 32, 16, 32)
    # tcgen05: 32 bytes of K per row; padded e2m1 is one byte slot each, packed two per byte
    assert (instruction_k("e2m1", "sm100", padded=True), instruction_k("e2m1", "sm100"),
            instruction_k("bf16", "sm100")) == (32, 64, 16)
    for args in (("f16", "sm100", True), ("b1", "sm90", True)):
        with pytest.raises(LayoutError) as e:
            instruction_k(*args)
        assert e.value.field == "sparse"
    with pytest.raises(LayoutError) as e:
        instruction_k("f16", sparse=True, operand="c")
    assert e.value.field == "operand"


def test_sparse_b_wide_row_names_the_operand():
    text = explain(CUTE_ONE, dtype="f16", rows=8, sparse=True, operand="b")
    assert "(sm90, operand B, read as 8 x 32 f16, K-major)" in text
    assert "sparse wgmma (k32): B reads all 32 K elements" in text
    assert ("warning: lbo: 0x10: K spans more than one 32B-swizzled row, so LBO places the next atom column; below "
            "the row width it lands inside the first (CuTe writes 1 here, which only suits K within one row) "
            "(operand B)") in text
    assert "is ignored" not in text  # LBO is used here: validate's finding for K within one row does not apply
    # Row r's four 16-byte chunks sit at r*32 + (0, 16, 16, 32): chunks 1 and 2 coincide (8 rows x 8 elements) and
    # chunk 3 is the next row's chunk 0 (7 rows x 8 elements): 64 + 56 = 120 overlapping pairs (the 32B swizzle
    # permutes addresses, so the count stands). The LBO has its own finding: the overlap names no LBO repair.
    overlap = [ln for ln in text.splitlines() if ln.startswith("warning: lbo, sbo: strides overlap")]
    assert overlap == ["warning: lbo, sbo: strides overlap: elements B[0, 8] and B[0, 16] share bytes at 0x410 "
                       "(120 such pairs) (operand B)"]


def test_sparse_a_reads_half_of_k():
    text = explain(TRITON, dtype="f16", rows=8, sparse=True, operand="A")
    assert "(sm90, operand A, read as 8 x 16 f16, K-major)" in text
    assert "sparse wgmma (k32): A holds K/2 stored elements per row, read like a dense A" in text
    # 16 f16 = 32 bytes of K fit one 32B row: LBO unused, as for a dense A
    assert "warning: lbo: 0x100 is ignored for swizzled K-major operands" in text and "K spans" not in text
    assert lint(CUTE_ONE, dtype="f16", rows=8, sparse=True, operand="A") == \
        lint(CUTE_ONE, dtype="f16", rows=8, k=16, operand="A") == []


def test_sparse_b_large_lbo_is_judged_against_the_tile():
    """16 rows: the dense LBO is 16 rows x 32 bytes = 0x200. LBO 0x2000 (16x that) is legal for a tile with more
    rows, so it is silent without a tile; within a 16 x 32 tile (16 rows x 64 bytes = 1024 bytes) one read spans
    0x2000 + 512 = 8704 bytes, and only LBO / 16 makes it fit without overlap."""
    big = GmmaDescriptor(0x400, 0x2000, 256, 0, "32B")
    assert explain(TRITON, dtype="f16", rows=8, sparse=True, operand="b", tile=(8, 32)).endswith("no findings")
    assert lint(big, dtype="f16", rows=16, sparse=True, operand="B") == []
    assert [str(f) for f in lint(big, dtype="f16", rows=16, sparse=True, operand="B", tile=(16, 32))] == [
        "warning: lbo, sbo: one instruction reads 8704 bytes (0x400 to 0x2600), more than the whole 16 x 32 f16 tile "
        "of B holds (1024 bytes): the descriptor reads outside the tile; LBO 0x2000 / 16 = 0x200 would fit: a byte "
        "count written into the field without the >> 4? (operand B)"]


def test_sparse_with_an_instruction_descriptor_is_refused():
    idesc = InstrDescriptor(kind="f16", m=128, n=64, dtype_a="bf16", dtype_b="bf16", dtype_d="f32")
    desc = UmmaDescriptor(start_address=0x400, lbo=16, sbo=1024, swizzle="128B", version=1)
    for call in (explain, lint):
        with pytest.raises(LayoutError) as e:
            call(desc, instr=idesc, sparse=True)
        assert e.value.field == "sparse"
    with pytest.raises(LayoutError) as e:
        explain(desc, dtype="bf16", arch="sm100", sparse=True)
    assert e.value.field == "sparse"


def test_cli_sparse(tmp_path, capsys):
    assert main(["explain", hex(CUTE_ONE.encode()), "--dtype", "f16", "--rows", "8", "--sparse", "--operand", "B",
                 "--tile", "8x32", "--svg", str(tmp_path / "b.svg")]) == 0
    out = capsys.readouterr().out
    assert "operand B, read as 8 x 32 f16" in out and "K spans 64 bytes" in out and "(operand B)" in out
    assert (tmp_path / "b.svg").exists()
    assert main(["explain", hex(TRITON.encode()), "--dtype", "f16", "--rows", "8", "--sparse"]) == 0
    assert "operand A, read as 8 x 16 f16" in capsys.readouterr().out


def test_sparse_b_picture_places_the_second_atom_column(tmp_path):
    """Row r, k 0..15 at 0x400 + 32 r (two chunks); k 16..31 one atom column on, at 0x500 + 32 r; the 32B swizzle
    flips address bit 4 where bit 7 is set (rows 4-7 of each column)."""
    pytest.importorskip("matplotlib")
    from tcemu.tools.pictures import operand_map
    lo, labels = operand_map(TRITON, str(tmp_path / "b.png"), rows=8, k=instruction_k("f16", sparse=True, operand="B"),
                             dtype="f16", operand="B")
    assert lo == 0x400 and len(labels) == 32  # 8 rows x 4 chunks over 4 lines of 128 bytes
    assert labels[(0, 0)] == "B0,0" and labels[(0, 1)] == "B0,8"
    assert labels[(2, 0)] == "B0,16" and labels[(2, 1)] == "B0,24"
    assert labels[(3, 1)] == "B4,16" and labels[(3, 0)] == "B4,24"   # 0x580 ^ 0x10, 0x590 ^ 0x10


def _triton_b(rows, start=0x400, sbo=256):
    """A sparse f16 B (rows x 32) as Triton writes it for a 32B-swizzled K-major descriptor, by hand: row r, chunk
    c = k // 8 at start + (r // 8) SBO + (r % 8) 32 + (c // 2) LBO + (c % 2) 16 + 2 (k % 8) with LBO = rows x 32
    (the second atom column after all rows), then bit 4 ^= bit 7 (Swizzle<1,4,3>)."""
    import numpy as np
    w = np.zeros((rows, 32), np.int64)
    for r in range(rows):
        for k in range(32):
            c = k // 8
            a = start + (r // 8) * sbo + (r % 8) * 32 + (c // 2) * rows * 32 + (c % 2) * 16 + 2 * (k % 8)
            w[r, k] = a ^ (((a >> 7) & 1) << 4)
    return w


def test_suggest_and_check_a_sparse_b_placement():
    """suggest_descriptor finds the LBO of the second atom column (it assumed LBO unused for every swizzled K-major
    placement); check_operand names CuTe's 16-byte LBO against it."""
    from tcemu.tools.check import check_operand, suggest_descriptor
    w = _triton_b(16)
    assert suggest_descriptor(w, dtype="f16", operand="B") == GmmaDescriptor(0x400, 0x200, 0x100, 0, "32B")
    report = check_operand(w, CUTE_ONE, dtype="f16", operand="B")
    assert report.wrong == 16 * 16  # k 16..31 of every row: chunks 2, 3 read from inside the first atom column
    assert report.lines[-1] == ("hint: LBO 0x10: K spans more than one 32B-swizzled row, so LBO places the next "
                                "atom column; this placement needs 0x200")
    assert check_operand(w, GmmaDescriptor(0x400, 0x200, 0x100, 0, "32B"), dtype="f16", operand="B").ok
