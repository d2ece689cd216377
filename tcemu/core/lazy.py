"""A package's names loaded on first use (PEP 562): `import tcemu` and `import tcemu.layout` cost milliseconds, and
`tcemu.layout.addressing.operand_addresses` still works without importing the submodule first. A command that needs
no model (`tcemu exec`'s launcher, `tcemu decode -h`) then starts without numba."""
import importlib
import importlib.util
import pkgutil
import sys


def lazy(package: str, exports=None, aliases=None):
    """(__getattr__, __dir__) for `package`: a name in `exports` (name -> submodule path) is that submodule's
    attribute of the same name, a name in `aliases` (name -> submodule path) is that submodule, and any other public
    name that is a submodule of the package is that module."""
    exports, aliases = exports or {}, aliases or {}

    def __getattr__(name):
        if name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
            setattr(sys.modules[package], name, value)   # the next look-up is a plain attribute
            return value
        if name in aliases:
            return importlib.import_module(f"{package}.{aliases[name]}")
        if name.isidentifier() and not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        module = sys.modules[package]
        return sorted(set(vars(module)) | set(exports) | set(aliases)
                      | {m.name for m in pkgutil.iter_modules(module.__path__) if not m.name.startswith("_")})

    return __getattr__, __dir__
