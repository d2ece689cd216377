"""Peer oracle: CuTe's tensor-memory fragments (nvidia-cutlass headers, host-compiled with nvcc) vs tcemu/blackwell/tmem.py.

tests/support/cute_oracle/tmem_oracle.cu only #includes CuTe and calls it: D and A through CuTe's MMA path
(make_tiled_mma(op) -> partition_shape_C/A -> make_tensor<FrgTypeC/A>, i.e. UMMA::tmem_frg_1sm / tmem_frg_2sm),
the scale factors through UMMA::tmem_sf_frg (the block-scaled traits' FrgTypeSFA/SFB). For every element it
prints the lane, column and sub-word CuTe's tmem_ptr gives it. Built once and cached (tests/support/cute.py).

Covered (every element compared, exactly):
  D, cta_group::1 (F16BF16_SS, Interleaved): M = 64 / 128 x N = 8 / 64 / 256, f32 and f16 accumulators;
    two M = 64 atoms stacked in M (the second at lane base 16).
  D, cta_group::2 (F16BF16_2x1SM_SS, per CTA): M = 256 / 128 x N = 64 / 256, f32 and f16.
  A in tensor memory (TS atoms, NonInterleaved), two MMAs deep in K, with the D of the same atom:
    tf32 (TF32_TS), f16 (F16BF16_TS), u8 (S8_TS) at M = 128 and 64; two M = 64 F16BF16_TS atoms stacked
    (NonInterleaved: the second at lane 0, next columns); cta_group::2 F16BF16_2x1SM_TS at M = 256.
    Packed e2m1 (8 per column) from tmem_frg_1sm alone: CuTe has no TS atom for kind::mxf4* (no
    SM100_MMA_MXF4_TS), so that map is CuTe's builder, not an instruction CuTe issues.
  Scale factors (ScaleFactorDuplicated4by1), K = 64: 16-element blocks (ue4m3, 4 per row) and 32-element
    blocks (ue8m0, 2 per row), SFA M = 128, SFB N = 128 / 256; sf_id 2 (2 per row) and 1-3 (1 per row, K = 32);
    the 4x1 maps of cta_group::2 (SFA 128 and 64 rows, SFB 256), whose address math is the same
    (tcemu's tcgen05_mma still refuses tensor-memory scales with cta_group::2).

Not compared with tcemu (tcemu does not model them; checked against CuTe's formula only):
  A of F16BF16_2x1SM_TS at M = 128 (TmemAllocMode::Duplicated: a CTA's 64 rows at lanes r and r + 64;
  tcemu raises), and SFB of the cta_group::2 M = 128 (2x2) data path (ScaleFactorDuplicated2by2).
Sparse metadata (tcgen05.mma.sp): UMMA::tmem_e_frg (M = 128, f16 / tf32 / 8-bit / fp4, two MMAs deep in K) and
  tmem_e_frg_ws (.ws M = 128 / 64 / 32 with their duplicated copies) against tmem.meta_cells, every element's
  lane, column and bit; D of .ws (tmem_frg_ws, layouts D / E / G) against d_cells(ws=True); the scale factors of
  sm103's K = 96 MMAs as CuTe's sm103 mainloop iterates them (tmem_sf_frg, one factor per K step, MMA j from
  factor 3j or 6j) against TensorMemory._sf_cells's runs past byte 3.
Left out: M = 32 2-SM atoms.

Convention converted here: CuTe's tmem_ptr is lane << 16 | column like PTX's address, but tmem_ptr::operator+
rotates a sub-word element offset into the top byte (rotr(offset, log2(32 / bits)), its "idx_" field), so the
sub-word index is idx_ >> (8 - shift). tcemu gives (lanes, columns relative to the address, bit shift).
"""
import json

import numpy as np
import pytest

from tcemu import TmemError
from tcemu.blackwell.tmem import TensorMemory, d_cells, meta_cells, tmem_address

import cute


# host-compiled with nvcc; the first build takes CPU-minutes (tests/support/cute.py caches it)
pytestmark = [pytest.mark.needs_nvcc, pytest.mark.slow]

@pytest.fixture(scope="session")
def tmem_oracle():
    [exe] = cute.binaries(["tmem_oracle"])   # the flags of umma_oracle: CuTe's host-device code as plain host C++
    out, _ = cute.run(exe, timeout=120)
    recs = [json.loads(line) for line in out]
    for r in recs:
        if r["rec"] == "e":  # sparse metadata: (tile, copy, row, k)
            shape = (r["tiles"], r["copies"], r["m"], r["k"])
            r["lane"], r["col"] = (np.asarray(r[f], np.int64).reshape(shape) for f in ("lane", "col"))
            idx = np.asarray(r.pop("idx"), np.int64).reshape(shape)
            r["sub"], r["idx_low"] = idx >> (8 - r["shift"]), idx & ((1 << (8 - r["shift"])) - 1)
        elif r["rec"] in ("d", "a", "sf", "dws", "sf103"):
            shape = (r["tiles"][1], r["tiles"][0], r["rows"], r["cols"])  # (t2, t1, i, k)
            r["lane"], r["col"] = (np.asarray(r[f], np.int64).reshape(shape) for f in ("lane", "col"))
            idx = np.asarray(r.pop("idx"), np.int64).reshape(shape)
            r["sub"] = idx >> (8 - r["shift"]) if r["shift"] else idx
            r["idx_low"] = idx & ((1 << (8 - r["shift"])) - 1)  # must be 0: only the sub-word lives there
    return recs


def _of(recs, kind):
    return [r for r in recs if r["rec"] == kind]


def _name(r):
    return " ".join(f"{k}={r[k]}" for k in ("op", "which", "n_sm", "m", "n", "mn", "vs", "nsf", "sf_id", "dtype",
                                             "mode", "tiles") if k in r)


def _compare(r, t, want_lane, want_col, want_sub, failures):
    """Tile t = (t2, t1) of record r against tcemu's (lane, column, sub-word), every element."""
    got = (r["lane"][t], r["col"][t], r["sub"][t])
    for what, g, w in zip(("lane", "column", "sub-word"), got, (want_lane, want_col, want_sub)):
        bad = np.argwhere(np.broadcast_to(w, g.shape) != g)
        if len(bad):
            i, k = bad[0]
            failures.append(f"{_name(r)} tile {t}: {len(bad)} {what}s differ, first (i={i}, k={k}): "
                            f"CuTe {int(g[i, k])} tcemu {int(np.broadcast_to(w, g.shape)[i, k])}")
    return g.size


def _tiles(r):
    return [(b, a) for b in range(r["tiles"][1]) for a in range(r["tiles"][0])]


# ---------------------------------------------------------------------------------------------
# Oracle-only checks
# ---------------------------------------------------------------------------------------------
def test_oracle_output_is_complete(tmem_oracle):
    kinds = [r["rec"] for r in tmem_oracle]
    assert kinds[0] == "meta" and kinds[-1] == "end"
    assert len(_of(tmem_oracle, "d")) == 31 and len(_of(tmem_oracle, "a")) == 10 and len(_of(tmem_oracle, "sf")) == 22
    assert len(_of(tmem_oracle, "e")) == 11 and len(_of(tmem_oracle, "dws")) == 6 and len(_of(tmem_oracle, "sf103")) == 5
    for r in tmem_oracle[1:-1]:
        assert not r["idx_low"].any(), _name(r)
        # CuTe's per-CTA partition: 2-SM atoms hand each CTA M / 2 rows of D
        if r["rec"] == "d":
            assert (r["rows"], r["cols"]) == (r["m"] // r["n_sm"], r["n"]), _name(r)


def test_tile_bases(tmem_oracle):
    """Where CuTe puts the second of two stacked M = 64 atoms: Interleaved (SS atoms) at lane base 16, which is
    tcemu's lane_base = 16; NonInterleaved (TS atoms, for A/D lane equality) at lane 0 of the next columns."""
    stacked = [r for r in tmem_oracle if r["rec"] in ("d", "a") and r["tiles"][0] == 2]
    assert len(stacked) == 4
    for r in stacked:
        base = (int(r["lane"][0, 1, 0, 0]), int(r["col"][0, 1, 0, 0]))
        per = 32 // r.get("bits", 32) if r["rec"] == "a" else 1
        assert base == ((16, 0) if r["op"].endswith("_SS") else (0, r["cols"] // per)), _name(r)


# ---------------------------------------------------------------------------------------------
# tcemu against CuTe
# ---------------------------------------------------------------------------------------------
def test_d_matches_cute(tmem_oracle):
    """d_cells(M, N, cta_group, lane_base) for every element of D; f16 D unpacked (sub-word 0, one per cell)."""
    failures, checked = [], 0
    for r in _of(tmem_oracle, "d"):
        for t in _tiles(r):
            lane0, col0 = int(r["lane"][t][0, 0]), int(r["col"][t][0, 0])  # the tile's D address
            lanes, cols = d_cells(r["m"], r["n"], r["n_sm"], lane0)
            checked += _compare(r, t, lanes, cols + col0, 0, failures)
    assert not failures, "\n".join(failures[:12])
    assert checked == 322_560


def test_a_matches_cute(tmem_oracle):
    """TensorMemory._a_cells (what read_a / write_a use): K-major, packed from the low bits, in D's lanes."""
    failures, checked = [], 0
    ds = {(r["op"], r["m"], r["n"], r["tiles"][0]): r for r in _of(tmem_oracle, "d")}
    for r in _of(tmem_oracle, "a"):
        if r["n_sm"] == 2 and r["m"] == 128:
            continue  # Duplicated: test_a_2x2_duplicated
        rows = r["rows"]
        for t in _tiles(r):
            lane0, col0 = int(r["lane"][t][0, 0]), int(r["col"][t][0, 0])
            lanes, cols, shift = TensorMemory()._a_cells(tmem_address(lane0, col0), rows, r["cols"], r["bits"],
                                                         r["n_sm"])
            checked += _compare(r, t, lanes, cols + col0, shift // r["bits"], failures)
        d = ds.get((r["op"], r["m"], r["n"], r["tiles"][0]))
        if d is not None:  # the TS atom's D: row r of A in the lane of row r of D (CuTe's NonInterleaved)
            for a in range(d["tiles"][0]):
                assert np.array_equal(d["lane"][0, a][:, 0], r["lane"][0, a][:, 0]), _name(r)
    assert not failures, "\n".join(failures[:12])
    assert checked == 35_840


def test_a_2x2_duplicated(tmem_oracle):
    """cta_group::2, M = 128 (F16BF16_2x1SM_TS, TmemAllocMode::Duplicated): CuTe's A fragment has 128 rows for
    the CTA's 64: row r at lane r and again at lane r + 64, same columns. tcemu does not model it and says so."""
    (r,) = [r for r in _of(tmem_oracle, "a") if r["n_sm"] == 2 and r["m"] == 128]
    assert r["rows"] == 128
    for t in _tiles(r):
        lane, col, sub = r["lane"][t], r["col"][t], r["sub"][t]
        k = np.arange(r["cols"])
        assert np.array_equal(lane, np.broadcast_to(np.arange(128)[:, None], lane.shape))
        assert np.array_equal(col[:64], col[64:]) and np.array_equal(sub[:64], sub[64:])
        assert np.array_equal(col[0] - col[0, 0], k // 2) and np.array_equal(sub[0], k % 2)
    with pytest.raises(TmemError, match="M = 128 with cta_group::2"):
        TensorMemory()._a_cells(0, 64, 16, 16, 2)


def test_scales_match_cute(tmem_oracle):
    """TensorMemory._sf_cells: factor j = k // VS of row r in lane r % 32 (+ 32 q for the copy in sub-partition
    q), column r // 32, byte sf_id + j. CuTe's element index i of the first mode is r + MN * q."""
    failures, checked = [], 0
    for r in _of(tmem_oracle, "sf"):
        if r["mode"] != "4x1":
            continue
        mn, vs = r["mn"], r["vs"]
        lanes, cols, shift = TensorMemory._sf_cells(mn, r["nsf"], r["sf_id"])
        q, row = np.divmod(np.arange(4 * mn), mn)
        j = np.arange(r["cols"]) // vs
        want_lane = (lanes[row, 0] + 32 * q)[:, None]
        want_col = cols[row][:, j] + int(r["col"][0, 0, 0, 0])
        want_sub = (shift // 8)[j][None, :]
        checked += _compare(r, (0, 0), want_lane, want_col, want_sub, failures)
    assert not failures, "\n".join(failures[:12])
    assert checked == 688_128


def test_sfb_2x2_data_path(tmem_oracle):
    """SFB of cta_group::2 M = 128 (ScaleFactorDuplicated2by2), CuTe only: column n < N/2 in lanes n % 32 + {0, 32},
    n >= N/2 in lanes 64 + n % 32 + {0, 32}, column (n % (N/2)) // 32. tcemu has no such map (tcgen05_mma
    refuses tensor-memory scales with cta_group::2)."""
    recs = [r for r in _of(tmem_oracle, "sf") if r["mode"] == "2x2"]
    assert len(recs) == 2
    for r in recs:
        mn, half = r["mn"], r["mn"] // 2
        q, n = np.divmod(np.arange(2 * mn), mn)
        want_lane = n % 32 + 64 * (n // half) + 32 * q
        want_col = (n % half) // 32
        assert np.array_equal(r["lane"][0, 0], np.broadcast_to(want_lane[:, None], (2 * mn, r["cols"])))
        assert np.array_equal(r["col"][0, 0], np.broadcast_to(want_col[:, None], (2 * mn, r["cols"])))
        assert np.array_equal(r["sub"][0, 0][0], np.arange(r["cols"]) // r["vs"])


# ---------------------------------------------------------------------------------------------
# tcgen05.mma.sp metadata, .ws D, sm103 K = 96 scale factors
# ---------------------------------------------------------------------------------------------
CHUNK_OF = {"f16": 4, "tf32": 2, "i8": 4, "mxf4": 8}


def test_sparse_metadata_matches_cute(tmem_oracle):
    """tmem.meta_cells against CuTe's tmem_e_frg / tmem_e_frg_ws, every logical element of A: element k of chunk
    c = k // w sits in its chunk's lane and column, at bit shift + (k % w) * 4 / w (a nibble per chunk). CuTe gives
    the next MMA's metadata the next column (tf32 / f16) or the next two (8-bit, fp4): the base tcemu's
    selector reading (column + selector) rests on, with CuTe handing an odd column over as selector 1."""
    failures, checked = [], 0
    for r in _of(tmem_oracle, "e"):
        assert not r["idx_low"].any(), _name(r)
        kind, m, k, w = r["kind"], r["m"], r["k"], CHUNK_OF[r["kind"]]
        lanes, cols, shift = meta_cells(kind, m, ws=bool(r["ws"]))
        assert len(lanes) == r["copies"], _name(r)
        unit = {5: 1, 4: 2, 6: 0.5}[r["shift"]]  # bits per sub-word index: 1 (f16, 8-bit), 2 (tf32), 1/2 (fp4)
        kk = np.arange(k)
        col0 = int(r["col"][0, 0, 0, 0])
        for t in range(r["tiles"]):
            step = t * (1 if kind in ("f16", "tf32") else 2)
            for q in range(r["copies"]):
                want = (lanes[q][:, kk // w], cols[:, kk // w] + col0 + step, shift[:, kk // w] + (kk % w) * 4 / w)
                got = (r["lane"][t, q], r["col"][t, q], r["sub"][t, q] * unit)
                for what, g, wnt in zip(("lane", "column", "bit"), got, want):
                    bad = np.argwhere(g != wnt)
                    if len(bad):
                        i, j = bad[0]
                        failures.append(f"e {kind} ws={r['ws']} M={m} tile {t} copy {q}: {len(bad)} {what}s differ, "
                                        f"first (row {i}, k {j}): CuTe {g[i, j]} tcemu {wnt[i, j]}")
                checked += g.size
    assert not failures, "\n".join(failures[:12])
    # non-.ws: two tiles of 128 rows; .ws: one tile, M rows in 128 / M copies
    assert checked == 2 * 128 * (32 + 16 + 64 + 128) + 128 * (32 + 32 + 32 + 16 + 16 + 64 + 64)


def test_ws_d_matches_cute(tmem_oracle):
    """d_cells(M, N, ws=True): layout D (M = 128), E (M = 64: N's halves in lanes 0-63 / 64-127), G (M = 32: N's
    quarters in the four sub-partitions), against CuTe's tmem_frg_ws."""
    failures, checked = [], 0
    for r in _of(tmem_oracle, "dws"):
        lane0, col0 = int(r["lane"][0, 0][0, 0]), int(r["col"][0, 0][0, 0])
        lanes, cols = d_cells(r["m"], r["n"], 1, lane0, ws=True)
        checked += _compare(r, (0, 0), lanes, cols + col0, 0, failures)
    assert not failures, "\n".join(failures[:12])
    assert checked == 128 * 64 + 128 * 256 + 64 * 64 + 64 * 256 + 32 * 64 + 32 * 128


def test_sm103_k96_scales_match_cute(tmem_oracle):
    """K = 96: MMA j reads factors 3j .. 3j + 2 (.block32) or 6j .. 6j + 5 (.block16) of CuTe's factor stream. Its
    address is CuTe's for factor 3j (6j) with the byte in the scale-factor id, as CuTe's sm103 mainloop issues it;
    TensorMemory._sf_cells(rows, 3 or 6, id) must then name CuTe's lane, column and byte of every factor of
    every row and sub-partition copy, the runs past byte 3 included (ids 1-3, N > 128 with 8 columns a run)."""
    failures, checked, ids = [], 0, set()
    for r in _of(tmem_oracle, "sf103"):
        mn, nsf = r["mn"], 96 // r["vs"]
        lane, col, sub = r["lane"][:, 0], r["col"][:, 0], r["sub"][:, 0]  # (factor s, i = row + MN * copy, k)
        for j in range(r["nk"] // nsf):
            s0 = j * nsf
            col0, sf_id = int(col[s0, 0, 0]), int(sub[s0, 0, 0])
            ids.add(sf_id)
            lanes, cols, shift = TensorMemory._sf_cells(mn, nsf, sf_id)
            q, row = np.divmod(np.arange(4 * mn), mn)
            for i in range(nsf):
                want = ((lanes[row, 0] + 32 * q), cols[row, i] + col0, shift[i] // 8)
                got = (lane[s0 + i, :, 0], col[s0 + i, :, 0], sub[s0 + i, :, 0])
                for what, g, wnt in zip(("lane", "column", "byte"), got, want):
                    if not np.array_equal(g, np.broadcast_to(wnt, g.shape)):
                        failures.append(f"sf103 {r['which']} MN={mn} VS={r['vs']} MMA {j} factor {i}: {what}s differ")
                checked += g.size
    assert not failures, "\n".join(failures[:12])
    assert ids == {0, 1, 2, 3} and checked == 4 * (2 * 128 * 12 + 256 * 12 + 128 * 24 + 256 * 24)
