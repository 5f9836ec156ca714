import { api, attempt, h, row, show, table, when } from "./core.js";

// -- tokens ---------------------------------------------------------------------------------

export async function tokensView() {
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
