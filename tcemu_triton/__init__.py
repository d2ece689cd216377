"""Triton's entry point to tcemu's driver (the `triton.backends` entry point `tcemu`).

Triton imports `tcemu_triton.compiler` and `tcemu_triton.driver` whenever it starts, so both stay small: tcemu
itself is imported only when the driver is made, i.e. when TCEMU_TRITON is set (tcemu.frontends.triton_driver).
"""
