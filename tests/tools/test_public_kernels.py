"""Descriptor configurations of public kernels, modelled from their source (cited per case, no code copied), and
realistic planted bugs. Each case asserts the exact verdict: silent, or the exact finding.

The writer's placement always comes from tcemu's TMA model (tma_load + tma_placement) and the reader's from the
descriptor model, two separate code paths; the expected texts are derived by hand in the comments.
"""
import numpy as np

from tcemu import GmmaDescriptor, InstrDescriptor, SharedMemory, UmmaDescriptor, tma_load, tma_placement
from tcemu.tools.check import check_operand, check_tile, k_block_descriptors, suggest_descriptor
from tcemu.tools.explain import dense_strides, lint


def bf16_tensor(rows, cols, seed=0):
    return np.random.default_rng(seed).integers(0, 1 << 16, (rows, cols)).astype(np.uint16)


# ---- false alarms of the old "16x the dense value" lint: legal large resident tiles --------------------------

class TestMnMajorBOfA256DeepKTile:
    """DeepGEMM (deep_gemm/include/deep_gemm/mma/sm90.cuh and sm100.cuh, make_gmma_desc / make_umma_desc, MN-major
    branch; common/tma_copy.cuh) and ThunderKittens (include/types/shared/descriptor.cuh, st_descriptor MN-major
    128B) both place an MN-major tile as 64-element-wide column blocks, each holding every K row: LBO (the next 64
    N) = BLOCK_K x 128 bytes, SBO (the next 8 K rows) = 1024, the start advanced 16 K rows x 128 bytes = 2048 per
    16-deep wgmma. DeepGEMM fills it with one TMA box per 64-wide block (box inner = the 128-byte swizzle span).
    With BLOCK_K = 256, LBO = 0x8000: 16x the 0x800 of a tile exactly one instruction deep."""
    N, K = 128, 256

    def setup_method(self):
        g = bf16_tensor(self.K, self.N)  # B stored (K, N), N contiguous: MN-major
        smem = SharedMemory()
        boxes = [(tma_load(smem, 0x400 + i * self.K * 128, g, box=[64, self.K], coords=[64 * i, 0], swizzle="128B"),
                  [64 * i, 0]) for i in range(self.N // 64)]
        self.tile = tma_placement(boxes, rows=0, k=1)  # (N, K)
        self.desc = GmmaDescriptor(0x400, lbo=self.K * 128, sbo=1024, swizzle="128B")

    def test_the_old_rule_would_fire(self):
        assert self.desc.lbo == 16 * dense_strides(self.desc, "bf16", "MN", self.N, 16)[0]

    def test_lint_is_silent_and_agrees_with_the_suggestion(self):
        assert lint(self.desc, dtype="bf16", major="MN", rows=self.N) == []
        assert lint(self.desc, dtype="bf16", major="MN", rows=self.N, tile=(self.N, self.K)) == []
        assert suggest_descriptor(self.tile[:, :16], dtype="bf16", major="MN") == self.desc
        assert check_operand(self.tile[:, :16], self.desc, dtype="bf16", major="MN").ok

    def test_the_whole_tile_reads_as_written(self):
        report = check_tile(self.tile, self.desc, dtype="bf16", major="MN", start_advance=2048)
        assert report.ok and (report.advance, report.expected_advance) == (2048, 2048)
        assert [b.read_block for b in report.blocks] == list(range(16))


class TestMosaicKMajorTilesWith1024K:
    """JAX Mosaic GPU (jax/experimental/mosaic/gpu/mma_utils.py, create_descriptor, small tiles, K fastest): an A
    operand tiled (m / 8, k / 64, 8, 64) for 128B swizzle, tiles row-major, so SBO is the stride of one M tile =
    (K / 64) tiles x 1024 bytes; within a 64-wide K group the descriptor advances 32 bytes per instruction, and
    1024 bytes per K group (wgmma.py: a_k_group_stride). With K = 1024: SBO = 0x4000, 16x the dense 0x400. Written
    here by one 4-D TMA box whose traversal (dimension 0 = 64 elements of K, 1 = 8 rows, 2 = K tile, 3 = M tile)
    lays the tiles in that order."""
    M, K = 64, 1024

    def setup_method(self):
        g = bf16_tensor(self.M, self.K, 1)
        view = np.lib.stride_tricks.as_strided(g, shape=(self.M // 8, self.K // 64, 8, 64),
                                               strides=(8 * self.K * 2, 128, self.K * 2, 2))
        box = tma_load(SharedMemory(), 0x400, view, box=[64, 8, self.K // 64, self.M // 8], coords=[0, 0, 0, 0],
                       swizzle="128B")
        self.tile = tma_placement(box, rows=(1, 3), k=(0, 2))  # (M, K)
        self.desc = GmmaDescriptor(0x400, lbo=0, sbo=(self.K // 64) * 1024, swizzle="128B")
        self.starts = [0x400 + kg * 1024 + i * 32 for kg in range(self.K // 64) for i in range(4)]

    def test_the_old_rule_would_fire(self):
        assert self.desc.sbo == 16 * dense_strides(self.desc, "bf16", "K", self.M, 16)[1]

    def test_lint_is_silent_and_agrees_with_the_suggestion(self):
        assert lint(self.desc, dtype="bf16") == []
        assert lint(self.desc, dtype="bf16", tile=(self.M, self.K)) == []
        found = suggest_descriptor(self.tile[:, :16], dtype="bf16")
        assert (found.start_address, found.sbo, found.swizzle.value) == (0x400, 0x4000, "128B")

    def test_the_whole_tile_reads_as_written(self):
        descs = [GmmaDescriptor(s, lbo=0, sbo=self.desc.sbo, swizzle="128B") for s in self.starts]
        report = check_tile(self.tile, descs, dtype="bf16")
        assert report.ok and len(report.blocks) == 64 and report.advance is None  # not one constant step


# ---- the bugs the lint was meant for: still caught ----------------------------------------------------------

class TestHandWrittenHopperGemm:
    """A hand-written H100 GEMM (sampan26/cuda_bits, hopper/gemm/src/ptx.cuh make_smem_desc and
    src/matmul_v3.cu): A tile BM = 128 x BK = 64 bf16 from one TMA box, 128B swizzle, LBO 16, SBO 1024, each
    m64 warpgroup's A at +64 rows, the wgmma K step `&tile[k * WGMMA_K]`, i.e. +32 bytes."""

    def setup_method(self):
        smem = SharedMemory()
        self.tile = tma_placement(tma_load(smem, 0x400, bf16_tensor(128, 64, 2), box=[64, 128], coords=[0, 0],
                                           swizzle="128B"), rows=1, k=0)  # (128, 64)
        self.good = GmmaDescriptor(0x400, lbo=16, sbo=1024, swizzle="128B")

    def test_the_kernel_as_written(self):
        assert lint(self.good, dtype="bf16", tile=(128, 64)) == []
        assert check_tile(self.tile[:64], self.good, dtype="bf16", start_advance=32).ok

    def test_sbo_written_in_bytes(self):
        """Planted: the SBO field set to 1024 without matrix_descriptor_encode (no >> 4): SBO = 16384 bytes.
        One m64 instruction then spans row group 7 at 7 x 16384, line 8 + 896 + 7 = 911 (911 & 7 = 7 flips
        chunks 0-1 to 7-6), so the last byte is 0x400 + 114688 + 896 + 127 = 0x1c7ff: 115712 bytes from 0x400."""
        bug = GmmaDescriptor(0x400, lbo=16, sbo=16384, swizzle="128B")
        assert lint(bug, dtype="bf16") == []  # no tile given: a K = 1024 resident tile would look the same
        [f] = lint(bug, dtype="bf16", tile=(128, 64))
        assert (f.field, f.severity) == ("lbo, sbo", "warning")
        assert f.rule == ("one instruction reads 115712 bytes (0x400 to 0x1c800), more than the whole 128 x 64 bf16 "
                          "tile of A holds (16384 bytes): the descriptor reads outside the tile; SBO 0x4000 / 16 = "
                          "0x400 would fit: a byte count written into the field without the >> 4? (operand A)")
        report = check_operand(self.tile[:64, :16], bug, dtype="bf16")
        assert not report.ok and report.lines[-1] == ("hint: SBO 0x4000 is 16x the 0x400 this placement needs: a "
                                                      "byte count written into the field without the >> 4?")

    def test_start_shifted_twice(self):
        """Planted: the start passed already encoded (addr >> 4) and encoded again: the field holds 0x400 >> 8."""
        bug = GmmaDescriptor(0x40, lbo=16, sbo=1024, swizzle="128B")
        [f] = lint(bug, dtype="bf16")
        assert f == ("start_address", "0x40 lies below 0x400, where dynamic shared memory begins: was the address "
                                      "shifted twice? (operand A)", "warning")
        report = check_operand(self.tile[:64, :16], bug, dtype="bf16")
        assert report.lines[-1] == "hint: start address 0x40 is 1/16 of 0x400: shifted twice?"

    def test_k_step_in_bytes_of_the_wrong_width(self):
        """Planted: the K step taken on a byte pointer (+16 per wgmma instead of 16 bf16 = 32 bytes). Block kb
        starts 16 kb bytes = 8 kb elements in: block 1 reads columns 8-23, block 2 columns 16-31 (block 1's data),
        block 3 columns 24-39. One instruction's check alone calls block 1's bytes unwritten; the tile check
        names them."""
        bug = k_block_descriptors(self.good, 4, 16)
        alone = check_operand(self.tile[:64, 32:48], bug[2], dtype="bf16")
        assert alone.lines[0].endswith("which the writer never wrote")
        report = check_tile(self.tile[:64], bug, dtype="bf16")
        why = " (start advanced 16 bytes per block, expected 32)"
        assert [b.text for b in report.blocks] == [
            "K block 0: reads tile columns 0-15",
            "K block 1 read tile columns 8-23 (expected 16-31: the data of K blocks 0 and 1)" + why,
            "K block 2 read the data of K block 1" + why,
            "K block 3 read tile columns 24-39 (expected 48-63: the data of K blocks 1 and 2)" + why]
        assert [b.read_block for b in report.blocks] == [0, None, 1, None]


class TestDeepGemmNoSwizzleMnMajorSwap:
    """DeepGEMM's make_gmma_desc (deep_gemm/include/deep_gemm/mma/sm90.cuh), MN-major without swizzle
    (kSwizzleMode == 16): one TMA box per 8-element column of N (common/tma_copy.cuh), each holding all BLOCK_K
    rows of 16 bytes, so the next 8 N is BLOCK_K x 16 bytes away and the next 8 K rows 128; DeepGEMM swaps its
    SBO and LBO for this mode to say so: SBO = BLOCK_K x 16, LBO = 128. Planted: the swap forgotten."""
    N, K = 64, 64

    def setup_method(self):
        g = bf16_tensor(self.K, self.N, 3)
        smem = SharedMemory()
        boxes = [(tma_load(smem, 0x400 + i * self.K * 16, g, box=[8, self.K], coords=[8 * i, 0]), [8 * i, 0])
                 for i in range(self.N // 8)]
        self.tile = tma_placement(boxes, rows=0, k=1)
        self.good = GmmaDescriptor(0x400, lbo=128, sbo=self.K * 16)

    def test_the_kernel_as_written(self):
        assert suggest_descriptor(self.tile[:, :16], dtype="bf16", major="MN") == self.good
        assert lint(self.good, dtype="bf16", major="MN", tile=(self.N, self.K)) == []
        assert check_tile(self.tile, self.good, dtype="bf16", major="MN", start_advance=256).ok

    def test_the_forgotten_swap(self):
        bug = GmmaDescriptor(0x400, lbo=self.K * 16, sbo=128)
        assert lint(bug, dtype="bf16", major="MN", tile=(self.N, self.K)) == []  # a legal layout of another tile
        report = check_operand(self.tile[:, :16], bug, dtype="bf16", major="MN")
        assert not report.ok and report.lines[-1] == ("hint: LBO and SBO are swapped: this placement needs LBO 0x80, "
                                                      "SBO 0x400")

    def test_the_forgotten_swap_in_a_16_deep_tile_overlaps(self):
        """With BLOCK_K = 16 the swapped strides (LBO 0x100, SBO 0x80) put K rows 8-15 of N columns 0-7 (at
        +0x100) on N columns 16-23 (SBO x 2): elements B[0, 8] and B[16, 0] share 0x500."""
        [f] = lint(GmmaDescriptor(0x400, lbo=256, sbo=128), dtype="bf16", major="MN", operand="B")
        assert f.rule == ("strides overlap: elements B[0, 8] and B[16, 0] share bytes at 0x500 (384 such pairs) "
                          "(operand B)")


# ---- whole tiles over K ---------------------------------------------------------------------------------------

class TestThunderKittensKMajorAcrossSubtiles:
    """ThunderKittens (include/types/global/tma.cuh: a 5-D map of (64-element swizzle rows, rows, column pieces,
    depth, batch); include/types/shared/descriptor.cuh chunk_descriptor): a 64 x 128 bf16 K-major tile is two
    64-column pieces, the second rows x 128 bytes after the first; K block c (16 wide) starts at (c % 4) x 32 +
    (c / 4) x rows x 128."""
    ROWS, COLS = 64, 128

    def setup_method(self):
        g = bf16_tensor(self.ROWS, self.COLS, 4)
        view = np.lib.stride_tricks.as_strided(g, shape=(1, 1, self.COLS // 64, self.ROWS, 64),
                                               strides=(g.nbytes, g.nbytes, 128, self.COLS * 2, 2))
        box = tma_load(SharedMemory(), 0x400, view, box=[64, self.ROWS, self.COLS // 64, 1, 1],
                       coords=[0, 0, 0, 0, 0], swizzle="128B")
        self.tile = tma_placement(box, rows=1, k=(0, 2))
        self.base = GmmaDescriptor(0x400, lbo=16, sbo=1024, swizzle="128B")

    def test_the_kernel_as_written(self):
        descs = [GmmaDescriptor(0x400 + (c % 4) * 32 + (c // 4) * self.ROWS * 128, lbo=16, sbo=1024, swizzle="128B")
                 for c in range(8)]
        report = check_tile(self.tile, descs, dtype="bf16")
        assert report.ok and report.expected_advance is None  # the placement needs no single constant step

    def test_a_constant_step_runs_off_the_first_piece(self):
        """Planted: a constant +32 bytes per block. Block 4 starts at 0x480, one 128-byte line on: its row r reads
        row r + 1's columns 0-15 (block 0's data; rows 7 -> 8 cross to the next 1024-byte group, which SBO
        also puts there), and row 63 reads 0x400 + 64 x 128 = 0x2400, the second piece's row 0 (block 4's data,
        wrong row): all 1024 elements misread. The placement needs block 4 at 0x400 + 64 x 128 = 0x2400. Element
        (0, 64) is read at 0x480 before the swizzle; line 9 (9 & 7 = 1) moves chunk 0 to chunk 1: 0x490."""
        report = check_tile(self.tile, self.base, dtype="bf16", start_advance=32)
        assert [b.ok for b in report.blocks] == [True] * 4 + [False] * 4
        assert report.blocks[4].text == ("K block 4 read 1024 of 1024 elements from the wrong place: from K blocks "
                                         "0, 4 (start 0x480, expected 0x2400)")
        assert report.blocks[4].lines[0] == "A[0, 64] read from 0x490, which holds A[1, 0]"


class TestDeepGemmSm100MnMajorAdvance:
    """DeepGEMM sm100 (deep_gemm/include/deep_gemm/mma/sm100.cuh advance_umma_desc_lo): the per-UMMA-K step is
    k_idx x (BLOCK_MN_ATOM for MN-major, 1 for K-major) x sizeof: 16 x 64 x 2 = 2048 bytes for an MN-major bf16
    B (N = 128 in two 64-wide boxes, BLOCK_K = 64, LBO = 64 x 128 = 0x2000, SBO 1024), kind::f16."""

    def setup_method(self):
        g = bf16_tensor(64, 128, 5)  # (K, N)
        smem = SharedMemory("sm100")
        boxes = [(tma_load(smem, 0x400 + i * 64 * 128, g, box=[64, 64], coords=[64 * i, 0], swizzle="128B"),
                  [64 * i, 0]) for i in range(2)]
        self.tile = tma_placement(boxes, rows=0, k=1)
        self.idesc = InstrDescriptor("f16", "bf16", "bf16", m=128, n=128, transpose_b=True)
        self.base = UmmaDescriptor(0x400, lbo=0x2000, sbo=1024, swizzle="128B", version=1)

    def test_the_kernel_as_written(self):
        report = check_tile(self.tile, self.base, instr=self.idesc, operand="B", start_advance=2048)
        assert report.ok and report.expected_advance == 2048

    def test_the_k_major_step_on_an_mn_major_operand(self):
        """Planted: the K-major step (16 x 2 = 32 bytes) on the MN-major B. Block 1 starts 32 bytes = 16 N
        elements into block 0's first K row: (n, k) reads (n + 16, k) of block 0, where n % 64 >= 48 wraps to the
        next 128-byte line, K row k + 1 — for k = 15 that is K row 16, block 1's. All 2048 elements misread."""
        report = check_tile(self.tile, self.base, instr=self.idesc, operand="B", start_advance=32)
        assert report.blocks[1].text == ("K block 1 read 2048 of 2048 elements from the wrong place: from K blocks "
                                         "0, 1 (start advanced 32 bytes per block, expected 2048)")
