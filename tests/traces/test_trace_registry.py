"""The registry of trace kinds (tcemu/traces/registry.py): every kind declared once, in its module under
tcemu/traces/kinds, and the import graph of tcemu/traces one way (registry -> kinds -> archive), without cycles."""
import ast
import functools
import glob
import importlib
import json
import os
import pkgutil
import subprocess
import sys

import numpy as np
import pytest

import tcemu.traces
from tcemu import TraceError
from tcemu.traces import KINDS, Kind, Trace, check_trace, load_trace, replay
from tcemu.traces import kinds as kinds_pkg

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TRACES = sorted(glob.glob(os.path.join(ROOT, "traces", "*.npz")))
PACKAGE = os.path.join(ROOT, "tcemu")
SHARED = {"base", "fixtures"}  # kinds modules that declare no kind: what the kinds share


def _meta(path):
    with np.load(path) as z:  # the bundled traces: tcemu's own files, meta only
        return json.loads(z["meta"].tobytes())


def test_every_bundled_trace_kind_is_registered():
    assert TRACES
    assert {_meta(p)["kind"] for p in TRACES} <= set(KINDS)


def test_every_registered_kind_declares_columns_check_and_replay():
    assert len(KINDS) == 17
    for name, kind in KINDS.items():
        assert isinstance(kind, Kind) and kind.name == name
        assert kind.required and all(isinstance(c, str) and c for c in kind.required + kind.optional), name
        assert not set(kind.required) & set(kind.optional), name
        assert callable(kind.check) and callable(kind.replay), name
        assert kind.embedded is None or callable(kind.embedded), name


def test_each_kind_is_declared_in_one_kinds_module():
    declared = {}
    for info in pkgutil.iter_modules(kinds_pkg.__path__):
        module = importlib.import_module(f"tcemu.traces.kinds.{info.name}")
        if info.name in SHARED:
            assert not hasattr(module, "TRACE_KINDS"), info.name
            continue
        assert module.TRACE_KINDS, info.name
        for kind in module.TRACE_KINDS:
            assert kind.name not in declared, f"{kind.name} in {declared.get(kind.name)} and {info.name}"
            declared[kind.name] = info.name
            assert KINDS[kind.name] is kind
    assert set(declared) == set(KINDS)


def _npz(path, meta, **columns):
    np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **columns)
    return str(path)


def test_an_unknown_kind_is_refused_with_the_kinds_known(tmp_path):
    meta = {"format": "tcemu-trace", "version": 1, "kind": "bogus", "arch": "sm90"}
    path = _npz(tmp_path / "bogus.npz", meta, op=np.zeros(1, np.uint8))
    want = "bogus.npz: unknown kind 'bogus'; expected one of " + ", ".join(KINDS)
    for fn in (load_trace, replay):
        with pytest.raises(TraceError) as e:
            fn(path)
        assert e.value.field == "meta.kind" and want in str(e.value)
    with pytest.raises(TraceError, match="expected format 'tcemu-trace' version 1 and a known kind") as e:
        check_trace(Trace("hand", meta, {}))
    assert e.value.field == "meta.format"


def test_a_registered_kind_missing_its_columns_is_refused(tmp_path):
    meta = {"format": "tcemu-trace", "version": 1, "kind": "smem_wavefronts", "arch": "sm90"}
    with pytest.raises(TraceError, match="columns missing") as e:
        load_trace(_npz(tmp_path / "t.npz", meta, op=np.zeros(1, np.uint8)))
    assert e.value.field == ", ".join(KINDS["smem_wavefronts"].required[1:])


# ---- the import graph (ast: every import statement, those inside functions too)

def _modules():
    out = {}
    for path in glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True):
        rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
        out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


MODULES = _modules()


def _targets(module, node):
    """The tcemu modules an import statement of `module` loads (its parent packages are loaded first anyway)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        prefix = node.module
        if node.level:  # relative: from the module's package, up level - 1 packages
            base = module.split(".") if MODULES[module].endswith("__init__.py") else module.split(".")[:-1]
            prefix = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
    out = set()
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


@functools.cache
def _imports():
    """(module -> the tcemu modules it imports, [(module, line) of each import below the top level]); parsed at
    the first test that asks, not when the file is collected (every pytest-xdist worker collects every file)."""
    graph, inner = {}, []
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        top = {id(n) for n in tree.body}
        edges = graph.setdefault(module, set())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _targets(module, node) - {module}
                if id(node) not in top:
                    inner.append((module, node.lineno))
    return graph, inner


def _reach(start, packages=False):
    """The modules `start`'s import statements load, directly or not (packages: and every module's packages,
    whose __init__ runs first)."""
    graph, seen, todo = _imports()[0], set(), [start]
    while todo:
        here = todo.pop()
        for nxt in graph.get(here, set()) | ({here.rpartition(".")[0]} if packages and "." in here else set()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_traces_package_has_no_import_cycle():
    traces = [m for m in _imports()[0] if m.startswith("tcemu.traces.")]
    assert "tcemu.traces.registry" in traces and "tcemu.traces.kinds.base" in traces
    cycles = sorted(m for m in traces if m in _reach(m))
    assert cycles == []


def test_the_dependency_runs_registry_kinds_archive():
    for module in _imports()[0]:
        if module.startswith("tcemu.traces.kinds."):
            assert "tcemu.traces.registry" not in _reach(module), module
            assert not {"tcemu.traces.launches"} & _imports()[0][module], module
        if module.startswith("tcemu.traces."):
            assert "tcemu.traces" not in _imports()[0][module], f"{module} imports the package's __init__"
    assert not {m for m in _reach("tcemu.traces.archive") if m.startswith("tcemu.traces")}  # it knows no kind


def test_ptx_never_imports_traces():
    for module in _imports()[0]:
        if module == "tcemu.ptx" or module.startswith("tcemu.ptx."):
            assert not {m for m in _reach(module, packages=True) if m.startswith("tcemu.traces")}, module


def test_traces_imports_only_at_the_top():
    """Imports inside functions only for an optional dependency or start-up cost, each with its comment."""
    lines = {}
    for module, lineno in _imports()[1]:
        if module.startswith("tcemu.traces"):
            if module not in lines:
                with open(MODULES[module], encoding="utf-8") as f:
                    lines[module] = f.read().splitlines()
            assert "#" in lines[module][lineno - 1], f"{module}:{lineno} imports inside a function, uncommented"


def test_the_package_reexports_its_public_readers():
    for name in tcemu.traces.__all__:
        assert getattr(tcemu.traces, name) is not None
    assert {"load_trace", "check_trace", "replay", "trace_paths", "Trace", "thread_digests",
            "numerics_case_registers", "sp_numerics_case_matches", "TMA_CASE"} <= set(tcemu.traces.__all__)


def test_importing_traces_leaves_the_interpreter_unloaded():
    """Start-up: the package loads its registry (and with it tcemu.ptx) on first use of a reader only."""
    code = ("import sys, tcemu.traces, tcemu.kernel_inputs, tcemu.traces.archive\n"
            "assert not {'tcemu.ptx', 'tcemu.traces.registry'} & set(sys.modules), sorted(sys.modules)\n"
            "tcemu.traces.load_trace\n"
            "assert 'tcemu.traces.registry' in sys.modules\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=600)
