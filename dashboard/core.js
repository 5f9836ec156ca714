// The dashboard's building blocks: elements, times, the API, the space's tabs. Everything a
// job carries goes on the page as text (text nodes and textContent), never parsed as markup.
export const TOKEN = "emit.token";
export const STATUSES = ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"];
export const FINISHED = new Set(["COMPLETED", "FAILED", "CANCELLED", "STALLED"]);
export const RETRYABLE = new Set(["FAILED", "STALLED"]);
export const UNFINISHED = new Set(["PENDING", "RUNNING"]);
const main = document.getElementById("main");

// -- building blocks ------------------------------------------------------------------

export function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "value" || key === "checked") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

// -- times: local, with the zone's name, and how long ago --------------------------------

export const two = (n) => String(n).padStart(2, "0");

// The zone's short name at `date` ("CEST", "GMT+2", "UTC"), as the browser names it.
export function zoneName(date) {
  const part = new Intl.DateTimeFormat([], { timeZoneName: "short" }).formatToParts(date).find((p) => p.type === "timeZoneName");
  return part ? part.value : "";
}

// A time as text: the browser's local date and time, and its zone ("2025-03-04 14:05:09 CET").
export function whenText(ms) {
  if (!ms) return "—";
  const d = new Date(Number(ms));
  const day = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  return `${day} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())} ${zoneName(d)}`.trim();
}

// A span of time in the largest units that say it ("850 ms", "3 min 5 s", "2 days 4 h").
export function duration(ms) {
  const n = Math.max(0, Math.round(ms));
  if (n < 1000) return `${n} ms`;
  const units = [["day", 86400000], ["h", 3600000], ["min", 60000], ["s", 1000]];
  const parts = [];
  let left = n;
  for (const [unit, size] of units) {
    const count = Math.floor(left / size);
    if (count && parts.length < 2) parts.push(unit === "day" ? `${count} day${count === 1 ? "" : "s"}` : `${count} ${unit}`);
    else if (parts.length) break;
    left -= count * size;
  }
  return parts.join(" ");
}

export const UNITS = [
  ["days", 86400000],
  ["hours", 3600000],
  ["minutes", 60000],
  ["seconds", 1000],
  ["ms", 1],
];

// A span of time in the largest unit that holds it whole (blank: `blank`, minutes unless said), and a menu of
// units; the number's input keeps the setting's name, its unit's is `<name>.unit`.
export function spanInput(key, label, value, blank = UNITS[2][1]) {
  const [, size] = value ? UNITS.find(([, n]) => value % n === 0) : UNITS.find(([, n]) => n === blank);
  const number = h("input", { name: key, type: "number", min: 0, step: "any", value: value === null || value === undefined ? "" : value / size });
  const unit = h("select", { name: key + ".unit", "aria-label": label + " unit" }, UNITS.map(([u, n]) => h("option", { value: String(n) }, u)));
  unit.value = String(size);
  return h("label", null, label, h("span", { class: "span-input" }, number, unit));
}

// The value of a span's two inputs in ms, or null when the number is blank.
export function spanValue(number, unit) {
  return number.value === "" ? null : Math.round(Number(number.value) * Number(unit.value));
}

export function ago(ms) {
  const delta = Date.now() - Number(ms);
  if (Math.abs(delta) < 5000) return "just now";
  const span = duration(Math.abs(delta)).split(" ").slice(0, 2).join(" ");
  return delta > 0 ? `${span} ago` : `in ${span}`;
}

// A time on the page: local time and zone (UTC in its title), and beside it how long ago,
// kept current by the ticker below.
export function when(ms) {
  if (!ms) return "—";
  const d = new Date(Number(ms));
  return h(
    "span",
    { class: "when" },
    h("time", { datetime: d.toISOString(), title: d.toISOString().replace("T", " ").slice(0, 19) + " UTC" }, whenText(ms)),
    " ",
    h("span", { class: "ago", "data-ms": String(Number(ms)) }, ago(ms)),
  );
}

setInterval(() => {
  for (const el of document.querySelectorAll(".ago[data-ms]")) el.textContent = ago(Number(el.dataset.ms));
}, 10000);

export const json = (value) => JSON.stringify(value, null, 2);
export const link = (text, ...parts) => h("a", { href: "#/" + parts.map(encodeURIComponent).join("/") }, text);
export const badge = (status) => h("span", { class: "badge " + (STATUSES.includes(status) ? status.toLowerCase() : "") }, status);
export const scroll = (table) => h("div", { class: "scroll" }, table);
export const row = (cells, tag = "td") => h("tr", null, cells.map((c) => h(tag, null, c)));
export const table = (head, rows) => scroll(h("table", null, h("thead", null, row(head, "th")), h("tbody", null, rows)));

export function notice(text, kind = "error") {
  return h("p", { class: kind, role: kind === "error" ? "alert" : "status" }, text);
}

export function show(...kids) {
  main.replaceChildren(...kids);
}

// -- the API ----------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? `${status}: ${body.message}` : `HTTP ${status}`);
    this.status = status;
  }
}

export async function api(method, path, body, query) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  const headers = { authorization: "Bearer " + sessionStorage.getItem(TOKEN) };
  if (body !== undefined) headers["content-type"] = "application/json";
  const answer = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
    credentials: "omit",
  });
  const text = await answer.text();
  const data = text ? JSON.parse(text) : null;
  if (answer.status === 401 && method === "GET") {
    refused("The token was refused (unknown or revoked): sign in again.");
  }
  if (!answer.ok) throw new ApiError(answer.status, data);
  return data;
}

export const space = (name, rest = "") => `/v1/spaces/${encodeURIComponent(name)}${rest}`;

// Runs `work`; shows its error (as text) in `where` instead of throwing.
export async function attempt(where, work) {
  try {
    return await work();
  } catch (error) {
    where.replaceChildren(notice(error.message));
    return undefined;
  }
}

export function field(label, value) {
  return [h("dt", null, label), h("dd", null, value)];
}

export function valueBlock(value) {
  return h("pre", null, typeof value === "string" ? value : json(value));
}

export function spaceHeader(name, current) {
  const tabs = [
    ["Overview", ["s", name, "overview"]],
    ["Jobs", ["s", name]],
    ["Names", ["s", name, "names"]],
    ["Schedules", ["s", name, "schedules"]],
    ["Settings", ["s", name, "settings"]],
  ];
  return [
    h("h1", null, h("span", { class: "muted" }, "Space "), name),
    h(
      "nav",
      { class: "tabs" },
      tabs.map(([label, parts]) => {
        const a = link(label, ...parts);
        if (label === current) a.setAttribute("aria-current", "page");
        return a;
      }),
    ),
  ];
}

// The hour and minute of a time, local ("14:05"), and a field's total over points.
export const hhmm = (ms) => {
  const d = new Date(ms);
  return `${two(d.getHours())}:${two(d.getMinutes())}`;
};
export const sum = (points, key) => points.reduce((n, p) => n + (p[key] || 0), 0);

// What the current view must do when it is left (end its live updates): `onLeave` sets it,
// `leave` runs it once.
let stop = () => {};
export function onLeave(fn) {
  stop = fn;
}
export function leave() {
  const was = stop;
  stop = () => {};
  was();
}

// Who is told when the API refuses the token (the sign-in page).
let refused = () => {};
export function onRefused(fn) {
  refused = fn;
}
