// The emit dashboard: one script, no build step, no dependencies. It calls the public API
// with the token the user signs in with, kept in sessionStorage (this tab only; never in a
// URL, a cookie or localStorage). Everything a job carries is put on the page as text
// (text nodes and textContent), never parsed as markup, and the page's CSP allows no
// inline script anyway.
"use strict";

(() => {
  const TOKEN = "emit.token";
  const STATUSES = ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"];
  const FINISHED = new Set(["COMPLETED", "FAILED", "CANCELLED", "STALLED"]);
  const RETRYABLE = new Set(["FAILED", "STALLED"]);
  const main = document.getElementById("main");
  let stop = () => {};
  // What the current view must do when it is left (end its live updates).

  // -- building blocks ------------------------------------------------------------------

  function h(tag, props, ...kids) {
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

  const two = (n) => String(n).padStart(2, "0");

  // The zone's short name at `date` ("CEST", "GMT+2", "UTC"), as the browser names it.
  function zoneName(date) {
    const part = new Intl.DateTimeFormat([], { timeZoneName: "short" }).formatToParts(date).find((p) => p.type === "timeZoneName");
    return part ? part.value : "";
  }

  // A time as text: the browser's local date and time, and its zone ("2025-03-04 14:05:09 CET").
  function whenText(ms) {
    if (!ms) return "—";
    const d = new Date(Number(ms));
    const day = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
    return `${day} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())} ${zoneName(d)}`.trim();
  }

  // A span of time in the largest units that say it ("850 ms", "3 min 5 s", "2 days 4 h").
  function duration(ms) {
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

  function ago(ms) {
    const delta = Date.now() - Number(ms);
    if (Math.abs(delta) < 5000) return "just now";
    const span = duration(Math.abs(delta)).split(" ").slice(0, 2).join(" ");
    return delta > 0 ? `${span} ago` : `in ${span}`;
  }

  // A time on the page: local time and zone (UTC in its title), and beside it how long ago,
  // kept current by the ticker below.
  function when(ms) {
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

  const json = (value) => JSON.stringify(value, null, 2);
  const link = (text, ...parts) => h("a", { href: "#/" + parts.map(encodeURIComponent).join("/") }, text);
  const badge = (status) => h("span", { class: "badge " + (STATUSES.includes(status) ? status.toLowerCase() : "") }, status);
  const scroll = (table) => h("div", { class: "scroll" }, table);
  const row = (cells, tag = "td") => h("tr", null, cells.map((c) => h(tag, null, c)));
  const table = (head, rows) => scroll(h("table", null, h("thead", null, row(head, "th")), h("tbody", null, rows)));

  function notice(text, kind = "error") {
    return h("p", { class: kind, role: kind === "error" ? "alert" : "status" }, text);
  }

  function show(...kids) {
    main.replaceChildren(...kids);
  }

  // -- the API ----------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super(body && body.message ? `${status}: ${body.message}` : `HTTP ${status}`);
      this.status = status;
    }
  }

  async function api(method, path, body, query) {
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
      signOut("The token was refused (unknown or revoked): sign in again.");
    }
    if (!answer.ok) throw new ApiError(answer.status, data);
    return data;
  }

  const space = (name, rest = "") => `/v1/spaces/${encodeURIComponent(name)}${rest}`;

  // Runs `work`; shows its error (as text) in `where` instead of throwing.
  async function attempt(where, work) {
    try {
      return await work();
    } catch (error) {
      where.replaceChildren(notice(error.message));
      return undefined;
    }
  }

  // -- signing in ---------------------------------------------------------------------------

  function signOut(message) {
    sessionStorage.removeItem(TOKEN);
    document.getElementById("nav").hidden = true;
    stop();
    signIn(message);
  }

  function signIn(message) {
    const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "off", required: true, placeholder: "emit_…" });
    const status = h("div");
    const form = h(
      "form",
      { class: "card", id: "sign-in" },
      h("h1", null, "Sign in"),
      h("label", { for: "token" }, "API token (a read token or better)"),
      input,
      h("button", { type: "submit" }, "Sign in"),
      h("p", { class: "hint" }, "The token stays in this tab only, and is sent to this API alone."),
      status,
    );
    if (message) status.append(notice(message));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN, input.value.trim());
      try {
        await api("GET", "/v1/spaces", undefined, { limit: 1 });
      } catch (error) {
        sessionStorage.removeItem(TOKEN);
        status.replaceChildren(notice(error.message));
        return;
      }
      location.hash = "#/";
      route();
    });
    show(form);
    input.focus();
  }

  // -- spaces -------------------------------------------------------------------------------

  async function spacesView() {
    const body = h("tbody");
    const more = h("button", { type: "button", hidden: true }, "More");
    const status = h("div");
    let cursor = null;
    async function load() {
      const page = await attempt(status, () => api("GET", "/v1/spaces", undefined, { limit: 50, cursor }));
      if (!page) return;
      for (const s of page.spaces) body.append(row([link(s.name, "s", s.name), s.inFlight ?? "—"]));
      cursor = page.cursor;
      more.hidden = !cursor;
      if (!body.children.length) status.replaceChildren(notice("No spaces yet: a space appears with its first job.", "hint"));
    }
    more.addEventListener("click", load);
    const go = h("input", { name: "space", placeholder: "a space's name", required: true, pattern: "[a-z0-9_-]{1,64}" });
    const open = h("form", { class: "inline" }, go, h("button", { type: "submit" }, "Open"));
    open.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = "#/s/" + encodeURIComponent(go.value);
    });
    show(
      h("h1", null, "Spaces"),
      open,
      scroll(h("table", { id: "spaces" }, h("thead", null, row(["Space", "In flight"], "th")), body)),
      more,
      status,
    );
    await load();
  }

  function spaceHeader(name, current) {
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

  // -- jobs -----------------------------------------------------------------------------------

  function createForm(name, status) {
    const jobName = h("input", { name: "name", required: true, placeholder: "send-email" });
    const payload = h("textarea", { name: "payload", rows: 3, placeholder: '{"to": "ada@example.com"}' });
    const priority = h("input", { name: "priority", type: "number", min: -1000, max: 1000, placeholder: "0" });
    const form = h(
      "form",
      { id: "create-job" },
      h("label", null, "Name", jobName),
      h("label", null, "Payload (JSON)", payload),
      h("label", null, "Priority", priority),
      h("button", { type: "submit" }, "Create"),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const job = { name: jobName.value.trim() };
      if (payload.value.trim()) {
        try {
          job.payload = JSON.parse(payload.value);
        } catch (error) {
          status.replaceChildren(notice("payload: not JSON (" + error.message + ")"));
          return;
        }
      }
      if (priority.value !== "") job.priority = Number(priority.value);
      const created = await attempt(status, () => api("POST", space(name, "/jobs"), job));
      if (created) location.hash = "#/s/" + encodeURIComponent(name) + "/jobs/" + encodeURIComponent(created.id);
    });
    return h("details", null, h("summary", null, "Create a job"), form);
  }

  const LIST_REFRESH_MS = 3000;
  const UNFINISHED = new Set(["PENDING", "RUNNING"]);
  const SEARCH_MAX = 10000; // jobs read looking for a key
  const BULK_MAX = 100000; // jobs read for "all this filter shows"

  // The counts above the list, from GET /metrics (of the name filtered on, if any): pending
  // and running now, and the last hour's completed, failed and cancelled. Each is a link to
  // the list of that status.
  function statusCounts(name, nameFilter, found) {
    const total = { pending: 0, running: 0, completed: 0, failed: 0, cancelled: 0 };
    for (const series of found.names) {
      const last = series.points[series.points.length - 1];
      if (last) {
        total.pending += last.pending;
        total.running += last.running;
      }
      for (const key of ["completed", "failed", "cancelled"]) total[key] += sum(series.points, key);
    }
    const count = (key) => {
      const query = new URLSearchParams({ status: key.toUpperCase() });
      if (nameFilter) query.set("name", nameFilter);
      const a = h("a", { class: "count", "data-status": key.toUpperCase(), href: "#/s/" + encodeURIComponent(name) + "?" + query }, h("strong", null, String(total[key])), " " + key);
      return a;
    };
    return [
      h("span", { class: "muted" }, "Now: "),
      count("pending"),
      count("running"),
      h("span", { class: "muted" }, " Last hour: "),
      count("completed"),
      count("failed"),
      count("cancelled"),
      h("span", { class: "hint" }, ` (${nameFilter ? "name " + nameFilter + ", " : "every name, "}from the space's metrics, a few seconds behind)`),
    ];
  }

  async function jobsView(name, params) {
    const status = h("div");
    const statusSelect = h(
      "select",
      { name: "status" },
      h("option", { value: "" }, "any status"),
      STATUSES.map((s) => h("option", { value: s }, s.toLowerCase())),
    );
    statusSelect.value = params.get("status") || "";
    const nameInput = h("input", { name: "name", placeholder: "any name", value: params.get("name") || "" });
    const filters = h("form", { class: "inline", id: "filters" }, statusSelect, nameInput, h("button", { type: "submit" }, "Show"));
    filters.addEventListener("submit", (event) => {
      event.preventDefault();
      const query = new URLSearchParams();
      if (statusSelect.value) query.set("status", statusSelect.value);
      if (nameInput.value.trim()) query.set("name", nameInput.value.trim());
      location.hash = "#/s/" + encodeURIComponent(name) + (query.toString() ? "?" + query : "");
    });
    // The filter the list shows: the one in the address, not what is typed but not applied.
    const filter = { status: params.get("status") || "", name: params.get("name") || "" };
    const body = h("tbody");
    const counts = h("p", { id: "counts", class: "counts" });
    const updated = h("span", { id: "list-updated", class: "hint" });
    const liveBox = h("input", { type: "checkbox", id: "live", checked: true });
    const pages = [null]; // the cursor of each page shown so far
    const newer = h("button", { type: "button", disabled: true }, "← Newer");
    const older = h("button", { type: "button", disabled: true }, "Older →");
    const refresh = h("button", { type: "button" }, "Refresh");
    const selected = new Map(); // id → status, kept across pages and refreshes
    const pickPage = h("input", { type: "checkbox", id: "pick-page", title: "Select every job of this page" });
    let shown = []; // the jobs on the screen
    let index = 0;
    let asked = 0; // the latest load's number: an older answer arriving late is dropped
    let live = true;
    let timer = null;
    stop = () => {
      live = false;
      clearTimeout(timer);
    };
    const changed = () => body.dispatchEvent(new Event("selection"));

    function jobRow(job) {
      const pick = h("input", { type: "checkbox", class: "pick", value: job.id, checked: selected.has(job.id), "aria-label": "select " + job.id });
      pick.addEventListener("change", () => {
        if (pick.checked) selected.set(job.id, job.status);
        else selected.delete(job.id);
        changed();
      });
      if (selected.has(job.id)) selected.set(job.id, job.status);
      const tr = row([
        pick,
        link(job.id, "s", name, "jobs", job.id),
        job.name,
        badge(job.status),
        job.progress ? `${job.progress.percent}%` : "",
        `${job.attempt}/${job.maxAttempts}`,
        when(job.createdAtMs),
      ]);
      tr.dataset.id = job.id;
      return tr;
    }

    function render() {
      body.replaceChildren(...shown.map(jobRow));
      pickPage.checked = shown.length > 0 && shown.every((j) => selected.has(j.id));
      changed();
    }

    pickPage.addEventListener("change", () => {
      for (const job of shown) {
        if (pickPage.checked) selected.set(job.id, job.status);
        else selected.delete(job.id);
      }
      render();
    });

    async function load(at, quiet = false) {
      const mine = ++asked;
      let page;
      try {
        page = await api("GET", space(name, "/jobs"), undefined, { limit: 25, cursor: pages[at], status: filter.status, name: filter.name });
      } catch (error) {
        if (mine === asked && live) status.replaceChildren(notice(error.message));
        return;
      }
      if (mine !== asked || !live) return;
      status.replaceChildren();
      index = at;
      shown = page.jobs;
      render();
      if (!page.jobs.length) status.append(notice("No jobs here.", "hint"));
      pages.length = at + 1;
      if (page.cursor) pages.push(page.cursor);
      newer.disabled = at === 0;
      older.disabled = !page.cursor;
      updated.textContent = `${quiet ? "Updated" : "Loaded"} ${new Date().toLocaleTimeString()}.`;
    }
    newer.addEventListener("click", () => load(index - 1));
    older.addEventListener("click", () => load(index + 1));
    refresh.addEventListener("click", () => Promise.all([load(index), loadCounts()]));

    async function loadCounts() {
      try {
        const found = await api("GET", space(name, "/metrics"), undefined, { name: filter.name });
        if (live) counts.replaceChildren(...statusCounts(name, filter.name, found));
      } catch (error) {
        if (live) counts.replaceChildren(h("span", { class: "error" }, "Counts: " + error.message));
      }
    }

    // While the page is open (and Live is on), the page shown and the counts again, every
    // few seconds: the same cursor, the same selection.
    async function tick() {
      if (!live) return;
      if (liveBox.checked && !document.hidden) await Promise.all([load(index, true), loadCounts()]);
      if (live) timer = setTimeout(tick, LIST_REFRESH_MS);
    }

    // -- search: an id opens its job; else the jobs of this filter are read for the key.
    const findInput = h("input", { name: "find", id: "find", placeholder: "a job's id or key", required: true });
    const results = h("div", { id: "search-results" });
    const search = h("form", { class: "inline", id: "search" }, findInput, h("button", { type: "submit" }, "Find"));
    search.addEventListener("submit", async (event) => {
      event.preventDefault();
      const wanted = findInput.value.trim();
      try {
        const job = await api("GET", space(name, `/jobs/${encodeURIComponent(wanted)}`));
        location.hash = "#/s/" + encodeURIComponent(name) + "/jobs/" + encodeURIComponent(job.id);
        return;
      } catch (error) {
        if (error.status !== 404 && error.status !== 400) {
          results.replaceChildren(notice(error.message));
          return;
        }
      }
      results.replaceChildren(notice(`No job has the id "${wanted}": looking for it as a key…`, "hint"));
      const read = await attempt(results, () => everyJob(SEARCH_MAX));
      if (!read) return;
      const matches = read.jobs.filter((j) => j.key === wanted);
      const scope = read.more ? `the newest ${read.jobs.length} jobs of this filter (older ones were not read)` : `all ${read.jobs.length} jobs of this filter`;
      results.replaceChildren(
        notice(`No job has the id "${wanted}". The API lists jobs by status and name, not by key, so the page read ${scope}: ${matches.length} with the key "${wanted}".`, "hint"),
        matches.length ? table(["Id", "Name", "Status", "Key", "Created"], matches.map((j) => row([link(j.id, "s", name, "jobs", j.id), j.name, badge(j.status), j.key, when(j.createdAtMs)]))) : null,
      );
    });

    // Every job the filter shows, newest first, a page of 1,000 at a time, up to `most`.
    async function everyJob(most) {
      const jobs = [];
      let cursor = null;
      do {
        const page = await api("GET", space(name, "/jobs"), undefined, { limit: 1000, cursor, status: filter.status, name: filter.name });
        jobs.push(...page.jobs);
        cursor = page.cursor;
      } while (cursor && jobs.length < most);
      return { jobs, more: Boolean(cursor) };
    }

    // -- bulk: retry or cancel the selected jobs, or every job the filter shows.
    const bulk = h("div", { id: "bulk", class: "pager bulk" });
    const confirmBox = h("div", { id: "confirm" });
    const outcome = h("div", { id: "bulk-result" });
    const ACTIONS = {
      retry: { verb: "Retry", done: "Retried", which: "failed or stalled", fits: (st) => RETRYABLE.has(st), worked: (o) => Boolean(o.id) },
      cancel: { verb: "Cancel", done: "Cancelled", which: "unfinished", fits: (st) => UNFINISHED.has(st), worked: (o) => o.status === "CANCELLED" },
    };
    const plural = (n) => `${n} job${n === 1 ? "" : "s"}`;

    function ask(action, ids, question) {
      const how = ACTIONS[action];
      if (!ids.length) {
        confirmBox.replaceChildren(notice(question + " None to " + how.verb.toLowerCase() + ".", "hint"));
        return;
      }
      const yes = h("button", { type: "button", class: "yes " + (action === "cancel" ? "danger solid" : "") }, `${how.verb} ${plural(ids.length)}`);
      const no = h("button", { type: "button", class: "no link" }, "Keep them as they are");
      yes.addEventListener("click", async () => {
        yes.disabled = true;
        await send(action, ids);
        confirmBox.replaceChildren();
      });
      no.addEventListener("click", () => confirmBox.replaceChildren());
      confirmBox.replaceChildren(h("div", { class: "card confirm-box", role: "alertdialog" }, h("p", null, question), h("div", { class: "pager" }, yes, no)));
    }

    async function send(action, ids) {
      const how = ACTIONS[action];
      const outcomes = [];
      for (let at = 0; at < ids.length; at += 1000) {
        const done = await attempt(outcome, () => api("POST", space(name, `/jobs:${action}`), { ids: ids.slice(at, at + 1000) }));
        if (!done) return;
        outcomes.push(...done.outcomes);
      }
      const refused = {};
      for (const o of outcomes) if (o.rejection) refused[o.rejection.reason] = (refused[o.rejection.reason] || 0) + 1;
      const why = Object.entries(refused).map(([reason, n]) => `${n} ${reason}`).join(", ");
      outcome.replaceChildren(notice(`${how.done} ${outcomes.filter(how.worked).length} of ${plural(outcomes.length)}${why ? `; refused: ${why}` : ""}.`, "ok"));
      selected.clear();
      await Promise.all([load(index), loadCounts()]);
    }

    function selectedFor(action) {
      const how = ACTIONS[action];
      const ids = [...selected].filter(([, st]) => how.fits(st)).map(([id]) => id);
      const question = ids.length === selected.size ? `${how.verb} ${plural(ids.length)} selected?` : `${how.verb} the ${ids.length} ${how.which} of the ${plural(selected.size)} selected?`;
      ask(action, ids, question);
    }

    async function allFor(action) {
      const how = ACTIONS[action];
      confirmBox.replaceChildren(notice("Reading every job this filter shows…", "hint"));
      const read = await attempt(confirmBox, () => everyJob(BULK_MAX));
      if (!read) return;
      const ids = read.jobs.filter((j) => how.fits(j.status)).map((j) => j.id);
      const shownFilter = [filter.status ? "status " + filter.status.toLowerCase() : "", filter.name ? "name " + filter.name : ""].filter(Boolean).join(", ") || "no filter";
      const cap = read.more ? ` (of its newest ${read.jobs.length}: the rest were not read)` : "";
      ask(action, ids, `${how.verb} all ${ids.length} ${how.which} job${ids.length === 1 ? "" : "s"} this filter shows (${shownFilter})${cap}?`);
    }

    body.addEventListener("selection", () => {
      const n = selected.size;
      const button = (id, text, cls, onclick, disabled) => h("button", { type: "button", id, class: cls, disabled, onclick }, text);
      bulk.replaceChildren(
        h("span", { id: "selected-count" }, `${n} selected`),
        button("retry-selected", "Retry selected", "retry", () => selectedFor("retry"), !n),
        button("cancel-selected", "Cancel selected", "danger", () => selectedFor("cancel"), !n),
        button("clear-selection", "Clear", "link", () => {
          selected.clear();
          render();
        }, !n),
        h("span", { class: "muted" }, "All this filter shows:"),
        button("retry-all", "Retry all…", "retry", () => allFor("retry")),
        button("cancel-all", "Cancel all…", "danger", () => allFor("cancel")),
      );
    });

    show(
      ...spaceHeader(name, "Jobs"),
      createForm(name, status),
      search,
      results,
      filters,
      counts,
      bulk,
      confirmBox,
      outcome,
      h("div", { class: "pager" }, h("label", { class: "check" }, liveBox, ` Live (every ${LIST_REFRESH_MS / 1000} s)`), updated),
      scroll(h("table", { id: "jobs" }, h("thead", null, row([pickPage, "Id", "Name", "Status", "Progress", "Attempt", "Created"], "th")), body)),
      h("div", { class: "pager" }, newer, older, refresh),
      status,
    );
    await Promise.all([load(0), loadCounts()]);
    timer = setTimeout(tick, LIST_REFRESH_MS);
  }

  function field(label, value) {
    return [h("dt", null, label), h("dd", null, value)];
  }

  function valueBlock(value) {
    return h("pre", null, typeof value === "string" ? value : json(value));
  }

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

  // How long the job waited and ran, as far as its fields and reports tell: the API keeps no
  // claim time, so a job's first report (its first log line or event) bounds it.
  function durations(job, firstReportMs) {
    const items = [];
    const due = Math.max(job.createdAtMs, job.runAtMs || 0);
    if (job.status === "PENDING") {
      const now = Date.now();
      items.push(...field("Waiting", h("span", { id: "job-waiting" }, now >= due ? `${duration(now - due)} so far` : `due in ${duration(due - now)}`)));
    }
    if (firstReportMs && job.attempt > 0) {
      items.push(...field("Waited for", h("span", { id: "job-waited" }, `at most ${duration(firstReportMs - due)} (from due to its first report)`)));
    }
    if (job.status === "RUNNING" && job.leaseUntilMs) items.push(...field("Lease until", when(Number(job.leaseUntilMs))));
    if (job.finishedAtMs && firstReportMs) {
      items.push(...field("Ran for", h("span", { id: "job-ran" }, `at least ${duration(job.finishedAtMs - firstReportMs)} (from its first report to its end)`)));
    }
    if (job.finishedAtMs) items.push(...field("Created to finished", h("span", { id: "job-took" }, duration(job.finishedAtMs - job.createdAtMs))));
    return items;
  }

  function jobDetails(name, job, firstReportMs) {
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
      ...durations(job, firstReportMs),
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
    const blocks = [h("dl", { class: "fields" }, items)];
    if (job.error !== undefined) blocks.push(h("h2", null, "Error"), h("pre", { id: "job-error", class: "error" }, job.error));
    if (job.result !== undefined) blocks.push(h("h2", null, "Result"), h("div", { id: "job-result" }, valueBlock(job.result)));
    if (job.payload !== undefined) blocks.push(h("h2", null, "Payload"), h("div", { id: "job-payload" }, valueBlock(job.payload)));
    return blocks;
  }

  async function jobView(name, id) {
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
    let firstReportMs = 0; // the first log line's or event's time: after the job's claim
    let live = true;
    let timer = null;
    stop = () => {
      live = false;
      clearTimeout(timer);
    };

    async function follow(path, from, into, render) {
      let next = from;
      for (;;) {
        const page = await api("GET", space(name, `/jobs/${encodeURIComponent(id)}/${path}`), undefined, { cursor: String(next), limit: 1000 });
        const items = page[path];
        for (const item of items) into.append(render(item));
        if (items.length && next === 0 && (!firstReportMs || items[0].atMs < firstReportMs)) firstReportMs = items[0].atMs;
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
      details.replaceChildren(...jobDetails(name, job, firstReportMs));
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

  // -- charts: inline SVG built node by node (no library) ----------------------------------

  // The SVG namespace: a name, never fetched.
  const SVG_NS = "http://www.w3.org/2000/svg";
  const CHART = { width: 300, height: 90, top: 12, bottom: 14 };
  const pad2 = (n) => String(n).padStart(2, "0");
  const hhmm = (ms) => {
    const d = new Date(ms);
    return `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
  };
  const sum = (points, key) => points.reduce((n, p) => n + (p[key] || 0), 0);

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

  async function overviewView(name) {
    const status = h("div");
    const updated = h("p", { class: "hint", id: "charts-updated" });
    const list = h("div", { id: "charts" });
    let live = true;
    let timer = null;
    stop = () => {
      live = false;
      clearTimeout(timer);
    };
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

  // -- names: policies and diagnostics ------------------------------------------------------

  const LIMITS = [
    ["concurrency", "Concurrency"],
    ["perKeyConcurrency", "Per-key concurrency"],
    ["agingIntervalMs", "Aging interval (ms)"],
  ];
  const RATES = [
    ["rate", "Rate"],
    ["perKeyRate", "Per-key rate"],
  ];

  function rateText(rate) {
    return rate ? `${rate.tokens} per ${rate.intervalMs} ms` : "no limit";
  }

  // A rate's two inputs as the API's value: both blank is null (no limit), one blank is an
  // error naming the field, as the API would name it.
  function rateValue(key, tokens, interval) {
    if (tokens.value === "" && interval.value === "") return null;
    if (tokens.value === "" || interval.value === "") {
      throw new Error(`${key}: give both tokens and interval (ms), or neither for no limit`);
    }
    return { tokens: Number(tokens.value), intervalMs: Number(interval.value) };
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
      LIMITS.map(([key, label]) => {
        inputs[key] = h("input", { name: key, type: "number", min: key === "agingIntervalMs" ? 1000 : 1, placeholder: "no limit", value: policy[key] ?? "" });
        return h("label", null, label, inputs[key]);
      }),
      RATES.map(([key, label]) => {
        const rate = policy[key];
        const tokens = h("input", { name: key + ".tokens", type: "number", min: 1, max: 100000, placeholder: "no limit", value: rate ? rate.tokens : "" });
        const interval = h("input", { name: key + ".intervalMs", type: "number", min: 1000, max: 86400000, placeholder: "ms", value: rate ? rate.intervalMs : "" });
        rates[key] = [tokens, interval];
        return h(
          "fieldset",
          { class: "rate" },
          h("legend", null, label),
          h("label", null, "Tokens", tokens),
          h("label", null, "Interval (ms)", interval),
        );
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
      for (const [key] of LIMITS) {
        const value = inputs[key].value === "" ? null : Number(inputs[key].value);
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
        field("Rate", h("span", { class: "rate-text" }, rateText(policy.rate))),
        field("Per-key rate", h("span", { class: "per-key-rate-text" }, rateText(policy.perKeyRate))),
      ),
      toggle,
      form,
      status,
    );
  }

  async function namesView(name) {
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

  // -- schedules ------------------------------------------------------------------------------

  // A schedule's next fire times, one a line; none while it is paused.
  function nextRuns(schedule) {
    if (schedule.paused) return h("span", { class: "muted" }, "none while paused");
    if (!schedule.nextRunsAtMs.length) return h("span", { class: "muted" }, "none");
    return h("ul", { class: "runs" }, schedule.nextRunsAtMs.map((ms) => h("li", null, when(ms))));
  }

  function lastRun(name, schedule) {
    const last = schedule.lastRun;
    if (!last) return "—";
    const open = link(whenText(last.atMs), "s", name, "jobs", last.jobId);
    open.className = "last-run";
    open.title = "job " + last.jobId;
    return open;
  }

  async function schedulesView(name) {
    const status = h("div");
    const made = h("div", { id: "triggered" });
    const body = h("tbody");
    const pages = [null]; // the cursor of each page shown so far
    const previous = h("button", { type: "button", disabled: true }, "← Previous");
    const next = h("button", { type: "button", disabled: true }, "Next →");
    const refresh = h("button", { type: "button" }, "Refresh");
    let shown = 0; // the page on the screen, loaded again after each action
    const path = (id, rest = "") => space(name, `/schedules/${encodeURIComponent(id)}${rest}`);

    function scheduleRow(s) {
      const toggle = h("button", { type: "button", class: "pause" }, s.paused ? "Resume" : "Pause");
      toggle.addEventListener("click", async () => {
        if (await attempt(status, () => api("PATCH", path(s.id), { paused: !s.paused }))) load(shown);
      });
      const trigger = h("button", { type: "button", class: "trigger" }, "Trigger");
      trigger.addEventListener("click", async () => {
        const job = await attempt(status, () => api("POST", path(s.id, ":trigger")));
        if (!job) return;
        made.replaceChildren(
          h(
            "p",
            { class: "ok", role: "status" },
            `${s.id} made job `,
            link(job.id, "s", name, "jobs", job.id),
            job.outcome === "DUPLICATE" ? " (made before)" : "",
          ),
        );
        load(shown);
      });
      const remove = h("button", { type: "button", class: "delete danger" }, "Delete");
      remove.addEventListener("click", async () => {
        if (!remove.classList.contains("confirm")) {
          remove.classList.add("confirm");
          remove.textContent = "Really delete?";
          return;
        }
        if (await attempt(status, () => api("DELETE", path(s.id)).then(() => true))) load(shown);
      });
      const tr = row([
        h("code", null, s.id),
        h("span", null, s.cron, " ", h("span", { class: "muted tz" }, s.timezone)),
        s.job.name,
        s.overlap,
        s.paused ? h("span", { class: "badge paused" }, "PAUSED") : "active",
        nextRuns(s),
        lastRun(name, s),
        h("span", { class: "actions" }, toggle, trigger, remove),
      ]);
      tr.dataset.id = s.id;
      return tr;
    }

    async function load(index) {
      const page = await attempt(status, () => api("GET", space(name, "/schedules"), undefined, { limit: 25, cursor: pages[index] }));
      if (!page) return;
      status.replaceChildren();
      shown = index;
      body.replaceChildren(...page.schedules.map(scheduleRow));
      if (!page.schedules.length) status.append(notice("No schedules here: one is made with PUT /v1/spaces/{space}/schedules/{id}.", "hint"));
      pages.length = index + 1;
      if (page.cursor) pages.push(page.cursor);
      previous.disabled = index === 0;
      next.disabled = !page.cursor;
      previous.onclick = () => load(index - 1);
      next.onclick = () => load(index + 1);
      refresh.onclick = () => load(index);
    }
    show(
      ...spaceHeader(name, "Schedules"),
      h("p", { class: "hint" }, `Each schedule makes its job at the times its cron names in its timezone (times here are your local time, ${zoneName(new Date())}).`),
      made,
      scroll(
        h(
          "table",
          { id: "schedules" },
          h("thead", null, row(["Id", "Cron", "Job", "Overlap", "State", "Next runs", "Last run", ""], "th")),
          body,
        ),
      ),
      h("div", { class: "pager" }, previous, next, refresh),
      status,
    );
    await load(0);
  }

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
  const UNITS = [
    ["days", 86400000],
    ["hours", 3600000],
    ["minutes", 60000],
    ["seconds", 1000],
    ["ms", 1],
  ];

  // A span of time in the largest unit that holds it whole (blank: minutes), and a menu of
  // units; the number's input keeps the setting's name, its unit's is `<name>.unit`.
  function spanInput(key, label, value) {
    const [, size] = value ? UNITS.find(([, n]) => value % n === 0) : UNITS[2];
    const number = h("input", { name: key, type: "number", min: 0, step: "any", value: value === null || value === undefined ? "" : value / size });
    const unit = h("select", { name: key + ".unit", "aria-label": label + " unit" }, UNITS.map(([u, n]) => h("option", { value: String(n) }, u)));
    unit.value = String(size);
    return h("label", null, label, h("span", { class: "span-input" }, number, unit));
  }

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

  async function settingsView(name) {
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
        const raw = form.elements[key].value;
        const scale = span ? Number(form.elements[key + ".unit"].value) : 1;
        const value = raw === "" ? (nullable ? null : undefined) : Math.round(Number(raw) * scale);
        if (value !== undefined && value !== current[key]) patch[key] = value;
      }
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

  // -- tokens ---------------------------------------------------------------------------------

  async function tokensView() {
    const status = h("div");
    const body = h("tbody");
    const shown = h("div", { id: "minted" });
    const nameInput = h("input", { name: "name", placeholder: "billing workers" });
    const scopes = ["read", "create", "work", "admin"].map((s) => h("input", { type: "checkbox", name: "scope", value: s }));
    const spacesInput = h("input", { name: "spaces", placeholder: "every space (or: billing, mail)" });
    const mint = h(
      "form",
      { id: "mint", class: "limits" },
      h("label", null, "Name", nameInput),
      h("fieldset", null, h("legend", null, "Scopes"), scopes.map((box) => h("label", { class: "check" }, box, " " + box.value))),
      h("label", null, "Spaces", spacesInput),
      h("button", { type: "submit" }, "Mint"),
    );
    async function load() {
      const found = await attempt(status, () => api("GET", "/v1/tokens"));
      if (!found) return;
      body.replaceChildren(
        ...found.tokens.map((t) => {
          const revoke = h("button", { type: "button", class: "revoke danger" }, "Revoke");
          revoke.addEventListener("click", async () => {
            if (!revoke.classList.contains("confirm")) {
              revoke.classList.add("confirm");
              revoke.textContent = "Really revoke?";
              return;
            }
            if (await attempt(status, () => api("DELETE", "/v1/tokens/" + encodeURIComponent(t.id)).then(() => true))) load();
          });
          const tr = row([h("code", null, t.id), t.name || "", t.scopes.join(", "), t.spaces ? t.spaces.join(", ") : "every space", when(t.createdAtMs), revoke]);
          tr.dataset.id = t.id;
          return tr;
        }),
      );
    }
    mint.addEventListener("submit", async (event) => {
      event.preventDefault();
      const request = { scopes: scopes.filter((b) => b.checked).map((b) => b.value) };
      if (nameInput.value.trim()) request.name = nameInput.value.trim();
      const spaces = spacesInput.value.split(",").map((s) => s.trim()).filter(Boolean);
      if (spaces.length) request.spaces = spaces;
      const minted = await attempt(status, () => api("POST", "/v1/tokens", request));
      if (!minted) return;
      status.replaceChildren();
      shown.replaceChildren(h("p", { class: "ok" }, `Token ${minted.id}: its secret, shown this once:`), h("pre", { class: "secret" }, minted.token));
      load();
    });
    show(
      h("h1", null, "Tokens"),
      h("details", null, h("summary", null, "Mint a token"), mint),
      shown,
      table(["Id", "Name", "Scopes", "Spaces", "Created", ""], body),
      status,
    );
    body.closest("table").id = "tokens";
    await load();
  }

  // -- routing --------------------------------------------------------------------------------

  async function route() {
    stop();
    stop = () => {};
    if (!sessionStorage.getItem(TOKEN)) {
      signIn();
      return;
    }
    document.getElementById("nav").hidden = false;
    const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    const params = new URLSearchParams(query || "");
    try {
      if (parts[0] === "tokens") await tokensView();
      else if (parts[0] === "s" && parts.length === 2) await jobsView(parts[1], params);
      else if (parts[0] === "s" && parts[2] === "jobs" && parts[3]) await jobView(parts[1], parts[3]);
      else if (parts[0] === "s" && parts[2] === "overview") await overviewView(parts[1]);
      else if (parts[0] === "s" && parts[2] === "names") await namesView(parts[1]);
      else if (parts[0] === "s" && parts[2] === "schedules") await schedulesView(parts[1]);
      else if (parts[0] === "s" && parts[2] === "settings") await settingsView(parts[1]);
      else await spacesView();
    } catch (error) {
      show(notice(error.message));
    }
  }

  document.getElementById("sign-out").addEventListener("click", () => signOut());
  window.addEventListener("hashchange", route);
  route();
})();
