"""The defects of issue 17, one class per test, each pinned to the field and rule it must now name
(tests/test_campaign.py keeps hammering the same classes with generated inputs)."""
import os
import zipfile

import ml_dtypes
import numpy as np
import pytest

import tcemu
from tcemu import TcemuError
from tcemu.layout.banks import pattern_from_expression, pattern_from_layout, wavefronts_batch
from tcemu.cli import main
from tcemu.core.errors import SharedMemoryError
from tcemu.layout.fragments import to_d_registers
from tcemu.blackwell.instr import InstrDescriptor
from tcemu.layout.smem import SharedMemory
from tcemu.layout.swizzle import Swizzle
from tcemu.layout.tma import tensor_view
from tcemu.blackwell.tmem import TensorMemory
from tcemu.traces.archive import load_trace, replay

TRACES = os.path.join(os.path.dirname(__file__), "..", "traces")


def field_of(fn, *a, **kw):
    with pytest.raises(TcemuError) as e:
        fn(*a, **kw)
    assert e.value.field in str(e.value)
    return e.value.field


# ---- 1. memory safety ----

def test_batch_masks_one_per_pattern():
    addrs = np.arange(3 * 32).reshape(3, 32) * 4
    assert field_of(wavefronts_batch, "ld.shared.b32", addrs, np.full(2, 0xFFFFFFFF)) == "masks"
    assert field_of(wavefronts_batch, "ld.shared.b32", addrs, np.full(3, 1 << 32)) == "masks"
    assert field_of(wavefronts_batch, "ldmatrix.x4", addrs[:, :32] * 4, np.full(3, 0xFF)) == "masks"
    # the same patterns with good masks: 32 distinct words in 32 banks, one wavefront each
    assert wavefronts_batch("ld.shared.b32", addrs, np.full(3, 0xFFFFFFFF)).tolist() == [1, 1, 1]


def test_tensor_view_stays_inside_its_buffer():
    buf = np.arange(256, dtype=np.uint8)
    # dims (4, 3) u16 with row stride 64 at offset 8: last element at 8 + 2*64 + 3*2 = 142..143
    view = tensor_view(buf, 8, 2, [4, 3], [64])
    assert view.shape == (3, 4) and int(view[2, 3]) == 142 | 143 << 8 and not view.flags.writeable
    edge = tensor_view(buf, 0, 4, [1, 2], [252])           # last element: bytes 252..255, exactly the end
    assert int(edge[1, 0]) == int.from_bytes(bytes(range(252, 256)), "little")
    assert field_of(tensor_view, buf, 0, 4, [1, 2], [253]) == "dims, strides"   # one byte past the end
    assert field_of(tensor_view, buf, 8, 2, [4, 1 << 30], [64]) == "dims, strides"
    assert field_of(tensor_view, buf, 300, 1, [1], []) == "offset"
    assert field_of(tensor_view, buf, 0, 1, [4, 4], [-16]) == "strides"
    assert field_of(tensor_view, buf.astype(np.float32), 0, 1, [4], []) == "buffer"


# ---- 2. flags are bools ----

@pytest.mark.parametrize("flag", ["scale_d", "trans_a", "trans_b", "satfinite"])
def test_wgmma_flags_refuse_strings(flag):
    smem = SharedMemory(data=np.zeros(4096, np.uint8))
    d = tcemu.GmmaDescriptor(0x400, 128, 256)
    assert field_of(tcemu.wgmma, smem, d, d, shape="m64n8k16", dtype_a="f16", dtype_b="f16", dtype_d="f32",
                    **{flag: "False"}) == flag


@pytest.mark.parametrize("flag", ["negate_a", "negate_b", "transpose_a", "transpose_b", "sparse", "saturate", "k96"])
def test_instruction_descriptor_flags(flag):
    assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{flag: 2}) == flag
    assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{flag: "False"}) == flag


def test_tcgen05_and_smem_flags():
    smem = SharedMemory("sm100", data=np.zeros(4096, np.uint8))
    d = tcemu.UmmaDescriptor(0x400, 128, 256, version=1)
    idesc = InstrDescriptor("f16", "f16", "f16", m=64, n=8)
    assert field_of(tcemu.tcgen05_mma, smem, d, d, idesc, enable_input_d="no") == "enable_input_d"
    assert field_of(SharedMemory().read_operand, d.encode() & ~(3 << 46), rows=8, k=16, dtype="bf16",
                    padded="yes") == "padded"
    assert field_of(SharedMemory().read, 0, 4, strict="False") == "strict"


# ---- 3. bits are unsigned integers of the right width; values are of the named type ----

def test_values_of_another_float_type_are_refused():
    d = tcemu.GmmaDescriptor(0x400, 128, 256)
    smem = SharedMemory()
    assert field_of(smem.write_operand, d, np.ones((8, 8), np.float16), dtype="bf16") == "values"
    assert field_of(smem.write_operand, d, np.full((8, 8), -1), dtype="bf16") == "values"
    smem.write_operand(d, np.full((8, 8), 1.5, ml_dtypes.bfloat16), dtype="bf16")
    assert smem.read_operand(d, rows=8, k=8, dtype="bf16")[0, 0] == 0x3FC0   # bf16 1.5: 0 01111111 1000000
    smem.write_operand(d, np.full((8, 8), 0x3F80), dtype="bf16")             # integer bit patterns: as given
    assert smem.read_operand(d, rows=8, k=8, dtype="bf16")[7, 7] == 0x3F80
    smem.write_operand(d, np.full((8, 16), -3, np.int64), dtype="s8")        # s8 values: two's complement
    assert smem.read_operand(d, rows=8, k=16, dtype="s8")[0, 0] == 0xFD


def test_registers_are_integer_bits():
    smem = SharedMemory(data=np.zeros(4096, np.uint8))
    d = tcemu.GmmaDescriptor(0x400, 128, 256)
    kw = dict(shape="m64n8k16", dtype_a="f16", dtype_b="f16", dtype_d="f32")
    assert field_of(tcemu.wgmma, smem, None, d, a_regs=np.ones((128, 4)), **kw) == "a_regs"
    assert field_of(tcemu.wgmma, smem, None, d, a_regs=np.full((128, 4), -1), **kw) == "a_regs"
    assert field_of(tcemu.to_a_registers, np.ones((64, 16)), "f16") == "bits"
    assert field_of(to_d_registers, np.zeros((64, 8)), "f32") == "d_bits"


# ---- 4. fields out of range ----

def test_instruction_descriptor_field_widths():
    for name in ("sparsity_selector", "max_shift", "a_scale_id", "b_scale_id"):
        assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{name: 4}) == name
        assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{name: -1}) == name
    assert field_of(InstrDescriptor("f16", "f16", "f16", m=64, n=12).encode) == "n"


def test_tensor_memory_never_wraps():
    tm = TensorMemory()
    tm.write(0, np.arange(4), np.zeros(4, np.int64), np.arange(4))
    assert field_of(tm.read, 0, np.array([-1]), np.array([0])) == "lanes"
    assert field_of(tm.read, 0, np.array([128]), np.array([0])) == "lanes"
    assert field_of(tm.read, 0, np.array([0]), np.array([-1])) == "columns"
    assert field_of(tm.read, 0, np.array([0]), np.array([512])) == "columns"
    assert field_of(tm.read, 500, np.array([0]), np.array([12])) == "address"   # column 512 after adding 500
    assert field_of(tcemu.tmem_address, 0, 65536 + 5) == "column"               # not lane 1, column 5
    assert field_of(tcemu.tmem_address, 128, 0) == "lane"
    assert field_of(tm.write_scales, 0, np.zeros((128, 1), np.uint8), sf_id=4) == "sf_id"
    assert field_of(tm.write_scales, 0, np.full((128, 1), 256)) == "scales"
    assert field_of(tm.write_scales, 0, np.zeros((128, 1))) == "scales"               # floats are not bytes
    # bytes 3 and 4: past the cell from byte sf_id (main's scale-id rule names sf_id; test_instr)
    assert field_of(tm.write_scales, 0, np.zeros((128, 2), np.uint8), sf_id=3) == "sf_id"
    assert field_of(tm.write_scales, 0, np.zeros((128, 5), np.uint8)) == "scales"      # 5 bytes fit no cell
    assert field_of(tm.write_scales, 0, np.zeros((257, 1), np.uint8)) == "scales"      # rows: M or N, up to 256
    assert field_of(tm.read_d, 0, 128, 8, "bf16") == "dtype_d"
    assert field_of(to_d_registers, np.zeros((64, 8), np.uint32), "bf16") == "dtype_d"


def test_other_ranges():
    assert field_of(Swizzle, -1, 4, 3) == "bits"
    assert field_of(Swizzle, 3, 4, 2) == "shift"         # the XOR fields would overlap
    assert field_of(tcemu.layout.swizzle.SWIZZLE_128B, 0x400, -1) == "base_offset"
    assert field_of(SharedMemory().scatter_bytes, [0x400], [[256]]) == "raw"
    assert field_of(pattern_from_layout, (32,), (4,), base=float("nan")) == "base"
    assert field_of(pattern_from_layout, (32,), (1 << 40,)) == "stride"


# ---- 7. foreign exceptions: sizes bounded before allocating, ints never truncated ----

def test_huge_and_odd_inputs_are_named():
    assert field_of(tcemu.tma_load, SharedMemory(), 0, np.zeros((2, 2, 2, 2, 16), np.uint8), box=[256] * 5,
                    coords=[0] * 5) == "box"   # 2^40 box elements: refused before np.indices allocates
    assert field_of(tcemu.bank_conflicts, "ld.shared.b32", np.arange(32) * 4.0) == "addresses"
    assert field_of(tcemu.GmmaDescriptor.decode, "0x" + "f" * 5000) == "descriptor"
    assert field_of(tcemu.operand_addresses, 0x40, rows=10 ** 5000, k=8, dtype="bf16") == "rows, k"
    assert field_of(pattern_from_expression, "*".join(["(t<<63)"] * 4)) == "pattern"   # grows past 2^64
    assert field_of(pattern_from_expression, "+".join(["t"] * 250)) == "pattern"      # nests 249 operators


# ---- 8. never-written shared memory ----

def test_strict_reads():
    smem = SharedMemory()
    smem.write(0x400, b"\x01\x02")
    with pytest.raises(SharedMemoryError, match="byte 0x402 was never written"):
        smem.read(0x400, 4)
    assert smem.read(0x400, 4, strict=False).tolist() == [1, 2, 0, 0]
    assert smem.read(0x400, 2).tolist() == [1, 2]
    assert smem.gather([0x400], "bf16").tolist() == [0x0201]
    with pytest.raises(SharedMemoryError, match="byte 0x402 was never written"):
        smem.gather([0x400, 0x402], "bf16")
    assert smem.gather([0x402], "bf16", strict=False).tolist() == [0]


# ---- 6b. the trace reader ----

def _small_wavefront_trace(tmp_path, name="t.npz", **changes):
    with np.load(os.path.join(TRACES, "smem_wavefronts_targeted_sm90.npz")) as z:
        cols = {k: (z[k] if k == "meta" else z[k][:16]) for k in z.files}
    cols.update(changes)
    path = str(tmp_path / name)
    np.savez(path, **cols)
    return path


def test_reader_opens_only_the_named_members(tmp_path, monkeypatch):
    path = _small_wavefront_trace(tmp_path, unused=np.zeros(1 << 20, np.uint8))
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **kw: (
        opened.append(getattr(name, "filename", name)), real_open(self, name, *a, **kw))[1])
    result = replay(path)
    assert result.ok and sorted(opened) == sorted(["meta.npy", "op.npy", "mask.npy", "addr.npy", "ld_wavefronts.npy",
                                                   "st_wavefronts.npy"])


def test_reader_refusals(tmp_path):
    objects = _small_wavefront_trace(tmp_path, "o.npz", mask=np.array([object()] * 16))
    assert field_of(load_trace, objects) == "o.npz:mask"
    assert field_of(load_trace, _small_wavefront_trace(tmp_path, "m.npz", mask=np.zeros(3, np.uint32))) == "mask"
    os.mkfifo(tmp_path / "fifo.npz")
    assert field_of(load_trace, str(tmp_path / "fifo.npz")) == "fifo.npz"
    with np.load(os.path.join(TRACES, "wgmma_numerics_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "steps.npz", **dict(cols, steps=np.full(cols["steps"].shape, 10 ** 9, np.int64)))
    assert field_of(load_trace, str(tmp_path / "steps.npz")) == "steps"
    with np.load(os.path.join(TRACES, "wgmma_addresses_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "rows.npz", **dict(cols, rows=cols["rows"] * 0 - 1))
    assert field_of(load_trace, str(tmp_path / "rows.npz")) == "rows"
    data = open(_small_wavefront_trace(tmp_path), "rb").read()
    (tmp_path / "cut.npz").write_bytes(data[:-30])
    assert field_of(load_trace, str(tmp_path / "cut.npz")) == "cut.npz"


def test_reader_refuses_a_npy_header_cut_inside_its_dict(tmp_path):
    """numpy reads a version-1.0 .npy header through Python's tokenizer: a header whose dict never closes
    raised tokenize.TokenError (found by the campaign's byte flips), now a TraceError naming the member."""
    import io
    buf = io.BytesIO()
    np.save(buf, np.zeros(16, np.uint32))
    raw = buf.getvalue()
    n = int.from_bytes(raw[8:10], "little")
    header = raw[10:10 + n].replace(b"'shape': (16,), }", b"'shape': (16,  ").ljust(n)
    assert header != raw[10:10 + n] and len(header) == n
    path = _small_wavefront_trace(tmp_path)
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    members["mask.npy"] = raw[:10] + header + raw[10 + n:]
    with zipfile.ZipFile(str(tmp_path / "tok.npz"), "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    assert field_of(load_trace, str(tmp_path / "tok.npz")) == "tok.npz:mask"


def test_every_trace_kind_is_registered_in_all_three_places():
    """A kind needs its columns, its consistency check and its replayer (tcemu/traces/archive.py); the bundled traces use
    registered kinds only (test_traces replays each)."""
    from tcemu.traces.archive import _CHECKS, _REPLAYERS, _REQUIRED
    assert set(_REQUIRED) == set(_CHECKS) == set(_REPLAYERS)
    assert {"wgmma_sp_operand_addresses", "wgmma_sp_metadata", "wgmma_sp_numerics", "ptx_alu",
            "kernel_outputs", "gemm_outputs", "launch_outputs", "wgmma_zero_sign"} <= set(_REQUIRED)


def _kernel_trace(tmp_path, name="k.npz", meta_changes=None, case_changes=None, **changes):
    """One captured launch of the whole-kernel trace (matmul_tma_bf16, 128 x 256 x 64: one CTA) with its
    embedded fixture, as its own small trace."""
    import json
    with np.load(os.path.join(TRACES, "triton_kernels_sm90.npz")) as z:
        c = {k: z[k] for k in z.files}
    meta = json.loads(c["meta"].tobytes())
    i = next(j for j, case in enumerate(meta["cases"]) if case["fixture"] == "matmul_tma_bf16" and case["M"] == 128)
    fx = meta["cases"][i]["fixture"]
    meta["cases"], meta["fixtures"] = [dict(meta["cases"][i], **(case_changes or {}))], {fx: meta["fixtures"][fx]}
    meta.update(meta_changes or {})
    lo, hi = int(c["offsets"][i]), int(c["offsets"][i + 1])
    cols = {k: c[k][i:i + 1] for k in ("seed", "status", "m", "n", "k", "grid")}
    cols.update(meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), bits=c["bits"][lo:hi],
                offsets=np.array([0, hi - lo], np.int64), **{f"fixture_{fx}_{e}": c[f"fixture_{fx}_{e}"]
                                                              for e in ("ptx", "json")})
    cols.update(changes)
    path = str(tmp_path / name)
    np.savez(path, **cols)
    return path


def test_kernel_trace_reads_the_fixtures_its_meta_names(tmp_path, monkeypatch):
    """kernel_outputs embeds its fixtures' PTX and json: the reader opens the members meta.fixtures names (and
    the kind's columns), not an unnamed fixture that happens to sit in the archive."""
    path = _kernel_trace(tmp_path, fixture_other_ptx=np.zeros(1 << 20, np.uint8))
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **kw: (
        opened.append(getattr(name, "filename", name)), real_open(self, name, *a, **kw))[1])
    result = replay(path)
    assert result.ok
    assert [(g.cases, g.cases_matched, g.values) for g in result.groups.values()] == [(1, 1, 128 * 256 * 2)]
    assert sorted(opened) == sorted(f"{c}.npy" for c in ("meta", "seed", "status", "offsets", "bits", "m", "n", "k",
                                                         "grid", "fixture_matmul_tma_bf16_ptx",
                                                         "fixture_matmul_tma_bf16_json"))


def test_kernel_trace_refusals(tmp_path):
    import hashlib
    with np.load(os.path.join(TRACES, "triton_kernels_sm90.npz")) as z:
        ptx = z["fixture_matmul_tma_bf16_ptx"]
    longer = np.concatenate([ptx, np.frombuffer(b"\n", np.uint8)])  # not the PTX whose sha256 meta.fixtures gives
    assert field_of(load_trace, _kernel_trace(tmp_path, fixture_matmul_tma_bf16_ptx=longer)) == \
        "fixture_matmul_tma_bf16_ptx"
    huge_grid = _kernel_trace(tmp_path, case_changes={"grid": [1 << 20, 1 << 20, 1]})
    assert field_of(load_trace, huge_grid) == "meta.cases[0]"
    assert field_of(load_trace, _kernel_trace(tmp_path, case_changes={"fixture": "../../etc/passwd"})) == \
        "meta.cases[0]"
    assert field_of(load_trace, _kernel_trace(tmp_path, case_changes={
        "output": {"buffer": "c", "dtype": "f16", "shape": [1 << 30, 1 << 30]}})) == "meta.cases[0]"
    assert field_of(load_trace, _kernel_trace(tmp_path, meta_changes={"cases": []})) == "meta.cases"
    assert field_of(load_trace, _kernel_trace(tmp_path, bits=np.zeros(5, np.uint8),
                                              offsets=np.array([0, 5], np.int64))) == "offsets"
    path = _kernel_trace(tmp_path)
    with zipfile.ZipFile(path) as zf:
        kept = {n: zf.read(n) for n in zf.namelist() if n != "fixture_matmul_tma_bf16_json.npy"}
    with zipfile.ZipFile(str(tmp_path / "missing.npz"), "w") as zf:
        for n, data in kept.items():
            zf.writestr(n, data)
    assert field_of(load_trace, str(tmp_path / "missing.npz")) == "fixture_matmul_tma_bf16_json"
    bad = np.frombuffer(b"\xff\xfe", np.uint8)
    fixtures = {"matmul_tma_bf16": {"ptx_sha256": hashlib.sha256(bad.tobytes()).hexdigest(),
                                    "json_sha256": hashlib.sha256(np.load(path)["fixture_matmul_tma_bf16_json"]
                                                                  .tobytes()).hexdigest()}}
    assert field_of(load_trace, _kernel_trace(tmp_path, meta_changes={"fixtures": fixtures},
                                              fixture_matmul_tma_bf16_ptx=bad)) == "fixture_matmul_tma_bf16_ptx"


def test_sparse_and_alu_trace_refusals(tmp_path):
    import json
    with np.load(os.path.join(TRACES, "wgmma_sp_addresses_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "op.npz", **dict(cols, operand=cols["operand"] + 3))
    assert field_of(load_trace, str(tmp_path / "op.npz")) == "operand"
    np.savez(tmp_path / "k.npz", **dict(cols, k=cols["k"] * 2))      # not the extent of a sparse operand
    assert field_of(load_trace, str(tmp_path / "k.npz")) == "rows, k"
    with np.load(os.path.join(TRACES, "wgmma_sp_numerics_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    meta = json.loads(cols["meta"].tobytes())
    meta["kinds"][0] = ["tf32", "tf32", "f16", 0]                      # not sparse_seeds' kind 0
    np.savez(tmp_path / "kinds.npz", **dict(cols, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    assert field_of(load_trace, str(tmp_path / "kinds.npz")) == "meta.kinds"
    np.savez(tmp_path / "steps.npz", **dict(cols, steps=np.full_like(cols["steps"], 100)))
    assert field_of(load_trace, str(tmp_path / "steps.npz")) == "steps"
    with np.load(os.path.join(TRACES, "ptx_alu_sm90.npz")) as z:
        cols = {k: (z[k] if k == "meta" else z[k][:100]) for k in z.files}
    meta = json.loads(cols["meta"].tobytes())
    meta["forms"][0]["src"] = ["f99"]                                   # an operand tag the replay cannot read
    np.savez(tmp_path / "alu.npz", **dict(cols, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    assert field_of(load_trace, str(tmp_path / "alu.npz")) == "meta.forms"
    np.savez(tmp_path / "aluop.npz", **dict(cols, op=np.full(100, 5000, np.int16)))
    assert field_of(load_trace, str(tmp_path / "aluop.npz")) == "op"


def _saved(tmp_path, name, cols, **meta_changes):
    import json
    meta = json.loads(cols["meta"].tobytes())
    meta.update(meta_changes)
    np.savez(tmp_path / name, **dict(cols, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    return str(tmp_path / name)


def test_gemm_launch_and_zero_sign_trace_refusals(tmp_path):
    """gemm_outputs, launch_outputs and wgmma_zero_sign: a record the replay could not read, or that disagrees with
    the columns, is refused by load_trace naming it (the bundled traces load: test_traces)."""
    import hashlib
    import json
    with np.load(os.path.join(TRACES, "torch_gemm_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    cases = json.loads(cols["meta"].tobytes())["cases"]
    a, b = cases[0]["inputs"]
    wrong = [dict(cases[0], inputs=[dict(a, shape=[128, 64]), b])] + cases[1:]   # A is not M x K
    assert field_of(load_trace, _saved(tmp_path, "g1.npz", cols, cases=wrong)) == "meta.cases[0]"
    untyped = [dict(cases[0], kernels=[1])] + cases[1:]                           # `"splitK" in 1` in the model
    assert field_of(load_trace, _saved(tmp_path, "g2.npz", cols, cases=untyped)) == "meta.cases[0]"
    np.savez(tmp_path / "g3.npz", **dict(cols, stored_rows=cols["stored_rows"] + (cols["status"] != 0)))
    assert field_of(load_trace, str(tmp_path / "g3.npz")) == "meta.cases[28]"   # a refused case storing rows
    np.savez(tmp_path / "g4.npz", **dict(cols, m=cols["m"] * 64, n=cols["n"] * 64))
    assert field_of(load_trace, str(tmp_path / "g4.npz")) == "meta.cases[0]"    # past the operand limit

    with np.load(os.path.join(TRACES, "cutlass_kernels_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    meta = json.loads(cols["meta"].tobytes())
    cases = meta["cases"]
    assert field_of(load_trace, _saved(tmp_path, "l1.npz", cols, cases=[dict(cases[0], seed=1)] + cases[1:])) == \
        "meta.cases[0]"                                                          # not the seed column's
    assert field_of(load_trace, _saved(tmp_path, "l2.npz", cols, cases=[dict(cases[0], launch=7)] + cases[1:])) == \
        "meta.cases[0]"
    fx = cases[0]["fixture"]
    fj = json.loads(cols[f"fixture_{fx}_json"].tobytes())
    fj["launches"][0]["buffers"][0]["storage"] = ["256", 256]                    # int("256") in tcemu.launches
    raw = np.frombuffer(json.dumps(fj).encode(), np.uint8)
    fixtures = dict(meta["fixtures"], **{fx: dict(meta["fixtures"][fx], json_sha256=hashlib.sha256(raw).hexdigest())})
    cols[f"fixture_{fx}_json"] = raw
    assert field_of(load_trace, _saved(tmp_path, "l3.npz", cols, fixtures=fixtures)) == \
        f"fixture_{fx}_json: launches[0]"

    with np.load(os.path.join(TRACES, "wgmma_zero_sign_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "z1.npz", **dict(cols, c_len=cols["c_len"] + cols["pool"].size))
    assert field_of(load_trace, str(tmp_path / "z1.npz")) == "c_len"                 # longer than the pool
    np.savez(tmp_path / "z0.npz", **dict(cols, c_off=cols["c_off"] * 0 + cols["pool"].size - 1))
    assert field_of(load_trace, str(tmp_path / "z0.npz")) == "c_off, c_len"          # runs past its end
    meta = json.loads(cols["meta"].tobytes())
    assert field_of(load_trace, _saved(tmp_path, "z2.npz", cols, kinds=[["s8", "u8", "s32"]] + meta["kinds"][1:])) \
        == "meta.kinds"


@pytest.mark.parametrize("edit,what", [
    (("st.global.u32 [%rd1], %r1;", "st.global.u32 [%rd1];"), "Arguments mismatch .*st takes 2"),
    (("mul.wide.u32 %rd1, %r1, 4;", "mul.wide.u32 %rd1, %r1, 08;"), "'08' is not an integer literal"),
    (("st.global.u32 [%rd1], %r1;", "stmatrix.sync.aligned.m8n8.shared.b16 [%rd1], {%r1};"), "needs the matrix count"),
    ((".version 8.5\n", ""), "begins with a .version directive"),
], ids=["too few operands", "bad octal", "stmatrix without .num", "no .version"])
def test_malformed_ptx_is_a_syntax_error(edit, what):
    """Found by the campaign's mutated PTX: an instruction compiler indexing a missing operand (IndexError), a
    number token that is no integer literal (ValueError), a missing .x1/.x2/.x4 (KeyError), an empty text
    taken as a module."""
    from tcemu.ptx import PtxSyntaxError, load
    text = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 4;
  add.s64 %rd1, %rd0, %rd1;
  st.global.u32 [%rd1], %r1;
  ret;
}
"""
    load(text).program("k")  # the unedited kernel compiles
    assert edit[0] in text
    with pytest.raises(PtxSyntaxError, match=what):
        load(text.replace(*edit)).program("k")


# ---- 6. the command line: one line, exit 2, no traceback ----

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
    ["run", os.path.join(os.path.dirname(__file__), "fixtures", "ptx", "calls.ptx"), "--save", "/proc/tcemu_save"],
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
