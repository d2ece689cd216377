"""Compiled test programs kept between sessions: $TCEMU_TEST_CACHE, else $XDG_CACHE_HOME/tcemu-tests, else
~/.cache/tcemu-tests (TCEMU_TEST_CACHE=off: no cache, every session builds afresh into a temporary folder).

A binary's file name carries a digest of everything that makes it (sources, flags, compiler versions), so a change
to any of them builds it again. A build holds a lock, so concurrent sessions or pytest-xdist workers build once and
the others wait for it; the binary appears by an atomic rename, whole or not at all."""
import fcntl
import hashlib
import os
import tempfile
import threading
from pathlib import Path


def cache_dir(kind):
    """The cache folder of `kind` (None: caching is off)."""
    where = os.environ.get("TCEMU_TEST_CACHE")
    if where == "off":
        return None
    base = Path(where) if where else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tcemu-tests"
    return base / kind


def digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def cached(kind, name, key, build):
    """The path of binary `name`: from the cache under `key` (digest()), or made by build(path) (which must write
    the file at path and raise on failure)."""
    cache = cache_dir(kind)
    if cache is None:
        exe = Path(tempfile.mkdtemp(prefix=f"tcemu_{kind}_")) / name
        build(str(exe))
        return str(exe)
    exe = cache / f"{name}-{key}"
    if exe.is_file():
        return str(exe)
    cache.mkdir(parents=True, exist_ok=True)
    with open(exe.with_name(exe.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not exe.is_file():
            tmp = exe.with_name(exe.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                build(str(tmp))
                os.replace(tmp, exe)
            finally:
                tmp.unlink(missing_ok=True)
    return str(exe)
