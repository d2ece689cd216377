"""The package's shape (issue 22), read from the source with ast: layers, no import cycles, no hidden imports,
no module over 800 lines. A failure names the module, the line and the rule."""
import ast
import functools
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "tcemu"

# Lowest first; a module imports only from its own layer or lower ones.
LAYERS = [("core",), ("arith", "sfu"), ("layout",), ("hopper",), ("blackwell",), ("gemm",), ("ptx",),
          ("traces", "frontends"), ("tools",), ("testing",), ("serve",)]
TOP = len(LAYERS)  # cli.py, tcemu/__init__.py and the alias modules kept for users (tcemu/smem.py, ...)

# Imports inside functions are allowed for these (optional dependencies), or for start-up cost with a comment.
OPTIONAL = {"triton", "matplotlib", "pycute", "distributed", "dask", "hypothesis", "torch", "cuda"}
MAX_LINES = 800


def _modules():
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


MODULES = _modules()


def _layer(mod):
    parts = mod.split(".")
    if len(parts) == 1 or not (PACKAGE / parts[1]).is_dir():
        return TOP
    for rank, names in enumerate(LAYERS):
        if parts[1] in names:
            return rank
    raise AssertionError(f"{mod}: its folder {parts[1]!r} is in no layer of LAYERS")


def _targets(mod, node):
    """The tcemu modules an import statement loads (the deepest module each name resolves to)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODULES]
    if node.level:
        pkg = mod if MODULES[mod].name == "__init__.py" else mod.rsplit(".", 1)[0]
        base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
        base = ".".join(base + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    out = []
    for a in node.names:
        if f"{base}.{a.name}" in MODULES:
            out.append(f"{base}.{a.name}")
        elif base in MODULES:
            out.append(base)
    return out


@functools.cache
def _imports():
    """(module, line, target, inside_function, statement) for every import of a tcemu module (parsed at the first
    test that asks, not when the file is collected: every pytest-xdist worker collects every file)."""
    rows = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())
        inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(mod, node):
                    if t != mod and not mod.startswith(t + "."):   # a package's own __init__ runs first anyway
                        rows.append((mod, node.lineno, t, id(node) in inner, node))
    return rows


def test_every_folder_is_a_layer():
    for mod in MODULES:
        _layer(mod)


def test_no_upward_imports():
    bad = [f"{m}:{line} imports {t} (layer {_layer(t)} above {_layer(m)})"
           for m, line, t, _, _ in _imports() if _layer(t) > _layer(m)]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = {m: set() for m in MODULES}
    for m, _, t, _, _ in _imports():
        graph[m].add(t)
    seen, stack, on, cycles = {}, [], set(), []

    def visit(v, path):
        seen[v] = True
        on.add(v)
        for w in sorted(graph[v]):
            if w in on:
                cycles.append(" -> ".join(path[path.index(w):] + [w]))
            elif w not in seen:
                visit(w, path + [w])
        on.discard(v)

    for v in sorted(graph):
        if v not in seen:
            visit(v, [v])
    assert not cycles, "\n".join(cycles)


def _comment_near(path, line):
    lines = path.read_text().splitlines()
    return "#" in lines[line - 1] or (line >= 2 and lines[line - 2].strip().startswith("#"))


def test_imports_inside_functions_are_explained():
    """Inside a function only for start-up cost (with a comment saying so); optional dependencies are not tcemu
    modules and are checked by test_optional_dependencies_are_lazy."""
    bad = sorted({f"{m}:{line} imports {t} inside a function without a comment saying why"
                  for m, line, t, inner, _ in _imports() if inner and not _comment_near(MODULES[m], line)})
    assert not bad, "\n".join(bad)


def test_optional_dependencies_are_lazy():
    """`import tcemu` must work without triton, matplotlib, pycute, dask, hypothesis or torch."""
    bad = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            bad += [f"{mod}:{node.lineno} imports {n} at module level" for n in names
                    if n.split(".")[0] in OPTIONAL and mod.split(".")[1:2] != ["testing"]]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_module_size(mod):
    n = len(MODULES[mod].read_text().splitlines())
    assert n <= MAX_LINES, f"{MODULES[mod]} has {n} lines (at most {MAX_LINES})"
