// tcemu serve: the PTX-run view (one warp's trace, typed register values, the faulting instruction, the source
// with line numbers, and for each shared-memory / ldmatrix / wgmma / TMA row a link that opens the banks,
// descriptor or TMA view on the warp's own values).
"use strict";
(function () {
  const T = window.tcemu;
  const { $, esc, hex, formOf, update } = T;

  function linkHtml(L) {
    if (L.kind === "unknown" || !L.view) return "<span class='muted'>" + esc(L.note || "") + "</span>";
    const q = new URLSearchParams(Object.assign({ view: L.view }, L.values));
    const open = " <a class='open-" + L.view + "' href='?" + esc(q.toString()) + "'>open in " + L.view + "</a>";
    if (L.kind === "shared") {
      if (L.note) return esc(L.op) + ": " + esc(L.note);
      return "<span class='wf'>" + L.wavefronts + "</span> wavefront" + (L.wavefronts === 1 ? "" : "s") + " (ideal " + L.ideal +
        (L.conflicts ? ", <b class='bad-text'>" + L.conflicts + " bank conflicts</b>" : ", no conflict") + ")" + open +
        "<button class='mini copy' type='button' data-copy='" + esc(L.values.addresses) + "'>copy addresses</button>";
    }
    if (L.kind === "descriptor") {
      return "operand " + esc(L.operand) + ": <code>" + esc(L.descriptor) + "</code>" +
        "<button class='mini copy' type='button' data-copy='" + esc(L.descriptor) + "'>copy</button>" + open;
    }
    if (L.kind === "tma") {
      return "TMA box " + esc(L.values.box) + " of " + esc(L.values.dims) + " " + esc(L.elemtype) + " at (" + esc(L.values.coords) + ") to " +
        hex(L.smem_addr) + ", swizzle " + esc(L.values.swizzle) + open;
    }
    return "";
  }

  function destHtml(x) {
    const typed = x.typed || x.values;
    const shown = [];
    typed.forEach((v, i) => { if (v !== null && shown.length < 4) shown.push(i + ":" + v); });
    const all = typed.map((v, i) => i + ": " + (v === null ? "-" : v + (x.typed ? "  (" + x.values[i] + ")" : ""))).join("\n");
    return '<span title="' + esc(x.reg + " ." + (x.type || "b" + x.bits) + "\n" + all) + '"><code>' + esc(x.reg) + "</code> " +
      esc(shown.join(" ")) + (shown.length ? " ..." : "") + "</span>";
  }

  T.RENDER.ptx = function (sec, d) {
    const out = $(".out", sec);
    const s = d.stats;
    $(".summary", out).innerHTML = "kernel <code>" + esc(d.kernel) + "</code>, grid " + d.grid.join("x") + ", block " + d.block.join("x") +
      ": warp " + d.warp + " of CTA (" + d.cta.join(", ") + "), <span class='nrows'>" + d.rows.length + "</span> instructions traced" +
      (s ? "; the CTA ran " + s.warp_instructions + " warp instructions in " + s.seconds + " s" : "") +
      (d.stopped ? '; <span class="stopped">stopped: ' + esc(d.stopped) + "</span>" : "");
    // the warp selector: one button per warp of the CTA
    const warps = $(".warps", out);
    warps.innerHTML = "trace warp: " + Array.from({ length: Math.min(d.warps, 32) }, (_, w) =>
      "<button type='button' class='mini warp" + (w === d.warp ? " on" : "") + "' data-warp='" + w + "'>" + w + "</button>").join("");
    const f = d.fault;
    let where = "";
    if (f && f.warp !== null) {
      where = " (PTX line " + f.line + ", CTA (" + f.cta.join(", ") + "), warp " + f.warp + ")" + (f.traced ? "" :
        " <button type='button' class='mini warp' data-warp='" + f.warp + "' data-cta='" + f.cta.join(",") + "'>trace that warp</button>");
    }
    $(".fault", out).innerHTML = f ? '<p class="error-text"><b>' + esc(f.type) + "</b> <code>" + esc(f.field) + "</code>: " +
      esc(f.rule).replace(/\n/g, "<br>") + where + "</p>" : "";
    const rows = [];
    const ranLines = new Set();
    for (const r of d.rows) {
      if (r.line) ranLines.add(r.line);
      let strip = "";
      for (let i = 0; i < 32; i++) strip += (r.ran >>> i) & 1 ? "\u25ae" : (r.lanes >>> i) & 1 ? "\u25af" : "\u00b7";
      const dests = r.dests.map(destHtml).join("<br>") + (r.more_dests ? "<br>+" + r.more_dests + " more registers" : "");
      const links = (r.links || []).map(linkHtml).join("<br>");
      const cls = r.fault ? "fault" : r.control === "waits" ? "waits" : "";
      rows.push("<tr class='" + cls + "'><td>" + r.step + "</td><td>" + r.pc + "</td><td>" + (r.line ?? "") +
        "</td><td><code>" + esc(r.text) + "</code></td><td class='lanes' title='ran " + hex(r.ran >>> 0, 8) + " of " + hex(r.lanes >>> 0, 8) + "'>" + strip +
        "</td><td>" + esc(r.control) + (r.count > 1 ? " x" + r.count : "") + "</td><td>" + dests + "</td><td class='links'>" + links + "</td></tr>");
    }
    $("tbody", out).innerHTML = rows.join("");
    // the source with its line numbers: lines the warp ran tinted, the faulting line marked
    const text = formOf("ptx").elements.ptx.value.split("\n");
    const src = $(".source", out);
    src.replaceChildren(...text.map((line, i) => {
      const el = document.createElement("span");
      const n = i + 1;
      if (f && f.line === n) el.className = "fault"; else if (ranLines.has(n)) el.className = "ran";
      const num = document.createElement("i");
      num.textContent = String(n);
      el.append(num, line);
      return el;
    }));
    const hot = src.querySelector(".fault");
    if (hot) src.scrollTop = Math.max(0, hot.offsetTop - src.clientHeight / 2);
    $(".arrays", out).innerHTML = d.arrays.length ? "<h3>array arguments after the run (first values; only the traced CTA" +
      (d.cluster.some((c) => c > 1) ? "'s cluster" : "") + " ran)</h3>" + d.arrays.map((a) =>
      "<p>argument " + a.index + " (" + esc(a.dtype) + " " + esc(a.shape.join("x")) + "): <code class='values'>" + esc(a.values.join(" ")) + "</code></p>").join("") : "";
  };

  // warp buttons: set the form's warp (and CTA) and trace again
  document.addEventListener("click", (e) => {
    const b = e.target.closest("#view-ptx button.warp");
    if (!b) return;
    const form = formOf("ptx");
    form.elements.warp.value = b.dataset.warp;
    if (b.dataset.cta) form.elements.cta.value = b.dataset.cta;
    update("ptx", true);
  });
})();
