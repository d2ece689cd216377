"""Texture and surface objects: the header a cudaTextureObject_t / cudaSurfaceObject_t handle points at, and the
sampling arithmetic of tex / tld4 / suld / sust (ops/texture.py runs them; tcemu's libcudart writes the headers).

A handle is the device address of a 128-byte header in global memory (as a CUtensorMap is read by TMA:
tensormap.py). The real object is an opaque driver index; tcemu's header is its own, little-endian:

    offset size  field                          offset size  field
    0      4     magic "TCTX" (texture) or      32     8     pitch: bytes from one row to the next
                 "TCSF" (surface)               40     8     slice: bytes from one depth slice / layer to the next
    4      1     resource 0 array, 1 linear,    48     1x4   bits of channels x, y, z, w (0, 8, 16 or 32)
                 2 pitch2D                      52     1     channel kind 0 signed, 1 unsigned, 2 float
    5      1     dimensions 1, 2 or 3           53     1x3   address mode per dimension: 0 wrap, 1 clamp,
    6      1     flags: 1 layered, 2 normalized              2 mirror, 3 border (cudaTextureAddressMode)
                 coordinates, 4 read mode       56     8     reserved (zero)
                 normalized float               64     4x4   border colour (float32 x, y, z, w)
    7      1     filter 0 point, 1 linear       80..127      reserved (zero)
    8      8     base: device address of texel (0, 0, 0, layer 0)
    16     4x4   width, height, depth, layers (elements; unused dimensions 0)

Texels are stored row-major: texel (x, y, z) of layer l at base + l * slice + z * slice + y * pitch + x * bytes.

The sampling rules below were measured on an H100 (traces/texture_sm90.npz, kind `texture`; docs/guide.md
"Textures and surfaces"): missing channels read 0 (w too); with unnormalized coordinates wrap and mirror act as
clamp; a NaN coordinate reads texel 0; wrap and mirror act on the texel index (mirror: i mod 2N, reflected);
the border colour of an integer element read is the float's bits cut to the channel width, of a
normalized-float read the colour rounded to the format (v * 255 to the nearest, ties toward zero, clamped)
and read back; tld4's footprint starts at floor(x - 0.5), x - 0.5 rounded half up to 1/256 (the linear
filter's weight grid). Linear filtering (`filter_linear`) is bit-exact on every linear case of the trace:
8-bit weights (2-D: the corner weight a b / 256 rounded half up, the others what is left of a, b and 1), a
1-D texture filtered as a row of a 2-D one (in border mode half the weight goes to the border colour); float
texels aligned to the largest and cut to 4 bits below its last mantissa bit, summed exactly, rounded once, ties
away; 8/16-bit normalized texels filtered in integers to a 16-bit unorm / snorm value read as a float.
"""
import struct
from dataclasses import dataclass, field
from typing import List, Sequence

import numpy as np

from .errors import KernelFault, PtxError, PtxUnsupported

SIZE = 128
MAGIC_TEXTURE, MAGIC_SURFACE = b"TCTX", b"TCSF"
RESOURCES = {"array": 0, "linear": 1, "pitch2d": 2}
ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
FILTERS = {"point": 0, "linear": 1}
KINDS = {"signed": 0, "unsigned": 1, "float": 2}          # cudaChannelFormatKind
LAYERED, NORMALIZED_COORDS, NORMALIZED_READ = 1, 2, 4
_LAYOUT = "<4sBBBBQIIIIQQ4BB3B8x4f48x"
assert struct.calcsize(_LAYOUT) == SIZE


@dataclass
class TextureDesc:
    """A decoded header (also what `texture_object` encodes). `bits` per channel x, y, z, w; `address` per dimension."""
    resource: int = 0
    dims: int = 1
    base: int = 0
    width: int = 0
    height: int = 0
    depth: int = 0
    layers: int = 0
    pitch: int = 0
    slice: int = 0
    bits: Sequence[int] = (32, 0, 0, 0)
    kind: int = 2
    address: Sequence[int] = (1, 1, 1)
    filter: int = 0
    normalized_coords: bool = False
    normalized_read: bool = False
    layered: bool = False
    border: Sequence[float] = (0.0, 0.0, 0.0, 0.0)
    surface: bool = False
    extent: List[int] = field(default_factory=list)   # filled by decode: the sizes of dimensions 0..dims-1

    @property
    def channels(self) -> int:
        return sum(1 for b in self.bits if b)

    @property
    def element_bytes(self) -> int:
        return sum(self.bits) // 8

    @property
    def floaty(self) -> bool:
        """The read gives floats (float channels, or integers read as normalized floats)."""
        return self.kind == 2 or self.normalized_read

    def to_bytes(self) -> bytes:
        flags = (LAYERED if self.layered else 0) | (NORMALIZED_COORDS if self.normalized_coords else 0) | \
            (NORMALIZED_READ if self.normalized_read else 0)
        addr = list(self.address) + [1] * (3 - len(self.address))
        return struct.pack(_LAYOUT, MAGIC_SURFACE if self.surface else MAGIC_TEXTURE, self.resource, self.dims, flags,
                           self.filter, self.base, self.width, self.height, self.depth, self.layers, self.pitch,
                           self.slice, *self.bits, self.kind, *addr[:3], *[float(v) for v in self.border])


def validate(d: TextureDesc) -> str:
    """'' when the descriptor is one tcemu can sample, else the rule it breaks (CUDA's own rules where CUDA refuses
    the descriptor at creation: a linear filter of an integer element read is cudaErrorInvalidFilterSetting, a
    normalized-float read of 32-bit or float channels cudaErrorInvalidNormSetting, both measured on the H100)."""
    if d.resource not in (0, 1, 2):
        return f"resource {d.resource} is not 0 (array), 1 (linear) or 2 (pitch2D)"
    if d.dims not in (1, 2, 3):
        return f"dimensions {d.dims} is not 1, 2 or 3"
    b = list(d.bits)
    n = d.channels
    if n == 0 or any(x not in (0, 8, 16, 32) for x in b) or any(b[i] != b[0] for i in range(n)) or \
            any(b[i] for i in range(n, 4)) or n == 3:
        return f"channel bits {tuple(b)}: 1, 2 or 4 channels of equal width 8, 16 or 32 (x first)"
    if d.kind not in (0, 1, 2):
        return f"channel kind {d.kind} is not 0 (signed), 1 (unsigned) or 2 (float)"
    if d.kind == 2 and b[0] == 8:
        return "8-bit float channels do not exist"
    if d.normalized_read and (d.kind == 2 or b[0] == 32):
        return "a normalized-float read needs 8- or 16-bit integer channels (cudaErrorInvalidNormSetting)"
    if d.filter not in (0, 1):
        return f"filter {d.filter} is not 0 (point) or 1 (linear)"
    if d.filter == 1 and not d.floaty:
        return "linear filtering needs a float read (float channels or a normalized-float read; " \
               "cudaErrorInvalidFilterSetting)"
    if any(a not in (0, 1, 2, 3) for a in d.address):
        return f"address modes {tuple(d.address)}: each 0 wrap, 1 clamp, 2 mirror or 3 border"
    ext = [d.width, d.height, d.depth][:d.dims]
    if any(e < 1 for e in ext) or (d.layered and d.layers < 1):
        return f"extent {tuple(ext)}{f' x {d.layers} layers' if d.layered else ''} has an empty dimension"
    if d.resource == 1 and d.dims != 1:
        return "a linear resource is one-dimensional"
    if d.dims > 1 and d.pitch < d.width * d.element_bytes:
        return f"pitch {d.pitch} is less than a row ({d.width} x {d.element_bytes} bytes)"
    return ""


def decode(raw: bytes) -> TextureDesc:
    """The descriptor of a 128-byte header; PtxError naming the rule when it is none."""
    if len(raw) != SIZE:
        raise PtxError("texture", f"a header is {SIZE} bytes, got {len(raw)}")
    (magic, res, dims, flags, filt, base, w, h, dpt, lay, pitch, slc, b0, b1, b2, b3, kind, a0, a1, a2,
     *border) = struct.unpack(_LAYOUT, bytes(raw))
    if magic not in (MAGIC_TEXTURE, MAGIC_SURFACE):
        raise PtxError("texture", f"no texture or surface header here (magic {magic!r}, expected "
                                  f"{MAGIC_TEXTURE!r} or {MAGIC_SURFACE!r})")
    d = TextureDesc(res, dims, base, w, h, dpt, lay, pitch, slc, (b0, b1, b2, b3), kind, (a0, a1, a2), filt,
                    bool(flags & NORMALIZED_COORDS), bool(flags & NORMALIZED_READ), bool(flags & LAYERED),
                    tuple(border), magic == MAGIC_SURFACE)
    rule = validate(d)
    if rule:
        raise PtxError("texture", rule)
    d.extent = [w, h, dpt][:dims]
    return d


def texture_object(array: np.ndarray, *, kind=None, channels: int = None, address="clamp", filter: str = "point",
                   normalized_coords: bool = False, normalized_read: bool = False, border=(0.0, 0.0, 0.0, 0.0),
                   dims: int = None, layered: bool = False, resource: str = "array", surface: bool = False):
    """A texture (or surface) object over a numpy array for Module.launch: pass the result as a kernel's .u64
    texture parameter; the launch maps the array and a header pointing at it, and the parameter gets the header's
    address. The array's last axis holds the channels when `channels` > 1 (1, 2 or 4); the other axes are
    (height, width) or (depth, height, width) for 2-D / 3-D (or `dims`), after a first axis of layers when
    `layered`. `kind` ("signed", "unsigned", "float") overrides the array's; `address` is one mode or one per
    dimension ("wrap", "clamp", "mirror", "border")."""
    return TextureObject(array, dict(kind=kind, channels=channels, address=address, filter=filter,
                                     normalized_coords=normalized_coords, normalized_read=normalized_read,
                                     border=border, dims=dims, layered=layered, resource=resource, surface=surface))


def surface_object(array: np.ndarray, **kw):
    """A surface object over a numpy array (texture_object's arguments; suld / sust address x in bytes)."""
    return texture_object(array, surface=True, **kw)


class TextureObject:
    """A texture_object(...) argument: the array and the header fields; `header(address)` encodes the header once
    the launch knows where the array lives."""

    def __init__(self, array, opts):
        if not isinstance(array, np.ndarray) or array.dtype.kind not in "iuf" or array.dtype.itemsize not in (1, 2, 4):
            raise PtxError("texture_object", "takes a numpy array of 8-, 16- or 32-bit integers or 16/32-bit floats")
        ch = opts["channels"] or 1
        if ch not in (1, 2, 4):
            raise PtxError("texture_object", f"channels must be 1, 2 or 4, got {ch}")
        shape = array.shape[:-1] if ch > 1 else array.shape
        if ch > 1 and array.shape[-1] != ch:
            raise PtxError("texture_object", f"the last axis holds the {ch} channels; shape is {array.shape}")
        layered = bool(opts["layered"])
        layers = shape[0] if layered and shape else 0
        shape = shape[1:] if layered else shape
        dims = opts["dims"] or len(shape)
        if dims not in (1, 2, 3) or len(shape) != dims or (layered and dims == 3):
            raise PtxError("texture_object", f"a {dims}-D{' layered' if layered else ''} texture needs a "
                                             f"{dims + layered}-axis array (plus channels), got shape {array.shape}")
        b = array.dtype.itemsize * 8
        kind = {"i": 0, "u": 1, "f": 2}[array.dtype.kind] if opts["kind"] is None else KINDS[opts["kind"]]
        modes = opts["address"]
        modes = [modes] * 3 if isinstance(modes, str) else list(modes) + ["clamp"] * (3 - len(modes))
        for m in modes:
            if m not in ADDRESS_MODES:
                raise PtxError("texture_object", f"address mode {m!r} is none of {sorted(ADDRESS_MODES)}")
        if opts["filter"] not in FILTERS or opts["resource"] not in RESOURCES:
            raise PtxError("texture_object", f"filter is one of {sorted(FILTERS)}, resource one of "
                                             f"{sorted(RESOURCES)}")
        ext = list(reversed(shape)) + [0] * (3 - dims)
        esize = b // 8 * ch
        self.array = array
        self.desc = TextureDesc(RESOURCES[opts["resource"]], dims, 0, ext[0], ext[1], ext[2], layers,
                                ext[0] * esize, ext[0] * max(ext[1], 1) * esize, tuple([b] * ch + [0] * (4 - ch)),
                                kind, tuple(ADDRESS_MODES[m] for m in modes), FILTERS[opts["filter"]],
                                bool(opts["normalized_coords"]), bool(opts["normalized_read"]), layered,
                                tuple(float(v) for v in opts["border"]), bool(opts["surface"]))
        rule = validate(self.desc)
        if rule:
            raise PtxError("texture_object", rule)

    def header(self, base: int) -> np.ndarray:
        self.desc.base = base
        return np.frombuffer(self.desc.to_bytes(), np.uint8).copy()


def read_header(W, handle: int, wh, what: str) -> TextureDesc:
    """The descriptor a handle names: KernelFault (naming the instruction) when it points at no valid header."""
    gmem = W.cta.launch.gmem
    if handle % 8 or not any(a.base <= handle and handle + SIZE <= a.end for a in gmem.allocs):
        raise KernelFault(wh, f"{what} handle {handle:#x} points at no texture or surface header (no mapped "
                              f"{SIZE}-byte header, 8-byte aligned, there)")
    raw = gmem.load(np.array([handle], np.uint64), SIZE, [0], wh)[0]
    try:
        return decode(raw.tobytes())
    except PtxError as e:
        raise KernelFault(wh, f"{what} handle {handle:#x}: {e.rule if hasattr(e, 'rule') else e}") from None


# ------------------------------------------------------------------------------------------------ sampling math

def channel_values(raw: np.ndarray, d: TextureDesc) -> np.ndarray:
    """(n, element bytes) texel bytes -> (n, 4) channel values: float32 for float channels, int64 for integers;
    missing channels 0."""
    n, ch, b = raw.shape[0], d.channels, d.bits[0]
    out_t = np.float32 if d.kind == 2 else np.int64
    out = np.zeros((n, 4), out_t)
    dt = {(2, 32): "<f4", (2, 16): "<f2", (0, 8): "i1", (1, 8): "u1", (0, 16): "<i2", (1, 16): "<u2",
          (0, 32): "<i4", (1, 32): "<u4"}[(d.kind, b)]
    vals = np.ascontiguousarray(raw).view(dt).reshape(n, ch)
    out[:, :ch] = vals.astype(out_t)
    return out


def normalize(v: np.ndarray, d: TextureDesc) -> np.ndarray:
    """A normalized-float read of integer channels (CUDA Programming Guide, "Texture Fetching": unsigned v / max,
    signed max(v / max, -1)); float32."""
    m = float((1 << (d.bits[0] - (1 if d.kind == 0 else 0))) - 1)
    f = (v.astype(np.float64) / m).astype(np.float32)
    return np.maximum(f, np.float32(-1.0)) if d.kind == 0 else f


def border_values(d: TextureDesc) -> np.ndarray:
    """The border colour as the read sees it (4 values in the read's type; measured, module docstring)."""
    col = np.array(d.border, np.float32)
    ch = d.channels
    keep = np.arange(4) < ch
    if d.kind == 2:
        return np.where(keep, col, np.float32(0))
    b = d.bits[0]
    if d.normalized_read:
        return np.where(keep, normalize(_border_steps(d), d), np.float32(0))
    raw = col.view(np.uint32).astype(np.int64) & ((1 << b) - 1)
    if d.kind == 0:
        raw = np.where(raw >= 1 << (b - 1), raw - (1 << b), raw)
    return np.where(keep, raw, 0)


def _border_steps(d: TextureDesc) -> np.ndarray:
    """The border colour of a normalized-float read in the format's integer steps: v * max to the nearest, ties
    toward zero (0.5 x 255 reads 127 / 255), clamped."""
    m = (1 << (d.bits[0] - (1 if d.kind == 0 else 0))) - 1
    v = np.array(d.border, np.float32).astype(np.float64) * m
    q = np.clip(np.where(v >= 0, np.ceil(v - 0.5), np.floor(v + 0.5)), -m if d.kind == 0 else 0, m)
    return np.where(np.arange(4) < d.channels, q, 0).astype(np.int64)


NORMALIZED_BITS = 21   # fractional bits a normalized coordinate keeps before it is scaled by the width


def _fixed(x: np.ndarray, n: int, normalized: bool):
    """A float32 coordinate in texels (float64, exact); NaN reads as 0, infinities as a far coordinate. A
    normalized coordinate is cut (floor) to NORMALIZED_BITS fractional bits, then scaled by the width n: on the
    H100, x = 1/13 + 2 ulp on a width of 13 still reads texel 0 (the trace's width-13 sweeps fit 16 to 23 bits
    for nearest-point sampling; its linear-filter weights only 21: 0.8126506 on 13 texels has weight 16/256)."""
    v = np.nan_to_num(x.astype(np.float32).astype(np.float64), nan=0.0, posinf=2.0 ** 40, neginf=-2.0 ** 40)
    v = np.clip(v, -2.0 ** 40, 2.0 ** 40)
    if normalized:
        v = np.floor(v * 2.0 ** NORMALIZED_BITS) / 2.0 ** NORMALIZED_BITS * n
    return v


def resolve(i: np.ndarray, n: int, mode: int, normalized: bool):
    """Texel index i (int64) of a dimension of n texels under an address mode -> (index in range, outside: the
    border colour instead). Wrap and mirror need normalized coordinates; without, they act as clamp (measured)."""
    if mode == 3:
        out = (i < 0) | (i >= n)
        return np.clip(i, 0, n - 1), out
    if mode == 0 and normalized:
        return np.mod(i, n), np.zeros(i.shape, bool)
    if mode == 2 and normalized:
        m = np.mod(i, 2 * n)
        return np.where(m >= n, 2 * n - 1 - m, m), np.zeros(i.shape, bool)
    return np.clip(i, 0, n - 1), np.zeros(i.shape, bool)


def point_taps(d: TextureDesc, coords: List[np.ndarray]):
    """Nearest-point sampling: per dimension (index, outside) of the texel floor(x) (x * n when normalized)."""
    out = []
    for k, x in enumerate(coords):
        n = d.extent[k]
        i = np.floor(_fixed(x, n, d.normalized_coords)).astype(np.int64)
        out.append(resolve(i, n, d.address[k], d.normalized_coords))
    return out


def linear_taps(d: TextureDesc, coords: List[np.ndarray]):
    """The 2 x 2 footprint of tld4 (and of linear filtering): per dimension (i0, out0, i1, out1, alpha), alpha
    in 1/256 units: x - 0.5 rounded half up to 1/256 (CUDA Programming Guide "Linear Filtering": 8 fractional
    bits; the rounding measured)."""
    out = []
    for k, x in enumerate(coords):
        n = d.extent[k]
        f = np.floor(_fixed(x, n, d.normalized_coords) * 256.0 - 127.5).astype(np.int64)
        i0, alpha = f >> 8, f & 255
        a, oa = resolve(i0, n, d.address[k], d.normalized_coords)
        b, ob = resolve(i0 + 1, n, d.address[k], d.normalized_coords)
        out.append((a, oa, b, ob, alpha))
    return out


def read_values(raw: np.ndarray, d: TextureDesc) -> np.ndarray:
    """Texel bytes -> (n, 4) values as the read gives them (float32, or int64 for an integer element read)."""
    v = channel_values(raw, d)
    return normalize(v, d) if d.normalized_read else v


def sample(d: TextureDesc, coords: List[np.ndarray], fetch, gather: int = -1) -> np.ndarray:
    """tex / tld4 over n lanes: (n, 4) uint32 result words. coords: float32 arrays, one per dimension;
    fetch(indices per dimension, lanes to read) -> (lanes, element bytes) texel bytes. gather >= 0: tld4 of that
    component: the component of the four texels of the bilinear footprint."""
    n = coords[0].size
    if d.filter == 0 and gather < 0:
        taps = point_taps(d, coords)
        out = np.any([o for _, o in taps], axis=0)
        vals = np.empty((n, 4), np.float32 if d.floaty else np.int64)
        vals[out] = border_values(d)
        if (~out).any():
            vals[~out] = read_values(fetch([i[~out] for i, _ in taps], ~out), d)
        return _words(vals)
    taps = linear_taps(d, coords)
    filtering = gather < 0
    if filtering:
        rule = linear_refusal(d)
        if rule:
            raise PtxUnsupported("texture", rule)
    steps = filtering and d.kind != 2   # normalized reads filter the texels' integer steps

    def corner(pick):   # pick[k]: 0 -> i0, 1 -> i1 of dimension k
        idx = [t[2] if p else t[0] for t, p in zip(taps, pick)]
        out = np.any([t[3] if p else t[1] for t, p in zip(taps, pick)], axis=0)
        vals = np.empty((n, 4), np.int64 if steps or not d.floaty else np.float32)
        vals[out] = _border_steps(d) if steps else border_values(d)
        if (~out).any():
            raw = fetch([i[~out] for i in idx], ~out)
            vals[~out] = channel_values(raw, d) if steps else read_values(raw, d)
        return vals
    if filtering:
        return filter_linear(d, [t[4] for t in taps], corner)
    order = [(0, 1), (1, 1), (1, 0), (0, 0)]   # PTX tld4: (i0, j1), (i1, j1), (i1, j0), (i0, j0); the trace agrees
    return _words(np.stack([corner(p)[:, gather] for p in order], axis=1))


# ------------------------------------------------------------------------------------------------ linear filter
# Every rule below is matched bit for bit by the 159 linear-filter cases of traces/texture_sm90.npz (float32,
# f16, 8- and 16-bit unsigned / signed normalized reads; 1-D and 2-D; every address mode).

def linear_refusal(d: TextureDesc) -> str:
    """'' when tcemu models linear filtering of this texture, else what the H100 capture did not measure."""
    if d.dims == 3:
        return "trilinear filtering of 3-D textures is not modelled (not captured on silicon)"
    if d.layered:
        return "linear filtering of layered textures is not modelled (not captured on silicon)"
    if d.dims == 1 and (d.address[0] == 3) != (d.address[1] == 3):
        return ("linear filtering of a 1-D texture with address modes x and y not both border (or both not) is not "
                "modelled: the H100 filters a 1-D texture as a row of a 2-D one, y's border row measured only with "
                "all modes equal")
    return ""


def filter_weights(alphas: List[np.ndarray]):
    """Corner weights in 1/256 (int64), with the corner picks: 1-D (256 - a, a); 2-D the corner a b / 256 rounded
    half up and the other corners what is left of a, b and 256 (the trace's 1/128-offset 2-D sweep: products
    rounded independently miss where all four tie)."""
    if len(alphas) == 1:
        a = alphas[0]
        return [((0,), 256 - a), ((1,), a)]
    a, b = alphas
    ab = (a * b + 128) >> 8
    return [((0, 0), 256 - a - b + ab), ((1, 0), a - ab), ((0, 1), b - ab), ((1, 1), ab)]


def filter_linear(d: TextureDesc, alphas: List[np.ndarray], corner) -> np.ndarray:
    """Linear filtering: (n, 4) result words from the weights (alphas per dimension in 1/256) and corner(pick) ->
    (n, 4) texel values (float32 channels, or int64 integer steps of a normalized read; borders substituted).
    A 1-D texture is filtered as row y = 0 of a 2-D one, its rows j0 = -1 and j1 = 0 at b = 1/2: in border mode
    row -1 is the border colour (the trace's 1-D border sweeps read (border + the 1-D filter) / 2)."""
    terms = [(corner(p), w) for p, w in filter_weights(alphas)]
    if d.dims == 1 and d.address[1] == 3:
        half = (alphas[0] + 1) >> 1   # a * 128 / 256 rounded half up
        colour = _border_steps(d) if d.kind != 2 else border_values(d)
        terms = [(np.broadcast_to(colour, terms[0][0].shape), np.full_like(half, 128)),
                 (terms[0][0], 128 - half), (terms[1][0], half)]
    vals = np.stack([v for v, _ in terms])
    w = np.stack([w for _, w in terms])[:, :, None]
    if d.kind == 2:
        p, emin, rmin = (24, -126, -149) if d.bits[0] == 32 else (11, -14, -24)
        return _words(_filter_float(vals.astype(np.float64), w, p, emin, rmin).astype(np.float32))
    return _words(_filter_steps(vals, w, d))


FILTER_GUARD_BITS = 4   # bits a float texel keeps below the last mantissa bit of the largest texel it is summed with


def _filter_float(v, w, p, emin, rmin):
    """sum w v / 256 over axis 0 as the H100 filters floats of p-bit significands (f16: 11, float32: 24): each
    texel with a weight aligned to the largest such texel's exponent (at least emin, the smallest normal's) and
    cut toward zero FILTER_GUARD_BITS bits below that one's last mantissa bit; the weighted sum exact; rounded to
    p bits (not below 2^rmin, the subnormal step) to the nearest, ties away from zero. Matches every float32 and
    f16 linear case of traces/texture_sm90.npz; its texels were all finite (others are refused)."""
    active = (w > 0) & (v != 0)
    if not np.isfinite(v[active]).all():
        raise PtxUnsupported("texture", "linear filtering of an infinite or NaN texel (or border colour) is not "
                                        "modelled (not captured on silicon)")
    lead = np.frexp(np.where(active, v, 1.0))[1] - 1
    top = np.where(active, np.maximum(lead, emin), -(1 << 20)).max(axis=0)
    lsb = top - (p - 1 + FILTER_GUARD_BITS)
    q = np.where(active, np.trunc(np.ldexp(np.where(active, v, 0.0), -lsb[None])), 0.0).astype(np.int64)
    tot = (q * w).sum(axis=0)                     # value: tot * 2^(lsb - 8); |tot| < 2^41
    mag = np.abs(tot)
    msb = np.frexp(mag.astype(np.float64))[1] - 1 + lsb - 8
    step = np.maximum(msb - p + 1, rmin)          # the result's last bit
    sh = np.clip(step - (lsb - 8), 0, 62)
    r = np.where(sh > 0, (mag + ((np.int64(1) << sh) >> 1)) >> sh, mag)
    out = np.ldexp(r.astype(np.float64), np.where(sh > 0, step, lsb - 8))
    return np.where(tot < 0, -out, out)


def _filter_steps(k, w, d: TextureDesc):
    """A normalized read: the weighted sum Y = sum w k of the texels' integer steps k (-128 and -32768 included)
    to a 16-bit unorm u (u / 65535) or snorm s (s / 32767, clamped at -1), read as the nearest float32. 8-bit
    unsigned: u = Y * 257 / 256 to the nearest (the steps widened to 16 bits); 16-bit: Y / 256 to the nearest,
    ties up; 8-bit signed: s = Y + (Y + 64 + 16 floor(Y / 4096)) / 128 rounded down (Y * 258.0078 / 256 with the
    last term from Y's top bits; the only form that matches all 51,696 s8 results). Ties and widening as measured
    on every normalized-read linear case of traces/texture_sm90.npz."""
    y = (k.astype(np.int64) * w).sum(axis=0)
    if d.kind == 1:
        u = y + ((y + 128) >> 8) if d.bits[0] == 8 else (y + 128) >> 8
        return (u.astype(np.float64) / 65535.0).astype(np.float32)
    s = y + ((y + 64 + ((y >> 12) << 4)) >> 7) if d.bits[0] == 8 else (y + 128) >> 8
    return (np.maximum(s, -32767).astype(np.float64) / 32767.0).astype(np.float32)


def _words(vals: np.ndarray) -> np.ndarray:
    if vals.dtype == np.float32:
        return vals.view(np.uint32)
    return vals.astype(np.int64).astype(np.uint32)
