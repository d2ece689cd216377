"""`tcemu replay`: replay hardware traces and print one match table.

Columns: trace, cases, cases matched, values, values matched, then the group, so that long group names never
push the figures out of line; the trace column is as wide as the longest trace name. A trace with more than 30
groups lists only the mismatching ones, and its total line counts the groups that match in full. Notes never
lose a word: they are wrapped, not cut. A note about a case the capture itself did not record (a torch or CUDA
error at capture time, on the GPU machine) is marked as such: it is no tcemu result.

Progress goes to stderr when stderr is a terminal, or with --progress: which trace is replaying and for how long
(each trace is one call of tcemu.traces.replay; the line is refreshed every second on a terminal).
"""
import json
import os
import shutil
import sys
import textwrap
import threading
import time

from ..core.errors import TraceError
from ..traces.archive import trace_paths
from ..traces.registry import replay
from .names import tidy

MANY_GROUPS = 30
CAPTURE_NOTE = "not captured"  # the replay's words for a case the capture did not record


class Progress:
    """One line on stderr saying what runs and for how long: rewritten in place on a terminal (a ticker thread),
    one line at the start and one at the end of each step otherwise."""

    def __init__(self, stream, live: bool):
        self.stream, self.live = stream, live
        self._stop, self._thread, self.label, self.t0 = threading.Event(), None, "", 0.0

    def start(self, label: str):
        self.label, self.t0 = label, time.monotonic()
        if not self.live:
            self._write(f"tcemu: {label} ...\n")
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _tick(self):
        while True:
            self._write(f"\r\033[K{self.label} {time.monotonic() - self.t0:.0f} s")
            if self._stop.wait(1.0):
                return

    def stop(self, done: str = ""):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._write("\r\033[K")
        elif done and not self.live:
            self._write(f"tcemu: {self.label}: {done} in {time.monotonic() - self.t0:.1f} s\n")

    def _write(self, text):
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: progress is a courtesy
            pass


def _wrap(prefix: str, text: str, width: int):
    return textwrap.wrap(text, width=max(width, 40), initial_indent=prefix, subsequent_indent=" " * len(prefix),
                         break_long_words=False, break_on_hyphens=False) or [prefix.rstrip()]


def note_lines(note: str, width: int):
    """A replay note, whole, wrapped at word boundaries; a capture-time note says so."""
    note = tidy(note)
    if CAPTURE_NOTE in note:
        return _wrap("  note (capture time, not a tcemu result): ", note, width)
    return _wrap("  note: ", note, width)


def replay_command(args) -> int:
    paths = trace_paths(args.paths)
    if not paths:
        raise TraceError("paths", "no .npz traces found there")
    names = [os.path.basename(p) for p in paths]
    tw = max(len("trace"), *map(len, names))
    width = shutil.get_terminal_size((110, 24)).columns - 1
    live = sys.stderr.isatty()
    bar = Progress(sys.stderr, live) if (live or args.progress) else None
    ok, header, docs = True, False, []
    for i, (path, name) in enumerate(zip(paths, names)):
        if bar:
            bar.start(f"replaying {name} ({i + 1}/{len(paths)})")
        try:
            result = replay(path)
        finally:
            if bar:
                bar.stop()
        if bar:
            bar.stop("done")
        groups = sorted(result.groups.items())
        totals = [sum(getattr(g, f) for _, g in groups) for f in ("cases", "cases_matched", "values", "values_matched")]
        full = sum(g.cases == g.cases_matched for _, g in groups)
        ok &= result.ok
        if args.json:
            docs.append({"trace": path, "kind": result.trace.kind, "ok": result.ok,
                         "groups": {k: vars(g) for k, g in groups},
                         "total": dict(zip(("cases", "cases_matched", "values", "values_matched"), totals)),
                         "mismatches": [tidy(m) for m in result.mismatches], "notes": [tidy(n) for n in result.notes],
                         "capture_notes": [tidy(n) for n in result.notes if CAPTURE_NOTE in n]})
            continue
        if not header:  # after the first trace loads: a file that is no trace gives one error line, no table
            print(f"{'trace':<{tw}} {'cases':>8} {'matched':>8} {'values':>12} {'matched':>12}  group")
            header = True
        many = len(groups) > MANY_GROUPS  # e.g. one group per ALU form: list only the mismatching ones
        for group, g in groups:
            flag = "" if g.cases == g.cases_matched else "  MISMATCH"
            if many and not flag:
                continue
            print(f"{name:<{tw}} {g.cases:>8} {g.cases_matched:>8} {g.values:>12} {g.values_matched:>12}  "
                  f"{group}{flag}")
        print(f"{name:<{tw}} {totals[0]:>8} {totals[1]:>8} {totals[2]:>12} {totals[3]:>12}  total over "
              f"{len(groups)} group{'s' if len(groups) != 1 else ''}" + (f", {full} match in full" if many else ""))
        for line in result.mismatches:
            for part in _wrap("  ", tidy(line), width):
                print(part)
        for note in result.notes:
            for part in note_lines(note, width):
                print(part)
        sys.stdout.flush()
    if args.json:
        print(json.dumps({"traces": docs, "ok": ok}))
    else:
        print("all traces match" if ok else "MISMATCHES FOUND")
    return 0 if ok else 1
