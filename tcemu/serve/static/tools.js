// tcemu serve: page tools shared by the views: SVG / PNG downloads of a map, copy buttons, the colour scheme
// (the system's prefers-color-scheme, or the header's toggle, remembered in localStorage).
"use strict";
(function () {
  const T = window.tcemu;

  // ---- colour scheme ------------------------------------------------------------------------------------------
  const THEMES = ["auto", "dark", "light"];
  const root = document.documentElement;
  function setTheme(t) {
    if (t === "auto") delete root.dataset.theme; else root.dataset.theme = t;
    const b = document.getElementById("theme");
    if (b) b.textContent = "theme: " + t;
    try { localStorage.setItem("tcemu-theme", t); } catch (e) { /* storage off */ }
  }
  let saved = "auto";
  try { saved = localStorage.getItem("tcemu-theme") || "auto"; } catch (e) { /* storage off */ }
  setTheme(THEMES.includes(saved) ? saved : "auto");
  document.addEventListener("click", (e) => {
    if (e.target.id !== "theme") return;
    const now = root.dataset.theme || "auto";
    setTheme(THEMES[(THEMES.indexOf(now) + 1) % THEMES.length]);
  });

  // ---- copy ------------------------------------------------------------------------------------------------------
  async function copy(text, button) {
    button.dataset.copied = text;
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "copied";
    } catch (e) {  // no clipboard permission (a file:// copy, some browsers): select it for Ctrl-C instead
      const ta = document.createElement("textarea");
      ta.value = text;
      document.body.appendChild(ta);
      ta.select();
      const ok = document.execCommand && document.execCommand("copy");
      ta.remove();
      button.textContent = ok ? "copied" : "copy failed";
    }
    setTimeout(() => { button.textContent = button.dataset.label || "copy"; }, 1500);
  }
  document.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest("button.copy");
    if (!b) return;
    if (!b.dataset.label) b.dataset.label = b.textContent;
    copy(b.dataset.copy, b);
  });

  // ---- SVG / PNG of a map ---------------------------------------------------------------------------------------
  function styleText() {  // the grid's CSS rules with this scheme's colours: a downloaded SVG stands alone
    const v = (n) => getComputedStyle(root).getPropertyValue(n).trim();
    return "svg{font-family:ui-monospace,'DejaVu Sans Mono',monospace;background:" + v("--bg") + "}" +
      ".bg{fill:" + v("--cellbg") + ";stroke:" + v("--cellline") + "}.axis{font-size:10px;fill:" + v("--axis") + "}" +
      ".cell-label{fill:#111}.cell-label.on-dark{fill:#000;stroke:#fff;stroke-width:2.5px;paint-order:stroke}" +
      ".hl{fill:none;stroke:" + v("--hit") + ";stroke-width:1.6}.sep{stroke:" + v("--axis") + ";stroke-width:0.8}";
  }
  function svgText(svg) {
    const c = svg.cloneNode(true);
    c.setAttribute("xmlns", "http://www.w3.org/2000/svg");
    const st = document.createElementNS("http://www.w3.org/2000/svg", "style");
    st.textContent = styleText();
    c.insertBefore(st, c.firstChild);
    return new XMLSerializer().serializeToString(c);
  }
  // the map of a view as a Blob (kind "svg" or "png"); host: ".map" or ".map2"
  function exportMap(view, kind, host) {
    const svg = T.section(view).querySelector((host || ".map") + " svg");
    if (!svg) return Promise.reject(new Error("this view has no map drawn"));
    const text = svgText(svg);
    if (kind === "svg") return Promise.resolve(new Blob([text], { type: "image/svg+xml" }));
    return new Promise((resolve, reject) => {
      const img = new Image();  // a data: URL (the page's CSP allows img-src data:)
      img.onload = () => {
        const scale = 2, w = +svg.getAttribute("width"), h = +svg.getAttribute("height");
        const cv = document.createElement("canvas");
        cv.width = w * scale; cv.height = h * scale;
        const cx = cv.getContext("2d");
        cx.scale(scale, scale);
        cx.drawImage(img, 0, 0, w, h);
        cv.toBlob((b) => (b ? resolve(b) : reject(new Error("PNG encoding failed"))), "image/png");
      };
      img.onerror = () => reject(new Error("the SVG did not load as an image"));
      img.src = "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(text)));
    });
  }
  T.exportMap = exportMap;
  function addTools() {
    for (const host of document.querySelectorAll(".view .map, .view .map2")) {
      const bar = document.createElement("div");
      bar.className = "tools";
      const cls = host.classList.contains("map2") ? ".map2" : ".map";
      bar.innerHTML = "download <button type='button' class='mini dl' data-kind='svg' data-host='" + cls + "'>SVG</button>" +
        "<button type='button' class='mini dl' data-kind='png' data-host='" + cls + "'>PNG</button>";
      host.parentNode.insertBefore(bar, host);
    }
  }
  document.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest("button.dl");
    if (!b) return;
    const view = b.closest(".view").dataset.view;
    exportMap(view, b.dataset.kind, b.dataset.host).then((blob) => {
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = "tcemu-" + view + (b.dataset.host === ".map2" ? "-phases" : "") + "." + b.dataset.kind;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    }, (err) => { b.title = err.message; });
  });
  document.addEventListener("DOMContentLoaded", addTools);
})();
