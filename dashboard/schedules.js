import { api, attempt, h, link, notice, row, scroll, show, space, spaceHeader, when, whenText, zoneName } from "./core.js";

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

export async function schedulesView(name) {
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
