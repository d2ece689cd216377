"""Argument checks at tcemu's public boundary: one helper per kind of argument.

Every public function coerces and checks its arguments with these helpers before any numba kernel runs or
any array is allocated. Each helper returns the coerced value or raises `error` (a TcemuError subclass:
the caller's module passes its own, e.g. SharedMemoryError) whose `field` names the parameter and whose
rule says what was expected. The rules, once for all modules:

- flags are `bool` or `numpy.bool_`; nothing else is truthy here ("False" is a string, 1 is an int);
- integers are `int` or a numpy integer scalar (never bool, float, or a string), inside a stated range;
- raw bit patterns are integer arrays whose every value lies in [0, 2^bits): float arrays are values,
  not bits, and are refused;
- typed values are arrays of the named element type (ml_dtypes / numpy), or integer bit patterns;
  values of another float type are refused (convert them with tcemu.arith.formats.to_bits, which rounds once);
- names are strings from a stated list;
- sizes are bounded before anything is allocated.
Error messages show user values through `show`, which never prints an unbounded text (Python refuses to
turn an int of more than 4,300 digits into decimal).
"""
import os

import numpy as np

from .errors import TcemuError

MAX_ELEMENTS = 1 << 24  # the largest array tcemu builds from a user's shape (far beyond any operand or tile)


def show(value, limit: int = 60) -> str:
    """repr(value) for an error message, bounded in length and safe for huge ints and arrays."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if v.bit_length() > 64:
            return f"{'-' if v < 0 else ''}an integer of {v.bit_length()} bits"
        return repr(value) if type(value) is int else f"{type(value).__name__}({v})"
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(show(v, 20) for v in value[:8]) + (", ..." if len(value) > 8 else "")
        text = f"[{inner}]" if isinstance(value, list) else f"({inner})"
    elif isinstance(value, (str, bytes, float, complex, np.floating, type(None))):
        text = repr(value)
    else:
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def as_bool(value, field: str, error=TcemuError) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise error(field, f"must be True or False (a bool), got {show(value)}")


def is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def as_int(value, field: str, lo=None, hi=None, error=TcemuError) -> int:
    """An int from an int or numpy integer, with lo <= value <= hi where given."""
    if not is_int(value):
        raise error(field, f"must be an integer{_range(lo, hi)}, got {show(value)}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise error(field, f"must be an integer{_range(lo, hi)}, got {show(v)}")
    return v


def as_int_literal(value, field: str, max_chars: int, too_long: str, expected: str, error=TcemuError) -> int:
    """An int from an int, numpy integer or integer literal string (0x / 0o / 0b prefixes, `_` separators); a
    string longer than max_chars is refused before it is parsed ("... is too long for {too_long}"), a non-integer
    as "must be {expected}". The caller checks the range."""
    if isinstance(value, str) and len(value) > max_chars:
        raise error(field, f"{show(value)} is too long for {too_long}")
    if isinstance(value, str):
        try:
            value = int(value.replace("_", ""), 0)
        except ValueError:
            raise error(field, f"{show(value)} is not an integer literal (hex needs 0x)") from None
    if not is_int(value):
        raise error(field, f"must be {expected}, got {show(value)}")
    return int(value)


def _range(lo, hi) -> str:
    if lo is None and hi is None:
        return ""
    if hi is None:
        return f" >= {lo}"
    if lo is None:
        return f" <= {hi:#x}" if hi > 1 << 20 else f" <= {hi}"
    return f" in [{lo}, {hi:#x}]" if hi > 1 << 20 else f" in [{lo}, {hi}]"


def as_choice(value, field: str, choices, error=TcemuError) -> str:
    """value, which must be a string in `choices`."""
    if isinstance(value, str) and value in choices:
        return value
    raise error(field, f"{show(value)} is not one of {', '.join(map(str, choices))}")


def as_array(value, field: str, error=TcemuError) -> np.ndarray:
    """np.asarray(value) without numpy's own exceptions (ragged lists, odd objects)."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise error(field, f"cannot be read as an array ({show(str(exc), 80)})") from None


def as_int_array(value, field: str, lo=None, hi=None, error=TcemuError, ndim=None, shape=None,
                 max_size: int = MAX_ELEMENTS, allow_bool: bool = False, what: str = "") -> np.ndarray:
    """An int64 array of integers in [lo, hi] (numpy integer arrays, lists of ints; an empty list too).

    Floats, strings, objects and (unless allow_bool) bools are refused, never truncated."""
    arr = as_array(value, field, error)
    if arr.dtype.kind == "f" and arr.size == 0:  # np.asarray([]) is float64
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "b" and allow_bool:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise error(field, f"must be integers, got {arr.dtype.name if arr.dtype.kind != 'O' else 'objects'}")
    if ndim is not None and arr.ndim != ndim:
        raise error(field, f"must have {ndim} dimension{'s' if ndim != 1 else ''}, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise error(field, f"must have shape {tuple(shape)}, got {arr.shape}")
    if arr.size > max_size:
        raise error(field, f"{arr.size:,} elements exceed the {max_size:,}-element limit")
    if arr.size:
        small, big = arr.min(), arr.max()
        low = lo if lo is not None else -(1 << 63)
        high = hi if hi is not None else (1 << 63) - 1
        if int(small) < low or int(big) > high:
            bad = int(small) if int(small) < low else int(big)
            where = np.unravel_index(int(np.argmax(arr == (small if int(small) < low else big))), arr.shape)
            raise error(field, f"value {show(bad)} at {tuple(map(int, where))} is outside "
                               f"[{show(low)}, {show(high)}]{what}")
    return arr.astype(np.int64, copy=False)


def as_uint_bits(value, bits: int, field: str, error=TcemuError, **kw) -> np.ndarray:
    """Raw bit patterns: an integer array whose every value lies in [0, 2^bits), as int64 (bits <= 32)."""
    return as_int_array(value, field, 0, (1 << bits) - 1, error, what=f" ({bits}-bit patterns)", **kw)


def as_typed_values(value, bits: int, field: str, numpy_type=None, signed: bool = False, name: str = "",
                    error=TcemuError, **kw) -> np.ndarray:
    """Raw bits (int64) of element values: an array of `numpy_type` (its bits, as stored) or integer bit
    patterns in [0, 2^bits) (for signed integer types also values in [-2^(bits-1), 0)). Any other float
    type is refused rather than converted: its bits would mean something else."""
    arr = as_array(value, field, error)
    if numpy_type is not None and arr.dtype == np.dtype(numpy_type) and arr.dtype.kind not in "iub":
        if arr.dtype.itemsize * 8 not in (8, 16, 32):
            raise error(field, f"{arr.dtype} has no whole-byte container")
        bits_type = {1: np.uint8, 2: np.uint16, 4: np.uint32}[arr.dtype.itemsize]
        out = np.ascontiguousarray(arr).view(bits_type).astype(np.int64)
        if out.size and int(out.max()) >> bits:  # fp4/fp6 types sit in the low bits of their byte
            raise error(field, f"{arr.dtype} holds {arr.dtype.itemsize * 8}-bit patterns; these elements store "
                               f"{bits}")
        return out
    if arr.dtype.kind == "b" and bits == 1:
        return arr.astype(np.int64)
    if arr.dtype.kind in "fcVO" and not (arr.dtype.kind == "f" and arr.size == 0):
        want = f"{np.dtype(numpy_type).name} values or " if numpy_type is not None else ""
        raise error(field, f"{arr.dtype} values cannot be stored as {name or f'{bits}-bit elements'}: give "
                           f"{want}integer bit patterns (tcemu.arith.formats.to_bits converts other values, "
                           "rounding once)")
    lo = -(1 << (bits - 1)) if signed else 0
    arr = as_int_array(arr, field, lo, (1 << bits) - 1, error, what=f" ({bits}-bit {name or 'patterns'})", **kw)
    return arr & ((1 << bits) - 1)


def bounded_shape(shape, field: str, error=TcemuError, max_elements: int = MAX_ELEMENTS, lo: int = 1):
    """A tuple of ints >= lo whose product stays within max_elements (checked before allocating)."""
    if is_int(shape):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise error(field, f"must be a tuple of integers, got {show(shape)}")
    dims = tuple(as_int(d, field, lo, max_elements, error) for d in shape)
    total = 1
    for d in dims:
        total *= d
    if total > max_elements:
        raise error(field, f"{show(list(dims))} holds {total:,} elements, more than the {max_elements:,} limit")
    return dims


def as_int_list(value, field: str, length=None, lo=None, hi=None, error=TcemuError) -> list:
    """A list of ints from a list, tuple or 1-D integer array (dimension 0 first, as the driver API)."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "iu":
            raise error(field, f"must be a list of integers, got {show(value)}")
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise error(field, f"must be a list of integers, got {show(value)}")
    if length is not None and len(value) != length:
        raise error(field, f"needs {length} integers (dimension 0 first), got {len(value)}: {show(list(value))}")
    return [as_int(v, field, lo, hi, error) for v in value]


def output_path(path, field: str, suffixes, error=TcemuError) -> str:
    """A file path to write: a string with one of `suffixes`, not a directory, in a writable directory."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path or "\0" in path:
        raise error(field, f"must be a file path, got {show(path)}")
    if not path.lower().endswith(tuple(suffixes)):
        raise error(field, f"{show(path)} must end in {' or '.join(suffixes)} (the extension picks the format)")
    if os.path.isdir(path):
        raise error(field, f"{show(path)} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise error(field, f"cannot write {show(path)}: {show(parent)} is not a writable directory")
    return path
