import { api, attempt, badge, h, link, notice, onLeave, row, scroll, show, space, spaceHeader, STATUSES, sum, when } from "./core.js";
import { bulkActions, searchForm } from "./jobtools.js";

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

export async function jobsView(name, params) {
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
  onLeave(() => {
    live = false;
    clearTimeout(timer);
  });
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

  const [search, results] = searchForm(name, filter);
  const reload = () => Promise.all([load(index), loadCounts()]);
  const { bulk, confirmBox, outcome, update } = bulkActions(name, filter, selected, reload, () => render());
  body.addEventListener("selection", update);

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
