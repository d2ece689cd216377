"""Texture and surface instructions on texture / surface objects (unified mode): tex, tld4, txq, suld.b, sust.b,
suq (PTX ISA 9.7.10 "Texture Instructions", 9.7.11 "Surface Instructions").

The object operand is a .u64 register holding a handle: the address of a header in global memory
(tcemu/ptx/texture.py has its layout and the sampling arithmetic). Texel reads and surface accesses are global
memory accesses through memory_ops.access, so the memcheck and the global racecheck see them. Refused by name:
tex.level / tex.grad / tex.base (mipmaps), cube maps, multisample textures, the independent mode (a sampler
operand), sust.p / suld.p (formatted), and linear filtering of 3-D or layered textures (not captured).
"""
import numpy as np

from .. import parser as P
from .. import texture as TX
from ..errors import KernelFault, PtxSyntaxError, PtxUnsupported
from ..lockstep import Batch, slots_of
from ..signals import Fallback
from ..types import CONTAINER, TYPES
from .common import Mods, by_cta, mask_array, where
from .memory_gang import global_loads_plan
from .memory_ops import access
from .registry import register

GEOMETRIES = {"1d": (1, False), "2d": (2, False), "3d": (3, False), "a1d": (1, True), "a2d": (2, True)}
REFUSED_GEOMETRIES = ("cube", "acube", "2dms", "a2dms")
# coordinate vector length per geometry (PTX 9.7.10.3: 3d and a2d take four elements, the last ignored)
COORDS = {"1d": 1, "2d": 2, "3d": 4, "a1d": 2, "a2d": 4}


def _geometry(ins, mods):
    for g in REFUSED_GEOMETRIES:
        if g in mods:
            mods.unsupported(f".{g} textures are not modelled (cube maps and multisample textures)")
    g = mods.one_of(tuple(GEOMETRIES))
    if g is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: needs a geometry (.1d .2d .3d .a1d .a2d)")
    return g


def _object_and_coords(ins, prog, addr_op, geom, ctype):
    """(handle getter, [coordinate getters], layer getter or None) of `[obj, {coords}]`."""
    if not isinstance(addr_op, P.Addr) or addr_op.vec is None or addr_op.offset:
        if isinstance(addr_op, P.Addr) and addr_op.vec is None:
            raise PtxUnsupported(ins.opcode, f"the independent mode ([tex, sampler, coords]) and texture references "
                                             f"are not modelled; tcemu runs texture objects ({ins.where()})")
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} needs [object, {{coordinates}}], got {P.fmt(addr_op)}")
    if not isinstance(addr_op.base, P.Reg):
        raise PtxUnsupported(ins.opcode, f"a .texref / .surfref operand ({P.fmt(addr_op.base)}) is not modelled; "
                                         f"tcemu runs texture and surface objects in .u64 registers ({ins.where()})")
    items = list(addr_op.vec.items)
    want = COORDS[geom]
    if len(items) != want:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: a .{geom} coordinate vector has {want} elements, "
                                                f"got {len(items)}")
    handle = prog.read(addr_op.base, TYPES["u64"], ins)
    layer = None
    if geom.startswith("a"):
        layer = prog.read(items[0], TYPES["u32"], ins)
        items = items[1:]
    dims = GEOMETRIES[geom][0]
    return handle, [prog.read(x, TYPES[ctype], ins) for x in items[:dims]], layer


def _descs(W, handles, act, wh, what, geom=None, surface=False):
    """[(descriptor, lane selector)] per distinct handle among the executing lanes."""
    out = []
    for h in np.unique(handles[act]):
        d = TX.read_header(W, int(h), wh, what)
        if d.surface != surface:
            raise KernelFault(wh, f"{what} handle {int(h):#x} names a {'surface' if d.surface else 'texture'} object")
        if geom is not None:
            dims, layered = GEOMETRIES[geom]
            if d.dims != dims or d.layered != layered:
                raise KernelFault(wh, f"a .{geom} {what} of a {d.dims}-D{' layered' if d.layered else ''} "
                                      f"{'surface' if surface else 'texture'} (handle {int(h):#x})")
        out.append((d, act & (handles == h)))
    return out


def _texel_addresses(d, idx, layer):
    """Global addresses of texels (indices per dimension; layer: the lanes' layers, or None)."""
    off = idx[0].astype(np.int64) * d.element_bytes
    if len(idx) > 1:
        off = off + idx[1].astype(np.int64) * d.pitch
    if len(idx) > 2:
        off = off + idx[2].astype(np.int64) * d.slice
    if layer is not None:
        off = off + layer.astype(np.int64) * d.slice
    return (np.uint64(d.base) + off.astype(np.uint64)).astype(np.uint64)


def _fetcher(W, d, lanes, layer, wh):
    """fetch(indices per dimension, selector within `lanes`) -> texel bytes, read from global memory."""
    tids = W.tid[lanes]

    def fetch(idx, sel):
        addrs = _texel_addresses(d, idx, None if layer is None else layer[sel])
        return access(W, "global", addrs, tids[sel], d.element_bytes, wh)
    return fetch


def _gang_fetcher(ctas, cta_of, tids, lands, wh):
    """The gang's _fetcher: texels of the lanes of several warps and CTAs, read as one through memory_gang's load
    plan (every check first, reading state only: Fallback where one would report); the racecheck records go to
    `lands`, to be made once the whole instruction has been checked. cta_of, tids: each lane's CTA (an index into
    ctas, a warp of each) and thread index in it; lanes lie CTA by CTA."""
    def fetcher(d, sel, layer):
        lane_ix = np.flatnonzero(sel)

        def fetch(idx, sub):
            addrs = _texel_addresses(d, idx, None if layer is None else layer[sub])
            if addrs.size == 0 or (addrs % np.uint64(d.element_bytes)).any():
                raise Fallback
            lanes = lane_ix[sub]
            c = cta_of[lanes]
            cuts = np.flatnonzero(np.diff(c)) + 1   # where the next CTA's lanes begin
            parts = [(ctas[int(c[i])], addrs[i:j], tids[lanes[i:j]])
                     for i, j in zip([0, *cuts.tolist()], [*cuts.tolist(), c.size])]
            raw, land = global_loads_plan(parts, d.element_bytes, wh)
            lands.append(land)
            return raw
        return fetch
    return fetcher


def _layers(d, layers, lanes):
    if layers is None:
        return None
    raw = layers[lanes].astype(np.int64)   # an unsigned index (PTX 9.7.10.3 "tex": .a1d / .a2d)
    return np.clip(raw, 0, max(d.layers, 1) - 1)   # clamped to the last layer (CUDA Programming Guide, layered
    #                                                 textures; not silicon-checked)


@register("tex", "tld4")
def c_tex(ins, prog, pc):
    mods = Mods(ins)
    name = ins.opcode.split(".")[0]
    for p in ("level", "grad", "base"):
        if p in mods:
            mods.unsupported(f"{name}.{p}: mipmapped textures are not modelled")
    geom = _geometry(ins, mods)
    gather = -1
    if name == "tld4":
        comp = mods.one_of(("r", "g", "b", "a"))
        if comp is None or geom != "2d":
            mods.unsupported("tld4 is modelled as tld4.{r,g,b,a}.2d")
        gather = "rgba".index(comp)
    if "v4" not in mods:
        mods.unsupported(f"{name} is modelled with a .v4 destination (.v2.f16x2 / .f16 forms are not)")
    types = [t.name for t in mods.types]
    if len(types) != 2 or types[0] not in ("f32", "s32", "u32") or types[1] not in ("f32", "s32"):
        mods.unsupported(f"{name} types .{'.'.join(types)} (modelled: .v4.{{f32,s32,u32}}.{{f32,s32}})")
    ctype = types[1]
    if len(ins.operands) != 2 or isinstance(ins.operands[0], P.Pair):
        raise PtxUnsupported(ins.opcode, f"{name} is modelled as `{name} d, [object, {{coordinates}}]` (no "
                                         f"predicate destination, offsets or depth compare) ({ins.where()})")
    dest = ins.operands[0]
    regs = list(dest.items) if isinstance(dest, P.Vec) else [dest]
    if len(regs) != 4:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .v4 writes 4 registers, got {len(regs)}")
    sets = [prog.write(r, TYPES["b32"], ins) for r in regs]
    get_handle, get_coords, get_layer = _object_and_coords(ins, prog, ins.operands[1], geom, ctype)
    wh = where(ins)

    def words_of(descs, raw, layers, fetcher):
        """(lanes, 4) result words of the lanes `descs` select: [(descriptor, lanes)] per handle."""
        words = np.zeros((raw[0].size, 4), np.uint32)
        for d, sel in descs:
            fetch = fetcher(d, sel, _layers(d, layers, sel))
            if d.resource == 1:   # linear memory: tex1Dfetch, integer index, 0 outside (measured)
                if ctype != "s32":
                    raise KernelFault(wh, "a texture of linear memory is read with integer coordinates "
                                          "(tex1Dfetch, tex.1d...s32)")
                i = raw[0][sel].view(np.int32).astype(np.int64)
                inside = (i >= 0) & (i < d.width)
                vals = np.zeros((i.size, 4), np.float32 if d.floaty else np.int64)
                if inside.any():
                    vals[inside] = TX.read_values(fetch([i[inside]], inside), d)
                words[sel] = TX._words(vals)
                continue
            if d.filter == 1 and gather < 0 and TX.linear_refusal(d):
                raise PtxUnsupported(ins.opcode, f"{TX.linear_refusal(d)} ({ins.where()})")
            if ctype == "s32":   # integer coordinates: the texel index itself
                coords = [np.floor(c[sel].view(np.int32).astype(np.float64)).astype(np.float32) for c in raw]
                if d.normalized_coords:
                    raise KernelFault(wh, "integer coordinates on a texture with normalized coordinates")
            else:
                coords = [c[sel].view(np.float32) for c in raw]
            try:
                words[sel] = TX.sample(d, coords, fetch, gather)
            except PtxUnsupported as e:   # a texel the linear filter was not measured on (infinite or NaN)
                raise PtxUnsupported(ins.opcode, f"{e.rule} ({ins.where()})") from None
        return words

    def op(W, m):
        lanes = mask_array(m) & W.live   # the executing lanes
        descs = _descs(W, get_handle(W), lanes, wh, "texture", geom)
        words = words_of(descs, [g(W) for g in get_coords], None if get_layer is None else get_layer(W),
                         lambda d, sel, layer: _fetcher(W, d, sel, layer, wh))
        for k, s in enumerate(sets):
            s(W, words[:, k], None if lanes.all() else lanes)

    touched, written = slots_of(prog, ins.operands), slots_of(prog, [dest])

    def gang(pairs):
        """The gang's warps as one: the lanes of every warp sampled together, per texture (Fallback: the warps run
        it one at a time, which reports what went wrong)."""
        warps = [W for W, _ in pairs]
        B = Batch(warps, touched)   # registers as (warps, 32)
        acts = np.stack([W.live if m is None else mask_array(m) & W.live for W, m in pairs]).reshape(-1)
        groups = by_cta(pairs)
        cta_of = np.repeat(np.arange(len(groups)), [len(ms) for _, ms in groups])
        if [W for _, ms in groups for W, _ in ms] != warps:   # a CTA's warps apart in the gang
            raise Fallback
        tids = np.concatenate([W.tid for W in warps])
        lands = []
        fetcher = _gang_fetcher([ms[0][0] for _, ms in groups], np.repeat(cta_of, 32), tids, lands, wh)

        def flat(get):   # an operand's (warps, 32) values (a constant broadcast), lane after lane
            return np.broadcast_to(get(B), (len(warps), 32)).reshape(-1)
        try:
            descs = _descs(warps[0], flat(get_handle), acts, wh, "texture", geom)
            words = words_of(descs, [flat(g) for g in get_coords], None if get_layer is None else flat(get_layer),
                             fetcher)
        except (KernelFault, PtxUnsupported):
            raise Fallback from None
        for land in lands:
            land()
        full = bool(acts.all())
        for k, s in enumerate(sets):
            s(B, words[:, k].reshape(len(warps), 32), None if full else acts.reshape(len(warps), 32))
        B.store(written)
    gang.masked = True   # lanes as the masks give them (lockstep.run_any)
    op.gang = gang
    return op


# ---------------------------------------------------------------------------------------------------- txq, suq

_QUERIES = {"width": lambda d: d.width, "height": lambda d: d.height, "depth": lambda d: d.depth,
            "array_size": lambda d: d.layers, "num_mipmap_levels": lambda d: 1, "num_samples": lambda d: 1,
            "normalized_coords": lambda d: int(d.normalized_coords), "filter_mode": lambda d: d.filter,
            "addr_mode_0": lambda d: d.address[0], "addr_mode_1": lambda d: d.address[1],
            "addr_mode_2": lambda d: d.address[2]}


@register("txq", "suq")
def c_query(ins, prog, pc):
    mods = Mods(ins)
    name = ins.opcode.split(".")[0]
    q = mods.one_of(tuple(_QUERIES))
    if q is None or (name == "suq" and q not in ("width", "height", "depth", "array_size")) or "level" in mods:
        mods.unsupported(f"{name} query .{'.'.join(mods.parts)} (modelled: {', '.join(_QUERIES)} for txq; width, "
                         "height, depth, array_size for suq)")
    if len(ins.operands) != 2 or not isinstance(ins.operands[1], P.Addr) or \
            not isinstance(ins.operands[1].base, P.Reg):
        raise PtxUnsupported(ins.opcode, f"{name} is modelled as `{name}.query.b32 d, [object register]` "
                                         f"({ins.where()})")
    sd = prog.write(ins.operands[0], TYPES["b32"], ins)
    get = prog.read(ins.operands[1].base, TYPES["u64"], ins)
    wh = where(ins)
    fn = _QUERIES[q]

    def op(W, m):
        lanes = mask_array(m) & W.live   # the executing lanes
        out = np.zeros(32, np.uint32)
        handles = get(W)
        for d, sel in _descs(W, handles, lanes, wh, "surface" if name == "suq" else "texture",
                             surface=name == "suq"):
            out[sel] = np.uint32(fn(d))
        sd(W, out, None if lanes.all() else lanes)
    return op


# ---------------------------------------------------------------------------------------------------- surfaces

def _surface_form(ins, mods, name):
    if "p" in mods:
        mods.unsupported(f"{name}.p (formatted surface access) is not modelled; {name}.b is")
    if "b" not in mods:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: needs .b (unformatted) or .p")
    geom = _geometry(ins, mods)
    vec = int(next((p[1:] for p in mods.parts if p in ("v2", "v4")), 1))
    t = mods.type()
    if t.name not in ("b8", "b16", "b32", "b64"):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: the data type is .b8 .b16 .b32 or .b64")
    mode = mods.one_of(("trap", "clamp", "zero"), "trap")   # PTX 9.7.11.1: .trap is the default
    return geom, vec, t, mode


def _surface_addresses(W, d, xs, lanes, nbytes, mode, layer, wh):
    """(byte addresses, in range) of the executing lanes; x is a byte coordinate (PTX 9.7.11.1). .trap: out of
    range is a KernelFault; .clamp: each coordinate clamped into the surface; .zero: out of range reads zeros and
    drops stores (measured on the H100: the trace's surface cases)."""
    x = xs[0][lanes].view(np.int32).astype(np.int64)
    if (x % nbytes).any():
        j = int(np.flatnonzero(x % nbytes)[0])
        raise KernelFault(wh, f"thread {int(W.tid[lanes][j])}: surface byte coordinate x = {int(x[j])} is not a "
                              f"multiple of the {nbytes}-byte access")
    row = d.width * d.element_bytes
    idx = [x] + [c[lanes].view(np.int32).astype(np.int64) for c in xs[1:]]
    hi = [row - nbytes] + [n - 1 for n in d.extent[1:]]
    inside = np.all([(i >= 0) & (i <= h) for i, h in zip(idx, hi)], axis=0)
    if mode == "trap" and not inside.all():
        j = int(np.flatnonzero(~inside)[0])
        raise KernelFault(wh, f"thread {int(W.tid[lanes][j])}: surface coordinates "
                              f"({', '.join(str(int(i[j])) for i in idx)}) lie outside the "
                              f"{' x '.join(map(str, d.extent))} surface of {d.element_bytes}-byte elements "
                              "(.trap; x is a byte coordinate)")
    if mode == "clamp":
        idx = [np.clip(i, 0, h) for i, h in zip(idx, hi)]
        inside = np.ones(x.shape, bool)
    off = idx[0]
    if len(idx) > 1:
        off = off + idx[1] * d.pitch
    if len(idx) > 2:
        off = off + idx[2] * d.slice
    if layer is not None:
        off = off + layer * d.slice
    return np.uint64(d.base) + np.where(inside, off, 0).astype(np.uint64), inside


def _surface_parts(ins, prog, name):
    """What suld (d, [object, coordinates]) and sust ([object, coordinates], a) share: the form, the data
    registers, the object and coordinate getters, bytes per access, the container type and the instruction text."""
    mods = Mods(ins)
    geom, vec, t, mode = _surface_form(ins, mods, name)
    if len(ins.operands) != 2:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes 2 operands, got {len(ins.operands)}")
    data, obj = ins.operands if name == "suld" else ins.operands[::-1]
    regs = list(data.items) if isinstance(data, P.Vec) else [data]
    if len(regs) != vec:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {'writes' if name == 'suld' else 'stores'} {vec} "
                                                f"registers, got {len(regs)}")
    getters = _object_and_coords(ins, prog, obj, geom, "s32")
    return geom, vec, t, mode, regs, getters, t.bits // 8 * vec, CONTAINER[max(t.bits, 8)], where(ins)


@register("suld")
def c_suld(ins, prog, pc):
    geom, vec, t, mode, regs, (get_handle, get_coords, get_layer), nbytes, cont, wh = _surface_parts(ins, prog, "suld")
    sets = [prog.write(r, t, ins) for r in regs]

    def op(W, m):
        lanes = mask_array(m) & W.live   # the executing lanes
        out = np.zeros((32, vec), cont)
        xs = [g(W) for g in get_coords]
        for d, sel in _descs(W, get_handle(W), lanes, wh, "surface", geom, surface=True):
            layer = _layers(d, None if get_layer is None else get_layer(W), sel)
            addrs, inside = _surface_addresses(W, d, xs, sel, nbytes, mode, layer, wh)
            vals = np.zeros((addrs.size, vec), cont)
            if inside.any():
                raw = access(W, "global", addrs[inside], W.tid[sel][inside], nbytes, wh)
                vals[inside] = np.ascontiguousarray(raw).view(cont).reshape(-1, vec)
            out[sel] = vals
        for k, s in enumerate(sets):
            s(W, out[:, k], None if lanes.all() else lanes)
    return op


@register("sust")
def c_sust(ins, prog, pc):
    geom, vec, t, mode, regs, (get_handle, get_coords, get_layer), nbytes, cont, wh = _surface_parts(ins, prog, "sust")
    gets = [prog.read(r, t, ins) for r in regs]

    def op(W, m):
        lanes = mask_array(m) & W.live   # the executing lanes
        vals = np.stack([g(W).astype(cont) for g in gets], axis=1)   # (32, vec)
        xs = [g(W) for g in get_coords]
        for d, sel in _descs(W, get_handle(W), lanes, wh, "surface", geom, surface=True):
            layer = _layers(d, None if get_layer is None else get_layer(W), sel)
            addrs, inside = _surface_addresses(W, d, xs, sel, nbytes, mode, layer, wh)
            if inside.any():
                data = np.ascontiguousarray(vals[sel][inside]).view(np.uint8).reshape(-1, nbytes)
                access(W, "global", addrs[inside], W.tid[sel][inside], nbytes, wh, data=data)
    return op
