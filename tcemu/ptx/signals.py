"""The control values an instruction's semantics return besides None (next instruction) and an int (a jump):
BLOCK (run it again later: blocking instructions are written to be re-executed), DIVERGED (the op set the
warp's per-lane PCs) and EXITED (the op retired lanes). machine.py documents the protocol.

Fallback: raised by an op's gang version (op.gang, lockstep.py) before it changes any state, where the warps
must run the instruction one at a time instead (a check that fails, a case the gang version does not cover)."""
BLOCK = object()
DIVERGED = object()
EXITED = object()


class Fallback(Exception):
    pass
