"""Ways in from kernel languages: Triton (tcemu.frontends.triton, also importable as tcemu.triton)."""
