"""The special-function unit (MUFU) of sm_90, bit for bit: tables measured on the GPU (tables), their
deterministic predictors (predict), the cores that read them (mufu, the reference; numpy only) and the same
cores compiled with numba (fast, what the interpreter runs). tables, predict and mufu depend on numpy and the
standard library only, so the GPU proof (scripts/prove_sfu.py) loads them on a machine without tcemu's other
dependencies."""
