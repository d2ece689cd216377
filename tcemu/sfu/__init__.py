"""The special-function unit (MUFU) of sm_90, bit for bit: tables measured on the GPU (tables), their
deterministic predictors (predict) and the cores that read them (mufu). Depends on numpy and the standard
library only, so the GPU proof (scripts/prove_sfu.py) loads this folder as it is on a machine without tcemu's
other dependencies."""
