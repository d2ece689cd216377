"""Names and paths as a person reads them in tcemu's messages.

CUTLASS kernels carry mangled names of 1,500 characters: `short_name` keeps the start of the mangled name and
adds the demangled form, with nested template arguments folded to `<…>`, when `c++filt` is on PATH or a Python
demangler (cxxfilt, itanium_demangler) is installed; tcemu depends on neither. Triton fixtures were built in
some folder on some machine and their `.file` directives keep that absolute path: `source_path` cites such a
path relative to the repository (or the installed package) instead, at message time; the fixtures stay as built.
"""
import functools
import os
import re
import shutil
import subprocess
from typing import Optional

LONG = 80                      # a name longer than this is shortened
KEEP = 40                      # characters of a long mangled name kept as they are
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
_MANGLED = re.compile(r"_Z[A-Za-z0-9_$]{%d,}" % (LONG - 2))
_PARAM = re.compile(r"^(.*?)(_param_\d+)$")
_LOC = re.compile(r"\((/[^()\s]+?):(\d+)\)")   # "(…/file.py:LINE)", how a fault cites an instruction's .loc
_KNOWN = ("scripts", "tests", "examples", "tcemu")


@functools.lru_cache(maxsize=512)
def demangle(name: str) -> Optional[str]:
    """The C++ name of an Itanium-mangled `name`, or None when no demangler is at hand or it fails."""
    if not isinstance(name, str) or not name.startswith("_Z") or len(name) > 20000:
        return None
    exe = shutil.which("c++filt")
    if exe:
        try:
            out = subprocess.run([exe, name], capture_output=True, text=True, timeout=10)
            text = out.stdout.strip()
            if out.returncode == 0 and text and text != name:
                return text
        except (OSError, subprocess.SubprocessError):
            pass
    try:  # optional dependency: a ctypes wrapper of the C++ runtime's demangler, if installed
        import cxxfilt
        text = cxxfilt.demangle(name)
        if text and text != name:
            return text
    except Exception:  # noqa: BLE001 - absent, or it cannot read this name: no demangled form
        pass
    try:  # optional dependency: a pure-Python demangler, if installed
        import itanium_demangler
        node = itanium_demangler.parse(name)
        if node is not None:
            return str(node)
    except Exception:  # noqa: BLE001 - as above
        pass
    return None


def fold_templates(text: str, depth: int = 1) -> str:
    """`text` with template arguments nested deeper than `depth` replaced by `…` (`a<b<c>>` -> `a<b<…>>` at 1)."""
    out, level = [], 0
    for ch in text:
        if ch == "<":
            level += 1
            if level == depth + 1:
                out.append("<…")
            elif level <= depth:
                out.append(ch)
        elif ch == ">":
            if level == depth + 1:
                out.append(">")
            elif level <= depth:
                out.append(ch)
            level = max(level - 1, 0)
        elif level <= depth:
            out.append(ch)
    return "".join(out)


def _signature_head(text: str) -> str:
    """A demangled function without its return type and parameter list."""
    depth, cut = 0, len(text)
    for i in range(len(text) - 1, -1, -1):  # the parameter list: the last top-level "(...)"
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                cut = i
                break
    head = text[:cut]
    if head.startswith("void "):
        head = head[5:]
    return head


def pretty(name: str, limit: int = 100) -> Optional[str]:
    """The demangled name, folded to at most about `limit` characters, or None."""
    text = demangle(name)
    if text is None:
        return None
    text = _signature_head(text)
    for depth in (3, 2, 1):
        if len(text) <= limit:
            break
        text = fold_templates(text, depth)
    if len(text) > limit:  # too many arguments even folded: the first ones, then "…"
        cut = text.rfind(", ", 0, limit)
        text = (text[:cut] if cut > 0 else text[:limit]) + ", …>"
    return text


def short_name(name: str) -> str:
    """`name` itself when short, else its first KEEP characters, `…`, its length and its demangled form."""
    if not isinstance(name, str) or len(name) <= LONG:
        return name
    base, suffix = name, ""
    m = _PARAM.match(name)
    if m:  # a parameter of a mangled entry: demangle the entry, keep the parameter's number
        base, suffix = m.group(1), " " + m.group(2).lstrip("_").replace("_", " ")
    nice = pretty(base)
    head = f"{base[:KEEP]}…"
    return (f"{head} ({nice}{suffix}; {len(name):,} characters)" if nice else
            f"{head}{name[-12:] if not suffix else ''} ({len(name):,} characters{suffix and ','}{suffix})")


def source_path(path: str) -> str:
    """A path from a `.file` directive, relative to the repository when its end names a file there (the
    fixtures keep the build machine's absolute paths), after site-packages for an installed package's, or from
    a known folder (scripts/, tests/, ...) on; the file name when none applies. Relative paths stay as they are."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return path
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    for i in range(1, len(parts)):
        if os.path.exists(os.path.join(ROOT, *parts[i:])) and len(parts) - i >= 2:
            return "/".join(parts[i:])
    if "site-packages" in parts:
        return "/".join(parts[len(parts) - parts[::-1].index("site-packages"):])
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in _KNOWN:
            return "/".join(parts[i:])
    return parts[-1] if parts else path


def tidy(text: str, files=()) -> str:
    """A message as the CLI prints it: every long mangled name shortened (demangled the first time it appears,
    its head alone after that), and the build paths of `.file` directives (`files`, and any "(/abs/path:LINE)"
    citation) relative."""
    if not isinstance(text, str):
        return text
    for path in sorted({f for f in files if isinstance(f, str) and os.path.isabs(f)}, key=len, reverse=True):
        text = text.replace(path, source_path(path))
    text = _LOC.sub(lambda m: f"({source_path(m.group(1))}:{m.group(2)})", text)
    seen = set()

    def one(m):
        name = m.group(0)
        if name in seen:
            return f"{name[:KEEP]}…"
        seen.add(name)
        return short_name(name)
    return _MANGLED.sub(one, text)
