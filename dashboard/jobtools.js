import { api, attempt, badge, h, link, notice, RETRYABLE, row, space, table, UNFINISHED, when } from "./core.js";

// The job list's tools: search by id or key, and bulk retry and cancel.
const SEARCH_MAX = 10000; // jobs read looking for a key
const BULK_MAX = 100000; // jobs read for "all this filter shows"

// Every job the filter shows, newest first, a page of 1,000 at a time, up to `most`.
export async function everyJob(name, filter, most) {
  const jobs = [];
  let cursor = null;
  do {
    const page = await api("GET", space(name, "/jobs"), undefined, { limit: 1000, cursor, status: filter.status, name: filter.name });
    jobs.push(...page.jobs);
    cursor = page.cursor;
  } while (cursor && jobs.length < most);
  return { jobs, more: Boolean(cursor) };
}


// The search form: an id opens its job; else the jobs of the filter shown are read for the
// key (the API has no key filter, and the answer says so).
export function searchForm(name, filter) {
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
    const read = await attempt(results, () => everyJob(name, filter, SEARCH_MAX));
    if (!read) return;
    const matches = read.jobs.filter((j) => j.key === wanted);
    const scope = read.more ? `the newest ${read.jobs.length} jobs of this filter (older ones were not read)` : `all ${read.jobs.length} jobs of this filter`;
    results.replaceChildren(
      notice(`No job has the id "${wanted}". The API lists jobs by status and name, not by key, so the page read ${scope}: ${matches.length} with the key "${wanted}".`, "hint"),
      matches.length ? table(["Id", "Name", "Status", "Key", "Created"], matches.map((j) => row([link(j.id, "s", name, "jobs", j.id), j.name, badge(j.status), j.key, when(j.createdAtMs)]))) : null,
    );
  });
  return [search, results];
}

// Retry or cancel the selected jobs (`selected`: id → status), or every job the filter shows,
// once a confirmation naming the count is accepted; `reload` shows the list again after.
export function bulkActions(name, filter, selected, reload, rerender) {
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
    await reload();
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
    const read = await attempt(confirmBox, () => everyJob(name, filter, BULK_MAX));
    if (!read) return;
    const ids = read.jobs.filter((j) => how.fits(j.status)).map((j) => j.id);
    const shownFilter = [filter.status ? "status " + filter.status.toLowerCase() : "", filter.name ? "name " + filter.name : ""].filter(Boolean).join(", ") || "no filter";
    const cap = read.more ? ` (of its newest ${read.jobs.length}: the rest were not read)` : "";
    ask(action, ids, `${how.verb} all ${ids.length} ${how.which} job${ids.length === 1 ? "" : "s"} this filter shows (${shownFilter})${cap}?`);
  }


  function update() {
    const n = selected.size;
    const button = (id, text, cls, onclick, disabled) => h("button", { type: "button", id, class: cls, disabled, onclick }, text);
    bulk.replaceChildren(
      h("span", { id: "selected-count" }, `${n} selected`),
      button("retry-selected", "Retry selected", "retry", () => selectedFor("retry"), !n),
      button("cancel-selected", "Cancel selected", "danger", () => selectedFor("cancel"), !n),
      button("clear-selection", "Clear", "link", () => {
        selected.clear();
        rerender();
      }, !n),
      h("span", { class: "muted" }, "All this filter shows:"),
      button("retry-all", "Retry all…", "retry", () => allFor("retry")),
      button("cancel-all", "Cancel all…", "danger", () => allFor("cancel")),
    );
  }
  return { bulk, confirmBox, outcome, update };
}
