"""Which approximate special-function PTX forms a kernel needs, and whether tcemu runs them yet.

tcemu refuses the approximate forms (PtxUnsupported: ex2/lg2/tanh/rsqrt/sin/cos .approx, rcp/sqrt/div .approx,
div.full) until it models the H100's results. Tests of kernels that need them skip ("needs the SFU models")
while any is refused: a one-instruction probe kernel per form answers that in milliseconds, before a replay
that would run for minutes before it reached the refused instruction.
"""
import re

import numpy as np

from tcemu import ptx as tptx
from tcemu.ptx.errors import PtxUnsupported

_FORM = re.compile(r"\b((?:tanh|ex2|lg2|rsqrt|sin|cos|rcp|sqrt|div)(?:\.(?:approx|full|ftz|rn|rz|rm|rp))*"
                   r"\.(?:f16x2|bf16x2|f16|bf16|f32|f64))\s")
_REG = {"f32": ("f32", "%f"), "f64": ("f64", "%fd"), "f16": ("b16", "%h"), "bf16": ("b16", "%h"),
        "f16x2": ("b32", "%r"), "bf16x2": ("b32", "%r")}
_PROBED = {}


def approx_forms(ptx: str) -> dict:
    """{form: count} of the special-function instructions in `ptx` whose result PTX does not pin down
    (.approx, div.full)."""
    out = {}
    for f in _FORM.findall(ptx):
        mods = f.split(".")[1:-1]
        if "approx" in mods or "full" in mods:
            out[f] = out.get(f, 0) + 1
    return out


def refused(form: str):
    """None if tcemu runs `form` (a one-thread kernel executing it once), else PtxUnsupported's message."""
    if form not in _PROBED:
        t, r = _REG[form.rsplit(".", 1)[1]]
        srcs = f"{r}1, {r}1" if form.startswith("div.") else f"{r}1"
        text = f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry probe(.param .u64 p)
{{
  .reg .b64 %rd<2>;
  .reg .{t} {r}<3>;
  ld.param.u64 %rd1, [p];
  ld.global.{t} {r}1, [%rd1];
  {form} {r}2, {srcs};
  st.global.{t} [%rd1+8], {r}2;
  ret;
}}
"""
        buf = np.zeros(4, np.uint32)
        buf[0] = buf[1] = 0x3F400000   # 0.75 (f32); any bits will do for the other types
        try:
            tptx.load(text).launch("probe", grid=1, block=1, args=[buf])
            _PROBED[form] = None
        except PtxUnsupported as e:
            _PROBED[form] = f"{e.field}: {e.rule}"[:200]
    return _PROBED[form]


def refused_forms(ptx: str) -> list:
    """The approximate forms of `ptx` that tcemu refuses today (sorted; empty once it models them all)."""
    return sorted(f for f in approx_forms(ptx) if refused(f))
