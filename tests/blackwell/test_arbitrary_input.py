"""Only TcemuError (a ValueError) escapes tcgen05_mma on arbitrary instruction and matrix descriptors."""
import numpy as np
from hypothesis import given, strategies as st

import tcemu
from tcemu import TcemuError



_FULL_SM100 = tcemu.SharedMemory("sm100", data=np.random.default_rng(0).integers(0, 256, 228 * 1024, dtype=np.uint8))



_SM100_FIELD = st.integers(0, 0x3FFF).map(lambda x: 16 * x)



umma_descriptors = st.integers(0, 7).flatmap(lambda i: st.integers(0, 2**64 - 1) if i == 0 else st.builds(lambda s, l, b, sw: tcemu.UmmaDescriptor(start_address=s, lbo=l, sbo=b, swizzle=sw, version=1),
              _SM100_FIELD.map(lambda x: x % 0x20000), st.sampled_from([16, 128, 256, 1024, 4096]),
              st.sampled_from([128, 256, 512, 1024, 2048]), st.sampled_from(["none", "32B", "64B", "128B", "128B_base32B"])))



def instr_descriptors():
    """(value, kind): mostly legal forms (tcemu.testing.strategies.tcgen05_forms), sometimes any 32 bits, any kind."""
    from tcemu.blackwell.instr import KINDS
    from tcemu.testing.strategies import tcgen05_forms
    legal = tcgen05_forms().map(lambda d: (d.encode(), d.kind)) | tcgen05_forms(cta_group=2).map(lambda d: (d.encode(), d.kind))
    return st.integers(0, 7).flatmap(lambda i: st.tuples(st.integers(0, 2**32 - 1), st.sampled_from(KINDS + ("x",)))
                                     if i == 0 else legal)



@given(instr_descriptors(), umma_descriptors, umma_descriptors, st.sampled_from(["auto"] * 4 + [1, 2, 3]),
       st.sampled_from(["auto", "auto", "auto", None, 0xFF, 0x38]), st.sampled_from([None, None, 16, 32, 7]),
       st.sampled_from([0] * 8 + [3, 16, -1]))
def test_tcgen05_arbitrary(instr, da, db, cta_group, scale, block, scale_d):
    """Arbitrary instruction and matrix descriptors against a fully written shared memory: a result or
    our error, never another exception."""
    idesc, kind = instr
    try:
        d = tcemu.InstrDescriptor.decode(idesc, kind)
    except TcemuError:
        d = None
    if cta_group == "auto":
        cta_group = 2 if d is not None and d.m == 256 else 1
    smem = [_FULL_SM100] * cta_group if cta_group > 1 else _FULL_SM100
    if scale == "auto":  # the scale arrays a block-scaled kind wants, if the descriptor decodes
        try:
            d = tcemu.InstrDescriptor.decode(idesc, kind)
            nsf = {"mxf8f6f4": 1, "mxf4": 2}.get(d.kind, 4 if block != 32 else 2)
            scale = (d.m, d.n, nsf, 0x7F) if d.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4") else None
        except TcemuError:
            scale = None
    scales = {}
    if isinstance(scale, tuple):
        scales = dict(scale_a=np.full(scale[:1] + scale[2:3], scale[3]), scale_b=np.full(scale[1:3], scale[3]))
    elif scale is not None:
        scales = dict(scale_a=np.full((128, 4), scale), scale_b=np.full((256, 4), scale))
    try:
        tcemu.tcgen05_mma(smem, da, db, idesc, kind=kind, cta_group=cta_group, block_size_k=block,
                          scale_input_d=scale_d, **scales)
    except TcemuError as exc:
        assert exc.field and exc.field in str(exc), repr(exc)
