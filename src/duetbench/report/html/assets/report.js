// duet report: draws every figure once the page layout is final, then marks <body>
// with data-plots, data-plot-errors and data-rendered-ms (the tests read them).
(function () {
  var figs = window.__duetFigs, drawn = [], failed = 0;
  figs.forEach(function (f) {
    try {
      drawn.push(Plotly.newPlot(f[0], f[1].data, f[1].layout, window.__duetConfig));
    } catch (e) {
      failed += 1;
      setTimeout(function () { throw e; });
    }
  });
  Promise.all(drawn).then(function () {
    document.body.setAttribute("data-plots", String(drawn.length));
    document.body.setAttribute("data-plot-errors", String(failed));
    document.body.setAttribute("data-rendered-ms", performance.now().toFixed(0));
  });
})();
