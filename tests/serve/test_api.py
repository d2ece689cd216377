"""tcemu serve's JSON API: each view's data equals tcemu's own models (or a hand-derived value), every bad field
is a 400 naming it, and the HTTP layer is bounded and loopback-only."""
import http.client
import json
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tcemu
from tcemu.layout.banks import bank_conflicts
from tcemu.cli import main
from tcemu.tools.explain import explain, lint
from tcemu.blackwell.instr import InstrDescriptor
from tcemu.serve import api, ptxrun
from tcemu.serve.server import API_FIELDS, call, make_server, static_files
from tcemu.layout.smem import SharedMemory
from tcemu.layout.tma import tma_load
from tcemu.blackwell.tmem import TensorMemory
from ptxkit import entry

DESC = "0x4000004000010040"  # README: start 0x400, LBO 16, SBO 1024, 128B swizzle


def err(view, fields):
    status, body = call(view, fields)
    assert status == 400, body
    assert "Traceback" not in json.dumps(body)
    return body["error"]


# ---- descriptor ---------------------------------------------------------------------------------------------

def test_descriptor_map_is_operand_addresses():
    d = api.descriptor_view({"descriptor": DESC})
    desc = tcemu.GmmaDescriptor.decode(int(DESC, 16))
    assert (d["rows"], d["k"], d["dtype"], d["major"]) == (64, 16, "bf16", "K")   # wgmma bf16 reads K = 16
    assert d["addresses"] == tcemu.operand_addresses(desc, rows=64, k=16, dtype="bf16").tolist()
    assert d["core_matrix_rows"] == tcemu.core_matrix_rows(desc, rows=64, k=16, dtype="bf16").tolist()
    assert d["explain"] == explain(int(DESC, 16))
    assert d["findings"] == []
    # hand-derived: row 1 sits on line 0x480 with its two 16-byte chunks swapped (128B: chunk ^= line % 8)
    assert d["addresses"][1][0] == 0x490 and d["addresses"][1][8] == 0x480
    assert d["fields"] == {"start_address": 0x400, "lbo": 16, "sbo": 1024, "base_offset": 0, "swizzle": "128B",
                           "reserved_bits": 0}
    assert d["command"] == f"tcemu explain {DESC} --dtype bf16 --major K --rows 64"


def test_descriptor_findings_are_the_lints():
    # a nonzero base offset, and SBO written in bytes without the >> 4 (16x the dense 1024): lint names the
    # base offset; the large SBO reads a legal resident tile, so only a writer or a tile= makes it a finding
    value = tcemu.GmmaDescriptor(0x400, 16, 0x4000, 2, "128B").encode()
    d = api.descriptor_view({"descriptor": hex(value), "rows": "16"})
    expected = lint(value, dtype="bf16", rows=16)
    assert d["findings"] == [{"severity": f.severity, "field": f.field, "rule": f.rule} for f in expected]
    assert {f["field"] for f in d["findings"]} == {"base_offset"}


def test_descriptor_fields_input_encodes_like_the_model():
    d = api.descriptor_view({"input": "fields", "start_address": "0x400", "lbo": "16", "sbo": "0x400",
                             "base_offset": "0", "swizzle": "128B", "dtype": "f16", "major": "MN", "rows": "64"})
    assert d["descriptor"] == DESC
    assert d["addresses"] == tcemu.operand_addresses(int(DESC, 16), rows=64, k=16, dtype="f16", major="MN").tolist()
    u = api.descriptor_view({"arch": "sm100", "input": "fields", "start_address": 1024, "lbo": 16, "sbo": 1024,
                             "swizzle": "128B", "version": 1, "dtype": "e4m3"})
    assert int(u["descriptor"], 16) == tcemu.UmmaDescriptor(0x400, 16, 1024, 0, "128B", version=1).encode()
    assert u["k"] == 32  # tcgen05 reads 32 bytes of K


def test_descriptor_with_an_instruction_descriptor():
    # README: tcemu explain 0x4000404000010040 --instr 0x8400490 --kind f16 (bf16, M = 128, N = 256, K = 16)
    d = api.descriptor_view({"arch": "sm100", "descriptor": "0x4000404000010040", "instr": "0x8400490",
                             "kind": "f16", "operand": "b"})
    assert (d["rows"], d["k"], d["dtype"], d["operand"]) == (256, 16, "bf16", "B")
    assert d["addresses"] == tcemu.operand_addresses(tcemu.UmmaDescriptor.decode(0x4000404000010040), rows=256, k=16,
                                                     dtype="bf16", arch="sm100").tolist()
    assert d["explain"] == explain(0x4000404000010040, arch="sm100", instr=0x8400490, kind="f16", operand="b")


def test_descriptor_element_probe():
    """(i, k) -> the byte, bank, chunk and core matrix of operand_addresses (hand: A[1, 0] sits at 0x490)."""
    d = api.descriptor_view({"descriptor": DESC, "element": "1,0"})
    assert d["element"] == {"i": 1, "k": 0, "address": 0x490, "bank": 4, "chunk": 1, "line": 0x480,
                            "core_matrix": [0, 0], "core_matrix_row": 1}
    e = api.descriptor_view({"descriptor": DESC, "element": "9, 8"})["element"]
    assert e["address"] == d["addresses"][9][8] and e["core_matrix"] == [1, 1]
    assert err("descriptor", {"descriptor": DESC, "element": "64,0"})["field"] == "element"
    # sm103 is an arch of its own (LBO mode 1); an instruction descriptor goes with it as with sm100
    u = api.descriptor_view({"arch": "sm103", "descriptor": "0x4000404000010040", "instr": "0x8400490", "kind": "f16"})
    assert u["rows"] == 128 and "--arch sm103" in u["command"]


def test_descriptor_without_a_map_still_has_its_lints():
    d = api.descriptor_view({"descriptor": DESC, "rows": "12"})   # not whole 8-row core matrices
    assert d["addresses"] is None and d["map_error"]["field"] == "rows"
    assert any(f["severity"] == "error" and f["field"] == "rows" and f["rule"].startswith(d["map_error"]["rule"])
               for f in d["findings"])
    value = tcemu.GmmaDescriptor(0x38000, 16, 1024, 0, "128B").encode()  # rows run past the 228 KiB window
    d = api.descriptor_view({"descriptor": hex(value)})
    assert d["addresses"] is None and d["map_error"]["field"] == "start_address, lbo, sbo"
    assert d["findings"] and d["findings"][0]["severity"] == "error"


@pytest.mark.parametrize("fields, field", [
    ({"descriptor": "zz"}, "descriptor"),
    ({"descriptor": DESC, "dtype": "f64"}, "dtype"),
    ({"descriptor": DESC, "rows": "-8"}, "rows"),
    ({"descriptor": DESC, "major": "KM"}, "major"),
    ({"descriptor": DESC, "rows": "512", "k": "256"}, "rows"),
    ({"descriptor": DESC, "colour": "red"}, "colour"),
    ({"input": "fields", "lbo": "0x18"}, "lbo"),
    ({"input": "fields", "base_offset": "9"}, "base_offset"),
    ({"input": "fields", "swizzle": "96B"}, "swizzle"),
    ({"descriptor": DESC, "instr": "0x8400490", "kind": "f16"}, "instr"),   # needs arch sm100
    ({"descriptor": DESC, "sparse": "maybe"}, "sparse"),
    ({}, "descriptor"),
])
def test_descriptor_errors_name_the_field(fields, field):
    assert err("descriptor", fields)["field"] == field


# ---- swizzle ------------------------------------------------------------------------------------------------

def test_swizzle_atoms():
    d = api.swizzle_view({"mode": "128B"})
    assert d["placed"] == [[c ^ r for c in range(8)] for r in range(8)]     # chunk c of row r at c XOR r
    # 32B with base offset 1: the XOR bit is ((addr >> 7) - 1) & 1: rows 0-3 (line 0) swap, rows 4-7 do not
    assert api.swizzle_view({"mode": "32B", "base_offset": 1})["grid"] == [[1, 0]] * 4 + [[0, 1]] * 4
    # 128B_base32B = Swizzle<2,5,2>: 32-byte unit u of line r goes to u ^ (r % 4), its two chunks keep their order
    b = api.swizzle_view({"mode": "128B_base32B"})
    assert b["placed"] == [[2 * ((c // 2) ^ (r % 4)) + c % 2 for c in range(8)] for r in range(8)]
    assert api.swizzle_view({"mode": "none"})["placed"] == [[0]]
    assert err("swizzle", {"mode": "12B"})["field"] == "mode"
    assert err("swizzle", {"base_offset": "8"})["field"] == "base_offset"


# ---- TMA ----------------------------------------------------------------------------------------------------

def test_tma_placement_and_the_descriptor_that_reads_it():
    d = api.tma_view({"dims": "64x64", "box": "64x64", "swizzle": "128B", "smem_addr": "0x400", "k": "16",
                      "kblock": "2"})
    smem = SharedMemory()
    written = tma_load(smem, 0x400, np.zeros((64, 64), np.uint16), box=[64, 64], coords=[0, 0], swizzle="128B")
    assert d["addresses"] == written.tolist()
    # hand rule: box row r is the 128-byte line 0x400 + 128 r; 16-byte chunk c*2//16 lands at chunk ^ (r % 8)
    r, c = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    assert d["addresses"] == (0x400 + 128 * r + (((2 * c) // 16) ^ (r % 8)) * 16 + (2 * c) % 16).tolist()
    assert d["out_of_bounds"] == 0 and d["global_index"] == (64 * r + c).tolist()
    # K block 2 of 16 bf16 starts 64 bytes into the swizzle atom (README: the start moves 32 bytes per block)
    assert d["summary"] == str(tcemu.GmmaDescriptor(0x440, 16, 1024, 0, "128B"))
    read = tcemu.operand_addresses(int(d["descriptor"], 16), rows=64, k=16, dtype="bf16")
    assert np.array_equal(read, written[:, 32:48])


def test_tma_out_of_bounds_and_mn_major():
    d = api.tma_view({"dims": "64x40", "box": "64x64", "coords": "0,8", "swizzle": "128B", "major": "MN",
                      "k": "64", "dtype": "f16"})
    assert d["out_of_bounds"] == (64 - 32) * 64       # rows 8..71 of 40: the last 32 box rows are zero filled
    assert d["global_index"][0][:2] == [8 * 64, 8 * 64 + 1] and d["global_index"][40][0] == -1
    # MN-major: dimension 0 is M; a 128B-swizzled f16 tile of 64 x 64 is read back with SBO = 1024 per 8 K rows
    assert d["operand_rows"] == 64 and d["descriptor"] is not None
    read = tcemu.operand_addresses(int(d["descriptor"], 16), rows=64, k=64, dtype="f16", major="MN")
    assert np.array_equal(read, np.array(d["addresses"]).T)


def test_tma_placement_no_descriptor_reads():
    # box[0] = 24 bf16 = 48 bytes without swizzle: 48-byte rows are no canonical layout's pitch
    d = api.tma_view({"dims": "24x16", "box": "24x16", "swizzle": "none", "k": "24"})
    assert d["descriptor"] is None and d["suggest_error"]["field"] == "written"


@pytest.mark.parametrize("fields, field", [
    ({"dims": "64x64", "box": "64x64", "smem_addr": "0x440"}, "smem_addr"),  # not 128-byte aligned
    ({"dims": "64x64", "box": "64x300"}, "box"),
    ({"dims": "64x64", "box": "64"}, "box"),                                  # rank mismatch
    ({"dims": "64x64", "box": "128x8", "swizzle": "128B"}, "box"),            # 256 bytes > the 128B span
    ({"dims": "20x8", "box": "8x8", "dtype": "bf16"}, "dims"),                # row pitch 40 bytes
    ({"dims": "65536x65536", "box": "64x64"}, "dims"),                        # 8 GiB tensor
    ({"dims": "64x64", "box": "64x64", "coords": "4,0"}, "coords"),           # 8 bytes: the hardware faults
    ({"dims": "64x64", "box": "64x64", "k": "0"}, "k"),
    ({"dims": "64x64", "box": "64x64", "swizzle": "128B_ATOM_32B"}, "swizzle"),  # sm100 only
    ({"box": "64x64"}, "dims"),
])
def test_tma_errors_name_the_field(fields, field):
    assert err("tma", fields)["field"] == field


# ---- instruction descriptor ------------------------------------------------------------------------------------

@pytest.mark.parametrize("idesc", [
    InstrDescriptor("f16", "bf16", "bf16", m=128, n=256),
    InstrDescriptor("i8", "s8", "u8", m=64, n=48, dtype_d="s32", saturate=True, transpose_b=True),
    InstrDescriptor("mxf8f6f4", "e4m3", "e2m1", m=128, n=128, a_scale_id=1, b_scale_id=3),
    InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=256, scale_type="ue4m3", a_scale_id=2, k96=True),
])
def test_instr_bits_cover_the_word_and_decode(idesc):
    v = idesc.encode()
    d = api.instr_view({"instr": hex(v), "kind": idesc.kind})
    spans = sorted((b["lo"], b["width"]) for b in d["bits"])
    assert [lo for lo, _ in spans] == [0] + [lo + w for lo, w in spans[:-1]] and sum(w for _, w in spans) == 32
    assert sum(b["raw"] << b["lo"] for b in d["bits"]) == v
    for b in d["bits"]:
        if b["attr"]:
            assert b["value"] == getattr(idesc, b["attr"])
    assert d["fields"]["m"] == idesc.m and d["fields"]["n"] == idesc.n


def test_instr_findings_and_errors():
    bad_n = InstrDescriptor("f16", "f16", "f16", m=128, n=8).encode()  # cta_group::2 takes N in steps of 16
    d = api.instr_view({"instr": hex(bad_n), "kind": "f16", "cta_group": "2"})
    assert [f["field"] for f in d["findings"]] == ["n"]                 # cta_group::2 takes N in steps of 16
    assert err("instr", {"instr": "0x8400490"})["field"] == "kind"
    # a 64-bit value is the runtime form (the 32-bit descriptor << 32) only with a zero low half
    assert err("instr", {"instr": "0x1_0000_0001", "kind": "f16"})["field"] == "instr"


@pytest.mark.parametrize("value, kind, field, lo", [
    (0x8400490 | 1 << 6, "f16", "reserved", 6),            # a reserved bit
    (0x8400490 | 1, "f16", "sparsity_selector", 0),        # a selector on a dense descriptor
    (0x8400490, "i8", "dtype_d", 4),                       # D code 1: not an i8 accumulator
])
def test_invalid_instr_descriptor_is_decoded_bit_by_bit(value, kind, field, lo):
    """An invalid word still gets every field of its table, the finding on the field it breaks (PTX Tables
    42-44); the control (the same word read as .kind::f16, valid) has no finding."""
    d = api.instr_view({"instr": hex(value), "kind": kind})
    assert d["valid"] is False and [(f["field"], f["lo"]) for f in d["findings"]] == [(field, lo)]
    assert sum(b["raw"] << b["lo"] for b in d["bits"]) == value and len(d["bits"]) == 16
    a = next(b for b in d["bits"] if b["attr"] == "dtype_a")
    assert a["value"] == ("bf16" if kind == "f16" else "s8")   # code 1
    ok = api.instr_view({"instr": "0x8400490", "kind": "f16"})
    assert ok["valid"] is True and ok["findings"] == [] and ok["fields"]["m"] == 128


# ---- tensor memory ------------------------------------------------------------------------------------------

def test_tmem_maps_are_where_the_model_writes():
    idesc = InstrDescriptor("f16", "bf16", "bf16", m=64, n=64)
    d = api.tmem_view({"instr": hex(idesc.encode()), "kind": "f16", "d_tmem": hex(16 << 16 | 8), "a_tmem": "0x100"})
    assert d["findings"] == []
    tm = TensorMemory()
    bits = np.arange(64 * 64, dtype=np.uint32).reshape(64, 64) + 1
    tm.write_d(16 << 16 | 8, bits, 64, "f32")
    lanes, cols = np.array(d["d"]["lanes"]), np.array(d["d"]["columns"])
    assert np.array_equal(tm.cells[lanes, cols], bits)
    # layout F, hand rule: M = 64 at lane base 16 uses lanes 16-31 of each 32-lane sub-partition
    assert sorted(set(lanes.ravel())) == [16 + r % 16 + 32 * (r // 16) for r in range(64)]
    a = np.random.default_rng(1).integers(0, 1 << 16, (64, 16))
    tm.write_a(0x100, a, 16)
    got = (tm.cells[np.array(d["a"]["lanes"])[:, None], np.array(d["a"]["columns"])[None, :]].astype(np.int64)
           >> np.array(d["a"]["shift"])) & 0xFFFF
    assert np.array_equal(got, a)
    grid = np.array([list(row) for row in d["grid"]])
    assert (grid == "D").sum() == 64 * 64 and (grid == "A").sum() == 64 * 16 // 2


def test_tmem_scale_factors_and_clashes():
    idesc = InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=128, n=256, a_scale_id=0, b_scale_id=1)
    d = api.tmem_view({"instr": hex(idesc.encode()), "kind": "mxf8f6f4", "scale_a": "0x100", "scale_b": "0x100"})
    assert d["findings"] == []  # one scale factor per row (K 32 / block 32): byte 0 for A, byte 1 for B
    tm = TensorMemory()
    sfa = np.random.default_rng(2).integers(0, 256, (128, 1))
    tm.write_scales(0x100, sfa, 0)
    sa = d["scale_a"]
    for q in sa["copies"]:
        cells = tm.cells[np.array(sa["lanes"]) + q, np.array(sa["columns"])]
        assert np.array_equal((cells >> (8 * sa["bytes"][0])) & 0xFF, sfa[:, 0])
    grid = np.array([list(row) for row in d["grid"]])
    assert (grid == "s").sum() == 128 * 4  # rows r -> column 0x100 + r // 32: 128 lanes x 4 columns, both sets
    # D over A: both at column 0
    clash = api.tmem_view({"instr": "0x8400490", "kind": "f16", "a_tmem": "0x10"})
    assert clash["findings"][0]["field"] == "d_tmem, a_tmem"
    assert clash["findings"][0]["rule"].startswith("both use tensor memory lane 0, column 16")


@pytest.mark.parametrize("fields, field", [
    ({"instr": "0x8400490", "kind": "f16", "d_tmem": hex(1 << 24)}, "d_tmem"),     # lane 256
    ({"instr": "0x8400490", "kind": "f16", "d_tmem": "0x180"}, "d_tmem"),          # columns 384..639
    ({"instr": "0x8400490", "kind": "f16", "a_tmem": "0x1fc"}, "a_tmem"),
])
def test_tmem_errors(fields, field):
    status, body = call("tmem", fields)
    fields_named = [body["error"]["field"]] if status == 400 else [f["field"] for f in body["findings"]]
    assert field in fields_named


# ---- banks --------------------------------------------------------------------------------------------------

def test_banks_view_counts_wavefronts():
    plain = api.banks_view({"op": "ldmatrix.x4", "pattern": "(t % 8) * 128 + (t // 8) * 16"})
    # each phase's 8 rows are 128 bytes apart: all on banks 4p..4p+3, 8 distinct words each: 8-way, 4 phases
    assert (plain["wavefronts"], plain["ideal"], plain["conflicts"]) == (32, 4, 28)
    assert [p["degree"] for p in plain["phases"]] == [8] * 4
    heat = np.array(plain["heat"])
    assert all(heat[t].tolist() == [1 if b // 4 == t // 8 else 0 for b in range(32)] for t in range(32))
    swz = api.banks_view({"op": "ldmatrix.x4", "pattern": "(t % 8) * 128 + ((t // 8) ^ (t % 8)) * 16"})
    assert swz["wavefronts"] == 4  # README's swizzled pattern: conflict-free
    addrs = [4 * t for t in range(32)]
    mine = api.banks_view({"op": "st.shared.b32", "source": "addresses", "addresses": ", ".join(map(hex, addrs)),
                           "mask": "0x0000ffff"})
    assert mine["wavefronts"] == bank_conflicts("st.shared.b32", addrs, mask=0xFFFF).wavefronts == 1
    assert mine["active"] == list(range(16))
    desc = api.banks_view({"op": "st.shared.v4.b32", "source": "descriptor", "descriptor": DESC,
                           "rows_expr": "t % 8", "cols_expr": "8 * (t // 8)", "tile_k": "32"})
    assert desc["addresses"][:2] == [0x400, 0x490]


@pytest.mark.parametrize("fields, field", [
    ({"op": "ld.shared.q32", "pattern": "t"}, "op"),
    ({"op": "ld.shared.b32", "pattern": "t +"}, "pattern"),
    ({"op": "ld.shared.b32", "pattern": "__import__('os')"}, "pattern"),
    ({"op": "ld.shared.b32", "pattern": "t * 2"}, "addresses"),            # not 4-byte aligned
    ({"op": "ld.shared.b32", "source": "addresses", "addresses": " ".join(["0"] * 33)}, "addresses"),
    ({"op": "ld.shared.b32", "source": "descriptor", "descriptor": DESC, "rows_expr": "t %"}, "rows_expr"),
    ({"op": "ld.shared.b32", "source": "descriptor", "descriptor": DESC, "cols_expr": "t * 1000"}, "rows_expr"),
    ({"op": "ld.shared.b32", "pattern": "4 * t", "mask": "0x1_0000_0000"}, "mask"),
])
def test_banks_errors_name_the_field(fields, field):
    assert err("banks", fields)["field"] == field


# ---- PTX run ------------------------------------------------------------------------------------------------

# the page's example kernel (the PTX view's default text)
SCAN = static_files()["index.html"].decode().split('<textarea name="ptx"', 1)[1].split(">", 1)[1]
SCAN = SCAN.split("</textarea>", 1)[0].replace("&lt;", "<").replace("&gt;", ">")


def test_ptx_trace_of_the_page_s_example():
    d = ptxrun.ptx_view({"ptx": SCAN, "block": "64", "args": "zeros:u32:64"})
    rows = d["rows"]
    # 5 set-up instructions, 5 rounds of the 5-instruction loop (offsets 1, 2, 4, 8, 16), then 8 to the end
    assert len(rows) == 5 + 25 + 8 and d["fault"] is None and d["stopped"] is None
    assert [r["pc"] for r in rows] == list(range(5)) + list(range(5, 10)) * 5 + list(range(10, 18))
    # round j's guarded add runs on lanes t >= 2^j (shfl.up's in-range predicate)
    adds = [r for r in rows if r["text"].startswith("@%p0 add")]
    assert [r["ran"] for r in adds] == [0xFFFFFFFF & ~((1 << (1 << j)) - 1) for j in range(5)]
    assert [r["control"] for r in rows if "bra" in r["text"]] == ["jumps to 5"] * 4 + ["next", "diverges"]
    odd = next(r for r in rows if r["text"] == "add.u32 %r1, %r1, 100")
    assert odd["ran"] == odd["lanes"] == 0xAAAAAAAA
    out = [int(v) for v in d["arrays"][0]["values"]]
    # an inclusive scan inside each warp: lanes 0..l of t's warp, whose thread indices start at 32 (t // 32)
    assert out == [sum(range(t - t % 32, t + 1)) + (100 if t % 2 else 0) for t in range(64)]
    mov = rows[2]  # mov.u32 %r0, %tid.x
    assert mov["dests"][0]["reg"] == "%r0" and mov["dests"][0]["values"] == [f"{t:#010x}" for t in range(32)]
    w1 = ptxrun.ptx_view({"ptx": SCAN, "block": "64", "args": "zeros:u32:64", "warp": "1"})
    assert w1["rows"][2]["dests"][0]["values"] == [f"{t:#010x}" for t in range(32, 64)]


def test_ptx_faults_limits_and_budget():
    oob = SCAN.replace("st.global.u32 [%rd1], %r1;", "st.global.u32 [%rd1+4096], %r1;")
    d = ptxrun.ptx_view({"ptx": oob, "block": "64", "args": "zeros:u32:64"})
    assert d["fault"]["type"] == "MemoryFault" and len(d["rows"]) == 37   # everything before the store, then it
    assert d["rows"][-1]["control"] == "faults" and d["rows"][-1]["text"] == "st.global.u32 [%rd1+4096], %r1"
    assert (d["fault"]["line"], d["fault"]["pc"], d["fault"]["warp"], d["fault"]["traced"]) == (30, 16, 0, True)
    assert ptxrun.ptx_view({"ptx": SCAN, "block": "64", "args": "zeros:u32:64", "limit": "7"})["stopped"] == \
        "the trace reached its limit of 7 instructions"
    # warp 1 exits at once while warp 0 spins forever: the time budget or the instruction bound ends the run
    spin = {"ptx": entry("  setp.ge.u32 %p0, %r0, 32;\n  @%p0 exit;\nSPIN:\n  bra SPIN;\n"), "block": "64",
            "args": "zeros:u32:64", "warp": "1"}
    s = ptxrun.ptx_view(dict(spin, warp="0"), seconds=0)  # the clock is read every 64 warp instructions
    assert s["stopped"] == "the 0 s budget ran out" and len(s["rows"]) == 63 and s["rows"][-1]["text"] == "bra SPIN"
    s = ptxrun.ptx_view(spin)
    assert s["fault"]["type"] == "BudgetExceeded" and s["fault"]["rule"].startswith(  # a Deadlock subclass
        f"more than {ptxrun.MAX_WARP_INSTRUCTIONS} warp instructions") and s["executed"] < 1.1 * 10 ** 6


@pytest.mark.parametrize("fields, field", [
    ({"ptx": SCAN.replace("mov.u32 %r2, 1;", "mov.u32 %r2 1;"), "args": "zeros:u32:64"}, "ptx"),
    ({"ptx": SCAN, "args": "/etc/passwd.npy"}, "args"),
    ({"ptx": SCAN, "args": "zeros:u32:100000x100000"}, "args"),
    ({"ptx": SCAN, "args": "zeros:u32:64 5"}, "args"),                     # one parameter, two arguments
    ({"ptx": SCAN, "args": "1.5"}, "args"),                                 # a pointer takes an array
    ({"ptx": SCAN, "args": "zeros:u32:64", "block": "64", "warp": "2"}, "warp"),
    ({"ptx": SCAN, "args": "zeros:u32:64", "block": "0"}, "block"),
    ({"ptx": SCAN, "args": "zeros:u32:64", "block": "2048"}, "block"),
    ({"ptx": SCAN, "args": "zeros:u32:64", "cta": "3"}, "cta"),             # outside a grid of 1
    ({"ptx": SCAN, "args": "zeros:u32:64", "kernel": "gemm"}, "kernel"),
    ({"ptx": "x" * (ptxrun.MAX_PTX + 1)}, "ptx"),
    ({"ptx": "/etc/hosts.ptx"}, "ptx"),                                     # text, never a path
    ({"ptx": SCAN.split("%r2, 0, 0xffffffff")[0]}, "ptx"),                  # cut inside an operand list
])
def test_ptx_errors_name_the_field(fields, field):
    assert err("ptx", fields)["field"] == field


# ---- robustness: any field, any value -> 200 or a 400 naming a field ---------------------------------------------

_values = st.one_of(st.text(max_size=12), st.integers(-(1 << 70), 1 << 70), st.booleans(), st.none(),
                    st.sampled_from(["0x400", "0", "-1", "64x64", "128B", "K", "MN", "bf16", "sm100", "f16", "1e9",
                                     "0x8400490", "t", "fields", "ldmatrix.x4"]))


@settings(max_examples=60)
@given(st.sampled_from(sorted(API_FIELDS)), st.data())
def test_hypothesis_any_fields_give_200_or_a_named_400(view, data):
    fields = data.draw(st.dictionaries(st.sampled_from(API_FIELDS[view]), _values, max_size=6))
    status, body = call(view, fields)
    assert status in (200, 400), body
    json.dumps(body, allow_nan=False)
    if status == 400:
        assert body["error"]["field"] and body["error"]["rule"]


# ---- HTTP ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    srv = make_server(0, quiet=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict(r.getheaders()), data


def test_http_page_api_and_limits(server):
    status, headers, page = request(server, "GET", "/")
    assert status == 200 and b"static/app.js" in page and "default-src 'self'" in headers["Content-Security-Policy"]
    assert request(server, "GET", "/static/app.js")[0] == 200
    assert request(server, "GET", "/static/../server.py")[0] == 404
    status, _, body = request(server, "GET", f"/api/descriptor?descriptor={DESC}&rows=16")
    assert status == 200 and json.loads(body) == api.descriptor_view({"descriptor": DESC, "rows": "16"})
    status, _, body = request(server, "POST", "/api/swizzle", json.dumps({"mode": "64B", "base_offset": 1}),
                              {"Content-Type": "application/json"})
    assert status == 200 and json.loads(body)["grid"] == api.swizzle_view({"mode": "64B", "base_offset": 1})["grid"]
    status, _, body = request(server, "GET", "/api/descriptor?descriptor=0xZZ")
    assert status == 400 and json.loads(body)["error"]["field"] == "descriptor"
    assert request(server, "GET", "/api/nope")[0] == 404
    assert request(server, "POST", "/api/banks", "[1, 2]")[0] == 400
    assert request(server, "POST", "/api/banks", "{")[0] == 400
    assert request(server, "POST", "/api/banks", "x" * (300 * 1024))[0] == 413
    status, _, body = request(server, "GET", "/", headers={"Host": "evil.example:80"})
    assert status == 403 and b"Host" in body


def test_cli_serve_prints_its_address_and_refuses_a_bad_port(capsys):
    proc = subprocess.Popen([sys.executable, "-m", "tcemu.cli", "serve", "--port", "0", "--quiet"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("tcemu serve: http://127.0.0.1:")
        port = int(line.split(":")[3].split("/")[0])
        assert request(port, "GET", "/api/swizzle?mode=32B")[0] == 200
    finally:
        proc.terminate()
        proc.wait(10)
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err


def test_explain_html_is_self_contained(tmp_path, capsys):
    path = tmp_path / "map.html"
    assert main(["explain", DESC, "--rows", "16", "--html", str(path)]) == 0
    html = path.read_text()
    block = html.split('id="tcemu-embed">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block  # "Swizzle<3,4,3>" is spelled \u003c: nothing in the data can end the script element
    embedded = json.loads(block)
    assert embedded["data"] == api.descriptor_view({"descriptor": DESC, "rows": "16", "arch": "sm90",
                                                    "dtype": "bf16", "major": "K", "operand": "a"})
    assert "<link" not in html and ' src="' not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert main(["explain", "0x4000404000010040", "--instr", "0x8400490", "--kind", "f16",
                 "--html", str(tmp_path / "b.html")]) == 0
    assert '"rows":128' in (tmp_path / "b.html").read_text()
