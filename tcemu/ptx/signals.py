"""The control values an instruction's semantics return besides None (next instruction) and an int (a jump):
BLOCK (run it again later: blocking instructions are written to be re-executed), DIVERGED (the op set the
warp's per-lane PCs) and EXITED (the op retired lanes). machine.py documents the protocol."""
BLOCK = object()
DIVERGED = object()
EXITED = object()
