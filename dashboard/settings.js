import { api, attempt, field, h, json, notice, row, show, space, spaceHeader, spanInput, spanValue, table, valueBlock, whenText } from "./core.js";

// -- settings -------------------------------------------------------------------------------

// [key, label, nullable, a span of time (shown in a unit of its own, sent in ms)]
const SETTINGS = [
  ["maxAttempts", "Max attempts", false, false],
  ["timeoutMs", "Timeout", false, true],
  ["backoffMs", "Backoff", false, true],
  ["maxInFlight", "Max in flight (blank: no cap)", true, false],
  ["unclaimedMs", "Unclaimed after (blank: off)", true, true],
  ["keyWindowMs", "Key window", false, true],
  ["maxEvents", "Max events a job", false, false],
  ["completedRetentionMs", "Keep completed jobs", false, true],
  ["failedRetentionMs", "Keep failed jobs", false, true],
];
function randomSecret() {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const ENDINGS = ["COMPLETED", "FAILED", "CANCELLED", "STALLED"];

// The space's notification settings (onFailure, onSettled) as a form of their own: a blank
// name turns a setting off (null); onSettled needs at least one status, as the API says.
function notificationsForm(settings, save, status) {
  const failure = h("input", { name: "onFailure.name", placeholder: "off (a job name turns it on)", value: settings.onFailure ? settings.onFailure.name : "" });
  const settled = h("input", { name: "onSettled.name", placeholder: "off (a job name turns it on)", value: settings.onSettled ? settings.onSettled.name : "" });
  const chosen = new Set(settings.onSettled ? settings.onSettled.statuses : []);
  const boxes = ENDINGS.map((s) => h("input", { type: "checkbox", name: "onSettled.statuses", value: s, checked: chosen.has(s) }));
  const form = h(
    "form",
    { id: "notifications", class: "limits" },
    h("label", null, "On failure: a job named (for each job ending FAILED or STALLED)", failure),
    h("label", null, "On settled: a job named", settled),
    h("fieldset", null, h("legend", null, "for each job ending"), boxes.map((box) => h("label", { class: "check" }, box, " " + box.value.toLowerCase()))),
    h("button", { type: "submit" }, "Save notifications"),
    h(
      "p",
      { class: "hint" },
      [settings.onFailure && `On failure covers jobs ending since ${whenText(settings.onFailure.sinceMs)}.`, settings.onSettled && `On settled covers jobs ending since ${whenText(settings.onSettled.sinceMs)}.`]
        .filter(Boolean)
        .join(" ") || "Each notice job is an ordinary job of the space, with the ended job's notice as its payload.",
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const onFailure = failure.value.trim() ? { name: failure.value.trim() } : null;
    const statuses = boxes.filter((b) => b.checked).map((b) => b.value);
    if (settled.value.trim() && !statuses.length) {
      status.replaceChildren(notice("onSettled.statuses: choose at least one ending"));
      return;
    }
    const onSettled = settled.value.trim() ? { name: settled.value.trim(), statuses } : null;
    // Compared without sinceMs (the service's, kept across changes): only a setting that
    // changed is sent.
    const bare = (d) => (d ? json({ name: d.name, statuses: d.statuses }) : "null");
    const patch = {};
    if (bare(onFailure) !== bare(settings.onFailure)) patch.onFailure = onFailure;
    if (bare(onSettled) !== bare(settings.onSettled)) patch.onSettled = onSettled;
    if (Object.keys(patch).length) save(patch);
  });
  return form;
}

// Each name's jobDefaults, one row a name (read-only: PATCH jobDefaults to change them).
function defaultsTable(jobDefaults) {
  const names = Object.keys(jobDefaults || {}).sort();
  if (!names.length) return notice("No name has defaults of its own.", "hint");
  const text = (value) => (typeof value === "object" && value !== null ? JSON.stringify(value) : String(value));
  const rows = names.map((n) => {
    const tr = row([n, Object.entries(jobDefaults[n]).map(([k, v]) => `${k}: ${text(v)}`).join(", ")]);
    tr.dataset.name = n;
    return tr;
  });
  const shown = table(["Name", "Defaults"], rows);
  shown.firstChild.id = "job-defaults";
  return shown;
}

export async function settingsView(name) {
  const status = h("div");
  const form = h("form", { id: "settings", class: "limits" });
  const secret = h("div", { id: "webhook-secret" });
  const notifications = h("div");
  const extra = h("div");
  let current;
  async function save(patch) {
    const done = await attempt(status, () => api("PATCH", space(name), patch));
    if (done) {
      fill(done);
      status.replaceChildren(notice("Saved.", "ok"));
    }
    return done;
  }
  function fill(settings) {
    current = settings;
    form.replaceChildren(
      ...SETTINGS.map(([key, label, , span]) =>
        span ? spanInput(key, label, settings[key]) : h("label", null, label, h("input", { name: key, type: "number", min: 0, value: settings[key] ?? "" })),
      ),
      h(
        "label",
        { class: "wide" },
        "Names with CloudWatch metrics of their own (comma-separated, up to 20; six custom metrics a name, $1.80 a month)",
        h("input", { name: "metrics", placeholder: "none", value: (settings.metrics || []).join(", ") }),
      ),
      h("button", { type: "submit" }, "Save settings"),
    );
    notifications.replaceChildren(notificationsForm(settings, save, status));
    extra.replaceChildren(
      h("dl", { class: "fields" }, field("Webhook secret", settings.webhookSecret.set ? "set" : "not set"), field("In flight", settings.inFlight ?? "—")),
      h("h2", null, "Default policy of its names"),
      valueBlock(settings.policy),
      h("h2", null, "Defaults per name"),
      defaultsTable(settings.jobDefaults),
    );
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const patch = {};
    for (const [key, , nullable, span] of SETTINGS) {
      const raw = span ? spanValue(form.elements[key], form.elements[key + ".unit"]) : form.elements[key].value === "" ? null : Number(form.elements[key].value);
      const value = raw === null ? (nullable ? null : undefined) : raw;
      if (value !== undefined && value !== current[key]) patch[key] = value;
    }
    const listed = form.elements.metrics.value.split(",").map((n) => n.trim()).filter(Boolean);
    if (listed.join(",") !== (current.metrics || []).join(",")) patch.metrics = listed;
    if (Object.keys(patch).length) save(patch);
  });
  const newSecret = h("button", { type: "button", id: "new-secret" }, "New webhook secret");
  newSecret.addEventListener("click", async () => {
    const value = randomSecret();
    const done = await attempt(status, () => api("PATCH", space(name), { webhookSecret: value }));
    if (!done) return;
    fill(done);
    secret.replaceChildren(
      h("p", { class: "ok" }, "The new secret, shown this once (callbacks are signed with it from now on):"),
      h("pre", { class: "secret" }, value),
    );
  });
  show(
    ...spaceHeader(name, "Settings"),
    form,
    newSecret,
    secret,
    h("h2", null, "Notifications"),
    notifications,
    extra,
    status,
  );
  const settings = await attempt(status, () => api("GET", space(name)));
  if (settings) fill(settings);
}
