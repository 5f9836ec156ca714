import { api, attempt, h, hhmm, link, notice, onLeave, show, space, spaceHeader, sum } from "./core.js";

// -- charts: inline SVG built node by node (no library) ----------------------------------

// The SVG namespace: a name, never fetched.
const SVG_NS = "http://www.w3.org/2000/svg";
const CHART = { width: 300, height: 90, top: 12, bottom: 14 };

function svgEl(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) el.setAttribute(key, String(value));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

// The frame every chart shares: its peak at the top left, the hour's ends below.
function frame(kind, label, max, points, ...marks) {
  const { width, height, bottom } = CHART;
  const base = height - bottom;
  return svgEl(
    "svg",
    { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, "data-kind": kind },
    svgEl("title", null, label),
    svgEl("line", { class: "axis", x1: 0, y1: base, x2: width, y2: base }),
    marks,
    svgEl("text", { class: "tick", x: 2, y: 9 }, `peak ${max}`),
    svgEl("text", { class: "tick", x: 2, y: height - 2 }, points.length ? hhmm(points[0].atMs) : ""),
    svgEl("text", { class: "tick", x: width - 2, y: height - 2, "text-anchor": "end" }, "now"),
  );
}

// Bars a minute, each stacked from `series` ([key, class, label]); a minute's title lists
// its counts.
function barChart(kind, label, points, series) {
  const { width, height, top, bottom } = CHART;
  const base = height - bottom;
  const max = Math.max(0, ...points.map((p) => series.reduce((n, [key]) => n + p[key], 0)));
  const step = width / Math.max(1, points.length);
  const bars = points.map((p, i) => {
    let y = base;
    const parts = series.filter(([key]) => p[key] > 0).map(([key, cls]) => {
      const tall = (p[key] / Math.max(1, max)) * (base - top);
      y -= tall;
      return svgEl("rect", { class: "bar " + cls, x: (i * step).toFixed(2), y: y.toFixed(2), width: Math.max(0.5, step - 1).toFixed(2), height: tall.toFixed(2) });
    });
    const said = series.map(([key, , name]) => `${p[key]} ${name}`).join(", ");
    return svgEl("g", { class: "minute" }, svgEl("title", null, `${hhmm(p.atMs)}: ${said}`), parts);
  });
  return frame(kind, label, max, points, bars);
}

// A filled line of `key` a minute (a gauge: the value at each minute's end).
function lineChart(kind, label, points, key, cls) {
  const { width, height, top, bottom } = CHART;
  const base = height - bottom;
  const max = Math.max(0, ...points.map((p) => p[key]));
  const step = width / Math.max(1, points.length - 1);
  const xy = points.map((p, i) => `${(i * step).toFixed(2)},${(base - (p[key] / Math.max(1, max)) * (base - top)).toFixed(2)}`);
  const marks = points.length
    ? [
        svgEl("polygon", { class: "area " + cls, points: `0,${base} ${xy.join(" ")} ${width},${base}` }),
        svgEl("polyline", { class: "line " + cls, points: xy.join(" ") }),
        points.map((p, i) => svgEl("circle", { class: "dot", cx: (i * step).toFixed(2), cy: xy[i].split(",")[1], r: 3 }, svgEl("title", null, `${hhmm(p.atMs)}: ${p[key]} ${key}`))),
      ]
    : [];
  return frame(kind, label, max, points, marks);
}

function figure(kind, title, chart, summary) {
  return h("figure", { class: "chart-box", "data-kind": kind }, h("figcaption", null, title), chart, h("p", { class: "summary" }, summary));
}

// One name's hour: throughput (completed and failed a minute), backlog (pending at each
// minute's end) and failures.
function nameCharts(spaceName, series) {
  const points = series.points;
  const completed = sum(points, "completed");
  const failed = sum(points, "failed");
  const cancelled = sum(points, "cancelled");
  const created = sum(points, "created");
  const last = points[points.length - 1] || { pending: 0, running: 0 };
  const peak = Math.max(0, ...points.map((p) => p.pending));
  const ended = completed + failed;
  const rate = ended ? Math.round((failed / ended) * 100) : 0;
  const throughput = `${completed} completed, ${failed} failed in the last hour`;
  const backlog = `${last.pending} pending, ${last.running} running now (peak ${peak} pending)`;
  const failures = `${failed} failed of ${ended} finished (${rate}%)`;
  return h(
    "section",
    { class: "card metrics", "data-name": series.name },
    h("h2", null, link(series.name, "s", spaceName, "names"), h("span", { class: "muted" }, ` ${created} created, ${cancelled} cancelled in the hour`)),
    h(
      "div",
      { class: "charts" },
      figure("throughput", "Throughput a minute", barChart("throughput", throughput, points, [["completed", "completed", "completed"], ["failed", "failed", "failed"]]), throughput),
      figure("backlog", "Backlog (pending)", lineChart("backlog", backlog, points, "pending", "pending"), backlog),
      figure("failures", "Failures a minute", barChart("failures", failures, points, [["failed", "failed", "failed"]]), failures),
    ),
  );
}

const CHART_REFRESH_MS = 10000;

export async function overviewView(name) {
  const status = h("div");
  const updated = h("p", { class: "hint", id: "charts-updated" });
  const list = h("div", { id: "charts" });
  let live = true;
  let timer = null;
  onLeave(() => {
    live = false;
    clearTimeout(timer);
  });
  async function load() {
    const found = await attempt(status, () => api("GET", space(name, "/metrics")));
    if (!live) return;
    if (found) {
      status.replaceChildren();
      list.replaceChildren(...found.names.map((series) => nameCharts(name, series)));
      if (!found.names.length) status.append(notice("Nothing counted yet: a name's charts appear with its first job.", "hint"));
      updated.textContent = `The last hour, a minute a bar, from the space's counts (a few seconds behind). Updated ${new Date().toLocaleTimeString()}; refreshes every ${CHART_REFRESH_MS / 1000} s.`;
    }
    timer = setTimeout(load, CHART_REFRESH_MS);
  }
  show(...spaceHeader(name, "Overview"), updated, list, status);
  await load();
}
