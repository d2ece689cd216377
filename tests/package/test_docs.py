"""Every runnable code block of README.md and docs/*.md runs as written (docs/internals.md, "Code blocks in the docs").

A fenced block runs when its language is python, bash, sh or console and its info string does not say `no-run`
(kept for install and GPU capture commands). Python blocks of one file run in order in one fresh namespace (later
blocks may use earlier names); a python block that imports triton runs on its own, skipped without Triton. Shell
blocks run one bash process each (`-euo pipefail`; console blocks: the `$ ` lines only), with `tcemu` the CLI of
this checkout. Both run in a scratch folder whose entries link to the repository's top level, so paths read as
from the repository root and whatever a block writes stays out of the tree.
"""
import linecache
import os
import re
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass

import pytest

from paths import ROOT
DOCS = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                              if f.endswith(".md"))
PYTHON, SHELL = ("python",), ("bash", "sh", "console")
KNOWN = PYTHON + SHELL + ("text", "json", "ptx", "cuda", "c", "toml", "")
FLAGS = ("no-run",)
TRITON = re.compile(r"^\s*(import|from)\s.*(?<![\w.])triton(?!\w)", re.M)  # not tcemu.triton
SHELL_TIMEOUT = 180  # seconds per shell block


@dataclass
class Block:
    path: str    # relative to the repository root
    line: int    # 1-based line of the block's first code line
    lang: str
    flags: tuple
    code: str

    @property
    def where(self):
        return f"{self.path}:{self.line}"

    @property
    def runs(self):
        return self.lang in PYTHON + SHELL and "no-run" not in self.flags


def blocks(path):
    """The fenced blocks of a markdown file (fences at column 0, ``` only)."""
    out, lines, i = [], open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info = lines[i][3:].split()
            start, j = i + 1, i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            assert j < len(lines), f"{path}:{i + 1}: unclosed code fence"
            out.append(Block(path, start + 1, info[0] if info else "", tuple(info[1:]), "\n".join(lines[start:j])))
            i = j
        i += 1
    return out


ALL = [b for p in DOCS for b in blocks(p)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A scratch folder that reads like the repository root, with `tcemu` on PATH running this checkout."""
    w = tmp_path_factory.mktemp("docs")
    for name in os.listdir(ROOT):
        if not name.startswith("."):
            os.symlink(os.path.join(ROOT, name), w / name)
    shim = w / ".bin"
    shim.mkdir()
    (shim / "tcemu").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tcemu.cli "$@"\n')
    (shim / "tcemu").chmod(0o755)
    return w


def test_blocks_are_well_formed():
    """Languages and flags are known ones, and every python block runs (no-run is for install and GPU commands)."""
    for b in ALL:
        assert b.lang in KNOWN, f"{b.where}: unknown block language {b.lang!r}"
        assert set(b.flags) <= set(FLAGS), f"{b.where}: unknown flag(s) {b.flags} (the one flag is 'no-run')"
        assert not (b.lang in PYTHON and "no-run" in b.flags), f"{b.where}: python blocks always run"
    assert sum(b.runs for b in ALL) >= 20


def test_readme_starts_with_the_two_commands():
    """The README's first block: install and replay, then install and test, the line .ci/run runs verbatim."""
    first = blocks("README.md")[0]
    assert first.line <= 5 and first.code.split("\n") == [
        "pip install -e . && tcemu replay traces",
        "pip install -e '.[test]' && pip install --no-deps 'nvidia-cutlass>=3.5' && python -m pytest -q -n auto --dist worksteal"]
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read()
    assert first.code.split("\n")[1].replace("pip install -e", "pip install -q -e").replace(
        "pip install --no-deps", "pip install -q --no-deps") in ci


def _slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation other than - and _ dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    fenced = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return ({_slug(h) for h in re.findall(r"^#+ (.*)$", fenced, re.M)} |
            set(re.findall(r'<a id="([^"]+)">', text)))


@pytest.mark.parametrize("path", DOCS + ["NOTES.md"])
def test_links_resolve(path):
    """Relative links name files that exist, and #anchors headings (or <a id>) that exist."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        assert os.path.exists(os.path.join(ROOT, dest)), f"{path}: link to a missing file {target}"
        if anchor and dest.endswith(".md"):
            assert anchor in _anchors(dest), f"{path}: link to a missing anchor {target}"


def _exec(block, namespace):
    """Run one python block; a failure names the doc line that raised, and the block."""
    src = open(os.path.join(ROOT, block.path), encoding="utf-8").read()
    linecache.cache[block.path] = (len(src), None, src.splitlines(True), block.path)  # tracebacks show the doc
    code = compile("\n" * (block.line - 1) + block.code, block.path, "exec")
    try:
        exec(code, namespace)
        return
    except Exception as e:  # noqa: BLE001 (any failure of a documented example is the test's failure)
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == block.path]
        error = "".join(traceback.format_exception_only(type(e), e)).strip()
        line = frames[-1] if frames else None
    where = f"{block.path}:{line.lineno}: {line.line}" if line else block.where
    pytest.fail(f"{where}\n  failed with {error}\n  (in the python block at {block.where})", pytrace=False)


@pytest.mark.parametrize("path", sorted({b.path for b in ALL if b.runs and b.lang in PYTHON}, key=DOCS.index))
def test_python_blocks(path, workdir, monkeypatch):
    """The file's python blocks, in order, in one namespace (blocks that import triton: test_triton_blocks)."""
    todo = [b for b in blocks(path) if b.runs and b.lang in PYTHON and not TRITON.search(b.code)]
    monkeypatch.chdir(workdir)
    monkeypatch.syspath_prepend(ROOT)
    namespace = {"__name__": "__docs__"}
    for b in todo:
        _exec(b, namespace)


@pytest.mark.parametrize("block", [b for b in ALL if b.runs and b.lang in PYTHON and TRITON.search(b.code)],
                         ids=lambda b: b.where)
def test_triton_blocks(block, workdir, monkeypatch):
    """Blocks that compile with Triton: each on its own namespace; skipped without Triton."""
    pytest.importorskip("triton")
    if re.search(r"^\s*import\s.*\btorch\b", block.code, re.M):
        pytest.importorskip("torch")
    if "activate(" in block.code:   # tcemu's Triton driver: its own process, so it stays out of the other tests
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        script = os.path.join(workdir, "docs_block.py")   # @triton.jit needs its source in a file
        with open(script, "w") as f:
            f.write(block.code)
        r = subprocess.run([sys.executable, script], cwd=workdir, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, f"{block.where}:\n{r.stderr[-3000:]}"
        return
    monkeypatch.chdir(workdir)
    monkeypatch.syspath_prepend(ROOT)
    _exec(block, {"__name__": "__docs__"})


def _script(block):
    if block.lang == "console":  # commands are the `$ ` lines; the rest is their output
        return "\n".join(line[2:] for line in block.code.split("\n") if line.startswith("$ "))
    return block.code


@pytest.mark.parametrize("block", [b for b in ALL if b.runs and b.lang in SHELL], ids=lambda b: b.where)
def test_shell_blocks(block, workdir):
    env = dict(os.environ, PATH=f"{workdir / '.bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    t = time.time()
    try:
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", _script(block)], cwd=workdir, env=env,
                           capture_output=True, text=True, timeout=SHELL_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the shell block ran past {SHELL_TIMEOUT} s", pytrace=False)
    if r.returncode:
        out = (r.stdout + r.stderr)[-3000:]
        pytest.fail(f"{block.where}: the shell block exited {r.returncode} after {time.time() - t:.1f} s:\n"
                    f"{_script(block)}\n--- output (tail) ---\n{out}", pytrace=False)
