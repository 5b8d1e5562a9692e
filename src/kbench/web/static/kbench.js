// Dashboard plots: every page fetches the JSON endpoint behind it and draws with Plotly.
"use strict";
const kbench = (() => {
  const config = { displaylogo: false, responsive: true };
  const colours = { regression: "#c62828", improvement: "#2e7d32", change: "#b7791f" };

  async function json(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: ${response.status}`);
    return response.json();
  }

  function done(id) {
    document.getElementById(id).dataset.rendered = "true";
  }

  // Nanoseconds are shown in the unit that keeps them readable (19.2 ms, not "19.2M" ns):
  // the median magnitude of the values picks s, ms, µs or ns; other units stay as they are.
  const timeSteps = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];
  function displayUnit(unit, values) {
    if (unit !== "ns") return { factor: 1, unit: unit };
    const finite = values.filter((v) => Number.isFinite(v)).map(Math.abs).sort((a, b) => a - b);
    const median = finite.length ? finite[Math.floor(finite.length / 2)] : 0;
    for (const [factor, name] of timeSteps) {
      if (median >= factor) return { factor: factor, unit: name };
    }
    return { factor: 1, unit: "ns" };
  }
  function scaled(values, display) {
    return values.map((v) => (v === null || v === undefined ? v : v / display.factor));
  }
  function withMetric(url, metric) {
    return metric ? `${url}${url.includes("?") ? "&" : "?"}metric=${encodeURIComponent(metric)}` : url;
  }

  async function seriesPlot(element) {
    const id = element.dataset.series;
    const series = await json(`/api/series/${id}`);
    const points = series.points;
    const display = displayUnit(series.unit, points.map((p) => p.value));
    const x = points.map((p) => p.started_at);
    const text = points.map((p) => `run ${p.run_id}` + (p.kernel ? `<br>kernel ${p.kernel}` : "") +
      (p.commit ? `<br>commit ${p.commit.slice(0, 12)}` : "") + (p.label ? `<br>${p.label}` : ""));
    const traces = [{
      type: "scatter", mode: points.length > 2000 ? "markers" : "lines+markers", name: "runs", x: x,
      y: scaled(points.map((p) => p.value), display), customdata: points.map((p) => p.run_id), text: text,
      hovertemplate: `%{text}<br>%{y:.4~r} ${display.unit}<extra></extra>`, marker: { size: 6, color: "#3b6ea8" },
      line: { width: 1, color: "#93b4d8" },
    }];
    const segments = series.segments;
    traces.push({
      type: "scatter", mode: "lines", name: "median between change points", hoverinfo: "skip",
      x: segments.flatMap((s) => [points[s.start].started_at, points[s.stop - 1].started_at, null]),
      y: scaled(segments.flatMap((s) => [s.median, s.median, null]), display),
      line: { dash: "dash", width: 2, color: "#e07a1f" },
    });
    const changes = series.change_points;
    traces.push({
      type: "scatter", mode: "markers", name: "change points", x: changes.map((c) => c.started_at),
      y: scaled(changes.map((c) => points[c.index].value), display), customdata: changes.map((c) => c.run_id),
      text: changes.map((c) => `${c.change_pct >= 0 ? "+" : ""}${c.change_pct.toFixed(2)}% ${c.verdict}` +
        ` (${c.status || "suspected"})<br>run ${c.run_id}, p=${c.p_value.toPrecision(2)}`),
      hovertemplate: "%{text}<extra></extra>",
      marker: { size: 13, symbol: "diamond", color: changes.map((c) => colours[c.verdict]) },
    });
    const shapes = changes.map((c) => ({
      type: "line", xref: "x", yref: "paper", y0: 0, y1: 1, x0: c.started_at, x1: c.started_at,
      line: { color: colours[c.verdict], width: 1.5 },
    }));
    const layout = {
      margin: { l: 70, r: 20, t: 30, b: 50 }, hovermode: "closest", shapes: shapes,
      yaxis: { title: { text: `${series.metric} (${display.unit})` }, exponentformat: "none" },
      xaxis: { title: { text: "run started (UTC)" } },
      legend: { orientation: "h", y: 1.08 },
    };
    await Plotly.newPlot(element, traces, layout, config);
    element.on("plotly_click", (event) => {
      const run = event.points[0].customdata;
      if (run !== undefined) window.location.href = withMetric(`/runs/${run}`, series.metric);
    });
    element.dataset.drawnAt = String(performance.now());
    element.dataset.points = String(points.length);
    element.dataset.changePoints = String(changes.length);
    element.dataset.unit = display.unit;
    done(element.id);
  }

  function histogramTrace(edges, heights, name, colour, display) {
    const centres = heights.map((_, i) => (edges[i] + edges[i + 1]) / 2 / display.factor);
    return { type: "bar", x: centres, y: heights, name: name, marker: { color: colour },
      width: (edges[1] - edges[0]) / display.factor, opacity: 0.65 };
  }

  async function runPlots(runId, metric) {
    const run = await json(withMetric(`/api/runs/${runId}`, metric));
    const h = run.histogram;
    const display = displayUnit(run.unit, run.cdf.values);
    const axis = { title: { text: `${run.metric} (${display.unit})` }, exponentformat: "none" };
    await Plotly.newPlot("run-histogram", [histogramTrace(h.edges, h.counts, "samples", "#3b6ea8", display)], {
      title: { text: `histogram (${h.shown} of ${run.n} samples, p0.5–p99.5)`, font: { size: 13 } },
      margin: { l: 60, r: 20, t: 40, b: 50 }, xaxis: axis, bargap: 0,
    }, config);
    done("run-histogram");
    await Plotly.newPlot("run-cdf", [{ type: "scatter", mode: "lines", x: scaled(run.cdf.values, display),
      y: run.cdf.probabilities, line: { shape: "hv", color: "#3b6ea8" }, name: "CDF" }], {
      title: { text: "CDF", font: { size: 13 } }, margin: { l: 60, r: 20, t: 40, b: 50 },
      xaxis: axis, yaxis: { range: [0, 1] },
    }, config);
    document.getElementById("run-histogram").dataset.unit = display.unit;
    done("run-cdf");
  }

  async function comparePlots(a, b, metric) {
    const compared = await json(withMetric(`/api/compare?a=${a}&b=${b}`, metric));
    const [ra, rb] = compared.runs;
    const display = displayUnit(ra.unit, (ra.cdf ? ra.cdf.values : []).concat(rb.cdf ? rb.cdf.values : []));
    const axis = { title: { text: `${ra.metric} (${display.unit})` }, exponentformat: "none" };
    if (compared.histograms) {
      const h = compared.histograms;
      await Plotly.newPlot("compare-histogram", [
        histogramTrace(h.edges, h.fractions[0], `run ${ra.run_id}`, "#3b6ea8", display),
        histogramTrace(h.edges, h.fractions[1], `run ${rb.run_id}`, "#e07a1f", display),
      ], { barmode: "overlay", bargap: 0, title: { text: "histograms (fraction of samples)", font: { size: 13 } },
        margin: { l: 60, r: 20, t: 40, b: 50 }, xaxis: axis }, config);
      done("compare-histogram");
    }
    const cdf = (run, colour) => ({ type: "scatter", mode: "lines", name: `run ${run.run_id}`,
      x: scaled(run.cdf.values, display), y: run.cdf.probabilities, line: { shape: "hv", color: colour } });
    if (ra.cdf && rb.cdf) {
      await Plotly.newPlot("compare-cdf", [cdf(ra, "#3b6ea8"), cdf(rb, "#e07a1f")], {
        title: { text: "CDFs", font: { size: 13 } }, margin: { l: 60, r: 20, t: 40, b: 50 },
        xaxis: axis, yaxis: { range: [0, 1] } }, config);
      done("compare-cdf");
    }
  }

  // A failed fetch or draw says so in the plot's place (and in data-error for tests).
  function shown(promise, ids) {
    return promise.catch((error) => {
      for (const id of ids) {
        const element = document.getElementById(id);
        if (!element) continue;
        element.dataset.error = String(error);
        element.textContent = `could not draw this plot: ${error}`;
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const plot = document.getElementById("series-plot");
    if (plot) shown(seriesPlot(plot), ["series-plot"]);
  });
  return {
    runPlots: (runId, metric) => shown(runPlots(runId, metric), ["run-histogram", "run-cdf"]),
    comparePlots: (a, b, metric) => shown(comparePlots(a, b, metric), ["compare-histogram", "compare-cdf"]),
    displayUnit: displayUnit,
  };
})();
