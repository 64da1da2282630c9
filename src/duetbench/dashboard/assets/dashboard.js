/* duetbench dashboard: the host / method / name filter and the plots of a page.
 *
 * Filter state lives in the URL fragment (#host=...&method=...&q=...), so it survives
 * going to a benchmark page and back; links with class "keep-filter" carry it along.
 * Elements with a data-series attribute are shown or hidden by the filter. When every
 * plot is drawn, <body> gets data-plots, data-plot-errors and data-rendered-ms
 * (milliseconds since navigation started).
 */
(function () {
  "use strict";
  var KEYS = ["host", "method", "q"];
  var PLOT_CONFIG = { displaylogo: false, responsive: true,
                      modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function readState() {
    var state = { host: "", method: "", q: "" };
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i < 0) { return; }
      var k = decodeURIComponent(part.slice(0, i));
      if (KEYS.indexOf(k) >= 0) {
        try { state[k] = decodeURIComponent(part.slice(i + 1)); } catch (e) { /* ignore */ }
      }
    });
    return state;
  }

  function fragment(state) {
    var parts = [];
    KEYS.forEach(function (k) {
      if (state[k]) { parts.push(k + "=" + encodeURIComponent(state[k])); }
    });
    return parts.length ? "#" + parts.join("&") : "";
  }

  function controls() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-filter]"));
  }

  function apply(state) {
    var q = state.q.toLowerCase();
    var shown = 0, total = 0;
    document.querySelectorAll("[data-series]").forEach(function (el) {
      var ok = (!state.host || el.getAttribute("data-host") === state.host) &&
               (!state.method || el.getAttribute("data-method") === state.method) &&
               (!q || (el.getAttribute("data-name") || "").indexOf(q) >= 0);
      var was = el.hidden;
      el.hidden = !ok;
      if (el.classList.contains("row")) {
        total += 1;
        if (ok) { shown += 1; }
      }
      if (ok && was && window.Plotly) {
        el.querySelectorAll(".js-plotly-plot").forEach(function (p) { Plotly.Plots.resize(p); });
      }
    });
    document.querySelectorAll(".shown").forEach(function (el) {
      el.textContent = shown === total ? total + " shown" : shown + " of " + total + " shown";
    });
    document.querySelectorAll(".none-shown").forEach(function (el) {
      el.hidden = shown > 0 || total === 0;
    });
    var frag = fragment(state);
    document.querySelectorAll("a.keep-filter").forEach(function (a) {
      var base = a.getAttribute("href").split("#")[0];
      a.setAttribute("href", base + frag);
    });
  }

  function current() {
    var state = { host: "", method: "", q: "" };
    controls().forEach(function (c) { state[c.getAttribute("data-filter")] = c.value; });
    return state;
  }

  function onChange() {
    var state = current();
    var frag = fragment(state);
    try {
      history.replaceState(null, "", location.pathname + location.search + frag);
    } catch (e) {
      /* some browsers refuse replaceState on file:// pages: the filter still works */
    }
    apply(state);
  }

  function setUp() {
    var state = readState();
    controls().forEach(function (c) {
      var want = state[c.getAttribute("data-filter")] || "";
      if (c.tagName === "SELECT" &&
          !Array.prototype.some.call(c.options, function (o) { return o.value === want; })) {
        want = "";
        state[c.getAttribute("data-filter")] = "";
      }
      c.value = want;
      c.addEventListener(c.tagName === "SELECT" ? "change" : "input", onChange);
    });
    document.querySelectorAll("form.filters").forEach(function (f) {
      f.addEventListener("submit", function (ev) { ev.preventDefault(); });
    });
    return state;
  }

  function drawPlots() {
    var block = document.getElementById("duet-figs");
    var figs = block ? JSON.parse(block.textContent) : [];
    var drawn = [], failed = 0;
    figs.forEach(function (f) {
      try {
        drawn.push(Plotly.newPlot(f.id, f.data, f.layout, PLOT_CONFIG));
      } catch (e) {
        failed += 1;
        setTimeout(function () { throw e; });
      }
    });
    var sparks = document.querySelectorAll("svg.spark").length;
    return Promise.all(drawn).then(function () {
      return { plots: drawn.length + sparks, failed: failed };
    });
  }

  function start() {
    var state = setUp();
    drawPlots().then(function (r) {
      apply(state);
      var body = document.body;
      body.setAttribute("data-plots", String(r.plots));
      body.setAttribute("data-plot-errors", String(r.failed));
      body.setAttribute("data-rendered-ms", performance.now().toFixed(0));
    });
    window.addEventListener("hashchange", function () {
      var s = readState();
      controls().forEach(function (c) { c.value = s[c.getAttribute("data-filter")] || ""; });
      apply(current());
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
