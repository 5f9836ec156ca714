import { api, attempt, badge, duration, field, FINISHED, h, json, link, notice, onLeave, RETRYABLE, show, space, spaceHeader, valueBlock, when, whenText } from "./core.js";

function delivery(callback) {
  if (!callback) return "none";
  const d = callback.delivery;
  const parts = [callback.url];
  if (d) {
    parts.push(` — ${d.state}, ${d.attempts} attempt${d.attempts === 1 ? "" : "s"}`);
    if (d.lastStatus) parts.push(`, last HTTP ${d.lastStatus}`);
    if (d.lastError) parts.push(`, last error: ${d.lastError}`);
    if (d.nextAtMs) parts.push(`, next try ${whenText(d.nextAtMs)}`);
  }
  return parts.join("");
}

// How long the job waited and ran, from its attempts' records: waited from due to its first
// attempt's start, ran for its last attempt (so far, while it runs).
function durations(job) {
  const items = [];
  const due = Math.max(job.createdAtMs, job.runAtMs || 0);
  const tries = job.attempts || [];
  if (job.status === "PENDING") {
    const now = Date.now();
    items.push(...field("Waiting", h("span", { id: "job-waiting" }, now >= due ? `${duration(now - due)} so far` : `due in ${duration(due - now)}`)));
  }
  if (tries.length && tries[0].attempt === 1) {
    items.push(...field("Waited for", h("span", { id: "job-waited" }, `${duration(Math.max(tries[0].startedAtMs - due, 0))} (from due to its first attempt)`)));
  }
  if (job.status === "RUNNING" && job.leaseUntilMs) items.push(...field("Lease until", when(Number(job.leaseUntilMs))));
  const last = tries[tries.length - 1];
  if (last) {
    const ran = (last.endedAtMs ?? Date.now()) - last.startedAtMs;
    items.push(...field("Ran for", h("span", { id: "job-ran" }, `${duration(ran)}${last.endedAtMs ? "" : " so far"} (attempt ${last.attempt})`)));
  }
  if (job.finishedAtMs) items.push(...field("Created to finished", h("span", { id: "job-took" }, duration(job.finishedAtMs - job.createdAtMs))));
  return items;
}

// An attempt's error in its row: the first line alone ("ValueError: bad size"; an SDK
// worker's error goes on with its traceback, shown whole under Error), the rest on hover.
function attemptError(error) {
  if (!error) return "";
  const [first, ...rest] = error.split("\n");
  return h("span", { class: "error", title: rest.length ? error : null }, rest.length ? first + " …" : first);
}

// Each attempt: when it started and ended, how long it took, how it ended, and its error.
function attemptsTable(job) {
  const tries = job.attempts || [];
  if (!tries.length) return [];
  const cell = (...content) => h("td", null, ...content);
  const rows = tries.map((a) =>
    h(
      "tr",
      { "data-attempt": String(a.attempt) },
      cell(String(a.attempt)),
      cell(when(a.startedAtMs)),
      cell(a.endedAtMs ? when(a.endedAtMs) : "running"),
      cell(duration((a.endedAtMs ?? Date.now()) - a.startedAtMs)),
      cell(a.outcome ? h("span", { class: "outcome" }, a.outcome) : "—"),
      cell(attemptError(a.error)),
    ),
  );
  const head = h("thead", null, h("tr", null, ...["#", "Started", "Ended", "Took", "Outcome", "Error"].map((t) => h("th", null, t))));
  return [h("h2", null, "Attempts"), h("div", { class: "scroll" }, h("table", { id: "attempts" }, head, h("tbody", null, ...rows)))];
}

function jobDetails(name, job) {
  const progress = job.progress;
  const items = [
    ...field("Status", h("span", { id: "job-status" }, badge(job.status))),
    ...field("Name", job.name),
    ...field(
      "Progress",
      progress
        ? h("span", null, h("progress", { max: 100, value: progress.percent, id: "job-progress" }), ` ${progress.percent}% `, progress.message || "")
        : "—",
    ),
    ...field("Attempt", `${job.attempt} of ${job.maxAttempts} (${job.failures} failed)`),
    ...field("Created", h("span", { id: "job-created" }, when(job.createdAtMs))),
    ...durations(job),
    ...field("Finished", h("span", { id: "job-finished" }, when(job.finishedAtMs))),
    ...field("Priority", job.priority),
    ...field("Guarantee", h("span", { id: "job-guarantee" }, job.guarantee ?? "AT_LEAST_ONCE")),
    ...field("Expires", h("span", { id: "job-expires" }, job.expiresAtMs ? when(job.expiresAtMs) : "never")),
  ];
  if (job.key) items.push(...field("Key", job.key));
  if (job.concurrencyKey) items.push(...field("Concurrency key", job.concurrencyKey));
  if (job.waitingOn) items.push(...field("Waiting on", job.waitingOn.reason + (job.waitingOn.untilMs ? ` until ${whenText(job.waitingOn.untilMs)}` : "")));
  if (job.schedule) {
    const made = link(job.schedule.id, "s", name, "schedules");
    made.id = "job-schedule";
    items.push(...field("Schedule", h("span", null, made, ` for ${whenText(job.schedule.atMs)}`)));
  }
  if (job.retryOf) {
    const back = link(job.retryOf, "s", name, "jobs", job.retryOf);
    back.id = "job-retry-of";
    items.push(...field("Retry of", back));
  }
  items.push(...field("Callback", h("span", { id: "job-callback" }, delivery(job.callback))));
  const blocks = [h("dl", { class: "fields" }, items), ...attemptsTable(job)];
  if (job.error !== undefined) blocks.push(h("h2", null, "Error"), h("pre", { id: "job-error", class: "error" }, job.error));
  if (job.result !== undefined) blocks.push(h("h2", null, "Result"), h("div", { id: "job-result" }, valueBlock(job.result)));
  if (job.payload !== undefined) blocks.push(h("h2", null, "Payload"), h("div", { id: "job-payload" }, valueBlock(job.payload)));
  return blocks;
}

export async function jobView(name, id) {
  const status = h("div");
  const details = h("div", { id: "job" });
  const lines = h("ol", { id: "lines", class: "lines" });
  const events = h("ol", { id: "events", class: "lines" });
  const cancel = h("button", { type: "button", id: "cancel", class: "danger", hidden: true }, "Cancel job");
  const retry = h("button", { type: "button", id: "retry", class: "retry", hidden: true }, "Retry");
  const actions = h("div", { class: "pager" }, cancel, retry);
  show(
    ...spaceHeader(name, "Jobs"),
    h("h2", null, "Job ", h("code", null, id)),
    actions,
    status,
    details,
    h("h2", null, "Log lines"),
    lines,
    h("h2", null, "Events"),
    events,
  );
  let nextLine = 0;
  let nextEvent = 0;
  let delay = 1000;
  let seen = "";
  let live = true;
  let timer = null;
  onLeave(() => {
    live = false;
    clearTimeout(timer);
  });

  async function follow(path, from, into, render) {
    let next = from;
    for (;;) {
      const page = await api("GET", space(name, `/jobs/${encodeURIComponent(id)}/${path}`), undefined, { cursor: String(next), limit: 1000 });
      const items = page[path];
      for (const item of items) into.append(render(item));
      if (items.length) next = items[items.length - 1].seq + 1;
      if (!page.cursor || !items.length) return next;
    }
  }

  async function tick() {
    let job;
    try {
      job = await api("GET", space(name, `/jobs/${encodeURIComponent(id)}`));
      nextLine = await follow("lines", nextLine, lines, (l) =>
        h("li", { class: "level-" + String(l.level).toLowerCase() }, h("span", { class: "muted" }, `${whenText(l.atMs)} ${l.level} `), l.message),
      );
      nextEvent = await follow("events", nextEvent, events, (e) => h("li", null, h("span", { class: "muted" }, `${whenText(e.atMs)} `), json(e.event)));
    } catch (error) {
      status.replaceChildren(notice(error.message));
      if (error.status === 404 || error.status === 403) return;
      delay = Math.min(delay * 2, 10000);
      if (live) timer = setTimeout(tick, delay);
      return;
    }
    if (!live) return;
    status.replaceChildren();
    details.replaceChildren(...jobDetails(name, job));
    cancel.hidden = FINISHED.has(job.status);
    retry.hidden = !RETRYABLE.has(job.status);
    const now = json([job.status, job.progress, job.lineCount, job.eventCount, job.callback]);
    delay = now === seen ? Math.min(delay * 1.5, 5000) : 1000;
    seen = now;
    const settled = FINISHED.has(job.status) && (!job.callback || !job.callback.delivery || job.callback.delivery.state !== "PENDING");
    if (!settled) timer = setTimeout(tick, delay);
  }

  cancel.addEventListener("click", async () => {
    const done = await attempt(status, () => api("POST", space(name, "/jobs:cancel"), { ids: [id] }));
    if (!done) return;
    const [outcome] = done.outcomes;
    if (outcome.rejection) status.replaceChildren(notice(outcome.rejection.message || outcome.rejection.reason));
    clearTimeout(timer);
    delay = 1000;
    tick();
  });
  retry.addEventListener("click", async () => {
    const done = await attempt(status, () => api("POST", space(name, "/jobs:retry"), { ids: [id] }));
    if (!done) return;
    const [outcome] = done.outcomes;
    if (outcome.id) location.hash = "#/s/" + encodeURIComponent(name) + "/jobs/" + encodeURIComponent(outcome.id);
    else status.replaceChildren(notice(outcome.rejection.message || outcome.rejection.reason));
  });
  await tick();
}
