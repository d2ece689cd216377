"""Tensor memory (sm100): per CTA 128 lanes x 512 columns of 32-bit cells (PTX 9.7.16.1); a tensor-memory
address is lane << 16 | column (9.7.16.1.1).

Where tcgen05.mma puts D and finds A and the block scales (PTX 9.7.16.10.4-5, whose pictures we could not
read; the lane/column maps below follow CuTe's tmem_frg / tmem_sf_frg, nvidia-cutlass 4.2, element by element in
tests/test_cute_tmem.py, and are not silicon-verified):
  D, cta_group::1, M = 128 (layout D): row r in lane r, column n.  M = 64 (layout F, half the data path):
  row r in lane base + r % 16 + 32 * (r // 16), base 0 or 16.  cta_group::2, per CTA: M = 256 (layout A) as
  M = 128; M = 128 (layout B, 2x2): local row r in lane r + 64 * (n // (N/2)), column n % (N/2).
  Sub-word D (f16) sits unpacked in the low half of its cell (9.7.16.10.4.1).
  A (K-major only): row r in D's lane for r, element k in column k // per-cell, packed from the low bits:
  1 tf32, 2 16-bit, 4 8-bit containers (fp4 in bits 2-5, fp6 in bits 0-5, as mma.sync's f8f6f4 registers),
  8 e2m1 for kind::mxf4*.
  Scales: factor j of row (or B column) r in lane r % 32 of every 32-lane sub-partition (PTX: they must be
  duplicated into all four), column r // 32, byte sf_id + j of the cell. K = 96 (sm_103a: 3 or 6 factors a row)
  runs on past byte 3: byte b = sf_id + j of the row's stream sits in column r // 32 + (R / 32) * (b // 4), byte
  b % 4, R = 128 for up to 128 rows (256 beyond); CuTe's tmem_sf_frg tiled one factor at a time, as its sm103
  mainloop iterates, puts factor s there (tests/test_cute_tmem.py); PTX's Figures 234-258 (images) agree in
  having ids 0-3 for 3X, 0 / 2 for 6X and separate SFB pictures for N <= 128 and N > 128.

.ws (weight stationary, PTX 9.7.16.10.5 layouts D, E, G; CuTe's tmem_frg_ws): M = 128 as layout D; M = 64
(2x2): row r in lane r + 64 * (n // (N/2)), column n % (N/2); M = 32 (1x4): lane r + 32 * (n // (N/4)), column
n % (N/4). Sparse cta_group::2 M = 128 is layout C, "4x1 (1/2 datapath utilized)" like layout F: each CTA's 64
rows as M = 64's (our reading of the table; no CuTe builder exists for it).

Sparse metadata (tcgen05.mma.sp, PTX 9.7.16.10.8.4, whose figures we could not read; CuTe's tmem_e_frg /
tmem_e_frg_ws, element by element in tests/test_cute_tmem.py): the nibble of chunk c of row r sits, relative to
the metadata address's column plus the sparsity selector,
  tf32, f16 (8 chunks a row): lane r % 8 + 8 * (c // 4) + 16 * (r // 16), column 0, bits 16 * ((r // 8) % 2)
  + 4 * (c % 4): one column per instruction (CuTe gives the next K block the next column, and hands an odd
  column to the hardware as the even one with selector 1; selectors 2-3 continue that pattern, unpinned);
  i8, f8f6f4, mxf8f6f4, mxf4* (16 chunks): lane r, column c // 8, bits 4 * (c % 8); the selector is 0.
  Rows per CTA: 128 (M = 128, or M = 256 with cta_group::2); .ws M = 64 and 32 hold their rows in lanes
  [0, M) and again in every further block of M lanes (the copies must agree). M = 64 without .ws and
  cta_group::2 M = 128 have no CuTe builder (tmem_e_frg asserts 128 rows): not modelled.
"""
import numpy as np

from ..core.errors import TmemError
from .instr import SELECTORS, scale_id_rule
from ..layout.smem import SUBBYTE
from ..core.validate import as_array, as_bool, as_choice, as_int, as_int_array, as_uint_bits, show

LANES, COLUMNS = 128, 512


def split_address(address, field: str = "address"):
    """(lane, column) of a tensor-memory address lane << 16 | column."""
    if isinstance(address, bool) or not isinstance(address, (int, np.integer)) or not 0 <= address < 1 << 32:
        raise TmemError(field, f"must be a 32-bit tensor-memory address (lane << 16 | column), got {show(address)}")
    lane, column = int(address) >> 16, int(address) & 0xFFFF
    if lane >= LANES or column >= COLUMNS:
        raise TmemError(field, f"{int(address):#010x} is lane {lane}, column {column}: tensor memory has "
                               f"{LANES} lanes x {COLUMNS} columns")
    return lane, column


def tmem_address(lane: int, column: int) -> int:
    lane, column = as_int(lane, "lane", 0, LANES - 1, TmemError), as_int(column, "column", 0, COLUMNS - 1, TmemError)
    return lane << 16 | column


D_TYPES = ("f32", "f16", "s32")
A_BITS = (4, 8, 16, 32)  # A packed in tensor memory: e2m1 (mxf4*), 8-bit containers, 16-bit, tf32


def _m_group(m, cta_group):
    return as_int(m, "m", 1, 256, TmemError), as_int(cta_group, "cta_group", 1, 2, TmemError)


def _n(n) -> int:
    n = as_int(n, "n", 8, 256, TmemError)
    if n % 8:
        raise TmemError("n", f"N = {n} is not a multiple of 8")
    return n


def row_lanes(m: int, cta_group: int = 1, lane_base: int = 0) -> np.ndarray:
    """The lane of each of this CTA's rows of D or A (layouts D, F and A; see the module text)."""
    m, cta_group = _m_group(m, cta_group)
    lane_base = as_int(lane_base, "lane", 0, LANES - 1, TmemError)
    if cta_group == 1 and m == 64:
        if lane_base not in (0, 16):
            raise TmemError("lane", f"M = 64 uses half the data path: its lane base is 0 or 16, not {lane_base}")
        r = np.arange(64)
        return lane_base + r % 16 + 32 * (r // 16)
    if (cta_group, m) in ((1, 128), (2, 256)):
        if lane_base:
            raise TmemError("lane", f"M = {m} fills all 128 lanes: its lane must be 0, not {lane_base}")
        return np.arange(128)
    raise TmemError("m", f"no tensor-memory layout is modelled for M = {m} with cta_group::{cta_group}")


def d_cells(m: int, n: int, cta_group: int = 1, lane_base: int = 0, *, sparse: bool = False, ws: bool = False):
    """(lanes, columns), each (rows of this CTA, N): where this CTA's part of D lives, relative to the
    D address's column. `ws`: the .ws layouts (D, E, G); `sparse` with cta_group::2 M = 128: layout C."""
    m, cta_group = _m_group(m, cta_group)
    n = _n(n)
    lane_base = as_int(lane_base, "lane", 0, LANES - 1, TmemError)
    sparse, ws = as_bool(sparse, "sparse", TmemError), as_bool(ws, "ws", TmemError)
    if ws:
        if cta_group != 1 or m not in (32, 64, 128):
            raise TmemError("m", f"no .ws tensor-memory layout for M = {m} with cta_group::{cta_group}")
        if lane_base:
            raise TmemError("lane", f".ws M = {m} starts at lane 0 (PTX 9.7.16.10.5), not {lane_base}")
        ways = 128 // m  # 1x4 (M = 32), 2x2 (M = 64), 4x1 (M = 128): N split over the lane blocks
        if n % ways:
            raise TmemError("n", f"N = {n} does not split over the {ways} lane blocks of .ws M = {m}")
        r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
        return r + m * (c // (n // ways)), c % (n // ways)
    if sparse and cta_group == 2 and m == 128:  # layout C: each CTA's 64 rows on half the data path, as layout F
        lanes = row_lanes(64, 1, lane_base)
        return np.broadcast_to(lanes[:, None], (64, n)), np.broadcast_to(np.arange(n), (64, n))
    if cta_group == 2 and m == 128:  # layout B, 2x2: N's halves in lanes 0-63 and 64-127
        if lane_base:
            raise TmemError("lane", f"M = 128 with cta_group::2 starts at lane 0, not {lane_base}")
        r, c = np.meshgrid(np.arange(64), np.arange(n), indexing="ij")
        return r + 64 * (c // (n // 2)), c % (n // 2)
    lanes = row_lanes(m, cta_group, lane_base)
    return np.broadcast_to(lanes[:, None], (lanes.size, n)), np.broadcast_to(np.arange(n), (lanes.size, n))


# Bits of the value inside an 8-bit container (mma.sync's f8f6f4 register form; PTX 9.7.14.5.14).
CONTAINER_SHIFT = {"e2m1": 2, "e2m3": 0, "e3m2": 0}


def _container(container, bits):
    if container is not None:
        as_choice(container, "container", tuple(CONTAINER_SHIFT), TmemError)
        if bits != 8:
            raise TmemError("container", f"fp4/fp6 containers are 8 bits wide, not {show(bits)}")
    return container


class TensorMemory:
    """One CTA's tensor memory; every cell starts unwritten, and reading an unwritten cell is an error."""

    def __init__(self):
        self.cells = np.zeros((LANES, COLUMNS), np.uint32)
        self.written = np.zeros((LANES, COLUMNS), bool)

    def _spots(self, address, lanes, columns, field):
        """Absolute (lanes, columns) arrays, broadcast together: lanes 0..127, columns 0..511 after adding the
        address's column (never wrapping: a negative index is an error, not the last lane)."""
        _, col0 = split_address(address, field)
        lanes = as_int_array(lanes, "lanes", 0, LANES - 1, TmemError)
        columns = as_int_array(columns, "columns", 0, COLUMNS - 1, TmemError) + col0
        if columns.size and columns.max() >= COLUMNS:
            raise TmemError(field, f"{address:#010x} with these columns runs past column {COLUMNS - 1}")
        try:
            return np.broadcast_arrays(lanes, columns)
        except ValueError:
            raise TmemError("lanes", f"lanes {lanes.shape} and columns {columns.shape} do not broadcast "
                                     "together") from None

    def read(self, address, lanes, columns, field: str = "address") -> np.ndarray:
        """Cells at (lanes, columns + the address's column); lanes are absolute (the layouts add the base)."""
        lanes, columns = self._spots(address, lanes, columns, field)
        if not self.written[lanes, columns].all():
            i = np.argwhere(~self.written[lanes, columns])[0]
            raise TmemError(field, f"reads lane {int(lanes[tuple(i)])}, column {int(columns[tuple(i)])}, "
                                   "which was never written")
        return self.cells[lanes, columns]

    def write(self, address, lanes, columns, values, field: str = "address") -> None:
        """Store `values` (32-bit patterns, broadcast to the cells' shape) at (lanes, columns + column)."""
        lanes, columns = self._spots(address, lanes, columns, field)
        values = as_uint_bits(values, 32, "values", TmemError)
        try:
            values = np.broadcast_to(values, lanes.shape)
        except ValueError:
            raise TmemError("values", f"shape {values.shape} does not match the cells {lanes.shape}") from None
        self.cells[lanes, columns] = values.astype(np.uint32)
        self.written[lanes, columns] = True

    # D: the accumulator -------------------------------------------------------------------------------
    def read_d(self, address, m: int, n: int, dtype_d: str, cta_group: int = 1, *, sparse: bool = False,
               ws: bool = False) -> np.ndarray:
        """This CTA's rows of D as raw bits (uint32; uint16 for f16, the low half of each cell)."""
        as_choice(dtype_d, "dtype_d", D_TYPES, TmemError)
        lanes, cols = d_cells(m, n, cta_group, split_address(address)[0], sparse=sparse, ws=ws)
        cells = self.read(address, lanes, cols)
        return (cells & 0xFFFF).astype(np.uint16) if dtype_d == "f16" else cells

    def write_d(self, address, bits, m: int, dtype_d: str, cta_group: int = 1, keep_lanes=None, *,
                sparse: bool = False, ws: bool = False) -> None:
        """Store this CTA's rows of D (raw bits); lanes set in `keep_lanes` (disable-output-lane) keep
        their old value."""
        as_choice(dtype_d, "dtype_d", D_TYPES, TmemError)
        bits = as_uint_bits(bits, 16 if dtype_d == "f16" else 32, "bits", TmemError, ndim=2)
        lanes, cols = d_cells(m, bits.shape[1], cta_group, split_address(address)[0], sparse=sparse, ws=ws)
        if bits.shape != lanes.shape:
            raise TmemError("bits", f"must have shape {lanes.shape} (this CTA's rows of D, N), got {bits.shape}")
        cells = bits
        if keep_lanes is not None:
            keep = as_array(keep_lanes, "keep_lanes", TmemError)
            if keep.dtype != np.bool_ or keep.shape != (LANES,):
                raise TmemError("keep_lanes", f"must be a ({LANES},) bool array, got {show(keep)}")
            write = ~keep[lanes]
            lanes, cols, cells = lanes[write], cols[write], cells[write]
        self.write(address, lanes, cols, cells)

    # A: a K-major operand -------------------------------------------------------------------------------
    def _a_cells(self, address, m, k, bits, cta_group, field="a_tmem"):
        bits = as_int(bits, "bits", 4, 32, TmemError)
        if bits not in A_BITS:
            raise TmemError("bits", f"{bits}: A sits in tensor memory 4, 8, 16 or 32 bits wide")
        m, cta_group = _m_group(m, cta_group)
        k = as_int(k, "k", 1, COLUMNS * 32 // bits, TmemError)
        # m counts this CTA's rows; row_lanes takes the instruction's M (CuTe's 2x1SM TS atoms: M = 256 puts
        # a CTA's 128 rows of A at lanes 0-127; M = 128 duplicates its 64 rows into lanes 64-127, not modelled)
        lanes = row_lanes(m * cta_group, cta_group, split_address(address, field)[0])
        per = 32 // bits
        kk = np.arange(k)
        return (np.broadcast_to(lanes[:, None], (lanes.size, k)), np.broadcast_to(kk // per, (lanes.size, k)),
                (kk % per) * bits)

    def read_a(self, address, m: int, k: int, bits: int, cta_group: int = 1, container=None) -> np.ndarray:
        """(rows, K) raw element bits of an A operand packed `bits` wide; `container` names an fp4/fp6
        type held in 8-bit containers (kind::f8f6f4 / mxf8f6f4)."""
        _container(container, bits)
        lanes, cols, shift = self._a_cells(address, m, k, bits, cta_group)
        cells = self.read(address, lanes, cols, "a_tmem").astype(np.int64)
        out = (cells >> shift) & ((1 << bits) - 1)
        if container is not None:
            out = (out >> CONTAINER_SHIFT[container]) & ((1 << SUBBYTE[container]) - 1)
        return out

    def write_a(self, address, values, bits: int, cta_group: int = 1, container=None) -> None:
        """Lay the (rows, K) raw bits of A into tensor memory where tcgen05.mma reads it (integer patterns of
        `bits`, or of the container type's width)."""
        width = SUBBYTE[_container(container, bits)] if container is not None else bits
        values = as_uint_bits(values, as_int(width, "bits", 4, 32, TmemError), "values", TmemError, ndim=2)
        lanes, cols, shift = self._a_cells(address, values.shape[0], values.shape[1], bits, cta_group,
                                            "address")
        if container is not None:
            values = values << CONTAINER_SHIFT[container]
        packed = np.zeros((LANES, cols.max() + 1), np.int64)
        np.bitwise_or.at(packed, (lanes, cols), (values & ((1 << bits) - 1)) << shift)
        self.write(address, lanes[:, ::32 // bits], cols[:, ::32 // bits], packed[lanes, cols][:, ::32 // bits])

    # Block scales ---------------------------------------------------------------------------------------
    @staticmethod
    def _sf_cells(rows, nsf, sf_id):
        """(lanes (rows, 1), columns (rows, nsf), bit shifts (nsf,)) of factor j of each row: byte sf_id + j of the
        row's byte stream, which runs on (K = 96) R / 32 columns further per 4 bytes (module text)."""
        r = np.arange(rows)
        b = sf_id + np.arange(nsf)
        wrap = (128 if rows <= 128 else 256) // 32
        return (r % 32)[:, None], (r // 32)[:, None] + wrap * (b // 4)[None, :], (b % 4) * 8

    def read_scales(self, address, rows: int, nsf: int, sf_id: int, field: str = "scale") -> np.ndarray:
        """(rows, nsf) uint8 scale factors; all four sub-partitions must hold the same copy (PTX 9.7.16.10.7)."""
        lane0, _ = split_address(address, field)
        rows, nsf = as_int(rows, "rows", 1, 2 * LANES, TmemError), as_int(nsf, "nsf", 1, 6, TmemError)
        sf_id = as_int(sf_id, "sf_id", 0, 3, TmemError)
        if lane0:
            raise TmemError(field, f"scale factors start at lane 0 (they fill every sub-partition), not {lane0}")
        rule = scale_id_rule(nsf, sf_id)  # nsf is the reading instruction's .scale_vec size
        if rule:
            raise TmemError("sf_id", rule)
        lanes, cols, shift = self._sf_cells(rows, nsf, sf_id)
        copies = [self.read(address, lanes + 32 * q, cols, field) for q in range(4)]
        for q in range(1, 4):
            if not np.array_equal(copies[q], copies[0]):
                r = int(np.argwhere(copies[q] != copies[0])[0][0])
                raise TmemError(field, f"row {r}: sub-partition {q} (lane {r % 32 + 32 * q}) differs from lane "
                                       f"{r % 32}; scale factors must be duplicated into all four sub-partitions")
        return ((copies[0].astype(np.int64) >> shift[None, :]) & 0xFF).astype(np.uint8)

    def write_scales(self, address, scales, sf_id: int = 0, *, k96: bool = False) -> None:
        """Store (rows, nsf) scale-factor bytes, duplicated into all four sub-partitions (as tcgen05.cp
        .32x128b.warpx4 does). sf_id (0..3, the 2-bit field) is the byte of the cell the first factor goes to.
        `k96` (sm_103a): bytes past the cell's last run on into later columns (module text), as K = 96's 3 or 6
        factors a row do."""
        scales = as_uint_bits(scales, 8, "scales", TmemError, ndim=2)
        rows, nsf = scales.shape
        sf_id = as_int(sf_id, "sf_id", 0, 3, TmemError)
        k96 = as_bool(k96, "k96", TmemError)
        most = 6 if k96 else 4  # K = 96: 3 (.block32) or 6 (.block16) factors a row
        if not 1 <= rows <= 2 * LANES or not 1 <= nsf <= most:  # rows: M or N, up to 256
            raise TmemError("scales", f"must be (rows 1..{2 * LANES}, factors 1..{most}) bytes, got shape "
                                      f"{scales.shape}")
        if sf_id + nsf > 4 and not k96:  # a store may fill any bytes of the cell (PTX 9.7.16.10.7.2-3)
            raise TmemError("sf_id", f"{nsf} scale byte(s) per row from byte {sf_id} do not fit the 32-bit tensor-memory "
                                     "cell (4 bytes: byte ids 0-3); an instruction then reads 1 at any byte "
                                     "(.scale_vec::1X), 2 at byte 0 or 2 (2X) or 4 at byte 0 (4X); K = 96's runs "
                                     "past the cell take k96=True")
        lanes, cols, shift = self._sf_cells(rows, nsf, sf_id)
        _, col0 = split_address(address, "scale")
        for q in range(4):
            for j in range(nsf):
                ll, cc = lanes[:, 0] + 32 * q, cols[:, j]
                old = np.where(self.written[ll, cc + col0], self.cells[ll, cc + col0], 0).astype(np.int64)
                cell = (old & ~np.int64(0xFF << int(shift[j]))) | ((scales[:, j] & 0xFF) << shift[j])
                self.write(address, ll, cc, cell)

    # Sparse metadata (tcgen05.mma.sp) ---------------------------------------------------------------------
    def read_sparse_meta(self, address, kind: str, rows: int, *, selector: int = 0, ws: bool = False) -> np.ndarray:
        """(rows, chunks) uint8 metadata nibbles of this CTA's rows of A (module text); .ws copies must agree."""
        lanes, cols, shift = meta_cells(kind, rows, selector=selector, ws=ws, address=address)
        copies = [self.read(address, ll, cols, "sparse_meta") for ll in lanes]
        for q in range(1, len(copies)):
            if not np.array_equal(copies[q], copies[0]):
                r, c = np.argwhere(copies[q] != copies[0])[0]
                raise TmemError("sparse_meta", f"row {r} chunk {c}: copy {q} (lane {int(lanes[q][r, c])}) differs from "
                                               f"lane {int(lanes[0][r, c])}; .ws M = {rows} reads its metadata from "
                                               f"every block of {rows} lanes (CuTe's tmem_e_frg_ws duplicates it)")
        return ((copies[0].astype(np.int64) >> shift) & 0xF).astype(np.uint8)

    def write_sparse_meta(self, address, nibbles, kind: str, *, selector: int = 0, ws: bool = False) -> None:
        """Lay (rows, chunks) metadata nibbles where tcgen05.mma.sp reads them (every .ws copy)."""
        nib = np.asarray(nibbles)
        if nib.ndim != 2 or nib.dtype.kind not in "iu" or (nib.size and (nib.min() < 0 or nib.max() > 15)):
            raise TmemError("nibbles", f"must be a (rows, chunks) array of 4-bit values, got {nib.dtype} {nib.shape}")
        lanes, cols, shift = meta_cells(kind, nib.shape[0], selector=selector, ws=ws, address=address)
        if nib.shape != cols.shape:
            raise TmemError("nibbles", f".kind::{kind} metadata is {cols.shape} (rows, chunks), got {nib.shape}")
        _, col0 = split_address(address, "sparse_meta")
        for ll in lanes:
            self._spots(address, ll, cols, "sparse_meta")  # bounds
            spots = (ll.ravel(), (cols + col0).ravel())
            clear, put = np.zeros((LANES, COLUMNS), np.int64), np.zeros((LANES, COLUMNS), np.int64)
            np.bitwise_or.at(clear, spots, (np.int64(0xF) << shift).ravel())  # several nibbles share a cell
            np.bitwise_or.at(put, spots, (nib.astype(np.int64) << shift).ravel())
            base = np.where(self.written[spots], self.cells[spots], 0).astype(np.int64)
            self.cells[spots] = ((base & ~clear[spots]) | put[spots]).astype(np.uint32)
            self.written[spots] = True


META_16BIT = ("tf32", "f16")  # one column per instruction, two rows' nibbles per lane (module text)


def meta_cells(kind: str, rows: int, *, selector: int = 0, ws: bool = False, address=None):
    """(lanes: list of (rows, chunks) arrays, one per copy; columns (rows, chunks) relative to the address; bit
    shifts (rows, chunks)) of the sparse metadata nibble of chunk c of row r (module text)."""
    if kind not in SELECTORS:
        raise TmemError("kind", f"{show(kind)} is not a tcgen05 kind")
    if isinstance(selector, bool) or selector not in SELECTORS[kind]:
        raise TmemError("sparsity_selector", f"{show(selector)}: .kind::{kind} takes {SELECTORS[kind]} (PTX 9.7.16.10.8.4)")
    if ws:
        if rows not in (32, 64, 128):
            raise TmemError("m", f".ws sparse metadata holds M = 32, 64 or 128 rows, not {rows}")
    elif rows != 128:
        raise TmemError("m", f"sparse metadata in tensor memory is modelled for 128 rows a CTA (M = 128, or M = 256 "
                             f"with cta_group::2; CuTe's tmem_e_frg asserts it), not {rows}: pass the metadata as an "
                             "array of nibbles (sparse_meta=...)")
    if address is not None and split_address(address, "sparse_meta")[0]:
        raise TmemError("sparse_meta", f"{int(address):#010x} names lane {int(address) >> 16}: the metadata maps "
                                       "(CuTe's tmem_e_frg / tmem_e_frg_ws) start at lane 0 and fill the lanes they "
                                       "name; another lane base is not modelled")
    if address is not None and selector and split_address(address, "sparse_meta")[1] % 2:
        raise TmemError("sparse_meta", "an odd metadata column with a nonzero selector: CuTe hands the hardware an even "
                                       "column and carries its low bit in the selector, so what an odd column plus a "
                                       "selector reads is not pinned")
    r = np.arange(rows)[:, None]
    if kind in META_16BIT:
        c = np.arange(8)[None, :]
        lane = r % 8 + 8 * (c // 4) + 16 * (r // 16)
        col = np.zeros_like(lane) + selector
        shift = 16 * ((r // 8) % 2) + 4 * (c % 4)
    else:
        c = np.arange(16)[None, :]
        lane = r + 0 * c
        col = c // 8 + 0 * r
        shift = 4 * (c % 8) + 0 * r
    return [lane + rows * q for q in range(128 // rows if ws else 1)], col, shift
