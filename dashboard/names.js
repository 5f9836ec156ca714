import { api, attempt, duration, field, h, notice, show, space, spaceHeader, spanInput, spanValue, when } from "./core.js";

// -- names: policies and diagnostics ------------------------------------------------------

// [key, label, a span of time (shown in a unit of its own, sent in ms)]
const LIMITS = [
  ["concurrency", "Concurrency", false],
  ["perKeyConcurrency", "Per-key concurrency", false],
  ["agingIntervalMs", "Aging interval", true],
];
const RATES = [
  ["rate", "Rate"],
  ["perKeyRate", "Per-key rate"],
];

function rateText(rate) {
  return rate ? `${rate.tokens} per ${duration(rate.intervalMs)}` : "no limit";
}

// A rate's inputs as the API's value: both blank is null (no limit), one blank is an
// error naming the field, as the API would name it.
function rateValue(key, tokens, interval, unit) {
  if (tokens.value === "" && interval.value === "") return null;
  if (tokens.value === "" || interval.value === "") {
    throw new Error(`${key}: give both tokens and interval, or neither for no limit`);
  }
  return { tokens: Number(tokens.value), intervalMs: spanValue(interval, unit) };
}

const sameRate = (a, b) => (a && b ? a.tokens === b.tokens && a.intervalMs === b.intervalMs : a === b);

function nameCard(space_, diag, reload) {
  const policy = diag.policy;
  const status = h("div");
  const path = space(space_, `/names/${encodeURIComponent(diag.name)}/policy`);
  const change = async (patch) => {
    const done = await attempt(status, () => api("PATCH", path, patch));
    if (done) reload();
  };
  const toggle = h(
    "button",
    { type: "button", class: "pause", onclick: () => change({ paused: !policy.paused }) },
    policy.paused ? "Resume" : "Pause",
  );
  const inputs = {};
  const rates = {};
  const form = h(
    "form",
    { class: "limits" },
    LIMITS.map(([key, label, span]) => {
      if (span) {
        const input = spanInput(key, label, policy[key], 1000);
        inputs[key] = [input.querySelector("input"), input.querySelector("select")];
        return input;
      }
      inputs[key] = h("input", { name: key, type: "number", min: 1, placeholder: "no limit", value: policy[key] ?? "" });
      return h("label", null, label, inputs[key]);
    }),
    RATES.map(([key, label]) => {
      const rate = policy[key];
      const tokens = h("input", { name: key + ".tokens", type: "number", min: 1, max: 100000, placeholder: "no limit", value: rate ? rate.tokens : "" });
      const interval = spanInput(key + ".intervalMs", "Interval", rate ? rate.intervalMs : null, 1000);
      rates[key] = [tokens, interval.querySelector("input"), interval.querySelector("select")];
      return h("fieldset", { class: "rate" }, h("legend", null, label), h("label", null, "Tokens", tokens), interval);
    }),
    h("button", { type: "submit" }, "Save limits"),
    h("button", { type: "button", class: "link", onclick: async () => {
      const done = await attempt(status, () => api("POST", path + ":reset"));
      if (done) reload();
    } }, "Reset to the space's default"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const patch = {};
    for (const [key, , span] of LIMITS) {
      const value = span ? spanValue(...inputs[key]) : inputs[key].value === "" ? null : Number(inputs[key].value);
      if (value !== policy[key]) patch[key] = value;
    }
    try {
      for (const [key] of RATES) {
        const value = rateValue(key, ...rates[key]);
        if (!sameRate(value, policy[key])) patch[key] = value;
      }
    } catch (error) {
      status.replaceChildren(notice(error.message));
      return;
    }
    if (Object.keys(patch).length) change(patch);
  });
  return h(
    "section",
    { class: "card name", "data-name": diag.name },
    h("h2", null, diag.name, " ", policy.paused ? h("span", { class: "badge paused" }, "PAUSED") : ""),
    h(
      "dl",
      { class: "fields" },
      field("Pending", `${diag.pending}${diag.capped ? "+" : ""}`),
      field("Claimable", diag.claimable),
      field("Running", diag.running ?? "—"),
      field("Waiting on", diag.waitingOn.length ? diag.waitingOn.join(", ") : "nothing"),
      field("Oldest claimable", when(diag.oldestClaimableAtMs)),
      field("Concurrency", h("span", { class: "concurrency-text" }, policy.concurrency ?? "no limit")),
      field("Rate", h("span", { class: "rate-text" }, rateText(policy.rate))),
      field("Per-key rate", h("span", { class: "per-key-rate-text" }, rateText(policy.perKeyRate))),
    ),
    toggle,
    form,
    status,
  );
}

export async function namesView(name) {
  const status = h("div");
  const list = h("div", { id: "names" });
  const other = h("input", { name: "name", placeholder: "another name", required: true });
  const open = h("form", { class: "inline" }, other, h("button", { type: "submit" }, "Pause it"));
  async function load() {
    const found = await attempt(status, () => api("GET", space(name, "/diagnostics")));
    if (!found) return;
    status.replaceChildren();
    list.replaceChildren(...found.names.map((d) => nameCard(name, d, load)));
    if (!found.names.length) status.append(notice("No names with unfinished jobs or a policy of their own.", "hint"));
  }
  open.addEventListener("submit", async (event) => {
    event.preventDefault();
    const path = space(name, `/names/${encodeURIComponent(other.value.trim())}/policy`);
    if (await attempt(status, () => api("PATCH", path, { paused: true }))) load();
  });
  show(
    ...spaceHeader(name, "Names"),
    h("p", { class: "hint" }, "Each job name's work and policy. Counts lag the jobs by a second or so."),
    list,
    h("h2", null, "A name not listed"),
    open,
    status,
  );
  await load();
}
