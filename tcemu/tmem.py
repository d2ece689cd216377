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
  duplicated into all four), column r // 32, byte sf_id + j of the cell.
"""
import numpy as np

from .errors import TmemError
from .instr import scale_id_rule
from .smem import SUBBYTE
from .validate import as_array, as_choice, as_int, as_int_array, as_uint_bits, show

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


def d_cells(m: int, n: int, cta_group: int = 1, lane_base: int = 0):
    """(lanes, columns), each (rows of this CTA, N): where this CTA's part of D lives, relative to the
    D address's column."""
    m, cta_group = _m_group(m, cta_group)
    n = _n(n)
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
    def read_d(self, address, m: int, n: int, dtype_d: str, cta_group: int = 1) -> np.ndarray:
        """This CTA's rows of D as raw bits (uint32; uint16 for f16, the low half of each cell)."""
        as_choice(dtype_d, "dtype_d", D_TYPES, TmemError)
        lanes, cols = d_cells(m, n, cta_group, split_address(address)[0])
        cells = self.read(address, lanes, cols)
        return (cells & 0xFFFF).astype(np.uint16) if dtype_d == "f16" else cells

    def write_d(self, address, bits, m: int, dtype_d: str, cta_group: int = 1, keep_lanes=None) -> None:
        """Store this CTA's rows of D (raw bits); lanes set in `keep_lanes` (disable-output-lane) keep
        their old value."""
        as_choice(dtype_d, "dtype_d", D_TYPES, TmemError)
        bits = as_uint_bits(bits, 16 if dtype_d == "f16" else 32, "bits", TmemError, ndim=2)
        lanes, cols = d_cells(m, bits.shape[1], cta_group, split_address(address)[0])
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
    def _a_cells(self, address, m, k, bits, cta_group):
        bits = as_int(bits, "bits", 4, 32, TmemError)
        if bits not in A_BITS:
            raise TmemError("bits", f"{bits}: A sits in tensor memory 4, 8, 16 or 32 bits wide")
        m, cta_group = _m_group(m, cta_group)
        k = as_int(k, "k", 1, COLUMNS * 32 // bits, TmemError)
        # m counts this CTA's rows; row_lanes takes the instruction's M (CuTe's 2x1SM TS atoms: M = 256 puts
        # a CTA's 128 rows of A at lanes 0-127; M = 128 duplicates its 64 rows into lanes 64-127, not modelled)
        lanes = row_lanes(m * cta_group, cta_group, split_address(address, "a_tmem")[0])
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
        lanes, cols, shift = self._a_cells(address, values.shape[0], values.shape[1], bits, cta_group)
        if container is not None:
            values = values << CONTAINER_SHIFT[container]
        packed = np.zeros((LANES, cols.max() + 1), np.int64)
        np.bitwise_or.at(packed, (lanes, cols), (values & ((1 << bits) - 1)) << shift)
        self.write(address, lanes[:, ::32 // bits], cols[:, ::32 // bits], packed[lanes, cols][:, ::32 // bits])

    # Block scales ---------------------------------------------------------------------------------------
    @staticmethod
    def _sf_cells(rows, nsf, sf_id):
        r = np.arange(rows)
        return r % 32, r // 32, (sf_id + np.arange(nsf)) * 8

    def read_scales(self, address, rows: int, nsf: int, sf_id: int, field: str = "scale") -> np.ndarray:
        """(rows, nsf) uint8 scale factors; all four sub-partitions must hold the same copy (PTX 9.7.16.10.7)."""
        lane0, _ = split_address(address, field)
        rows, nsf = as_int(rows, "rows", 1, 2 * LANES, TmemError), as_int(nsf, "nsf", 1, 4, TmemError)
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
                r = int(np.argmax(copies[q] != copies[0]))
                raise TmemError(field, f"row {r}: sub-partition {q} (lane {r % 32 + 32 * q}) differs from lane "
                                       f"{r % 32}; scale factors must be duplicated into all four sub-partitions")
        return ((copies[0][:, None].astype(np.int64) >> shift[None, :]) & 0xFF).astype(np.uint8)

    def write_scales(self, address, scales, sf_id: int = 0) -> None:
        """Store (rows, nsf) scale-factor bytes, duplicated into all four sub-partitions (as tcgen05.cp
        .32x128b.warpx4 does). sf_id (0..3, the 2-bit field) is the byte of the cell the first factor goes to."""
        scales = as_uint_bits(scales, 8, "scales", TmemError, ndim=2)
        rows, nsf = scales.shape
        sf_id = as_int(sf_id, "sf_id", 0, 3, TmemError)
        if not 1 <= rows <= 2 * LANES or not 1 <= nsf <= 4:  # rows: M or N, up to 256
            raise TmemError("scales", f"must be (rows 1..{2 * LANES}, factors 1..4) bytes, got shape {scales.shape}")
        if sf_id + nsf > 4:  # a store may fill any bytes of the cell (PTX 9.7.16.10.7.2-3)
            raise TmemError("sf_id", f"{nsf} scale byte(s) per row from byte {sf_id} do not fit the 32-bit tensor-memory "
                                     "cell (4 bytes: byte ids 0-3); an instruction then reads 1 at any byte "
                                     "(.scale_vec::1X), 2 at byte 0 or 2 (2X) or 4 at byte 0 (4X)")
        lanes, cols, shift = self._sf_cells(rows, nsf, sf_id)
        _, col0 = split_address(address, "scale")
        mask = np.int64(sum(0xFF << int(s) for s in shift))
        for q in range(4):
            old = np.where(self.written[lanes + 32 * q, cols + col0], self.cells[lanes + 32 * q, cols + col0], 0)
            cell = old.astype(np.int64) & ~mask
            for j in range(nsf):
                cell |= (scales[:, j] & 0xFF) << shift[j]
            self.write(address, lanes + 32 * q, cols, cell)
