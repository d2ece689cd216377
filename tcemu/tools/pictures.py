"""Pictures in the style of the PTX layout figures (matplotlib, optional: pip install 'tcemu[pictures]').

An operand map draws shared memory as 128-byte lines of eight 16-byte chunks; each chunk an operand
element lives in is coloured by its core matrix and labelled with the first element it holds.
"""
import numpy as np

from ..layout.addressing import core_matrix_rows, operand_addresses
from ..layout.banks import BankReport
from ..layout.descriptors import SwizzleMode, as_arch_descriptor
from ..arith.dtypes import OPERAND_DTYPES, element_type, form_text, is_padded, parse_major, placement_dtype
from ..core.errors import TcemuError
from .operand import operand_spec
from ..core.validate import as_int, as_int_array, output_path, show

SUFFIXES = (".png", ".svg")  # matplotlib picks the format from the extension


def _save(fig, plt, path, dpi):
    """Write the figure; a file the system refuses is an error naming the path, not an OSError."""
    try:
        fig.savefig(path, dpi=dpi)
    except OSError as e:
        raise TcemuError("path", f"cannot write {show(path)}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        raise TcemuError("png", "pictures need matplotlib: pip install 'tcemu[pictures]'") from None


def operand_map(desc, path: str, *, rows=None, k=None, dtype=None, major: str = "K", operand: str = "A",
                arch: str = "sm90", padded=None, instr=None, kind=None, cta_group=None):
    """Draw where every 16-byte chunk of the operand lives (PNG or SVG by the file's extension).
    Returns (first line address, {(line, chunk): label}).

    With `instr` (an InstrDescriptor, or its value with kind=) the operand's type, form, major-ness and this
    CTA's rows and K come from the instruction (cta_group::2: one CTA's half of A's rows or B's columns);
    fp4 / fp6 follow dtypes' packed / padded rule (`padded`)."""
    path = output_path(path, "path", SUFFIXES)
    if not isinstance(operand, str) or len(operand) > 8:
        raise TcemuError("operand", f"a short operand name such as 'A', got {show(operand)}")
    plt = _plt()
    note = ""
    if instr is not None:
        spec = operand_spec(instr, kind=kind, operand=operand, cta_group=cta_group)
        dtype, major, rows, k, padded, arch, operand = (spec.dtype, spec.major, spec.rows, spec.k, spec.padded,
                                                        "sm100", spec.name)
        if spec.cta_group == 2:
            note = f"; one CTA of the pair: {spec.rows} of {spec.total_rows} {'rows' if spec.name == 'A' else 'columns'}"
    elif rows is None or k is None or dtype is None:
        raise TcemuError("rows, k, dtype", "give the operand's rows, k and dtype, or the instruction (instr=...)")
    else:
        padded = is_padded(dtype, padded)
    at = placement_dtype(dtype, padded, major=major)
    desc = as_arch_descriptor(desc, arch)
    addrs = operand_addresses(desc, rows=rows, k=k, dtype=at, major=major, arch=arch)
    cm = core_matrix_rows(desc, rows=rows, k=k, dtype=at, major=major, arch=arch)  # (i, j, 8) row addresses
    lo = int(addrs.min()) // 128 * 128
    lines = (int(addrs.max()) - lo) // 128 + 1
    if lines > 256:
        raise TcemuError("rows", f"the operand spans {lines} lines of 128 bytes; draw at most 256")
    color = np.full((lines, 8), -1.0)
    labels = {}
    T = element_type(at, allowed=OPERAND_DTYPES[arch]).per_chunk
    k_major = parse_major(major)
    for (i, j, p), a in np.ndenumerate(cm):
        line, chunk = (int(a) - lo) // 128, (int(a) % 128) // 16
        color[line, chunk] = (i * cm.shape[1] + j) % 20
        r, c = (8 * i + p, j * T) if k_major else (i * T, 8 * j + p)
        labels[(line, chunk)] = f"{operand}{r},{c}"
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.32 * lines + 1.2)))
    masked = np.ma.masked_less(color, 0)
    ax.imshow(masked, cmap="tab20", vmin=0, vmax=19, aspect="auto")
    for (line, chunk), text in labels.items():
        ax.text(chunk, line, text, ha="center", va="center", fontsize=7)
    ax.set_xticks(range(8), [f"+{16 * c}" for c in range(8)])
    ax.set_yticks(range(lines), [f"{lo + 128 * n:#x}" for n in range(lines)], fontsize=7)
    ax.set_xlabel("16-byte chunk within the 128-byte line")
    ax.set_title(f"{desc}\n{operand}: {rows}x{k} {form_text(dtype, padded)}, {'K' if k_major else 'MN'}-major{note}; "
                 "colour = core matrix, label = first element", fontsize=9)
    fig.tight_layout()
    _save(fig, plt, path, 110)
    return lo, labels


def swizzle_atom(mode, path: str, *, base_offset: int = 0):
    """Draw one swizzle atom: logical chunk c of row r (label r,c) at its physical chunk.
    Returns the (rows, chunks) grid of logical chunk numbers by physical position."""
    path = output_path(path, "path", SUFFIXES)
    base_offset = as_int(base_offset, "base_offset", 0, 7)
    plt = _plt()
    mode = SwizzleMode.parse(mode)
    sw = mode.swizzle
    width = mode.bytes // 16
    rows = 8 if mode is not SwizzleMode.NONE else 1
    grid = np.zeros((rows, width))
    fig, ax = plt.subplots(figsize=(1.1 * width + 1.5, 0.6 * rows + 1.4))
    for r in range(rows):
        for c in range(width):
            phys = sw(r * mode.bytes + 16 * c, base_offset if sw.bits else 0) - r * mode.bytes
            grid[r, phys // 16] = c
            ax.text(phys // 16, r, f"{r},{c}", ha="center", va="center", fontsize=8)
    ax.imshow(grid, cmap="tab10", vmin=0, vmax=9, aspect="auto")
    ax.set_xticks(range(width), [f"+{16 * c}" for c in range(width)])
    ax.set_yticks(range(rows), [f"row {r}" for r in range(rows)])
    ax.set_title(f"{mode.value} swizzle atom ({sw}), base offset {base_offset}: label = row, logical chunk",
                 fontsize=9)
    fig.tight_layout()
    _save(fig, plt, path, 110)
    return grid.astype(int)


def bank_heatmap(report, addrs, mask: int, path: str):
    """A lanes x banks heat map of one instruction's bank demand (tcemu banks --png)."""
    if not isinstance(report, BankReport):
        raise TcemuError("report", f"must be a banks.BankReport, got {show(report)}")
    addrs = as_int_array(addrs, "addrs", 0, 1 << 62, ndim=1)
    if addrs.size < report.op.threads_used:
        raise TcemuError("addrs", f"{report.op.name} needs {report.op.threads_used} addresses, got {addrs.size}")
    mask = as_int(mask, "mask", 0, (1 << 32) - 1)
    path = output_path(path, "path", SUFFIXES)
    plt = _plt()
    op = report.op
    grid = np.zeros((32, 32))
    for t in range(op.threads_used):
        if op.matrices or mask >> t & 1:
            for w in range(max(op.width // 4, 1)):
                grid[t, (int(addrs[t]) // 4 + w) % 32] += 1
    fig, ax = plt.subplots(figsize=(8, 7))
    ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xlabel("bank")
    ax.set_ylabel("thread (lane)")
    ax.set_title(f"{op.name}: {report.wavefronts} wavefronts (ideal {report.ideal})")
    for p in report.phases:
        if p.threads:
            ax.axhline(min(p.threads) - 0.5, color="white", lw=0.5)
    fig.tight_layout()
    _save(fig, plt, path, 100)
