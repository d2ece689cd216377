#!/usr/bin/env python
"""Differential campaign for issue 21 ("refuse what ptxas refuses"): realistic single-mistake mutants of every
bundled PTX fixture (tests/fixtures/ptx, tests/fixtures/ptx/sm100), each judged by ptxas (-arch from the
module's .target; the 13.4 ptxas bundled with Triton for .version > 9.0) and by tcemu (ptx.load, then
Module.program of every kernel, in this process under a per-mutant time limit).

    python scripts/checks/ptx_mutants.py [-n 300] [--seed 21] [--minutes 10] [--limit 60] [--show lax]

Table by class: total, ptxas rejects, lax (ptxas rejects, tcemu accepts), strict-wrong (ptxas accepts,
tcemu refuses), foreign (tcemu raised something not a TcemuError), hangs (past the time limit).

    python scripts/ptx_mutants.py --sweep shapes [--fixture F ...]      # or --sweep immediates

A sweep is exhaustive rather than random: every instruction form of every fixture (two lines per opcode) with
each operand dropped, an operand added, each { } vector one element shorter and longer (shapes), or each
integer operand replaced by values around the powers of two (immediates). Many mutated lines share one module:
ptxas reports each line's error, tcemu judges each instruction alone, and every disagreement is re-judged by
ptxas on a module with that line alone."""
import argparse
import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import tcemu.ptx as ptx  # noqa: E402
from tcemu.core.errors import TcemuError  # noqa: E402
from tcemu.ptx.errors import PtxUnsupported  # noqa: E402

FIXTURES = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "ptx", "*.ptx"))
                  + glob.glob(os.path.join(ROOT, "tests", "fixtures", "ptx", "sm100", "*.ptx")))


def _triton_ptxas():
    try:
        import triton
    except Exception:
        return None
    d = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    for name in ("ptxas-blackwell", "ptxas"):
        p = os.path.join(d, name)
        if os.path.exists(p) and _reads(p) >= (9, 4):
            return p
    return None


def _reads(path):
    """The newest .version a ptxas reads (from its release: CUDA 13.0 reads 9.0, 12.9 reads 8.8 ...)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except Exception:
        return (0, 0)
    m = re.search(r"release (\d+)\.(\d+)", out)
    if not m:
        return (0, 0)
    major, minor = int(m.group(1)), int(m.group(2))
    return (major - 4, minor) if major >= 13 else (8, minor - 1)


PTXAS = {}


def ptxas_for(version):
    """The ptxas that reads PTX .version `version` ((major, minor)), or None."""
    if not PTXAS:
        PTXAS["path"] = shutil.which("ptxas")
        PTXAS["triton"] = _triton_ptxas()
    for p in (PTXAS["path"], PTXAS["triton"]):
        if p and _reads_cached(p) >= version:
            return p
    return None


_READS = {}


def _reads_cached(p):
    if p not in _READS:
        _READS[p] = _reads(p)
    return _READS[p]


def module_version(src):
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", src, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def module_arch(src):
    m = re.search(r"^\s*\.target\s+(sm_\w+)", src, re.M)
    return m.group(1) if m else "sm_90a"


def ptxas_start(src, exe, d):
    path = os.path.join(d, "m.ptx")
    with open(path, "w") as f:
        f.write(src)
    return subprocess.Popen([exe, f"-arch={module_arch(src)}", "-O0", path, "-o", os.devnull],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


# -- tcemu's verdict -------------------------------------------------------------------------------------------

class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def tcemu_verdict(src, limit=60.0):
    """("accept" | "refuse" | "foreign" | "hang", detail)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = ptx.load(src)
            for k in m.kernels:
                m.program(k)
        return "accept", ""
    except _Hang:
        return "hang", f"over {limit:g} s"
    except PtxUnsupported as e:   # valid-but-unmodelled: not a refusal of the text
        return "accept", f"unsupported: {e}"
    except TcemuError as e:
        return "refuse", str(e)
    except RecursionError as e:
        return "foreign", f"RecursionError: {e}"
    except Exception as e:
        return "foreign", f"{type(e).__name__}: {e}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- mutants -----------------------------------------------------------------------------------------------------

INSTR = re.compile(r"^(\s*)(@!?%\w+\s+)?([a-z][\w.:]*)(\s+)(.*?)\s*;\s*(//.*)?$")


def split_operands(text):
    """Top-level comma-separated operands ({...}, [...], (...) kept whole)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _instr_lines(lines, pred=None):
    out = []
    for i, l in enumerate(lines):
        m = INSTR.match(l)
        if m and (pred is None or pred(m)):
            out.append((i, m))
    return out


def _subst(lines, rng, pattern, repl, where=None):
    """Replace the first match of `pattern` on one random line matching it (outside comments)."""
    hits = [i for i, l in enumerate(lines) if re.search(pattern, l.split("//")[0])
            and (where is None or re.search(where, l))]
    rng.shuffle(hits)
    for i in hits:
        code, _, comment = lines[i].partition("//")
        new = re.sub(pattern, repl if not callable(repl) else (lambda m: repl(m, rng)), code, count=1)
        if new != code:
            return i, new + ("//" + comment if comment else "")
    return None


def _reg_decl_width(lines, rng):
    swap = {"b32": "b64", "u32": "u64", "s32": "s64", "b64": "b32", "u64": "u32", "s64": "s32", "f32": "f64",
            "f64": "f32", "b16": "b32", "pred": "b32", "b8": "b16"}
    return _subst(lines, rng, r"\.reg\s+\.(\w+)(?=\s+%)", lambda m, r: m.group(0).replace(
        "." + m.group(1), "." + swap.get(m.group(1), "b32"), 1))


def _reg_use_width(lines, rng):
    r = _subst(lines, rng, r"(\b(?:add|sub|mul\.lo|and|or|xor|setp\.\w+|selp|mov|shl|shr)\.[bus]32 [^;]*?)%r(\d+)",
               r"\1%rd\2")
    return r or _subst(lines, rng, r"(\b(?:add|sub|mul\.lo|setp\.\w+|mov)\.[bus]64 [^;]*?)%rd(\d+)", r"\1%r\2")


def _type_suffix(lines, rng):
    subs = [(r"\.(u32|s32|b32)\b(?=[ ;])", ".u64"), (r"\.f32\b(?=[ ;])", ".f64"), (r"\.u64\b(?=[ ;])", ".u16"),
            (r"\.f16x2\b(?=[ ;])", ".f32"), (r"\.b64\b(?=[ ;])", ".b32"), (r"\.s32\b(?=[ ;])", ".f32"),
            (r"\.f32\b(?=[ ;])", ".s32"), (r"\.b16\b(?=[ ;])", ".b64")]
    rng.shuffle(subs)
    for pat, rep in subs:
        r = _subst(lines, rng, pat, rep, where=r"^\s*(@!?%\w+\s+)?[a-z]")
        if r:
            return r
    return None


def _state_space(lines, rng):
    subs = [(r"\b(ld|st|atom|red)\.global", r"\1.glbal"), (r"\b(ld|st|atom)\.shared", r"\1.shard"),
            (r"\bcvta\.to\.global", "cvta.to.globl"), (r"\b(ld|st)\.param", r"\1.parm"),
            (r"\b(ld|st)\.local", r"\1.locl"), (r"\.shared::cta\b", ".shared::ctx"),
            (r"\.shared::cluster\b", ".shared::clustr"), (r"\bld\.const", "ld.cnst")]
    rng.shuffle(subs)
    for pat, rep in subs:
        r = _subst(lines, rng, pat, rep)
        if r:
            return r
    return None


def _guard(lines, rng):
    return _subst(lines, rng, r"@(!?)%p(\d+)", lambda m, r: "@" + m.group(1) + r.choice(["%r", "%rd", "%f"])
                  + m.group(2))


def _target(lines, rng):
    return (_subst(lines, rng, r"\.target sm_90a\b", lambda m, r: ".target " + r.choice(["sm_80", "sm_90",
                                                                                         "sm_89"]))
            or _subst(lines, rng, r"\.target sm_10[03]a\b", lambda m, r: ".target " + r.choice(["sm_90a", "sm_90",
                                                                                                "sm_100"])))


def _async_qualifier(lines, rng):
    subs = [(r"\.shared::cta\b", ".shared::gpu"), (r"\.shared::cluster\b", ".shared::sys"),
            (r"\.mbarrier::complete_tx::bytes", ".mbarrier::complete_tx::bits"),
            (r"\.b64(?=\s)", ".b32"), (r"\.parity\b", ".parit"), (r"\.try_wait\b", ".try_wiat"),
            (r"\.bulk_group\b", ".bulk_grp"), (r"\.global\b", ".local"), (r"\.tile\b", ".tiles"),
            (r"\.(\dd)\b", lambda m, r: "." + str(int(m.group(1)[0]) + 5) + "d"),
            (r"\.release\b", ".releas"), (r"\.acquire\b", ".aquire"), (r"\.cta\b", ".ctaa"),
            (r"\.ca\.shared", ".cx.shared"), (r"\.cg\.shared", ".cq.shared")]
    rng.shuffle(subs)
    where = r"^\s*(@!?%\w+\s+)?(mbarrier|cp\.async|cp\.reduce\.async|fence\.proxy|tcgen05\.commit)"
    for pat, rep in subs:
        r = _subst(lines, rng, pat, rep, where=where)
        if r:
            return r
    return None


def _operand_edit(lines, rng, drop):
    cands = _instr_lines(lines, lambda m: m.group(5) and not m.group(3).startswith(("call", "bra", "ret")))
    rng.shuffle(cands)
    for i, m in cands:
        ops = split_operands(m.group(5))
        if drop and len(ops) < 1:
            continue
        if drop:
            del ops[rng.randrange(len(ops))]
        else:
            ops.insert(rng.randrange(len(ops) + 1), rng.choice(ops))
        sep = m.group(4) if ops else ""
        return i, f"{m.group(1)}{m.group(2) or ''}{m.group(3)}{sep}{', '.join(ops)};"
    return None


def _immediate(lines, rng):
    def big(m, r):
        return m.group(1) + r.choice(["4294967296", "0x1FFFFFFFF", "99999999999999999999", "65536", "-4294967297"])
    r = _subst(lines, rng, r"(\b(?:add|sub|mul\.lo|and|or|xor|mov|setp\.\w+|shl|shr|selp)\.[bus](?:16|32) [^;]*, )"
               r"(-?\d+)(?=[;,])", big)
    return r or _subst(lines, rng, r"(\bbar\.sync )(\d+)", lambda m, r: m.group(1) + r.choice(["16", "32", "-1"]))


def _vector_size(lines, rng):
    """A { } vector one element short or long: ld/st .vN, tcgen05.ld/st, ldmatrix, wgmma, TMA coordinates."""
    cands = [(i, m) for i, m in _instr_lines(lines) if m.group(5) and "{" in m.group(5)
             and not m.group(3).startswith(("call", "mov"))]
    rng.shuffle(cands)
    for i, m in cands:
        ops = split_operands(m.group(5))
        spots = [(k, a, b) for k, op in enumerate(ops) for a, b in _braces(op)]
        if not spots:
            continue
        k, a, b = rng.choice(spots)
        items = [x.strip() for x in ops[k][a + 1:b].split(",")]
        if len(items) > 1 and rng.random() < 0.5:
            items = items[:-1]
        else:
            items = items + [items[-1]]
        ops[k] = ops[k][:a + 1] + ", ".join(items) + ops[k][b:]
        return i, f"{m.group(1)}{m.group(2) or ''}{m.group(3)}{m.group(4)}{', '.join(ops)};"
    return None


def _braces(op):
    out, st = [], None
    for j, ch in enumerate(op):
        if ch == "{":
            st = j
        elif ch == "}" and st is not None:
            out.append((st, j))
            st = None
    return out


_RANGED = ("bfe", "bfi", "setmaxnreg", "mbarrier", "wgmma", "cp.async", "tcgen05", "tensormap", "bar", "barrier",
           "fence.proxy.tensormap")


def _special_immediate(lines, rng):
    """An immediate of an instruction whose immediates ptxas range-checks, replaced by a plausible slip."""
    cands = [(i, m) for i, m in _instr_lines(lines) if m.group(5) and m.group(3).startswith(_RANGED)]
    rng.shuffle(cands)
    for i, m in cands:
        ops = split_operands(m.group(5))
        spots = [k for k, op in enumerate(ops) if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", op)]
        if not spots:
            continue
        k = rng.choice(spots)
        ops[k] = str(rng.choice([-1, 0, 1, 2, 3, 7, 12, 20, 24, 33, 96, 256, 300, 1024, 1 << 20]))
        return i, f"{m.group(1)}{m.group(2) or ''}{m.group(3)}{m.group(4)}{', '.join(ops)};"
    return None


def _label(lines, rng):
    return _subst(lines, rng, r"(\bbra(?:\.uni)?\s+)(\$?[\w$]+)", lambda m, r: m.group(1) + m.group(2) + "_x")


def _call(lines, rng):
    """A call whose argument list no longer matches the callee: an argument dropped, added or retyped."""
    hits = [i for i, l in enumerate(lines) if re.match(r"\s*call", l)]
    if not hits:
        return None
    i = rng.choice(hits)
    j = i
    while not lines[j].rstrip().endswith(";"):
        j += 1
    text = " ".join(l.strip() for l in lines[i:j + 1])
    m = re.match(r"(call(?:\.uni)?)\s*(.*);", text)
    ops = split_operands(m.group(2))
    args = [k for k, o in enumerate(ops) if o.startswith("(")]
    if not args:
        return None
    k = args[-1]
    inner = split_operands(ops[k][1:-1])
    if inner and rng.random() < 0.5:
        del inner[rng.randrange(len(inner))]
    else:
        inner.append(inner[0] if inner else "param0")
    ops[k] = "(" + ", ".join(inner) + ")"
    new = f"\t{m.group(1)} {', '.join(ops)};"
    return i, new, j


def _param_decl_type(lines, rng):
    """A call sequence's .param declaration with another type (the call then mismatches the prototype)."""
    return _subst(lines, rng, r"(\.param\s+)\.b(32|64)(\s+param\d+)",
                  lambda m, r: m.group(1) + ".b" + ("64" if m.group(2) == "32" else "32") + m.group(3),
                  where=r"^\s*\.param\s+\.b\d+\s+param\d+;")


def _dup_entry(lines, rng):
    src = "\n".join(lines)
    ms = list(re.finditer(r"^\.(?:visible\s+)?\.entry[\s\S]*?\n}\n", src + "\n", re.M))
    if not ms:
        return None
    return "whole", src + "\n" + rng.choice(ms).group(0)


CLASSES = {
    "reg decl width": _reg_decl_width,
    "reg use width": _reg_use_width,
    "type suffix": _type_suffix,
    "state space": _state_space,
    "guard not pred": _guard,
    "dup entry": _dup_entry,
    "target down": _target,
    "async qualifier": _async_qualifier,
    "operand dropped": lambda l, r: _operand_edit(l, r, True),
    "operand added": lambda l, r: _operand_edit(l, r, False),
    "immediate range": _immediate,
    "label misspelt": _label,
    "call args": _call,
    "call param type": _param_decl_type,
    "vector size": _vector_size,
    "special immediate": _special_immediate,
}


def mutate(src, cls, rng):
    """The mutant text, or None where the class does not apply to `src`."""
    lines = src.split("\n")
    r = CLASSES[cls](lines, rng)
    if r is None:
        return None
    if r[0] == "whole":
        return r[1]
    i, new = r[0], r[1]
    j = r[2] if len(r) > 2 else i
    out = lines[:i] + [new] + [""] * (j - i) + lines[j + 1:]   # keep line numbers
    text = "\n".join(out)
    return None if text == src else text


_SOURCES = {}


def source(path):
    if path not in _SOURCES:
        with open(path) as f:
            _SOURCES[path] = f.read()
    return _SOURCES[path]


def mutants(n, seed=21, fixtures=None, classes=None):
    """n seeded (fixture, class, text) mutants; mutant i depends only on (seed, i)."""
    fixtures = fixtures or FIXTURES
    classes = classes or list(CLASSES)
    i = 0
    while n:
        rng = random.Random(f"{seed}:{i}")
        i += 1
        path, cls = rng.choice(fixtures), rng.choice(classes)
        text = mutate(source(path), cls, rng)
        if text is None:
            continue
        n -= 1
        yield os.path.relpath(path, ROOT), cls, text


# -- the campaign --------------------------------------------------------------------------------------------

def judge(text, limit=60.0):
    """(ptxas accepts or None where no ptxas reads it, ptxas message, tcemu verdict, detail)."""
    exe = ptxas_for(module_version(text))
    with tempfile.TemporaryDirectory() as d:
        proc = ptxas_start(text, exe, d) if exe else None   # runs while tcemu compiles
        verdict, detail = tcemu_verdict(text, limit)
        if proc is None:
            return None, "", verdict, detail
        try:
            _, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return None, "ptxas timed out", verdict, detail
    return proc.returncode == 0, (err or "").strip().split("\n")[0], verdict, detail


def outcome(ok, verdict):
    """lax, strict-wrong, foreign, hang or ok."""
    if verdict == "foreign":
        return "foreign"
    if verdict == "hang":
        return "hang"
    if ok is None:
        return "no ptxas"
    if not ok and verdict == "accept":
        return "lax"
    if ok and verdict == "refuse":
        return "strict-wrong"
    return "ok"


def campaign(n, seed=21, minutes=None, limit=60.0, fixtures=None, classes=None, log=None):
    """{class: {"total", "ptxas rejects", "lax", "strict-wrong", "foreign", "hang"}}, [(outcome, ...) records]."""
    t0 = time.time()
    table, bad = {}, []
    for path, cls, text in mutants(n, seed, fixtures, classes):
        if minutes is not None and time.time() - t0 > minutes * 60:
            break
        ok, msg, verdict, detail = judge(text, limit)
        row = table.setdefault(cls, dict.fromkeys(["total", "ptxas rejects", "lax", "strict-wrong", "foreign",
                                                   "hang", "no ptxas"], 0))
        row["total"] += 1
        row["ptxas rejects"] += ok is False
        o = outcome(ok, verdict)
        if o != "ok":
            row[o] += 1
            bad.append((o, cls, path, msg, detail, text))
        if log:
            log(f"{row['total']:4d} {cls:16s} {path:50s} ptxas={'ok' if ok else 'rej' if ok is False else '-'} "
                f"tcemu={verdict} {o if o != 'ok' else ''}")
    return table, bad


def format_table(table):
    cols = ["total", "ptxas rejects", "lax", "strict-wrong", "foreign", "hang"]
    out = [f"{'class':18s}" + "".join(f"{c:>15s}" for c in cols)]
    tot = dict.fromkeys(cols, 0)
    for cls in sorted(table):
        out.append(f"{cls:18s}" + "".join(f"{table[cls][c]:15d}" for c in cols))
        for c in cols:
            tot[c] += table[cls][c]
    out.append(f"{'ALL':18s}" + "".join(f"{tot[c]:15d}" for c in cols))
    return "\n".join(out)


def _diff_line(src, text):
    a, b = src.split("\n"), text.split("\n")
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"line {k + 1}: {x.strip()!r} -> {y.strip()!r}"
    return f"appended {len(b) - len(a)} lines"


# -- the exhaustive sweep -------------------------------------------------------------------------------------------

def _shape_edits(ops):
    out = [[*ops[:k], *ops[k + 1:]] for k in range(len(ops))]
    if ops:
        out += [ops + [ops[-1]], ops + ["0"], [ops[0]] + ops]
    for k, op in enumerate(ops):
        for a, b in _braces(op):
            items = [x.strip() for x in op[a + 1:b].split(",")]
            if len(items) > 1:
                out.append(ops[:k] + [op[:a + 1] + ", ".join(items[:-1]) + op[b:]] + ops[k + 1:])
            out.append(ops[:k] + [op[:a + 1] + ", ".join(items + [items[-1]]) + op[b:]] + ops[k + 1:])
    return out


SWEEP_VALUES = [-1, 0, 1, 3, 16, 17, 24, 32, 33, 256, 65536, 1 << 20, 1 << 31, 1 << 32]


def _immediate_edits(ops):
    return [ops[:k] + [str(v)] + ops[k + 1:] for k, op in enumerate(ops)
            if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)[uU]?", op) for v in SWEEP_VALUES]


def _ptxas_errors(text):
    """(assembled, {line: first error})."""
    exe = ptxas_for(module_version(text))
    with tempfile.TemporaryDirectory() as d:
        proc = ptxas_start(text, exe, d)
        _, err = proc.communicate()
    bad = {}
    for m in re.finditer(r"line (\d+); error\s*:\s*(.*)", err or ""):
        bad.setdefault(int(m.group(1)), m.group(2).strip())
    return proc.returncode == 0, bad


def _tcemu_lines(text, wanted):
    """{line: ("accept" | "refuse" | "foreign", detail)} for the instructions on `wanted` lines, each compiled
    alone (strict checks, then its instruction compiler), as Module.program does."""
    from tcemu.ptx import strict
    from tcemu.ptx.module import Module
    from tcemu.ptx.ops import lookup
    from tcemu.ptx.program import Program
    out, lines = {}, text.split("\n")
    while True:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = Module("\n".join(lines))
            break
        except TcemuError as e:   # a parse error on a mutated line: refused; parse the rest again without it
            ln = getattr(e, "line", None)
            if ln not in wanted or ln in out:
                return {w: ("refuse", f"module: {e}") for w in wanted}
            out[ln] = ("refuse", str(e))
            lines[ln - 1] = ""
    for name in mod.kernels:
        fn = mod.tree.functions[name]
        try:
            prog = Program(fn, mod._module_symbols(), [v for v in mod.tree.variables if v.space == "shared"],
                           mod.tree.functions)
            prog.target, prog.ptx_version = tuple(mod.tree.target), mod.tree.version
            prog.set_dynamic_base()
        except TcemuError as e:
            for w in wanted:
                out.setdefault(w, ("refuse", f"program: {e}"))
            continue
        for pc, ins in enumerate(prog.instrs):
            if ins.line not in wanted or ins.line in out:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    strict.check(ins, prog.reg_types, prog.target)
                    lookup(ins)(ins, prog, pc)
                out[ins.line] = ("accept", "")
            except (PtxUnsupported, KeyError) as e:   # valid PTX tcemu does not model (refused if executed)
                out[ins.line] = ("accept", f"unsupported: {e}")
            except IndexError:   # Module.program turns this into a PtxSyntaxError
                out[ins.line] = ("refuse", "too few operands")
            except TcemuError as e:
                out[ins.line] = ("refuse", str(e))
            except Exception as e:
                out[ins.line] = ("foreign", f"{type(e).__name__}: {e}")
    return out


def sweep(path, mode="shapes", per_opcode=2, seed=0, log=None):
    """[(outcome, kind, line number, mutated line, ptxas message, tcemu detail)] for one fixture."""
    src = source(path)
    lines = src.split("\n")
    rng = random.Random(f"{seed}:{os.path.basename(path)}")
    by_op = {}
    for i, m in _instr_lines(lines, lambda m: not m.group(3).startswith("call")):
        by_op.setdefault(m.group(3), []).append((i, m))
    chosen = []
    for op in sorted(by_op):
        rng.shuffle(by_op[op])
        chosen += by_op[op][:per_opcode]
    edits = {i: (_shape_edits if mode == "shapes" else _immediate_edits)(split_operands(m.group(5) or ""))
             for i, m in chosen}
    chosen = [(i, m) for i, m in chosen if edits[i]]
    records = []
    for r in range(max((len(v) for v in edits.values()), default=0)):
        text, here = list(lines), {}
        for i, m in chosen:
            if r < len(edits[i]):
                ops = edits[i][r]
                text[i] = f"{m.group(1)}{m.group(2) or ''}{m.group(3)}{m.group(4) if ops else ''}{', '.join(ops)};"
                here[i + 1] = text[i]
        text = "\n".join(text)
        _, bad = _ptxas_errors(text)
        verdicts = _tcemu_lines(text, set(here))
        for ln, new in here.items():
            verdict, detail = verdicts.get(ln, ("accept", "not compiled (no kernel reaches it)"))
            ok = ln not in bad
            if ok != (verdict == "accept") or verdict == "foreign":   # re-judge the disagreement alone
                alone = list(lines)
                alone[ln - 1] = new
                ok, bad1 = _ptxas_errors("\n".join(alone))
                bad[ln] = bad1.get(ln, "")
            o = outcome(ok, verdict)
            records.append((o, mode, ln, new.strip(), bad.get(ln, ""), detail))
    if log:
        log(f"{os.path.relpath(path, ROOT):50s} {len(records):5d} mutants, "
            + ", ".join(f"{k} {sum(1 for r in records if r[0] == k)}" for k in ("lax", "strict-wrong", "foreign")))
    return records


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--seed", default="21")
    ap.add_argument("--minutes", type=float, default=None, help="stop starting mutants after this long")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds tcemu may take per mutant")
    ap.add_argument("--classes", default=None, help="comma-separated classes (default all)")
    ap.add_argument("--fixture", action="append", default=None, help="a fixture path (repeatable)")
    ap.add_argument("--show", default="lax,strict-wrong,foreign,hang", help="outcomes to describe")
    ap.add_argument("--sweep", choices=("shapes", "immediates"), default=None, help="an exhaustive sweep instead")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args(argv)
    fixtures = [os.path.abspath(f) for f in a.fixture] if a.fixture else None
    if a.sweep:
        records = []
        for path in fixtures or FIXTURES:
            records += sweep(path, a.sweep, per_opcode=2 if a.sweep == "shapes" else 1, log=print)
        for o, mode, ln, new, msg, detail in records:
            if o != "ok":
                print(f"[{o}] line {ln}: {new[:120]}\n    ptxas: {msg}\n    tcemu: {detail[:200]}")
        print(f"{len(records)} mutants: " + ", ".join(f"{k} {sum(1 for r in records if r[0] == k)}"
                                                     for k in ("lax", "strict-wrong", "foreign", "hang")))
        return 0
    classes = a.classes.split(",") if a.classes else None
    table, bad = campaign(a.n, a.seed, a.minutes, a.limit, fixtures, classes,
                          log=(lambda s: print(s, flush=True)) if a.v else None)
    show = set(a.show.split(","))
    for o, cls, path, msg, detail, text in bad:
        if o in show:
            print(f"[{o}] {cls} {path}: {_diff_line(source(os.path.join(ROOT, path)), text)}\n    ptxas: {msg}\n"
                  f"    tcemu: {detail[:300]}")
    print(format_table(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
