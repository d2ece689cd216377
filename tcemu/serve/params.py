"""Request fields of `tcemu serve`: each read once, typed and bounded, or a ServeError naming the field.

A request is a flat mapping of field name -> value: strings from a query string, or strings, numbers and
booleans from a JSON body. Every view declares the fields it takes; any other field is refused.
"""
from ..core.errors import TcemuError
from ..core.validate import show

MAX_TEXT = 256  # characters of an ordinary field (the PTX text has its own, larger bound)


class ServeError(TcemuError):
    """A request field that is missing, unknown, malformed or out of range."""


class Params:
    """The fields of one request to one view; `known` lists the fields that view takes."""

    def __init__(self, raw, known):
        if not isinstance(raw, dict):
            raise ServeError("request", f"must be an object of fields, got {type(raw).__name__}")
        self.known = tuple(known)
        self.raw = {}
        for name, value in raw.items():
            if not isinstance(name, str) or name not in self.known:
                raise ServeError(str(name)[:40], f"unknown field; this view takes {', '.join(self.known)}")
            if value is not None and (isinstance(value, (list, dict)) or
                                      not isinstance(value, (str, int, float, bool))):
                raise ServeError(name, f"must be a string, number or boolean, got {type(value).__name__}")
            if isinstance(value, str):
                value = value.strip()
            self.raw[name] = value

    def given(self, name: str) -> bool:
        """Whether the request sets `name` to something other than empty."""
        return self.raw.get(name) not in (None, "")

    def text(self, name: str, default=None, *, max_len: int = MAX_TEXT):
        if not self.given(name):
            if default is _REQUIRED:
                raise ServeError(name, "is required")
            return default
        value = self.raw[name]
        if isinstance(value, bool):
            raise ServeError(name, f"must be text, got {show(value)}")
        value = str(value)
        if len(value) > max_len:
            raise ServeError(name, f"{len(value)} characters; at most {max_len}")
        return value

    def integer(self, name: str, default=None, *, lo=None, hi=None):
        """An int, given as a number or as text in any Python base (0x.., 0b.., decimal, underscores)."""
        if not self.given(name):
            if default is _REQUIRED:
                raise ServeError(name, "is required")
            return default
        value = self.raw[name]
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ServeError(name, f"must be an integer, got {show(value)}")
        if isinstance(value, str):
            if len(value) > 40:
                raise ServeError(name, f"{value[:20]!r}...: not an integer of at most 40 characters")
            try:
                value = int(value.replace("_", ""), 0)
            except ValueError:
                raise ServeError(name, f"{show(value)} is not an integer (hex needs 0x)") from None
        value = int(value)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ServeError(name, f"{show(value)} is out of range: expected {lo if lo is not None else '...'}.."
                                   f"{hi if hi is not None else '...'}")
        return value

    def choice(self, name: str, options, default=None):
        if not self.given(name):
            if default is _REQUIRED:
                raise ServeError(name, f"is required: one of {', '.join(map(str, options))}")
            return default
        value = self.raw[name]
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value) if value.bit_length() <= 64 else value
        elif isinstance(value, float):
            value = str(int(value)) if value.is_integer() else str(value)
        if not isinstance(value, str) or value not in options:
            raise ServeError(name, f"{show(value)}: expected one of {', '.join(map(str, options))}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        if not self.given(name):
            return default
        value = self.raw[name]
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in ("1", "true", "on", "yes"):
            return True
        if text in ("0", "false", "off", "no"):
            return False
        raise ServeError(name, f"{show(value)}: expected a boolean (1/0, true/false, on/off)")

    def int_list(self, name: str, default=None, *, min_len: int = 1, max_len: int = 5, lo=None, hi=None):
        """Integers separated by 'x' ("64x64"), or by commas or spaces ("0x400, 16": then each may be hex)."""
        text = self.text(name, default=None)
        if text is None:
            if default is _REQUIRED:
                raise ServeError(name, "is required")
            return default
        if "," in text or " " in text:  # then each entry may be hex (0x..)
            parts = text.replace(",", " ").split()
        else:
            parts = text.lower().split("x")
        if not min_len <= len(parts) <= max_len:
            raise ServeError(name, f"{show(text)}: expected {min_len} to {max_len} integers separated by x or commas")
        out = []
        for p in parts:
            try:
                v = int(p, 0) if len(p) <= 40 else None
            except ValueError:
                v = None
            if v is None:
                raise ServeError(name, f"{show(p)} in {show(text)} is not an integer") from None
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise ServeError(name, f"{v} in {show(text)} is out of range {lo}..{hi}")
            out.append(v)
        return out


_REQUIRED = object()
REQUIRED = _REQUIRED
