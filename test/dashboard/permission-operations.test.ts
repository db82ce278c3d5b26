/**
 * The permission editor and a service's functions and actions, in a real
 * browser against a loopback OData V4 back end (test-support/odata/fixtures.ts:
 * imports Search and ResetAll, bound Sales.GetTotal, Sales.TopOrders and
 * Sales.Approve):
 *
 * - the catalog's operations are rows of their own ("Operations"), each with
 *   one `invoke` toggle, its kind and what it returns; entity set rows (and
 *   `*`) offer no `invoke`;
 * - `invoke` granted in the editor is saved and read back, and the key then
 *   calls the action on the data path (with the binding read it needs);
 * - a toggle changes only its own operation: an existing `invoke` grant (on
 *   an operation, and one on an entity set's entry) survives editing other
 *   rows and is saved unchanged;
 * - drafts are checked as the server checks them: `invoke` on `*` is refused
 *   in the JSON view with the server's words, and the controls refuse it.
 *
 * Skipped with one line when no Chromium is installed (fails under CI).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser, screenshot } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";

const test = suite("dashboard: functions and actions in the permission editor");

interface Ctx {
  erplink: RunningErplink;
  backend: Server;
  /** Every data request the back end received (method and path). */
  seen: string[];
  browser: Browser;
  context: BrowserContext;
  page: Page;
}
const ctx = { seen: [] as string[] } as Ctx;

const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

/** A tiny OData V4 back end on loopback: its $metadata, and an empty JSON answer for anything else. */
function startBackend(): Promise<Server> {
  const server = createServer((req, res) => {
    if ((req.url ?? "").split("?")[0]!.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0" });
      res.end(V4_METADATA);
      return;
    }
    ctx.seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" });
    res.end(JSON.stringify({ "@odata.context": "$metadata#SalesOrders/$entity", ID: 1 }));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** Creates a data key with `permissions` over the admin API and opens its editor. */
async function openEditor(name: string, permissions: unknown) {
  const created = await admin("POST", "/admin/api-keys", { name, permissions });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const { page } = ctx;
  await page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys/${created.body.data.id}`);
  const form = page.getByRole("form", { name: `Edit key ${name}` });
  await form.waitFor();
  // The catalog has been read once the service says how many operations it has.
  await form.getByText("5 functions and actions in $metadata").waitFor();
  return { id: created.body.data.id as string, key: created.body.data.key as string, form };
}

const saved = async (id: string) => (await admin("GET", `/admin/api-keys/${id}`)).body.data.permissions;

if (browserAvailable("dashboard permission operations suite")) {
  test.before(async () => {
    ctx.backend = await startBackend();
    ctx.erplink = await startErplink();
    const sys = await admin("POST", "/admin/systems", { name: "s4" });
    assert.is(sys.status, 201);
    const ins = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
      name: "s4-prod",
      base_url: `http://127.0.0.1:${(ctx.backend.address() as AddressInfo).port}/`,
      services: { SALES: { path: "sales" } },
    });
    assert.is(ins.status, 201, JSON.stringify(ins.body));
    ctx.browser = await launchBrowser();
    ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
    ctx.page = await ctx.context.newPage();
    ctx.page.setDefaultTimeout(8000);
    await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys`);
    await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
    await ctx.page.getByRole("button", { name: "Sign in" }).click();
    await ctx.page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
    await new Promise((resolve) => ctx.backend?.close(resolve));
  });

  test("the catalog's functions and actions are rows of their own with one invoke toggle, their kind and what they return; entity sets and * offer no invoke", async () => {
    const { form } = await openEditor("catalog view", { "s4-prod": { SALES: { Customers: ["list"], "*": ["get"] } } });
    const operations = form.getByRole("group", { name: "Operations of SALES on s4-prod" });
    const row = (name: string) => operations.getByRole("group", { name: `Operation ${name} in SALES of s4-prod` });
    // Every operation of the catalog, in its order (imports, then bound operations by qualified name), none granted.
    const legends = await operations.locator("fieldset legend").evaluateAll((ls) => ls.map((l) => (l as unknown as { textContent: string }).textContent));
    assert.equal(
      legends,
      ["Search", "ResetAll", "Sales.GetTotal", "Sales.TopOrders", "Sales.Approve"].map((n) => `Operation ${n} in SALES of s4-prod`),
    );
    for (const name of ["Search", "ResetAll", "Sales.GetTotal", "Sales.TopOrders", "Sales.Approve"]) {
      const toggles = row(name).getByRole("checkbox");
      assert.equal(await toggles.evaluateAll((cs) => cs.map((c) => (c as unknown as { labels: { textContent: string }[] }).labels[0]!.textContent)), ["invoke"], name);
      assert.not.ok(await toggles.isChecked(), name);
    }
    await row("Search").getByText("function import; returns entities of Products.").waitFor();
    await row("ResetAll").getByText("action import; returns no entity.").waitFor();
    await row("Sales.TopOrders").getByText("function bound to SalesOrders; returns entities of SalesOrders.").waitFor();
    await row("Sales.Approve").getByText("action bound to SalesOrders; returns no entity.").waitFor();
    await row("Sales.Approve").getByText("A call also needs get or list of SalesOrders.").waitFor();
    // The entity set rows, the * one included, toggle the five operations on entity sets only.
    for (const entity of ["Customers", "* (every entity set)"]) {
      const group = form.getByRole("group", { name: `Entity set ${entity} in SALES of s4-prod` });
      assert.equal(
        await group.getByRole("checkbox").evaluateAll((cs) => cs.map((c) => (c as unknown as { labels: { textContent: string }[] }).labels[0]!.textContent)),
        ["list", "get", "create", "update", "delete"],
        entity,
      );
    }
    await form.getByText("* grants every entity set of this service, including ones added later, but never a function or action.").waitFor();
    // The entity set list offers entity sets only (operations have their own).
    const offeredSets = await form.locator("datalist[id^='edit-perm-sets'] option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
    assert.not.ok(offeredSets.includes("Search") || offeredSets.includes("Sales.Approve"), JSON.stringify(offeredSets));
    await assertAccessible(ctx.page, "permission editor with operations");
    await screenshot(ctx.page, "permission-operations");
    await ctx.page.setViewportSize({ width: 800, height: 900 });
    await assertAccessible(ctx.page, "permission editor with operations, narrow");
    await screenshot(ctx.page, "permission-operations-narrow");
    await ctx.page.setViewportSize({ width: 1280, height: 900 });
  });

  test("invoke granted in the editor is saved and read back, and the key calls the action on the data path", async () => {
    const { id, key, form } = await openEditor("approver", { "s4-prod": { SALES: { Customers: ["list"] } } });
    const approve = form.getByRole("group", { name: "Operation Sales.Approve in SALES of s4-prod" });
    await approve.getByLabel("invoke").check();
    // The call also reads the order it is bound to.
    await form.getByLabel("Add entity set to SALES on s4-prod").fill("SalesOrders");
    await form.getByRole("button", { name: "Add entity set" }).click();
    await form.getByRole("group", { name: "Entity set SalesOrders in SALES of s4-prod" }).getByLabel("list").uncheck();
    const expected = { "s4-prod": { SALES: { Customers: ["list"], "Sales.Approve": ["invoke"], SalesOrders: ["get"] } } };
    assert.equal(JSON.parse(await form.getByLabel("Permissions as JSON").inputValue()), expected);
    await form.getByText("In sync with the tree.").waitFor();
    // Explain decides the unsaved draft as the data path will.
    await ctx.page.getByLabel("Method").selectOption("POST");
    await ctx.page.getByLabel("OData URL").fill("/odata/s4-prod/SALES/SalesOrders(1)/Sales.Approve");
    await ctx.page.getByText("With your unsaved changes:", { exact: true }).waitFor();
    await ctx.page.getByText(/^Allowed: forwarded to http:\/\/127\.0\.0\.1:\d+\/sales\/SalesOrders\(1\)\/Sales\.Approve$/).waitFor();
    await ctx.page.getByRole("row", { name: /Sales\.Approve invoke/ }).waitFor();

    await form.getByRole("button", { name: "Save changes" }).click();
    await ctx.page.getByRole("status").getByText("Key approver saved.").waitFor();
    assert.equal(await saved(id), expected);
    // Read back: a reload shows the grant from the server.
    await ctx.page.reload();
    const reread = ctx.page.getByRole("form", { name: "Edit key approver" });
    await reread.getByText("5 functions and actions in $metadata").waitFor();
    assert.ok(await reread.getByRole("group", { name: "Operation Sales.Approve in SALES of s4-prod" }).getByLabel("invoke").isChecked());
    assert.not.ok(await reread.getByRole("group", { name: "Operation Sales.GetTotal in SALES of s4-prod" }).getByLabel("invoke").isChecked());
    // The key calls the action, and only the one granted.
    const call = (path: string) =>
      fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/SALES/${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
    const before = ctx.seen.length;
    assert.is((await call("SalesOrders(1)/Sales.Approve")).status, 200);
    assert.equal(ctx.seen.slice(before).filter((r) => r.startsWith("POST")), ["POST /sales/SalesOrders(1)/Sales.Approve"]);
    const refused = await call("ResetAll");
    assert.is(refused.status, 403);
    // The data path asks the entity step first for a name the key does not hold (the words of that step).
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /^API key has no access to (entity|operation) 'ResetAll'$/);

    // Turned off again, the entry goes (an entry must list an operation), and the save says so.
    await reread.getByRole("group", { name: "Operation Sales.Approve in SALES of s4-prod" }).getByLabel("invoke").uncheck();
    assert.equal(JSON.parse(await reread.getByLabel("Permissions as JSON").inputValue()), { "s4-prod": { SALES: { Customers: ["list"], SalesOrders: ["get"] } } });
    await reread.getByRole("button", { name: "Save changes" }).click();
    await ctx.page.getByRole("status").getByText("Key approver saved.").waitFor();
    assert.equal(await saved(id), { "s4-prod": { SALES: { Customers: ["list"], SalesOrders: ["get"] } } });
  });

  test("a toggle changes only its own operation: existing invoke grants survive editing other rows, and are saved unchanged", async () => {
    const permissions = {
      "s4-prod": {
        SALES: {
          Customers: ["get", "invoke"],
          "Sales.GetTotal": ["invoke"],
          // A grant the catalog does not know: shown, flagged, kept.
          "Sales.Retired": ["invoke"],
        },
        // No catalog for '*': the operation's entry is still an operation's row.
        "*": { "Common.Ping": ["invoke"], Currencies: ["list"] },
      },
    };
    const { id, form } = await openEditor("keeper", permissions);
    const customers = form.getByRole("group", { name: "Entity set Customers in SALES of s4-prod" });
    await customers.getByText("Also granted, kept as it is: invoke.").waitFor();
    await form.getByRole("group", { name: "Operation Sales.Retired in SALES of s4-prod" }).getByText("Not in $metadata: SALES has no function or action named Sales.Retired.").waitFor();
    assert.ok(await form.getByRole("group", { name: "Operation Common.Ping in * of s4-prod" }).getByLabel("invoke").isChecked());
    assert.ok(await form.getByRole("group", { name: "Operation Sales.GetTotal in SALES of s4-prod" }).getByLabel("invoke").isChecked());
    // Edit other rows: an entity set's operations, another operation, an entity set of '*'.
    await customers.getByLabel("list").check();
    await customers.getByLabel("get").uncheck();
    await form.getByRole("group", { name: "Operation Search in SALES of s4-prod" }).getByLabel("invoke").check();
    await form.getByRole("group", { name: "Entity set Currencies in * of s4-prod" }).getByLabel("get").check();
    const expected = {
      "s4-prod": {
        SALES: { Customers: ["list", "invoke"], "Sales.GetTotal": ["invoke"], "Sales.Retired": ["invoke"], Search: ["invoke"] },
        "*": { "Common.Ping": ["invoke"], Currencies: ["list", "get"] },
      },
    };
    assert.equal(JSON.parse(await form.getByLabel("Permissions as JSON").inputValue()), expected);
    await form.getByText("In sync with the tree.").waitFor();
    await form.getByRole("button", { name: "Save changes" }).click();
    await ctx.page.getByRole("status").getByText("Key keeper saved.").waitFor();
    assert.equal(await saved(id), expected);
  });

  test("drafts are checked as the server checks them: invoke on '*' is refused in the JSON view with the server's words, and by the controls", async () => {
    const { id, form } = await openEditor("checker", { "s4-prod": { SALES: { Customers: ["list"] } } });
    const json = form.getByLabel("Permissions as JSON");
    const wild = { "s4-prod": { SALES: { Customers: ["list"], "*": ["list", "invoke"] } } };
    const server = await admin("PATCH", `/admin/api-keys/${id}`, { permissions: wild });
    assert.is(server.status, 400);
    const reason = "'invoke' must name the operation: '*' never includes functions or actions";
    assert.equal(server.body.error.details, [{ field: "permissions.s4-prod.SALES.*", message: reason }]);
    await ctx.page.getByLabel("OData URL").fill("/odata/s4-prod/SALES/Customers");
    await ctx.page.getByText("With the saved permissions:", { exact: true }).waitFor();
    await json.fill(JSON.stringify(wild));
    await form.getByText(`s4-prod.SALES.*: ${reason} (the tree keeps the last valid permissions; fix the JSON to save)`).waitFor();
    assert.is(await json.getAttribute("aria-invalid"), "true");
    // Saving now would save the tree's last valid permissions, not what is shown: Save is disabled.
    const saveButton = form.getByRole("button", { name: "Save changes" });
    assert.ok(await saveButton.isDisabled(), "Save is disabled while the JSON is invalid");
    await json.fill('{ "s4-prod": { "SALES": { "Customers": ["list"], } } }');
    await form.getByText(/\(the tree keeps the last valid permissions; fix the JSON to save\)$/).waitFor();
    assert.ok(await saveButton.isDisabled(), "a trailing comma disables Save too");
    // Submitted all the same (Enter in a field of the form): refused with the reason, nothing sent.
    await form.evaluate((f) => (f as unknown as { requestSubmit(): void }).requestSubmit());
    await ctx.page.getByRole("alert").getByText(/^Fix the permissions JSON first: /).waitFor();
    assert.equal((await admin("GET", `/admin/api-keys/${id}`)).body.data.permissions, { "s4-prod": { SALES: { Customers: ["list"] } } }, "nothing was saved");
    await json.fill(JSON.stringify(wild));
    // Explain is not sent an invalid draft.
    await ctx.page.getByText(/^Your unsaved permissions are invalid, so they cannot be explained: s4-prod\.SALES\.\*: 'invoke' must name the operation/).waitFor();
    await json.fill(JSON.stringify({ "s4-prod": { SALES: { Customers: ["list"] } } }));
    await form.getByText("In sync with the tree.").waitFor();
    // The controls: no operation named '*', and a function is not an entity set.
    await form.getByLabel("Add operation to SALES on s4-prod").fill("*");
    await form.getByRole("button", { name: "Add operation" }).click();
    await form.getByRole("alert").getByText("'*' never includes functions or actions: name the operation.").waitFor();
    await form.getByLabel("Add entity set to SALES on s4-prod").fill("Search");
    await form.getByRole("button", { name: "Add entity set" }).click();
    await form.getByRole("alert").getByText("Search is a function in $metadata, not an entity set: grant it under Operations (invoke).").waitFor();
    assert.equal(JSON.parse(await json.inputValue()), { "s4-prod": { SALES: { Customers: ["list"] } } });
    // A name typed for an operation the catalog lacks is granted invoke and flagged.
    await form.getByLabel("Add operation to SALES on s4-prod").fill("Sales.Later");
    await form.getByLabel("Add operation to SALES on s4-prod").press("Enter");
    await form.getByText("Not in $metadata: SALES has no function or action named Sales.Later.").waitFor();
    assert.equal(JSON.parse(await json.inputValue()), { "s4-prod": { SALES: { Customers: ["list"], "Sales.Later": ["invoke"] } } });
    assert.is(await form.getByText("'*' never includes functions or actions: name the operation.").count(), 0, "an accepted add clears its refusal");
    await assertAccessible(ctx.page, "permission editor refusals");
  });
}

test.run();
