"""Pictures: the data they draw is exact, and the files are written (looked at by hand too)."""
import numpy as np
import pytest

import tcemu
from tcemu.cli import main
from tcemu.tools.pictures import operand_map, swizzle_atom


def test_swizzle_atom_grid(tmp_path):
    grid = swizzle_atom("128B", str(tmp_path / "a.png"))
    r, c = np.meshgrid(range(8), range(8), indexing="ij")
    assert np.array_equal(grid[r, c ^ r], c)                     # chunk c of row r sits at c XOR r
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # 32B: the XOR bit is ((addr >> 7) - 1) & 1: rows 0-3 (line 0) swap, rows 4-7 (line 1) do not
    assert swizzle_atom("32B", str(tmp_path / "b.svg"), base_offset=1).tolist() == [[1, 0]] * 4 + [[0, 1]] * 4
    assert (tmp_path / "b.svg").read_text().lstrip().startswith("<?xml")


def test_operand_map_labels(tmp_path):
    desc = tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B")
    lo, labels = operand_map(desc, str(tmp_path / "op.png"), rows=16, k=16, dtype="bf16")
    assert lo == 0x400
    assert labels[(0, 0)] == "A0,0" and labels[(0, 1)] == "A0,8"
    assert labels[(1, 1)] == "A1,0" and labels[(1, 0)] == "A1,8"   # row 1: chunks swapped by the swizzle
    assert labels[(2, 2)] == "A2,0" and len(labels) == 32


@pytest.mark.slow
def test_cli_pictures(tmp_path, capsys):
    assert main(["swizzle", "64B", "--png", str(tmp_path / "s.png")]) == 0
    assert main(["explain", "0x4000004000010040", "--svg", str(tmp_path / "e.svg")]) == 0
    assert (tmp_path / "s.png").exists() and (tmp_path / "e.svg").exists()
