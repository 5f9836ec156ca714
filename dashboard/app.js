import { api, attempt, h, leave, link, notice, onRefused, row, scroll, show, TOKEN } from "./core.js";
import { jobsView } from "./jobs.js";
import { jobView } from "./job.js";
import { overviewView } from "./charts.js";
import { namesView } from "./names.js";
import { schedulesView } from "./schedules.js";
import { settingsView } from "./settings.js";
import { tokensView } from "./tokens.js";

// -- signing in ---------------------------------------------------------------------------

function signOut(message) {
  sessionStorage.removeItem(TOKEN);
  document.getElementById("nav").hidden = true;
  leave();
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

// -- routing --------------------------------------------------------------------------------

async function route() {
  leave();
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

onRefused(signOut);
document.getElementById("sign-out").addEventListener("click", () => signOut());
window.addEventListener("hashchange", route);
route();
