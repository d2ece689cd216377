"""Bit-exact mirror of the input generator of scripts/capture/capture_mma_sync.cu (the mma.sync numerics capture).

Every lane fills its A, B and C registers by register position, not through a fragment layout:

  z1 = mix(seed ^ (stream * 65536 + idx + 1) * 0x9E3779B97F4A7C15),  z2 = mix(z1 ^ 0xD1B54A32D192ED03)
  mix = splitmix64's finaliser; stream 0 A, 1 B, 2 C; idx = (lane * words + word) * per_word + element
  (a 64-bit register: idx = lane * registers + register)

and one element's bits follow from z1, z2 and the operand's mode (element_bits). All arithmetic is numpy uint64
with C's wrap-around.
"""
import numpy as np

__all__ = ["MODES", "element_bits", "lane_registers"]

MODES = {0: "narrow", 1: "wide", 2: "mixed scales", 3: "subnormal", 4: "specials", 5: "raw bits", 6: "+-1, +-2",
         7: "signed zeros", 8: "near overflow"}  # integers: 0 small, 1 any, 2 near the s32 limits, 3 near s8's
_U = np.uint64


def _mix(z):
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


def element_bits(seed: int, stream: int, idx: np.ndarray, mode: int, ebits: int, mbits: int, bits: int) -> np.ndarray:
    """uint64 bit patterns of elements `idx` (ebits 0: an integer of `bits` bits; else a float of ebits/mbits)."""
    with np.errstate(over="ignore"):
        k = (np.asarray(idx, np.uint64) + _U(stream * 65536 + 1)) * _U(0x9E3779B97F4A7C15)
        z1 = _mix(_U(seed) ^ k)
        z2 = _mix(z1 ^ _U(0xD1B54A32D192ED03))
    mask = _U((1 << bits) - 1) if bits < 64 else _U(~0 & 0xFFFFFFFFFFFFFFFF)
    if ebits == 0:
        if mode == 0:
            v = (z1 % _U(7)).astype(np.int64) - 3
            v = v.astype(np.uint64)
        elif mode == 2:
            v = np.where(z2 >> _U(63) != 0, _U(0x80000000) + (z1 & _U(0x3FFF)), _U(0x7FFFFFFF) - (z1 & _U(0x3FFF)))
        elif mode == 3:
            v = np.where(z2 >> _U(63) != 0, _U(0x80) + (z1 & _U(0xF)), _U(0x7F) - (z1 & _U(0xF)))
        else:
            v = z1
        return v & mask
    sign = z2 >> _U(63)
    r = ((z2 >> _U(16)) & _U(0xFFFF)).astype(np.int64)
    sp = (z2 >> _U(32)) & _U(63)
    man = z1 & _U((1 << mbits) - 1)
    emaxf = (1 << ebits) - 1
    bias = emaxf >> 1
    top = sign << _U(ebits + mbits)
    if mode == 5:
        return z1 & mask
    if mode == 7:
        return top
    if mode == 0:
        e = bias - 3 + r % 7
    elif mode == 1:
        e = 1 + r % (emaxf - 1)
    elif mode == 2:
        e = np.maximum(bias - np.array([0, 9, 20, 30])[r & 3] + (r >> 2) % 3 - 1, 0)
    elif mode == 3:
        e = r % 3
    elif mode == 4:
        e = bias - 3 + r % 7
        e = np.where((sp == 1) | (sp == 2), emaxf, e)
        man = np.where(sp == 1, _U(0), np.where(sp == 2, man | _U(1), man))
    elif mode == 6:
        e = bias + (r & 1)
        man = np.zeros_like(man)
    else:  # 8
        e = emaxf - 1 - r % 3
    out = top | (e.astype(np.uint64) << _U(mbits)) | man
    if mode == 4:
        out = np.where(sp == 0, top, out)
    return out


def lane_registers(seed: int, stream: int, mode: int, ebits: int, mbits: int, bits: int, words: int) -> np.ndarray:
    """(32, words) uint32 register words of every lane as the capture fills them (64-bit elements: words // 2
    registers, low word first)."""
    if bits == 64:
        regs = words // 2
        v = element_bits(seed, stream, np.arange(32 * regs), mode, ebits, mbits, 64).reshape(32, regs)
        out = np.empty((32, regs, 2), np.uint32)
        out[..., 0] = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        out[..., 1] = (v >> np.uint64(32)).astype(np.uint32)
        return out.reshape(32, words)
    per = 32 // bits
    v = element_bits(seed, stream, np.arange(32 * words * per), mode, ebits, mbits, bits).reshape(32, words, per)
    shifts = (np.arange(per, dtype=np.uint64) * np.uint64(bits))
    return np.bitwise_or.reduce(v << shifts, axis=2).astype(np.uint32)
