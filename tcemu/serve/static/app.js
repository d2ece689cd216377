// tcemu serve: the page. Every view is a form whose fields live in the query string; the page posts them to
// /api/<view> and draws the answer. Large maps are SVG with one <path> per colour (no node per element);
// hovering a cell (or ?probe=...) shows what lives there. A copy written by `tcemu explain --html` carries its
// data inline (script#tcemu-embed) and draws without a server.
"use strict";
(function () {
  const VIEWS = ["descriptor", "swizzle", "tma", "instr", "tmem", "banks", "ptx"];
  const PAGE_ONLY = new Set(["probe", "color"]);
  // 10 hues, each dark then light (matplotlib's tab20 order, as tcemu's PNG pictures use)
  const PALETTE = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
    "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d",
    "#17becf", "#9edae5"];
  const HEAT = ["#f4f4f4", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b", "#041b3d"];
  const CLASH = "#111111";  // two elements on one byte (drawn last, on top of both)
  const FLAG = "#d62728";   // a field a finding names (instruction descriptor)
  // n colours that stay distinct however many there are: golden-angle hues (137.5 degrees apart), lightness
  // alternating, so neighbouring classes differ and none repeats (the 20-colour table repeats after 20)
  const HUE_CACHE = new Map();
  function hues(n) {
    if (!HUE_CACHE.has(n)) HUE_CACHE.set(n, Array.from({ length: Math.max(n, 1) }, (_, i) =>
      "hsl(" + ((i * 137.508) % 360).toFixed(1) + ", " + (i % 3 === 2 ? 50 : 68) + "%, " + (i % 2 ? 62 : 44) + "%)"));
    return HUE_CACHE.get(n);
  }
  const SVGNS = "http://www.w3.org/2000/svg";
  const embed = document.getElementById("tcemu-embed");
  const defaults = {};
  const seqs = {};
  const last = {};   // view -> {data, values}
  let current = null;

  const $ = (sel, root) => (root || document).querySelector(sel);
  const hex = (v, w) => "0x" + Number(v).toString(16).padStart(w || 0, "0");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const section = (view) => document.getElementById("view-" + view);
  const formOf = (view) => document.querySelector('form[data-view="' + view + '"]');

  // ---- form state <-> query string ------------------------------------------------------------------------
  function readForm(form, visibleOnly) {  // visibleOnly: leave out fields the current settings hide
    const out = {};
    for (const el of form.elements) {
      if (!el.name) continue;
      if (visibleOnly && el.closest("[data-when][hidden]")) continue;
      out[el.name] = el.type === "checkbox" ? (el.checked ? "1" : "0") : el.value.trim();
    }
    return out;
  }
  function writeForm(form, values) {
    for (const el of form.elements) {
      if (!el.name || !(el.name in values)) continue;
      const v = String(values[el.name]);
      if (el.type === "checkbox") el.checked = v === "1" || v === "true" || v === "on";
      else if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === v)) el.add(new Option(v, v, true, true));
      else el.value = v;
    }
    showWhen(form);
  }
  function showWhen(form) {  // fields that only matter for some settings (data-when="name:value")
    const values = readForm(form);
    for (const el of form.querySelectorAll("[data-when]")) {
      const [name, value] = el.dataset.when.split(":");
      el.hidden = !value.split("|").includes(values[name]);
    }
    // fields another one overrides while it is set and visible (data-unless="name": the instruction descriptor
    // sets the operand's type, major-ness and extent)
    for (const el of form.querySelectorAll("[data-unless]")) {
      const other = form.elements.namedItem(el.dataset.unless);
      const on = other && other.value.trim() !== "" && !other.closest("[data-when][hidden]");
      el.classList.toggle("overridden", !!on);
      el.title = on ? "set by " + el.dataset.unless : "";
    }
  }
  const URL_TEXT = 1500;  // a longer PTX text stays out of the URL: ptx=@session (sessionStorage); POSTed to the API
  const SESSION = "@session";
  function urlFor(view, values) {  // only what differs from the page's defaults
    const q = new URLSearchParams({ view });
    for (const [k, v] of Object.entries(values)) if (v !== defaults[view][k]) q.set(k, k === "ptx" && v.length > URL_TEXT ? SESSION : v);
    return "?" + q.toString();
  }
  function apiFields(values) {
    const out = {};
    for (const [k, v] of Object.entries(values)) if (!PAGE_ONLY.has(k) && v !== "") out[k] = v;
    return out;
  }

  // ---- talking to the API -----------------------------------------------------------------------------------
  async function update(view, push) {
    const form = formOf(view);
    showWhen(form);
    const values = readForm(form, true);
    if (push) history.pushState({ view }, "", urlFor(view, values));
    if (view === "ptx") try { sessionStorage.setItem("tcemu-ptx", values.ptx); } catch (e) { /* storage off */ }
    const sec = section(view);
    const seq = (seqs[view] = (seqs[view] || 0) + 1);
    sec.dataset.state = "loading";
    let res, body;
    try {
      res = await fetch("api/" + view, { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(apiFields(values)) });
      body = await res.json();
    } catch (e) {
      if (seq !== seqs[view]) return;
      return fail(view, { field: "", message: "no answer from tcemu serve (" + e.message + ")" }, seq);
    }
    if (seq !== seqs[view]) return;  // a newer request is on its way
    if (!res.ok) return fail(view, body.error || { message: "HTTP " + res.status }, seq);
    show(view, body, values, seq);
  }
  function fail(view, err, seq) {
    const sec = section(view);
    const form = formOf(view);
    for (const el of form.querySelectorAll(".bad")) { el.classList.remove("bad"); el.removeAttribute("aria-invalid"); }
    const names = String(err.field || "").split(/,\s*/);
    for (const n of names) {
      const el = form.elements.namedItem(n);
      if (el && el.classList) { el.classList.add("bad"); el.setAttribute("aria-invalid", "true"); }
    }
    $(".out", sec).classList.add("stale");  // the last good answer stays, dimmed
    $(".status", sec).innerHTML = '<span class="err-field">' + esc(err.field || "error") + "</span>: " + esc(err.rule || err.message);
    sec.dataset.state = "error";
    sec.dataset.errorField = err.field || "";
    sec.dataset.seq = seq;
  }
  function show(view, data, values, seq) {
    const sec = section(view);
    const form = formOf(view);
    for (const el of form.querySelectorAll(".bad")) { el.classList.remove("bad"); el.removeAttribute("aria-invalid"); }
    $(".status", sec).textContent = "";
    $(".out", sec).classList.remove("stale");
    $(".out", sec).hidden = false;
    const t0 = performance.now();
    try {
      RENDER[view](sec, data, values);
    } catch (e) {  // a drawing bug: said in place, never a blank page
      return fail(view, { field: "page", rule: "could not draw this answer (" + e.message + "); please report it with this URL" }, seq);
    }
    sec.dataset.renderMs = (performance.now() - t0).toFixed(1);
    delete sec.dataset.paintMs;  // ... and until the browser has laid out and painted it
    requestAnimationFrame(() => setTimeout(() => { sec.dataset.paintMs = (performance.now() - t0).toFixed(1); }, 0));
    last[view] = { data, values };
    sec.dataset.state = "ok";
    sec.dataset.errorField = "";
    sec.dataset.seq = seq;
  }

  // ---- the grid renderer: one <path> per colour ----------------------------------------------------------
  // g: {cols, rows, cw, ch, left, top, n, r, c, w (typed arrays, n cells: row, column, width in columns),
  //     color (palette index per cell), palette, labels [{r, c, w, text}], rowLabel(r), colLabels [{c, text}],
  //     hover(r, c) -> {r, c, w, html} | null, seps [{r}] (horizontal rules above row r)}
  function drawGrid(host, g) {
    const left = g.left || 0, top = g.top || 0;
    const W = left + g.cols * g.cw + 2, H = top + g.rows * g.ch + 2;
    const svg = document.createElementNS(SVGNS, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    svg.classList.add("grid");
    const bg = document.createElementNS(SVGNS, "rect");
    bg.setAttribute("x", left); bg.setAttribute("y", top);
    bg.setAttribute("width", g.cols * g.cw); bg.setAttribute("height", g.rows * g.ch);
    bg.setAttribute("class", "bg");
    svg.appendChild(bg);
    const gapX = g.cw >= 4 ? 0.6 : 0, gapY = g.ch >= 4 ? 0.6 : 0;
    const parts = new Map();
    const counts = new Map();
    for (let i = 0; i < g.n; i++) {
      const col = g.color[i];
      let arr = parts.get(col);
      if (!arr) { arr = []; parts.set(col, arr); counts.set(col, 0); }
      const x = left + g.c[i] * g.cw, y = top + g.r[i] * g.ch, w = g.w[i] * g.cw - gapX, h = g.ch - gapY;
      arr.push("M" + x + " " + y + "h" + w + "v" + h + "h" + (-w) + "z");
      counts.set(col, counts.get(col) + 1);
    }
    // overlaps (colour -1) last: on top of the elements they overlap
    for (const [col, arr] of [...parts].sort((x, y) => (x[0] < 0) - (y[0] < 0))) {
      const p = document.createElementNS(SVGNS, "path");
      p.setAttribute("d", arr.join(""));
      p.setAttribute("fill", col === -1 ? CLASH : col === -2 ? FLAG : g.palette[col % g.palette.length]);
      p.dataset.color = col;
      p.dataset.cells = counts.get(col);
      svg.appendChild(p);
    }
    if (g.seps) for (const s of g.seps) {
      const l = document.createElementNS(SVGNS, "line");
      l.setAttribute("x1", left - 4); l.setAttribute("x2", left + g.cols * g.cw);
      l.setAttribute("y1", top + s.r * g.ch - 0.3); l.setAttribute("y2", top + s.r * g.ch - 0.3);
      l.setAttribute("class", "sep");
      svg.appendChild(l);
    }
    const text = (x, y, s, cls, anchor) => {
      const t = document.createElementNS(SVGNS, "text");
      t.setAttribute("x", x); t.setAttribute("y", y);
      if (cls) t.setAttribute("class", cls);
      if (anchor) t.setAttribute("text-anchor", anchor);
      t.textContent = s;
      svg.appendChild(t);
      return t;
    };
    if (g.labels && g.labels.length <= 4096) {
      const fs = Math.min(11, g.ch - 3);
      if (fs >= 7) for (const L of g.labels) {
        const t = text(left + (L.c + L.w / 2) * g.cw, top + (L.r + 0.5) * g.ch + fs * 0.35, L.text,
          "cell-label" + (g.labelClass ? " " + g.labelClass : ""), "middle");
        t.setAttribute("font-size", fs);
      }
    }
    if (g.rowLabel) {
      const every = g.labelEvery || Math.max(1, Math.ceil(11 / g.ch));
      for (let r = 0; r < g.rows; r += every) {
        const s = g.rowLabel(r);
        if (s !== null) text(left - 4, top + (r + 0.5) * g.ch + 3.5, s, "axis", "end");
      }
    }
    if (g.colLabels) for (const L of g.colLabels) text(left + L.c * g.cw + 1, top - 4, L.text, "axis");
    const hl = document.createElementNS(SVGNS, "rect");
    hl.setAttribute("class", "hl");
    hl.setAttribute("visibility", "hidden");
    svg.appendChild(hl);
    host.replaceChildren(svg);
    const place = (hit) => {
      hl.setAttribute("x", left + hit.c * g.cw - 1); hl.setAttribute("y", top + hit.r * g.ch - 1);
      hl.setAttribute("width", hit.w * g.cw + 1.4); hl.setAttribute("height", g.ch + 1.4);
      hl.setAttribute("visibility", "visible");
    };
    const tip = document.getElementById("tooltip");
    svg.addEventListener("mousemove", (e) => {
      const box = svg.getBoundingClientRect();
      const x = (e.clientX - box.left) * (W / box.width), y = (e.clientY - box.top) * (H / box.height);
      const r = Math.floor((y - top) / g.ch), c = Math.floor((x - left) / g.cw);
      const hit = r >= 0 && c >= 0 && r < g.rows && c < g.cols ? g.hover(r, c) : null;
      if (!hit) { tip.hidden = true; hl.setAttribute("visibility", "hidden"); return; }
      place(hit);
      tip.innerHTML = hit.html;
      tip.hidden = false;
      tip.style.left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + "px";
      tip.style.top = (e.clientY + 14) + "px";
      if (g.info) g.info.innerHTML = hit.html;
    });
    svg.addEventListener("mouseleave", () => { tip.hidden = true; });
    return { svg, select: (hit) => { if (hit) { place(hit); if (g.info) g.info.innerHTML = hit.html; } } };
  }

  // cells of a shared-memory map: elements (addresses, `bytes` wide; sub-byte types share a byte) on
  // 128-byte lines; returns the grid spec plus the owner table for hover
  function smemCells(addrs, bytes, colorOf) {
    let lo = Infinity, hi = -Infinity;
    for (const a of addrs) { if (a < lo) lo = a; if (a > hi) hi = a; }
    lo = Math.floor(lo / 128) * 128;
    const lines = Math.floor((hi + bytes - 1 - lo) / 128) + 1;
    const owner = new Int32Array(lines * 128).fill(-1);
    const shared = new Uint8Array(lines * 128);  // more than one element in this byte
    const second = new Int32Array(lines * 128).fill(-1);  // the latest other element on this byte
    const n = addrs.length;
    const R = new Int32Array(n), C = new Int32Array(n), Wd = new Int32Array(n), color = new Int16Array(n);
    let m = 0, clashes = 0;
    for (let e = 0; e < n; e++) {
      const off = addrs[e] - lo;
      let clash = false;
      for (let b = 0; b < bytes; b++) {
        if (owner[off + b] >= 0) { shared[off + b] = 1; second[off + b] = e; clash = true; } else owner[off + b] = e;
      }
      if (clash && bytes >= 1 && !colorOf.subbyte) { clashes++; }
      if (clash && colorOf.subbyte) continue;  // sub-byte: one cell per byte
      R[m] = off >> 7; C[m] = off & 127; Wd[m] = bytes; color[m] = clash ? -1 : colorOf(e); m++;
    }
    return { lo, lines, owner, shared, second, n: m, r: R, c: C, w: Wd, color, clashes };
  }

  function chunkLabels(cells, name) {
    const out = [];
    if (cells.lines * 8 > 4096) return out;
    for (let line = 0; line < cells.lines; line++) {
      for (let ch = 0; ch < 8; ch++) {
        const e = cells.owner[line * 128 + ch * 16];
        if (e >= 0) out.push({ r: line, c: ch * 16, w: 16, text: name(e) });
      }
    }
    return out;
  }

  function parseInt0(s) {
    s = String(s || "").trim().toLowerCase();
    if (!s) return null;
    const v = s.startsWith("0x") ? parseInt(s.slice(2), 16) : s.startsWith("0b") ? parseInt(s.slice(2), 2) : parseInt(s, 10);
    return Number.isFinite(v) ? v : null;
  }

  function findingsList(ul, findings) {
    ul.replaceChildren();
    if (!findings.length) { const li = document.createElement("li"); li.className = "ok"; li.textContent = "no findings"; ul.appendChild(li); }
    for (const f of findings) {
      const li = document.createElement("li");
      li.className = f.severity;
      li.innerHTML = "<b>" + esc(f.severity) + "</b> <code>" + esc(f.field) + "</code>: " + esc(f.rule);
      ul.appendChild(li);
    }
  }

  function legend(host, items) {  // DOM styles, not style attributes (the page's CSP forbids inline styles)
    host.replaceChildren(...items.map(([color, text]) => {
      const key = document.createElement("span"), sw = document.createElement("i");
      key.className = "key";
      sw.style.background = color;
      key.append(sw, text);
      return key;
    }));
  }

  // ---- views ---------------------------------------------------------------------------------------------------
  const RENDER = {};

  RENDER.descriptor = function (sec, d, values) {
    const out = $(".out", sec);
    $(".summary", out).innerHTML = "<code class='copyable desc-hex'>" + esc(d.descriptor) + "</code><button type='button' class='mini copy' data-copy='" +
      esc(d.descriptor) + "'>copy</button> " + esc(d.summary) + " &mdash; " + esc(d.operand) +
      ": " + d.rows + " x " + d.k + " " + esc(d.dtype) + ", " + esc(d.major) + "-major" + (d.layout ? "; <code>" + esc(d.layout) + "</code>" : "");
    findingsList($(".findings", out), d.findings);
    $(".explain", out).textContent = d.explain;
    $(".command", out).innerHTML = "<code>" + esc(d.command) + "</code>";
    // keep the other input mode in step with this descriptor
    const form = formOf("descriptor");
    if (!embed) {
      if (values.input === "fields") form.elements.descriptor.value = d.descriptor;
      else for (const k of ["start_address", "lbo", "sbo"]) form.elements[k].value = hex(d.fields[k]);
      if (values.input !== "fields") {
        form.elements.base_offset.value = d.fields.base_offset;
        form.elements.swizzle.value = d.fields.swizzle;
        if ("version" in d.fields) { form.elements.version.value = d.fields.version; form.elements.lbo_mode.value = d.fields.lbo_mode; }
      }
    }
    const map = $(".map", out), info = $(".probe-info", out);
    if (!d.addresses) {
      map.innerHTML = '<p class="nomap">no map: <code>' + esc(d.map_error.field) + "</code>: " + esc(d.map_error.rule) + "</p>";
      info.textContent = "";
      map.dataset.cells = 0;
      return;
    }
    const rows = d.rows, K = d.k, T = d.per_chunk, kMajor = d.major === "K";
    const flat = new Float64Array(rows * K);
    for (let r = 0; r < rows; r++) for (let k = 0; k < K; k++) flat[r * K + k] = d.addresses[r][k];
    const bytes = Math.max(d.element_bits >> 3, 1);
    const kb = kMajor ? K / T : K / 8;
    const cmOf = (e) => { const r = Math.floor(e / K), k = e % K; return kMajor ? [r >> 3, Math.floor(k / T)] : [Math.floor(r / T), k >> 3]; };
    const by = values.color || "cm";
    const ncm = (kMajor ? rows / 8 : rows / T) * kb;
    const classes = { cm: ncm, row: rows, k: K, bank: 32 }[by] || ncm;
    const colorOf = (e) => {
      if (by === "row") return Math.floor(e / K);
      if (by === "k") return e % K;
      if (by === "bank") return (flat[e] >> 2) & 31;
      const [i, j] = cmOf(e); return i * kb + j;
    };
    colorOf.subbyte = d.element_bits < 8;
    const palette = hues(classes);
    const cells = smemCells(flat, bytes, colorOf);
    const X = d.operand;
    const name = (e) => Math.floor(e / K) + "," + (e % K);
    const perByte = d.element_bits < 8 ? 8 / d.element_bits : 1;
    const describe = (e, addr) => {
      const r = Math.floor(e / K), k = e % K, [i, j] = cmOf(e);
      const p = kMajor ? r & 7 : k & 7;
      let s = "<b>" + X + "[" + r + ", " + (perByte > 1 ? k + ".." + (k + perByte - 1) : k) + "]</b> at " + hex(flat[e]) +
        (perByte > 1 ? " (" + perByte + " per byte)" : "") + "<br>core matrix (" + i + ", " + j + "), row " + p +
        "<br>bank " + ((flat[e] >> 2) & 31) + ", 16-byte chunk " + ((flat[e] & 127) >> 4) + " of line " + hex(flat[e] - (flat[e] & 127));
      if (cells.shared[addr - cells.lo] && perByte === 1) {
        const o = cells.owner[addr - cells.lo], o2 = cells.second[addr - cells.lo];
        s += '<br><span class="bad-text">overlap: byte ' + hex(addr) + " holds both " + X + "[" + Math.floor(o / K) + ", " + (o % K) + "] and " +
          X + "[" + Math.floor(o2 / K) + ", " + (o2 % K) + "]</span>";
      }
      return s;
    };
    const hitAt = (addr) => {
      const e = cells.owner[addr - cells.lo];
      if (e === undefined || e < 0) return null;
      const a = flat[e] - cells.lo;
      return { r: a >> 7, c: a & 127, w: bytes, html: describe(e, addr) };
    };
    const g = drawGrid(map, {
      cols: 128, rows: cells.lines, cw: 6, ch: cells.lines <= 64 ? 18 : Math.max(3, Math.min(18, Math.floor(4000 / cells.lines))),
      left: 62, top: 16, n: cells.n, r: cells.r, c: cells.c, w: cells.w, color: cells.color, palette,
      labels: chunkLabels(cells, name), rowLabel: (r) => hex(cells.lo + 128 * r, 5),
      colLabels: [0, 1, 2, 3, 4, 5, 6, 7].map((c) => ({ c: 16 * c, text: "+" + 16 * c })),
      hover: (r, c) => hitAt(cells.lo + r * 128 + c), info,
    });
    map.dataset.cells = cells.n;
    map.dataset.lines = cells.lines;
    map.dataset.lo = hex(cells.lo);
    map.dataset.clashes = cells.clashes;
    const byName = { cm: "core matrix (8 rows x 16 bytes)", row: "row", k: "k", bank: "bank" }[by] || by;
    legend($(".legend", out), [["linear-gradient(90deg," + palette.slice(0, 8).join(",") + ")", "colour: " + byName + " (" + classes + " colours)"],
      ...(cells.clashes ? [[CLASH, cells.clashes + " elements overlap another (black, on top)"]] : [])]);
    map.dataset.colors = classes;
    const probe = parseInt0(values.probe);
    info.innerHTML = "hover a cell";
    const el = $(".element-info", out);
    el.innerHTML = "";
    if (d.element) {
      const x = d.element;
      el.innerHTML = "<p class='element'><b>" + X + "[" + x.i + ", " + x.k + "]</b> reads byte <code class='copyable'>" + hex(x.address) +
        "</code>: bank " + x.bank + ", 16-byte chunk " + x.chunk + " of line " + hex(x.line) + ", core matrix (" + x.core_matrix.join(", ") +
        "), its row " + x.core_matrix_row + "</p>";
      const hit = hitAt(x.address);
      if (hit) g.select(hit);
    }
    if (probe !== null) {
      const hit = probe >= cells.lo && probe < cells.lo + cells.lines * 128 ? hitAt(probe) : null;
      if (hit) g.select(hit); else info.innerHTML = "no element of the operand at " + esc(values.probe);
    }
  };

  RENDER.swizzle = function (sec, d, values) {
    const out = $(".out", sec);
    $(".summary", out).textContent = d.text;
    const n = d.rows * d.chunks;
    const R = new Int32Array(n), C = new Int32Array(n), Wd = new Int32Array(n).fill(1), color = new Int16Array(n);
    const labels = [];
    let m = 0;
    for (let r = 0; r < d.rows; r++) for (let p = 0; p < d.chunks; p++) {
      const c = d.grid[r][p];
      R[m] = r; C[m] = p; color[m] = (2 * c) % 20; m++;
      labels.push({ r, c: p, w: 1, text: r + "," + c });
    }
    const info = $(".probe-info", out);
    drawGrid($(".map", out), {
      cols: d.chunks, rows: d.rows, cw: 56, ch: 26, left: 52, top: 16, n, r: R, c: C, w: Wd, color, palette: PALETTE, labels,
      rowLabel: (r) => "row " + r, colLabels: Array.from({ length: d.chunks }, (_, c) => ({ c, text: "+" + 16 * c })),
      hover: (r, p) => ({ r, c: p, w: 1, html: "row " + r + ", logical chunk " + d.grid[r][p] + " (bytes " + 16 * d.grid[r][p] +
        ".." + (16 * d.grid[r][p] + 15) + ") is stored at physical chunk " + p + " (+" + 16 * p + ")" }), info,
    });
    $(".map", out).dataset.cells = n;
    info.textContent = "label: row, logical 16-byte chunk; colour: logical chunk";
  };

  RENDER.tma = function (sec, d, values) {
    const out = $(".out", sec);
    const rows = d.addresses.length, cols = d.addresses[0].length, es = d.element_bytes;
    $(".summary", out).innerHTML = "box " + esc(d.box.join("x")) + " of a " + esc(d.dims.join("x")) + " " + esc(d.dtype) +
      " tensor at coords " + esc(d.coords.join(",")) + ", swizzle " + esc(d.swizzle) + " into " + hex(d.smem_addr) + ": " + rows + " box rows of " +
      cols + " elements" + (d.out_of_bounds ? "; " + d.out_of_bounds + " out of bounds (zero filled)" : "");
    const flat = new Float64Array(rows * cols), gidx = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) { flat[r * cols + c] = d.addresses[r][c]; gidx[r * cols + c] = d.global_index[r][c]; }
    const inBlock = (r, c) => {  // element (box row r, dimension-0 index c) in the operand's K block
      const k = d.major === "K" ? c : r;
      return k >= d.kblock * d.k && k < (d.kblock + 1) * d.k;
    };
    const HUES = [0, 1, 2, 4, 5, 6, 8, 9];  // tab20 hues without red and grey (grey: zero fill)
    const colorOf = (e) => {
      const r = Math.floor(e / cols), c = e % cols;
      if (gidx[e] < 0) return 14;
      return 2 * HUES[Math.floor(c * es / 16) % 8] + (inBlock(r, c) ? 0 : 1);
    };
    const cells = smemCells(flat, es, colorOf);
    const coordsOf = (g) => { const out = []; for (const n of d.dims) { out.push(g % n); g = Math.floor(g / n); } return out; };
    const describe = (e) => {
      const r = Math.floor(e / cols), c = e % cols;
      const where = gidx[e] < 0 ? "out of bounds: zero filled" : "global (" + coordsOf(gidx[e]).join(", ") + ") (dimension 0 first)";
      const opnd = d.major === "K" ? [r, c] : [c, r];
      return "<b>box[" + r + ", " + c + "]</b> at " + hex(flat[e]) + "<br>" + where + "<br>operand element (" + opnd.join(", ") + ")" +
        (inBlock(r, c) ? ", in K block " + d.kblock : "") + "<br>bank " + ((flat[e] >> 2) & 31);
    };
    const hitAt = (addr) => {
      const e = cells.owner[addr - cells.lo];
      if (e === undefined || e < 0) return null;
      const a = flat[e] - cells.lo;
      return { r: a >> 7, c: a & 127, w: es, html: describe(e) };
    };
    const map = $(".map", out), info = $(".probe-info", out);
    const g = drawGrid(map, {
      cols: 128, rows: cells.lines, cw: 6, ch: cells.lines <= 64 ? 18 : Math.max(3, Math.min(18, Math.floor(4000 / cells.lines))),
      left: 62, top: 16, n: cells.n, r: cells.r, c: cells.c, w: cells.w, color: cells.color, palette: PALETTE,
      labels: chunkLabels(cells, (e) => Math.floor(e / cols) + "," + (e % cols)), rowLabel: (r) => hex(cells.lo + 128 * r, 5),
      colLabels: [0, 1, 2, 3, 4, 5, 6, 7].map((c) => ({ c: 16 * c, text: "+" + 16 * c })),
      hover: (r, c) => hitAt(cells.lo + r * 128 + c), info,
    });
    map.dataset.cells = cells.n;
    map.dataset.lines = cells.lines;
    legend($(".legend", out), [[PALETTE[0], "16-byte chunk of the box row (hue), in K block " + d.kblock], [PALETTE[1], "outside the K block"], [PALETTE[14], "zero fill"]]);
    const s = $(".suggest", out);
    if (d.descriptor) {
      const q = new URLSearchParams({ view: "descriptor", arch: d.arch, descriptor: d.descriptor, dtype: d.dtype, major: d.major,
        rows: String(d.operand_rows), k: String(d.k) });
      s.innerHTML = "<h3>descriptor that reads K block " + d.kblock + " back</h3><p><code class='desc'>" + esc(d.descriptor) + "</code><br>" +
        esc(d.summary) + "<button type='button' class='mini copy' data-copy='" + esc(d.descriptor) + "'>copy</button></p>" + (embed ? "" : '<p><a class="open-desc" href="?' + q + '">open it in the descriptor view</a></p>');
    } else {
      s.innerHTML = "<h3>no descriptor reads this placement</h3><p class='error-text'>" + esc(d.suggest_error.rule) + "</p>";
    }
    info.innerHTML = "hover a cell";
    const probe = parseInt0(values.probe);
    if (probe !== null) {
      const hit = probe >= cells.lo && probe < cells.lo + cells.lines * 128 ? hitAt(probe) : null;
      if (hit) g.select(hit); else info.innerHTML = "no box element at " + esc(values.probe);
    }
  };

  RENDER.instr = function (sec, d) {
    const out = $(".out", sec);
    $(".summary", out).innerHTML = "<code class='copyable'>" + esc(d.instr) + "</code> as .kind::" + esc(d.kind);
    const verdict = $(".verdict", out);
    verdict.className = "verdict" + (d.valid ? "" : " bad-text");
    verdict.innerHTML = d.valid ? "a valid descriptor" : "invalid: " + d.findings.map((f) => "<code>" + esc(f.field) + "</code>: " + esc(f.rule)).join("; ") +
      " &mdash; every field below is read from its bits anyway; the rows at fault are marked";
    const bad = new Set(d.findings.map((f) => f.lo).filter((x) => x !== null && x !== undefined));
    findingsList($(".findings", out), d.findings);
    $(".explain", out).textContent = d.description.join("\n");
    $(".command", out).innerHTML = "<code>" + esc(d.command) + "</code>";
    const v = parseInt(d.instr, 16);
    const n = 32, R = new Int32Array(n), C = new Int32Array(n), Wd = new Int32Array(n).fill(1), color = new Int16Array(n);
    const fieldOf = new Array(32);
    d.bits.forEach((f, i) => { for (let b = f.lo; b < f.lo + f.width; b++) fieldOf[b] = i; });
    const labels = [];
    for (let x = 0; x < 32; x++) {
      const b = 31 - x;  // bit 31 on the left, as the PTX tables draw it
      const f = d.bits[fieldOf[b]];
      R[x] = 0; C[x] = x; color[x] = bad.has(f.lo) ? -2 : f.attr === null ? 15 : (2 * (fieldOf[b] % 10)) + 1;
      labels.push({ r: 0, c: x, w: 1, text: String((v >>> b) & 1) });
    }
    const info = document.createElement("div");
    drawGrid($(".map", out), {
      cols: 32, rows: 1, cw: 24, ch: 26, left: 4, top: 16, n, r: R, c: C, w: Wd, color, palette: PALETTE, labels,
      colLabels: [31, 23, 15, 7, 0].map((b) => ({ c: 31 - b, text: String(b) })),
      hover: (r, c) => { const f = d.bits[fieldOf[31 - c]]; return { r: 0, c: 31 - (f.lo + f.width - 1), w: f.width,
        html: "bits " + f.lo + (f.width > 1 ? "-" + (f.lo + f.width - 1) : "") + ": <b>" + esc(f.label) + "</b> = " + f.raw + (f.attr ? " (" + esc(f.attr) + " = " + esc(f.value) + ")" : "") }; },
    });
    $(".map", out).dataset.cells = n;
    const tb = $("tbody", out);
    tb.replaceChildren();
    for (const f of [...d.bits].reverse()) {
      const tr = document.createElement("tr");
      if (f.attr === null) tr.className = f.raw ? "reserved-set" : "reserved";
      if (bad.has(f.lo)) tr.classList.add("finding");
      tr.innerHTML = "<td>" + f.lo + (f.width > 1 ? "-" + (f.lo + f.width - 1) : "") + "</td><td>" + esc(f.label) + "</td><td>" + f.raw +
        "</td><td>" + (f.attr ? "<code>" + esc(f.attr) + "</code> = " + (f.value === null ? "<i>undefined code</i>" : esc(f.value)) : "") + "</td>";
      tb.appendChild(tr);
    }
  };

  const TMEM_COLORS = { "D": 0, "A": 2, "a": 4, "b": 8, "s": 18 };
  RENDER.tmem = function (sec, d, values) {
    const out = $(".out", sec);
    findingsList($(".findings", out), d.findings);
    const map = $(".map", out), info = $(".probe-info", out);
    $(".summary", out).innerHTML = ".kind::" + esc(d.kind) + " M = " + d.m + ", N = " + d.n + ", cta_group::" + d.cta_group +
      ": this CTA's tensor memory, 128 lanes x 512 columns of 32 bits" + (d.cta_group === 2 ? " (each CTA of the pair holds its share the same way)" : "");
    if (!d.grid) { map.innerHTML = '<p class="nomap">no map: the instruction descriptor breaks a rule above</p>'; map.dataset.cells = 0; return; }
    // inverse maps, lane * 512 + column -> what lives there
    const D = new Map(), A = new Map(), SF = { a: new Map(), b: new Map() };
    if (d.d) for (let r = 0; r < d.d.rows; r++) for (let n = 0; n < d.d.n; n++) D.set(d.d.lanes[r][n] * 512 + d.d.columns[r][n], [r, n]);
    if (d.a) for (let r = 0; r < d.a.rows; r++) for (let k = 0; k < d.a.k; k++) {
      const key = d.a.lanes[r] * 512 + d.a.columns[k];
      const was = A.get(key);
      if (was) was[2] = k; else A.set(key, [r, k, k]);
    }
    for (const [s, x] of [["a", d.scale_a], ["b", d.scale_b]]) if (x) for (let r = 0; r < x.rows; r++) for (const q of x.copies) {
      const key = (x.lanes[r] + q) * 512 + x.columns[r];
      SF[s].set(key, (SF[s].get(key) || []).concat([r]));
    }
    const n0 = 128 * 512;
    const R = new Int32Array(n0), C = new Int32Array(n0), Wd = new Int32Array(n0).fill(1), color = new Int16Array(n0);
    let m = 0;
    for (let l = 0; l < 128; l++) {
      const row = d.grid[l];
      for (let c = 0; c < 512; c++) {
        const code = row[c];
        if (code === ".") continue;
        R[m] = l; C[m] = c;
        color[m] = code === "!" ? -1 : TMEM_COLORS[code] + (code === "D" || code === "A" ? (l >> 5) & 1 : 0);
        m++;
      }
    }
    const describe = (l, c) => {
      const key = l * 512 + c, code = d.grid[l][c];
      let s = "lane " + l + ", column " + c + " (address " + hex(l * 65536 + c, 8) + ")";
      if (code === ".") return s + "<br>unused";
      if (D.has(key)) { const [r, n] = D.get(key); s += "<br><b>D[" + r + ", " + n + "]</b>"; }
      if (A.has(key)) { const [r, k0, k1] = A.get(key); s += "<br><b>A[" + r + ", " + k0 + (k1 > k0 ? ".." + k1 : "") + "]</b> (" + d.a.bits + "-bit, low bits first)"; }
      for (const [s2, x, lab] of [["a", d.scale_a, "SFA"], ["b", d.scale_b, "SFB"]]) if (SF[s2].has(key)) {
        const rows = SF[s2].get(key);
        s += "<br><b>" + lab + "</b> of row " + rows.join(", ") + ": bytes " + x.bytes.join(", ") + " (sub-partition copy " + (l >> 5) + ")";
      }
      if (code === "!") s += '<br><span class="bad-text">two regions use these bytes</span>';
      return s;
    };
    const g = drawGrid(map, {
      cols: 512, rows: 128, cw: 2, ch: 5, left: 54, top: 16, n: m, r: R, c: C, w: Wd, color, palette: PALETTE,
      rowLabel: (r) => "lane " + r, labelEvery: 16, seps: [{ r: 32 }, { r: 64 }, { r: 96 }],
      colLabels: [0, 64, 128, 192, 256, 320, 384, 448].map((c) => ({ c, text: String(c) })),
      hover: (r, c) => ({ r, c, w: 1, html: describe(r, c) }), info,
    });
    map.dataset.cells = m;
    legend($(".legend", out), [[PALETTE[0], "D"], [PALETTE[2], "A"], [PALETTE[4], "scale factors of A"], [PALETTE[8], "scale factors of B"],
      [PALETTE[18], "both scale sets (different bytes)"], [CLASH, "overlap"]]);
    info.innerHTML = "hover a cell (lane, column)";
    const probe = String(values.probe || "").split(/[ ,]+/).filter(Boolean).map(parseInt0);
    if (probe.length === 2 && probe.every((x) => x !== null) && probe[0] < 128 && probe[1] < 512) g.select({ r: probe[0], c: probe[1], w: 1, html: describe(probe[0], probe[1]) });
  };

  RENDER.banks = function (sec, d, values) {
    const out = $(".out", sec);
    $(".summary", out).innerHTML = "<b>" + esc(d.op) + "</b>: <span class='wavefronts'>" + d.wavefronts + "</span> wavefronts (ideal " + d.ideal +
      ", conflicts " + d.conflicts + ") over " + d.phases.length + " phases <button type='button' class='mini copy' data-copy='" +
      esc(d.addresses.slice(0, d.threads_used).map((a) => hex(a)).join(" ")) + "'>copy addresses</button>";
    $(".explain", out).textContent = d.table;
    const active = new Set(d.active);
    const phaseOf = (t) => d.phases.findIndex((p) => p.threads.includes(t));
    // cell (lane, bank): the lane asks the bank for a word; its colour is how many distinct words that bank
    // delivers in the lane's phase (1: no conflict there)
    const n = 32 * 32, R = new Int32Array(n), C = new Int32Array(n), Wd = new Int32Array(n).fill(1), color = new Int16Array(n);
    let m = 0;
    for (let t = 0; t < 32; t++) for (let b = 0; b < 32; b++) {
      if (!d.heat[t][b]) continue;
      const p = phaseOf(t);
      R[m] = t; C[m] = b; color[m] = Math.min(p < 0 ? 1 : d.phases[p].bank_words[b], HEAT.length - 1); m++;
    }
    const seps = [];
    let start = 0;
    for (const p of d.phases) { if (start) seps.push({ r: start }); start += d.phases.length ? (d.threads_used / d.phases.length) : 32; }
    const info = $(".probe-info", out);
    const laneHtml = (t) => {
      const a = d.addresses[t];
      if (!active.has(t)) return "lane " + t + ": inactive (mask) or unused by " + esc(d.op);
      const words = Math.max(d.width >> 2, 1);
      const banks = Array.from({ length: words }, (_, w) => ((a >> 2) + w) & 31);
      return "<b>lane " + t + "</b>: address " + hex(a) + ", " + d.width + " bytes, bank" + (words > 1 ? "s " : " ") + banks.join(", ") +
        "<br>phase " + phaseOf(t);
    };
    const g = drawGrid($(".map", out), {
      cols: 32, rows: 32, cw: 14, ch: 14, left: 52, top: 16, n: m, r: R, c: C, w: Wd, color, palette: HEAT, seps,
      rowLabel: (t) => (active.has(t) ? "" : "(") + "lane " + t + (active.has(t) ? "" : ")"),
      colLabels: [0, 8, 16, 24].map((b) => ({ c: b, text: "bank " + b })),
      hover: (t, b) => { const p = phaseOf(t); return { r: t, c: 0, w: 32, html: laneHtml(t) + "<br>bank " + b + ": " + d.heat[t][b] +
        " word(s) asked" + (p >= 0 && d.heat[t][b] ? "; the bank delivers " + d.phases[p].bank_words[b] + " distinct word(s) in phase " + p : "") }; }, info,
    });
    $(".map", out).dataset.cells = m;
    const P = d.phases.length, n2 = P * 32, R2 = new Int32Array(n2), C2 = new Int32Array(n2), W2 = new Int32Array(n2).fill(1), col2 = new Int16Array(n2);
    const labels = [];
    let m2 = 0;
    d.phases.forEach((p, i) => p.bank_words.forEach((v, b) => {
      if (!v) return;
      R2[m2] = i; C2[m2] = b; col2[m2] = Math.min(v, HEAT.length - 1); m2++;
      if (v > 1) labels.push({ r: i, c: b, w: 1, text: String(v) });
    }));
    drawGrid($(".map2", out), {
      cols: 32, rows: P, cw: 14, ch: 16, left: 80, top: 16, n: m2, r: R2, c: C2, w: W2, color: col2, palette: HEAT, labels,
      labelClass: "on-dark",
      rowLabel: (i) => "phase " + i + ": " + d.phases[i].wavefronts, colLabels: [0, 8, 16, 24].map((b) => ({ c: b, text: "bank " + b })),
      hover: (i, b) => ({ r: i, c: b, w: 1, html: "phase " + i + " (threads " + esc(d.phases[i].threads.join(" ")) + "): bank " + b + " delivers " +
        d.phases[i].bank_words[b] + " distinct word(s); the phase costs " + d.phases[i].wavefronts + " wavefront(s)" }), info,
    });
    $(".map2", out).dataset.cells = m2;
    legend($(".legend", out), HEAT.slice(1).map((c, i) => [c, String(i + 1) + (i === HEAT.length - 2 ? "+" : "")]));
    info.innerHTML = "hover a cell";
    const probe = parseInt0(values.probe);
    if (probe !== null && probe >= 0 && probe < 32) g.select({ r: probe, c: 0, w: 32, html: laneHtml(probe) });
  };

  // ---- navigation --------------------------------------------------------------------------------------------
  function activate(view) {
    current = view;
    for (const v of VIEWS) section(v).hidden = v !== view;
    for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.view === view);
    document.title = "tcemu: " + view;
  }
  function fromUrl() {
    const q = new URLSearchParams(location.search);
    const asked = q.get("view");
    const view = VIEWS.includes(asked) ? asked : "descriptor";
    const banner = document.getElementById("banner");
    banner.hidden = asked === null || VIEWS.includes(asked);
    banner.className = banner.hidden ? "" : "error";
    if (!banner.hidden) banner.textContent = "no view " + JSON.stringify(asked) + ": the views are " + VIEWS.join(", ") + " (showing descriptor)";
    const form = formOf(view);
    const values = Object.assign({}, defaults[view]);
    for (const [k, v] of q) if (k in values) values[k] = v;
    if (values.ptx === SESSION) {
      let text = null;
      try { text = sessionStorage.getItem("tcemu-ptx"); } catch (e) { /* storage off */ }
      values.ptx = text || "// this URL's PTX text was kept in another browser session (too long for a URL): paste it here";
    }
    writeForm(form, values);
    activate(view);
    return view;
  }

  function start() {
    for (const v of VIEWS) {
      defaults[v] = readForm(formOf(v));
      $(".out", section(v)).hidden = true;  // until the first answer
    }
    if (embed) {  // a static copy: draw the embedded answer, no server
      const e = JSON.parse(embed.textContent);
      activate(e.view);
      writeForm(formOf(e.view), Object.assign({}, defaults[e.view], e.values));
      for (const el of formOf(e.view).elements) if (!PAGE_ONLY.has(el.name)) el.disabled = true;
      document.getElementById("tabs").hidden = true;
      const b = document.getElementById("banner");
      b.hidden = false;
      b.innerHTML = "A static copy written by <code>" + esc(e.command || "tcemu explain --html") + "</code>; run <code>tcemu serve</code> to change the fields.";
      show(e.view, e.data, readForm(formOf(e.view)), 1);
      const probe = formOf(e.view).elements.probe;
      if (probe) probe.addEventListener("input", () => RENDER[e.view](section(e.view), e.data, readForm(formOf(e.view))));
      document.documentElement.dataset.ready = "1";
      return;
    }
    for (const v of VIEWS) {
      const form = formOf(v);
      let timer = null;
      const soon = () => { showWhen(form); clearTimeout(timer); timer = setTimeout(() => update(v, true), 300); };
      form.addEventListener("input", soon);
      form.addEventListener("change", soon);
      form.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); update(v, true); });
    }
    for (const a of document.querySelectorAll("#tabs a")) a.addEventListener("click", (e) => {
      e.preventDefault();
      const v = a.dataset.view;
      activate(v);
      history.pushState({ view: v }, "", urlFor(v, readForm(formOf(v), true)));
      if (!last[v]) update(v, false);
    });
    window.addEventListener("popstate", () => update(fromUrl(), false));
    update(fromUrl(), false).then(() => { document.documentElement.dataset.ready = "1"; });
  }
  // for the view scripts loaded after this one (static/ptx.js, static/tools.js): they add to RENDER and the page
  window.tcemu = { RENDER, $, esc, hex, section, formOf, update, readForm, writeForm, drawGrid, hues, parseInt0, embed, last };
  document.addEventListener("DOMContentLoaded", start);
})();
