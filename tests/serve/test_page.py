"""The page of `tcemu serve` in headless Chromium (over the DevTools protocol, tests/support/browser.py): each view
loads from a URL, draws the cells and texts tcemu's models give (counted from the SVG's one-path-per-colour data),
answers hover and typing, names bad fields, and fetches nothing but its own server. Needs Debian's `chromium`
(README, "An interactive page"); skipped without it. TCEMU_SCREENSHOTS=DIR keeps a screenshot of each view."""
import json
import os
import threading

import numpy as np
import pytest

import tcemu
from tcemu.cli import main

from browser import Browser, find_chromium

pytestmark = pytest.mark.browser

if find_chromium() is None:
    pytest.skip("Chromium is not installed (apt-get install -y chromium; README, 'An interactive page'): "
                "page tests skipped",
                allow_module_level=True)

from tcemu.serve.server import make_server  # noqa: E402

DESC = "0x4000004000010040"
SHOTS = os.environ.get("TCEMU_SCREENSHOTS")


@pytest.fixture(scope="module")
def page():
    srv = make_server(0, quiet=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    b = Browser()
    b.base = f"http://127.0.0.1:{srv.server_address[1]}/"
    yield b
    b.close()
    srv.shutdown()
    srv.server_close()


def sec(view):
    return f"document.getElementById('view-{view}')"


def load(b, url, view):
    b.requests.clear()
    b.goto(url, f"{sec(view)}.dataset.state === 'ok' || {sec(view)}.dataset.state === 'error'")
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        h = b.eval("document.documentElement.scrollHeight")
        b.screenshot(os.path.join(SHOTS, f"{view}.png"), clip=(0, 0, 1400, min(h, 1200)))
    return b.eval(f"{sec(view)}.dataset.state")


def settled(b, view, before):
    """Wait for the view's next answer after `before` (its seq), then return its state."""
    b.wait(f"{sec(view)}.dataset.seq !== '{before}' && {sec(view)}.dataset.state !== 'loading'")
    return b.eval(f"{sec(view)}.dataset.state")


def seq(b, view):
    return b.eval(f"{sec(view)}.dataset.seq")


def cells(b, view, host=".map"):
    """{palette index: cells drawn} of a view's grid: one <path> per colour carries its count."""
    got = b.eval(f"[...{sec(view)}.querySelectorAll('{host} svg path')].map(p => [+p.dataset.color, +p.dataset.cells])")
    # the count is what the path draws: one 'M' per cell
    ms = b.eval(f"[...{sec(view)}.querySelectorAll('{host} svg path')]"
                ".map(p => p.getAttribute('d').split('M').length - 1)")
    assert [c for _, c in got] == ms
    return dict(got)


def text(b, view, selector):
    return b.eval(f"{sec(view)}.querySelector({json.dumps(selector)}).textContent")


def local_only(b):
    assert b.exceptions == []
    assert all(u.startswith((b.base, "file://", "data:", "about:")) for u in b.requests), b.requests


def svg_point(b, view, x, y):
    """Client coordinates of SVG user point (x, y) of a view's map."""
    return b.eval(f"""(() => {{ const s = {sec(view)}.querySelector('.map svg'), r = s.getBoundingClientRect(),
        v = s.viewBox.baseVal; return [r.left + {x} * r.width / v.width, r.top + {y} * r.height / v.height]; }})()""")


def test_descriptor_view_draws_hovers_and_follows_typing(page):
    b = page
    assert load(b, b.base + "?view=descriptor&probe=0x490", "descriptor") == "ok"
    addrs = tcemu.operand_addresses(int(DESC, 16), rows=64, k=16, dtype="bf16")
    # colour = core matrix (i, j) = (r // 8, k // 8), index 2 i + j: 16 core matrices of 8 x 8 elements
    assert cells(b, "descriptor") == {c: 64 for c in range(16)}
    # a label per 16-byte chunk: the element at its first byte, "row,k" (k = 0 or 8)
    labels = b.eval(f"[...{sec('descriptor')}.querySelectorAll('.map .cell-label')].map(t => t.textContent)")
    assert sorted(labels) == sorted(f"{r},{k}" for r in range(64) for k in (0, 8))
    assert int(np.argwhere(addrs == 0x490)[0][0]) == 1  # 0x490 holds A[1, 0]
    assert text(b, "descriptor", ".probe-info").startswith("A[1, 0] at 0x490")
    assert text(b, "descriptor", ".findings") == "no findings"
    # a real mouse over element (2, 8): line (addr - 0x400) / 128, byte addr % 128; cells are 6 x 18 from (62, 16)
    a = int(addrs[2, 8])
    x, y = svg_point(b, "descriptor", 62 + (a % 128) * 6 + 3, 16 + (a - 0x400) // 128 * 18 + 9)
    b.hover(x, y)
    assert b.eval("!document.getElementById('tooltip').hidden")
    assert b.eval("document.getElementById('tooltip').textContent").startswith(f"A[2, 8] at {a:#x}")
    # typing a field redraws and puts the state in the URL
    before = seq(b, "descriptor")
    b.type_into("#view-descriptor input[name=rows]", "128")
    assert settled(b, "descriptor", before) == "ok"
    assert "rows=128" in b.eval("location.search")
    assert sum(cells(b, "descriptor").values()) == 128 * 16
    # a bad field is named and marked
    before = seq(b, "descriptor")
    b.type_into("#view-descriptor input[name=descriptor]", "0xZZ")
    assert settled(b, "descriptor", before) == "error"
    assert b.eval(f"{sec('descriptor')}.dataset.errorField") == "descriptor"
    assert b.eval("document.querySelector('#view-descriptor input[name=descriptor]').classList.contains('bad')")
    assert text(b, "descriptor", ".status").startswith("descriptor: '0xZZ' is not an integer literal")
    local_only(b)


def test_swizzle_then_instruction_descriptor_by_its_tab(page):
    b = page
    assert load(b, b.base + "?view=swizzle&mode=128B", "swizzle") == "ok"
    labels = b.eval(f"[...{sec('swizzle')}.querySelectorAll('.cell-label')].map(t => t.textContent)")
    assert labels == [f"{r},{p ^ r}" for r in range(8) for p in range(8)]  # physical chunk p holds chunk p ^ r
    # click the tab: the view switches without a page load and fetches its default
    x, y = b.eval("(() => { const r = document.querySelector('#tabs a[data-view=instr]').getBoundingClientRect();"
                  " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    b.click(x, y)
    b.wait(f"{sec('instr')}.dataset.state === 'ok'")
    assert "view=instr" in b.eval("location.search")
    bits = b.eval(f"[...{sec('instr')}.querySelectorAll('.cell-label')].map(t => t.textContent).join('')")
    assert bits == f"{0x8400490:032b}"  # bit 31 first, as the PTX tables draw it
    assert b.eval(f"{sec('instr')}.querySelectorAll('table.fields tbody tr').length") == 16  # Table 42's fields
    assert "M = 128, N = 256" in text(b, "instr", ".explain")
    # the same bits read as .kind::i8 have D code 1, which i8 does not define
    before = seq(b, "instr")
    b.eval(f"(() => {{ const k = {sec('instr')}.querySelector('select[name=kind]'); k.value = 'i8';"
           " k.dispatchEvent(new Event('change', { bubbles: true })); })()")
    assert settled(b, "instr", before) == "ok"   # decoded bit by bit anyway; the finding is said in place
    assert text(b, "instr", ".verdict").startswith("invalid: dtype_d: code 1 is not defined")
    assert b.eval(f"[...{sec('instr')}.querySelectorAll('table.fields tr.finding td:nth-child(2)')].map(t => t.textContent)") \
        == ["D type"]
    local_only(b)


def test_tma_view_and_its_link_to_the_descriptor_view(page):
    b = page
    assert load(b, b.base + "?view=tma&kblock=1&probe=0x480", "tma") == "ok"
    assert sum(cells(b, "tma").values()) == 64 * 64
    # box row 1 is line 0x480 with chunks XOR 1: byte 0 holds box[1, 8]
    assert text(b, "tma", ".probe-info").startswith("box[1, 8] at 0x480")
    assert text(b, "tma", ".suggest .desc") == "0x4000004000010042"    # start 0x420: K block 1, 32 bytes on
    x, y = b.eval(f"(() => {{ const r = {sec('tma')}.querySelector('a.open-desc').getBoundingClientRect();"
                  " return [r.left + 5, r.top + r.height / 2]; })()")
    b.click(x, y)
    b.wait(f"{sec('descriptor')}.dataset.state === 'ok' && !{sec('descriptor')}.hidden")
    assert b.eval("document.querySelector('#view-descriptor input[name=descriptor]').value") == "0x4000004000010042"
    assert sum(cells(b, "descriptor").values()) == 64 * 16
    local_only(b)


def test_tmem_view(page):
    b = page
    assert load(b, b.base + "?view=tmem&probe=3,260", "tmem") == "ok"
    # M = 128, N = 256 bf16 -> f32 D in lanes 0-127, columns 0-255 (colours 0/1 alternate per 32 lanes);
    # A at column 0x100: 16 bf16 of K, two per cell, 8 columns (colours 2/3)
    assert cells(b, "tmem") == {0: 64 * 256, 1: 64 * 256, 2: 64 * 8, 3: 64 * 8}
    assert "A[3, 8..9]" in text(b, "tmem", ".probe-info")
    local_only(b)


def test_banks_view_follows_the_pattern(page):
    b = page
    assert load(b, b.base + "?view=banks", "banks") == "ok"
    assert text(b, "banks", ".wavefronts") == "32"
    # 32 lanes x 4 banks asked, each bank delivering 8 distinct words in its phase
    assert cells(b, "banks") == {8: 128}
    before = seq(b, "banks")
    b.type_into("#view-banks input[name=pattern]", "(t % 8) * 128 + ((t // 8) ^ (t % 8)) * 16")
    assert settled(b, "banks", before) == "ok"
    assert text(b, "banks", ".wavefronts") == "4"
    assert cells(b, "banks") == {1: 128} and cells(b, "banks", ".map2") == {1: 128}
    local_only(b)


def test_ptx_view_traces_one_warp(page):
    b = page
    assert load(b, b.base + "?view=ptx&warp=1", "ptx") == "ok"
    rows = b.eval(f"[...{sec('ptx')}.querySelectorAll('table.trace tbody tr')]"
                  ".map(r => [...r.cells].map(c => c.textContent))")
    assert len(rows) == 38
    assert rows[2][3] == "mov.u32 %r0, %tid.x" and rows[2][6].startswith("%r0 0:0x00000020 1:0x00000021")
    first_add = next(r for r in rows if r[3].startswith("@%p0 add"))
    assert first_add[4] == "\u25af" + "\u25ae" * 31       # lane 0 has no lane below it: its shfl.up is out of range
    values = [int(v) for v in text(b, "ptx", ".arrays code.values").split()]
    assert values == [sum(range(t - t % 32, t + 1)) + (100 if t % 2 else 0) for t in range(64)]
    local_only(b)


def test_a_256_by_256_operand_stays_responsive(page):
    b = page
    url = (b.base + "?view=descriptor&input=fields&start_address=0x400&lbo=0x80&sbo=0x1000&swizzle=none"
           "&rows=256&k=256")
    assert load(b, url, "descriptor") == "ok"
    assert sum(cells(b, "descriptor").values()) == 256 * 256
    assert b.eval(f"{sec('descriptor')}.querySelector('.map').dataset.clashes") == "0"
    ms = float(b.wait(f"{sec('descriptor')}.dataset.paintMs"))
    print(f"256 x 256 operand: built in {b.eval(sec('descriptor') + '.dataset.renderMs')} ms, painted in {ms:.0f} ms")
    assert ms < 3000
    # no node per element: a path per colour (one per core matrix: 1,024 distinct hues), a label every few of
    # the 1,024 lines, no cell labels
    assert b.eval(f"{sec('descriptor')}.querySelectorAll('.map svg *').length") < 1024 + 1024 // 4 + 40
    local_only(b)


def test_explain_html_file_draws_without_a_server(page, tmp_path, capsys):
    b = page
    path = tmp_path / "map.html"
    assert main(["explain", DESC, "--rows", "16", "--html", str(path)]) == 0
    assert load(b, path.as_uri(), "descriptor") == "ok"
    assert cells(b, "descriptor") == {c: 64 for c in range(4)}  # 16 x 16: core matrices (0..1, 0..1) of 8 x 8
    assert b.eval("document.getElementById('tabs').hidden")
    assert b.eval("document.querySelector('#view-descriptor select[name=dtype]').disabled")
    assert "tcemu explain 0x4000004000010040" in b.eval("document.getElementById('banner').textContent")
    b.type_into("#view-descriptor input[name=probe]", "0x490")
    b.wait(f"{sec('descriptor')}.querySelector('.probe-info').textContent.startsWith('A[1, 0]')")
    assert all(u.startswith("file://") for u in b.requests), b.requests
    assert b.exceptions == []


# ---- what is VISIBLE: pixels of a screenshot, not only the SVG's data ---------------------------------------------

BLACK = (17, 17, 17)  # the overlap colour (#111111)


def cell_centre(b, view, addr, lo, nbytes):
    """Client point at the centre of the cell of the element at shared address `addr` (cells 6 x 18 from (62, 16))."""
    return svg_point(b, view, 62 + (addr % 128 + nbytes / 2) * 6, 16 + ((addr - lo) // 128 + 0.5) * 18)


def test_overlapping_elements_are_black_on_top_and_named_both(page):
    b = page
    # LBO 0: K chunk 1 lies on chunk 0, so A[r, 8] shares its bytes with A[r, 0] (the lint says so too)
    url = b.base + "?view=descriptor&input=fields&start_address=0x400&lbo=0&sbo=0x80&swizzle=none&rows=16&k=16"
    assert load(b, url, "descriptor") == "ok"
    assert b.eval(f"{sec('descriptor')}.querySelector('.map').dataset.clashes") == "128"
    # 0x480 holds A[8, 0] and A[8, 8]: core matrix (1, 0)'s colour first appears after the first overlap, so
    # a black drawn before it would be hidden under it
    x, y = cell_centre(b, "descriptor", 0x480, 0x400, 2)
    assert b.pixel(x, y) == BLACK
    assert b.pixel(*cell_centre(b, "descriptor", 0x400, 0x400, 2)) == BLACK
    b.hover(x, y)
    tip = b.eval("document.getElementById('tooltip').textContent")
    assert "byte 0x481 holds both A[8, 0] and A[8, 8]" in tip, tip   # the cell's centre: its second byte
    # control: the README's descriptor has no overlap, and its cells are coloured, not black
    assert load(b, b.base + "?view=descriptor", "descriptor") == "ok"
    px = b.pixel(*cell_centre(b, "descriptor", 0x400, 0x400, 2))
    assert px != BLACK and px != (251, 251, 251)
    local_only(b)


def test_colours_stay_distinct_past_20_core_matrices_and_colour_by(page):
    b = page
    # 64 x 64 bf16, no swizzle: 8 x 8 = 64 core matrices, each its own colour
    url = b.base + "?view=descriptor&input=fields&start_address=0x400&lbo=0x80&sbo=0x400&swizzle=none&rows=64&k=64"
    assert load(b, url, "descriptor") == "ok"
    fills = b.eval(f"[...{sec('descriptor')}.querySelectorAll('.map svg path')].map(p => p.getAttribute('fill'))")
    assert len(fills) == len(set(fills)) == 64
    addrs = tcemu.operand_addresses(tcemu.GmmaDescriptor(0x400, 0x80, 0x400, 0, "none").encode(), rows=64, k=64,
                                    dtype="bf16")
    # what the screen shows at the first element of core matrices (i, j), 24 of them: 24 different colours
    seen = [b.pixel(*cell_centre(b, "descriptor", int(addrs[8 * i, 8 * j]), 0x400, 2)) for i in range(3) for j in range(8)]
    assert len(set(seen)) == 24, seen
    for by, n in (("bank", 32), ("row", 64), ("k", 64)):
        assert load(b, url + f"&color={by}", "descriptor") == "ok"
        assert b.eval(f"{sec('descriptor')}.querySelector('.map').dataset.colors") == str(n)
        fills = b.eval(f"[...{sec('descriptor')}.querySelectorAll('.map svg path')].map(p => p.getAttribute('fill'))")
        assert len(set(fills)) == len(fills) <= n
    # the (i, k) probe: A[9, 8] -> its byte, bank, core matrix, and the cell is outlined
    assert load(b, b.base + "?view=descriptor&element=9,8", "descriptor") == "ok"
    a = int(tcemu.operand_addresses(int(DESC, 16), rows=64, k=16, dtype="bf16")[9, 8])
    assert text(b, "descriptor", ".element-info").startswith(
        f"A[9, 8] reads byte {a:#x}: bank {(a >> 2) & 31}, 16-byte chunk {(a % 128) // 16} of line {a - a % 128:#x}, "
        "core matrix (1, 1), its row 1")
    assert text(b, "descriptor", ".probe-info").startswith(f"A[9, 8] at {a:#x}")
    local_only(b)


def test_invalid_instruction_descriptor_shows_every_field_and_marks_the_bad_one(page):
    b = page
    assert load(b, b.base + "?view=instr&instr=0x8400491&kind=f16", "instr") == "ok"   # selector 1, dense
    assert b.eval(f"{sec('instr')}.querySelectorAll('table.fields tbody tr').length") == 16
    marked = b.eval(f"[...{sec('instr')}.querySelectorAll('table.fields tr.finding td:nth-child(2)')]"
                    ".map(t => t.textContent)")
    assert marked == ["sparsity selector"]
    assert text(b, "instr", ".verdict").startswith("invalid: sparsity_selector: 1: the selector picks")
    x, y = b.eval(f"(() => {{ const r = {sec('instr')}.querySelector('table.fields tr.finding td').getBoundingClientRect();"
                  " return [r.left + 3, r.top + r.height / 2]; })()")
    r, g, bl = b.pixel(x, y)
    assert r > g + 20 and r > bl + 20, (r, g, bl)   # the row is tinted red
    # the control: the valid word has no marked row, and the same cell is not red
    assert load(b, b.base + "?view=instr&instr=0x8400490&kind=f16", "instr") == "ok"
    assert b.eval(f"{sec('instr')}.querySelectorAll('table.fields tr.finding').length") == 0
    assert text(b, "instr", ".verdict") == "a valid descriptor"
    local_only(b)


def set_ptx(b, fields):
    """Write the PTX form's fields (the text too) and submit; return the view's state after the answer."""
    before = seq(b, "ptx")
    b.eval(f"(() => {{ const f = document.querySelector('form[data-view=ptx]'); const v = {json.dumps(fields)};"
           " for (const k in v) { const e = f.elements[k]; if (e.type === 'checkbox') e.checked = v[k] === '1';"
           " else e.value = v[k]; } f.requestSubmit(); })()")
    return settled(b, "ptx", before)


def test_ptx_fault_row_source_line_and_warp_buttons(page):
    b = page
    assert load(b, b.base + "?view=ptx", "ptx") == "ok"
    scan = b.eval("document.querySelector('form[data-view=ptx]').elements.ptx.value")
    assert set_ptx(b, {"ptx": scan.replace("st.global.u32 [%rd1], %r1;", "st.global.u32 [%rd1+4096], %r1;")}) == "ok"
    last = b.eval(f"(() => {{ const r = [...{sec('ptx')}.querySelectorAll('table.trace tbody tr')].pop();"
                  " const b = r.cells[3].getBoundingClientRect(); r.scrollIntoView({block: 'center'});"
                  " return [r.className, r.cells[3].textContent, r.cells[2].textContent]; })()")
    assert last == ["fault", "st.global.u32 [%rd1+4096], %r1", "30"]
    x, y = b.eval(f"(() => {{ const c = [...{sec('ptx')}.querySelectorAll('table.trace tbody tr')].pop().cells[0]"
                  ".getBoundingClientRect(); return [c.left + 2, c.top + c.height / 2]; })()")
    r, g, bl = b.pixel(x, y)
    assert r > g + 20 and r > bl + 20, (r, g, bl)
    assert b.eval(f"{sec('ptx')}.querySelector('.source span.fault i').textContent") == "30"
    assert "MemoryFault" in text(b, "ptx", ".fault") and "PTX line 30, CTA (0, 0, 0), warp 0" in text(b, "ptx", ".fault")
    # the control: the correct kernel has no fault row; warp 1's button traces warp 1
    assert set_ptx(b, {"ptx": scan}) == "ok"
    assert b.eval(f"{sec('ptx')}.querySelectorAll('tr.fault, .source span.fault').length") == 0
    before = seq(b, "ptx")
    x, y = b.eval(f"(() => {{ const e = {sec('ptx')}.querySelector('button.warp[data-warp=\"1\"]');"
                  " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                  " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    b.click(x, y)
    assert settled(b, "ptx", before) == "ok"
    rows = b.eval(f"[...{sec('ptx')}.querySelectorAll('table.trace tbody tr')].map(r => r.cells[6].textContent)")
    assert rows[2].startswith("%r0 0:0x00000020 1:0x00000021") and "warp=1" in b.eval("location.search")
    local_only(b)


def test_ptx_kernel_over_32_kib_goes_in_the_body_not_the_url(page):
    b = page
    big = open(os.path.join(os.path.dirname(__file__), "..", "fixtures", "ptx", "matmul_tma_bf16.ptx")).read()
    assert load(b, b.base + "?view=ptx", "ptx") == "ok"
    # its launch needs tensor maps the form's args do not give: the error names args, in place, not the size
    assert set_ptx(b, {"ptx": big, "block": "256", "args": ""}) == "error"
    assert b.eval(f"{sec('ptx')}.dataset.errorField") == "args"
    assert len(b.eval("location.search")) < 2000 and "ptx=%40session" in b.eval("location.search")
    # reloading the URL takes the text back from the session
    assert load(b, b.eval("location.href"), "ptx") == "error"
    assert b.eval("document.querySelector('form[data-view=ptx]').elements.ptx.value") == big.strip()
    local_only(b)


def test_ptx_rows_link_to_the_banks_descriptor_and_tma_views(page):
    b = page
    import importlib.util
    spec = importlib.util.spec_from_file_location("ptx_links", os.path.join(os.path.dirname(__file__), "test_ptx_links.py"))
    links = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(links)
    assert load(b, b.base + "?view=ptx", "ptx") == "ok"
    assert set_ptx(b, {"ptx": links.kernel(128), "block": "128", "shared": "0x5000", "zero_init_shared": "1",
                       "check_layouts": "0", "args": "zeros:bf16:128x128 tensormap:0:64x64:128B"}) == "ok"
    cells_ = b.eval(f"[...{sec('ptx')}.querySelectorAll('table.trace tbody tr')]"
                    ".map(r => [r.cells[3].textContent, r.cells[7].textContent])")
    ld = next(c for t, c in cells_ if t.startswith("ld.shared.u32"))
    assert ld.startswith("32 wavefronts (ideal 1, 31 bank conflicts) open in banks")
    assert any(t.startswith("wgmma.mma_async") and "operand A: 0x0000001000080040" in c for t, c in cells_)
    assert any(t.startswith("cp.async.bulk.tensor") and c.startswith("TMA box 64x64 of 128x128 bf16 at (8,16) to 0x2400")
               for t, c in cells_)
    # the copy button holds the lanes' addresses
    b.eval(f"{sec('ptx')}.querySelector('td.links button.copy').click()")
    assert b.eval(f"{sec('ptx')}.querySelector('td.links button.copy').dataset.copied").startswith("0x400 0x480 0x500")
    # each link opens its view on the warp's own values
    here = b.eval("location.href")
    for cls, view, check in (("open-banks", "banks", lambda: text(b, "banks", ".wavefronts") == "32"),
                             ("open-descriptor", "descriptor",
                              lambda: b.eval("document.querySelector('#view-descriptor input[name=descriptor]').value")
                              == "0x0000001000080040"),
                             ("open-tma", "tma", lambda: "into 0x2400" in text(b, "tma", ".summary"))):
        href = b.eval(f"{sec('ptx')}.querySelector('a.{cls}').getAttribute('href')")
        assert load(b, b.base + href, view) == "ok" and check(), (view, href)
        assert load(b, here, "ptx") == "ok"   # back to the PTX run
        assert "ld.shared.u32" in b.eval("document.querySelector('form[data-view=ptx]').elements.ptx.value")
    local_only(b)


def test_unknown_view_sm103_downloads_copy_and_dark_mode(page):
    b = page
    assert load(b, b.base + "?view=bogus", "descriptor") == "ok"
    assert b.eval("document.getElementById('banner').textContent") == \
        'no view "bogus": the views are descriptor, swizzle, tma, instr, tmem, banks, ptx (showing descriptor)'
    assert load(b, b.base + "?view=descriptor", "descriptor") == "ok"
    assert b.eval("document.getElementById('banner').hidden")
    # a first answer that is an error: said in place, the field marked (nothing drawn yet, nothing blank)
    assert load(b, b.base + "?view=instr&instr=0xZZ&kind=f16", "instr") == "error"
    assert text(b, "instr", ".status").startswith("instr: ") and b.eval(
        "!document.querySelector('#view-instr .status').hidden && "
        "document.querySelector('#view-instr input[name=instr]').classList.contains('bad')")
    opt = b.eval("[...document.querySelectorAll('#view-descriptor select[name=arch] option')].map(o => [o.value, o.title])")
    assert opt[2][0] == "sm103" and "K = 96" in opt[2][1] and "LBO mode 1" in opt[2][1]
    assert load(b, b.base + "?view=descriptor&arch=sm103&descriptor=0x4000404000010040&instr=0x8400490&kind=f16",
                "descriptor") == "ok"
    assert "--arch sm103" in text(b, "descriptor", ".command")
    # downloads: the map as a standalone SVG (its styles inside) and as a PNG
    svg = b.eval("window.tcemu.exportMap('descriptor', 'svg').then(x => x.text())")
    assert svg.startswith("<svg") and "<style>" in svg and svg.count("<path") >= 4
    png = b.eval("window.tcemu.exportMap('descriptor', 'png').then(x => [x.type, x.size])")
    assert png[0] == "image/png" and png[1] > 1000
    assert b.eval(f"{sec('descriptor')}.querySelectorAll('button.dl').length") == 2
    b.eval(f"{sec('descriptor')}.querySelector('.summary button.copy').click()")
    assert b.eval(f"{sec('descriptor')}.querySelector('.summary button.copy').dataset.copied") == "0x4000404000010040"
    # dark mode: the system's preference, then the toggle (light overrides it)
    b.send("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "dark"}])
    try:
        bg = b.pixel(3, 3)
        assert max(bg) < 60, bg
        b.eval("document.getElementById('theme').click()")   # auto -> dark
        assert b.eval("document.documentElement.dataset.theme") == "dark"
        b.eval("document.getElementById('theme').click()")   # dark -> light
        assert b.eval("document.documentElement.dataset.theme") == "light" and min(b.pixel(3, 3)) > 200
    finally:
        b.eval("document.getElementById('theme').click()")   # back to auto
        b.send("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "light"}])
    assert min(b.pixel(3, 3)) > 200
    local_only(b)
