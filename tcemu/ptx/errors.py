"""Errors of the PTX interpreter: each is a TcemuError naming what was wrong and the rule."""
from ..core.errors import LimitError, TcemuError


class PtxError(TcemuError):
    """Bad input to the interpreter: a kernel argument, a launch setting, an instruction form."""


class PtxSyntaxError(PtxError):
    """Malformed PTX text; `field` is "line L, column C"."""

    def __init__(self, line: int, column: int, rule: str):
        self.line, self.column = line, column
        if len(rule) > 1000:  # a rule quotes the text: never a whole hostile line
            rule = rule[:1000] + "..."
        super().__init__(f"line {line}, column {column}", rule)


class PtxUnsupported(PtxError):
    """An instruction or form the interpreter refuses (never skipped): `field` names it."""


class WgmmaSerializedWarning(UserWarning):
    """A non-wgmma instruction touches a register of a wgmma still in flight: ptxas would inject a
    wgmma.wait_group there (or serialize the wgmmas), so tcemu completes the wgmma first and says so."""


class PtxUnsupportedWarning(UserWarning):
    """A kernel holds instructions the interpreter does not model: listed when the kernel is compiled; each
    raises PtxUnsupported, naming itself and its line, only if a thread executes it."""


class KernelFault(PtxError):
    """Something the running kernel did that the hardware would fault on, hang on, or leave undefined
    (out-of-bounds access, hazard, deadlock). `field` names the instruction and where it ran."""


class MemoryFault(KernelFault):
    """An access outside every allocation of its state space, or misaligned."""


class HazardError(KernelFault):
    """An ordering mistake between threads, proxies or asynchronous units (a race the hardware does not forgive)."""


class Deadlock(KernelFault):
    """No warp can make progress; the message names every warp's PC and what it waits on."""


class PtxLimit(PtxError, LimitError):
    """A kernel, launch or argument larger than one of the interpreter's named limits (register count, memory
    estimate, parameter bytes...): refused before allocating, naming the estimate and the limit."""


class BudgetExceeded(Deadlock):
    """A launch ran past its instruction budget (max_instructions) or its wall-clock time limit (timeout):
    the message names the budget and what every unfinished warp was doing."""
