"""Counter-based input generator of the whole-kernel captures (numpy only).

Canonical copy; scripts/capture_kernels.py carries an identical copy (the capture imports nothing from
tcemu) and tests/test_kernel_fixtures.py checks that both give the same bits.

  word(seed, stream, i) = mix64(key + (i + 1) * GOLDEN),  key = mix64(seed ^ mix64(stream + 1))

(uint64 wrap-around; mix64 is splitmix64's finaliser; i is the row-major index of the element in the tensor
as stored). An element is built from its word w:

  w & 31 == 0           an exact zero (1/32 of elements), sign from bit 5
  bit 5                 sign
  (w >> 8) & 0xffff     mod (2 W + 1), minus W: the unbiased exponent, in [-W, W] (W = 4: magnitudes 2^-4..2^5)
  w >> 32               mantissa bits, the top ones dropped to fit the format

e4m3's biased exponents stay in 3..11, so it never makes NaN (exponent 15, mantissa 7); f32 keeps all 23
mantissa bits, so a tf32 consumer sees random low 13 bits to ignore or round.
"""
import numpy as np

from ..core.validate import as_choice, as_int, bounded_shape

__all__ = ["FORMATS", "WINDOW", "mix64", "words", "input_bits"]

# name -> (storage dtype, exponent bits, mantissa bits, bias)
FORMATS = {"bf16": (np.uint16, 8, 7, 127), "f16": (np.uint16, 5, 10, 15), "f32": (np.uint32, 8, 23, 127),
           "e4m3": (np.uint8, 4, 3, 7)}
WINDOW = 4

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


def mix64(z):
    """splitmix64's finaliser on a uint64 array (wrap-around arithmetic)."""
    z = np.asarray(z, dtype=np.uint64)
    z = (z ^ (z >> np.uint64(30))) * _MUL1
    z = (z ^ (z >> np.uint64(27))) * _MUL2
    return z ^ (z >> np.uint64(31))


def words(seed, stream, n):
    """(n,) uint64: word(seed, stream, i) for i = 0..n-1."""
    seed = np.array([seed], dtype=np.uint64)
    stream = np.array([stream], dtype=np.uint64)
    key = mix64(seed ^ mix64(stream + np.uint64(1)))
    idx = np.arange(1, n + 1, dtype=np.uint64)
    return mix64(key + idx * _GOLDEN)


def input_bits(dtype, shape, seed, stream):
    """Raw bit patterns (uint8/16/32 array of `shape`) of a `dtype` tensor ("bf16", "f16", "f32", "e4m3")."""
    dtype = as_choice(dtype, "dtype", tuple(FORMATS))
    store, ebits, mbits, bias = FORMATS[dtype]
    shape = bounded_shape(shape, "shape", lo=0)  # sizes are checked before anything is allocated
    seed, stream = as_int(seed, "seed", 0, (1 << 64) - 1), as_int(stream, "stream", 0, (1 << 64) - 1)
    n = int(np.prod(shape, dtype=np.int64))
    w = words(seed, stream, n)
    width = np.dtype(store).itemsize * 8
    sign = (w >> np.uint64(5)) & np.uint64(1)
    exp = ((w >> np.uint64(8)) & np.uint64(0xFFFF)) % np.uint64(2 * WINDOW + 1) + np.uint64(bias - WINDOW)
    mant = (w >> np.uint64(32)) & np.uint64((1 << mbits) - 1)
    zero = (w & np.uint64(31)) == np.uint64(0)
    bits = (sign << np.uint64(width - 1)) | np.where(zero, np.uint64(0), (exp << np.uint64(mbits)) | mant)
    return bits.astype(store).reshape(shape)
