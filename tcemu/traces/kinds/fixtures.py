"""What the whole-kernel kinds (kernel_outputs, launch_outputs) share: the fixtures embedded in the trace (each
one's PTX and json, named and digested by meta.fixtures) and the byte-for-byte comparison of each case's outputs."""
import hashlib
from typing import List

import numpy as np

from ...core.errors import TcemuError, TraceError
from ...core.validate import show
from ..archive import MAX_FIXTURES, Trace, read_json
from .base import GroupResult, ReplayResult


def fixture_members(meta) -> List[str]:
    """The members a kernel_outputs / launch_outputs trace embeds: each fixture's PTX and json
    (`fixture_<name>_ptx` / `_json`), named by meta.fixtures (checked before any member is read)."""
    fixtures = meta.get("fixtures")
    if not isinstance(fixtures, dict) or not 1 <= len(fixtures) <= MAX_FIXTURES or not all(
            isinstance(n, str) and 0 < len(n) <= 80 and n.replace("_", "").isalnum() and n.isascii()
            for n in fixtures):
        raise TraceError("meta.fixtures", f"must map 1..{MAX_FIXTURES} fixture names (letters, digits, _) to their "
                                          f"digests, got {show(fixtures)}")
    return [f"fixture_{n}_{ext}" for n in fixtures for ext in ("ptx", "json")]


def embedded_fixtures(meta, cols) -> dict:
    """name -> the parsed json of each fixture meta.fixtures names; its PTX and json members must have the sha256
    there, the PTX must be UTF-8 text."""
    fixtures = {}
    for name in fixture_members(meta)[::2]:
        fx = name[len("fixture_"):-len("_ptx")]
        digests = meta["fixtures"][fx]
        for ext in ("ptx", "json"):
            raw = cols.get(f"fixture_{fx}_{ext}")
            if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8 or raw.ndim != 1:
                raise TraceError(f"fixture_{fx}_{ext}", f"must be the fixture's bytes (uint8), got {show(raw)}")
            want = digests.get(f"{ext}_sha256") if isinstance(digests, dict) else None
            if hashlib.sha256(raw.tobytes()).hexdigest() != want:
                raise TraceError(f"fixture_{fx}_{ext}", f"its sha256 differs from meta.fixtures[{fx!r}]")
        try:
            cols[f"fixture_{fx}_ptx"].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            raise TraceError(f"fixture_{fx}_ptx", "is not UTF-8 text") from None
        fixtures[fx] = read_json(cols[f"fixture_{fx}_json"].tobytes(), f"fixture_{fx}_json")
    return fixtures


def replay_output_bytes(trace: Trace, cases, result: ReplayResult, max_report: int, run):
    """kernel_outputs / launch_outputs: each captured case's output bytes (run(i, case, fixture name), a
    TcemuError counting as all differing) against the trace's, one group per fixture."""
    cols = trace.columns
    for i, case in enumerate(cases):
        if int(cols["status"][i]) != 0:
            result.notes.append(f"case {i} ({show(case.get('fixture'))}): not captured ({show(case.get('status'))})")
            continue
        name = case["fixture"]
        hw = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
        try:
            got = run(i, case, name)
        except TcemuError as e:
            got = None
            if len(result.mismatches) < max_report:
                result.mismatches.append(f"case {i} {name}: {type(e).__name__}: {e}"[:400])
        g = result.groups.setdefault(name, GroupResult())
        g.cases += 1
        g.values += hw.size
        if got is not None:
            same = int(np.count_nonzero(got == hw)) if got.size == hw.size else 0
            g.values_matched += same
            g.cases_matched += same == hw.size
            if same != hw.size and len(result.mismatches) < max_report:
                label = case.get("name") if isinstance(case.get("name"), str) else \
                    f"{name} {case.get('M')}x{case.get('N')}x{case.get('K')}"
                result.mismatches.append(f"case {i} {label[:120]}: {hw.size - same} of {hw.size} output bytes differ")
