/**
 * The dashboard's API keys screen in a real browser: create a data key with
 * permissions picked from the catalog of a loopback OData back end (its
 * `$metadata`), the secret shown once and never again, the key working on
 * the data path, Explain giving the data path's own 403 message (for the
 * saved permissions and for an unsaved draft), edit and
 * revoke with confirmation; axe-core and a screenshot at two widths.
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

const test = suite("dashboard: API keys");

interface Ctx {
  erplink: RunningErplink;
  backend: Server;
  backendUrl: string;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  secret: string;
  keyId: string;
}
const ctx = {} as Ctx;

/** The master key's own call to the admin API. */
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

/** A tiny OData V4 back end on loopback: its $metadata, and an empty collection for anything else. */
function startBackend(): Promise<Server> {
  const server = createServer((req, res) => {
    if ((req.url ?? "").split("?")[0]!.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0" });
      res.end(V4_METADATA);
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" });
    res.end(JSON.stringify({ "@odata.context": "$metadata#Customers", value: [] }));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

async function firstInstanceId(): Promise<string> {
  const systems = await admin("GET", "/admin/systems");
  const instances = await admin("GET", `/admin/systems/${systems.body.data[0].id}/instances`);
  return instances.body.data[0].id;
}

if (browserAvailable("dashboard API keys suite")) {
  test.before(async () => {
    ctx.backend = await startBackend();
    ctx.backendUrl = `http://127.0.0.1:${(ctx.backend.address() as AddressInfo).port}`;
    ctx.erplink = await startErplink();
    const sys = await admin("POST", "/admin/systems", { name: "s4" });
    assert.is(sys.status, 201);
    const ins = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
      name: "s4-prod",
      environment: "production",
      base_url: `${ctx.backendUrl}/`,
      services: { SALES: { path: "sales" } },
    });
    assert.is(ins.status, 201, JSON.stringify(ins.body));
    ctx.browser = await launchBrowser();
    ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ctx.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: ctx.erplink.baseUrl });
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

  test("an empty list says so", async () => {
    await ctx.page.getByText("No API keys yet").waitFor();
  });

  test("create a data key with permissions picked from the catalog: the secret is shown once, with copy and curl", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: "New API key" }).click();
    const form = page.getByRole("form", { name: "New API key" });
    await form.getByLabel("Name").fill("invoice app");
    await form.getByLabel("Requests per minute").fill("120");
    // A name that is no instance is warned about; the existing one is offered.
    await form.getByLabel("Add instance").fill("s4-qa");
    await form.getByRole("button", { name: "Add instance" }).click();
    await form.getByText("No instance is named s4-qa").waitFor();
    await form.getByRole("button", { name: "Remove instance s4-qa" }).click();
    assert.equal(await form.locator("#new-perm-instances option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value)), ["s4-prod"]);
    await form.getByLabel("Add instance").fill("s4-prod");
    await form.getByLabel("Add instance").press("Enter");
    assert.equal(await form.locator("datalist[id^='new-perm-services'] option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value)), ["*", "SALES"]);
    await form.getByLabel("Add service to s4-prod").fill("SALES");
    await form.getByRole("button", { name: "Add service" }).click();
    // The catalog offers the service's entity sets from its $metadata.
    const instanceId = await firstInstanceId();
    const catalog = await admin("GET", `/admin/instances/${instanceId}/services/SALES/catalog`);
    assert.is(catalog.status, 200);
    const sets: string[] = catalog.body.data.entity_sets.map((e: any) => e.name);
    assert.ok(sets.includes("Customers") && !sets.includes("Suppliers"), sets.join());
    await form.getByText(`${sets.length} entity sets in $metadata`).waitFor();
    const offered = await form.locator("datalist[id^='new-perm-sets'] option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
    assert.equal(offered, ["*", ...sets]);
    await form.getByLabel("Add entity set to SALES on s4-prod").fill("Customers");
    await form.getByRole("button", { name: "Add entity set" }).click();
    // Free text is possible, and flagged.
    await form.getByLabel("Add entity set to SALES on s4-prod").fill("Suppliers");
    await form.getByRole("button", { name: "Add entity set" }).click();
    await form.getByText("Not in $metadata: SALES has no entity set named Suppliers.").waitFor();
    await form.getByRole("button", { name: "Remove entity set Suppliers of SALES on s4-prod" }).click();
    // Customers: list and get by default; the toggles change the JSON view.
    const customers = form.getByRole("group", { name: "Entity set Customers in SALES of s4-prod" });
    assert.ok(await customers.getByLabel("list").isChecked());
    assert.ok(await customers.getByLabel("get").isChecked());
    await customers.getByLabel("get").uncheck();
    const json = form.getByLabel("Permissions as JSON");
    assert.equal(JSON.parse(await json.inputValue()), { "s4-prod": { SALES: { Customers: ["list"] } } });
    // And the JSON view changes the tree.
    await json.fill(JSON.stringify({ "s4-prod": { SALES: { Customers: ["list"], Products: ["get"] } } }));
    await form.getByRole("group", { name: "Entity set Products in SALES of s4-prod" }).waitFor();
    await json.fill("{ not json");
    await form.getByText("Not valid JSON").waitFor();
    await form.getByRole("group", { name: "Entity set Products in SALES of s4-prod" }).waitFor();
    await json.fill(JSON.stringify({ "s4-prod": { SALES: { Customers: ["list"] }, "*": { "*": ["get"] } } }));
    await form.getByText("* grants these entity sets in every service of s4-prod").waitFor();
    await form.getByText("* grants every entity set of this service").waitFor();
    await form.getByRole("button", { name: "Remove service * of s4-prod" }).click();
    await assertAccessible(page, "new key form");
    await screenshot(page, "api-keys-create");

    await form.getByRole("button", { name: "Create key" }).click();
    const dialog = page.getByRole("dialog", { name: "Key invoice app created" });
    await dialog.waitFor();
    const secret = await dialog.getByLabel("Secret").inputValue();
    assert.match(secret, /^erpl_[A-Za-z0-9]{49}$/);
    ctx.secret = secret;
    const stored = await admin("GET", "/admin/api-keys");
    assert.is(stored.body.data.length, 1);
    const key = stored.body.data[0];
    ctx.keyId = key.id;
    assert.equal(key.permissions, { "s4-prod": { SALES: { Customers: ["list"] } } });
    assert.equal(key.rate_limits, { per_minute: 120 });
    assert.is(key.prefix, secret.slice(0, 12));
    await dialog.getByRole("button", { name: "Copy secret" }).click();
    await dialog.getByRole("status").getByText("Secret copied to the clipboard.").waitFor();
    assert.is(await page.evaluate("navigator.clipboard.readText()"), secret);
    const curl = await dialog.getByLabel("Try it with curl").inputValue();
    assert.is(curl, `curl -s -H 'Authorization: Bearer ${secret}' '${ctx.erplink.baseUrl}/odata/s4-prod/SALES/Customers?$top=5'`);
    await assertAccessible(page, "secret dialog");
    await screenshot(page, "api-keys-secret");

    // Escape asks before closing, in the page's own dialog; declining keeps the secret on screen.
    await page.keyboard.press("Escape");
    const ask = page.getByRole("dialog", { name: "Close without the secret?" });
    await ask.waitFor();
    assert.is(await ask.getByRole("paragraph").textContent(), "The secret cannot be shown again: make sure you have stored it.");
    await ask.getByRole("button", { name: "Keep it open" }).click();
    await ask.waitFor({ state: "detached" });
    assert.ok(await dialog.isVisible());
    await dialog.getByRole("button", { name: "Close" }).click();
    await ask.getByRole("button", { name: "Close, I stored it" }).click();
    await dialog.waitFor({ state: "hidden" });
    await page.getByRole("row", { name: /invoice app/ }).waitFor();
    assert.is(await page.getByText(secret).count(), 0);
    assert.ok(!(await page.content()).includes(secret));
  });

  test("the secret is never shown again (reload), and the key works on the data path", async () => {
    const { page } = ctx;
    await page.reload();
    const row = page.getByRole("row", { name: /invoice app/ });
    await row.waitFor();
    assert.ok(!(await page.content()).includes(ctx.secret));
    assert.ok((await row.textContent())!.includes(`${ctx.secret.slice(0, 12)}…`));
    const res = await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/SALES/Customers`, { headers: { authorization: `Bearer ${ctx.secret}` } });
    assert.is(res.status, 200);
  });

  test("Explain shows the data path's own 403 message and each access", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: "Edit key invoice app" }).click();
    await page.getByRole("heading", { name: "Edit key invoice app" }).waitFor();
    const real = await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/SALES/Customers('C1')`, { headers: { authorization: `Bearer ${ctx.secret}` } });
    assert.is(real.status, 403);
    const realBody = (await real.json()) as any;
    assert.is(realBody.error.message, "API key lacks permission 'get' for entity 'Customers'");
    await page.getByLabel("OData URL").fill("/odata/s4-prod/SALES/Customers('C1')");
    const decision = page.getByText(/^Denied with 403 FORBIDDEN/);
    await decision.waitFor();
    assert.is(await decision.textContent(), `Denied with 403 FORBIDDEN: ${realBody.error.message} (step: OPERATION)`);
    // Nothing edited: the saved permissions are explained, and the panel says so.
    await page.getByText("With the saved permissions:", { exact: true }).waitFor();
    await page.getByText(/now \(nothing is forwarded or counted\), with the saved permissions\.$/).waitFor();
    const access = page.getByRole("row", { name: /Customers get/ });
    assert.ok((await access.textContent())!.includes(`denied: ${realBody.error.message}`));
    // Allowed: the list, live as the URL changes.
    await page.getByLabel("OData URL").fill("/odata/s4-prod/SALES/Customers?$top=5");
    await page.getByText(/^Allowed: forwarded to http:\/\/127\.0\.0\.1:\d+\/sales\/Customers/).waitFor();
    await assertAccessible(page, "edit key with explain");
    await screenshot(page, "api-keys-edit");
    await page.setViewportSize({ width: 800, height: 900 });
    await assertAccessible(page, "edit key, narrow");
    await screenshot(page, "api-keys-narrow");
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  test("edit name, limits, expiry and permissions; a key expiring within 7 days is highlighted", async () => {
    const { page } = ctx;
    const form = page.getByRole("form", { name: "Edit key invoice app" });
    await form.getByLabel("Name").fill("invoice app v2");
    await form.getByLabel("Requests per minute").fill("");
    await form.getByLabel("Requests per day").fill("5000");
    const soon = new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString().slice(0, 16);
    await form.getByLabel("Expires at (UTC)").fill(soon);
    await form.getByRole("group", { name: "Entity set Customers in SALES of s4-prod" }).getByLabel("get").check();
    // Explain explains the unsaved permissions: the get they add is allowed before the save.
    await page.getByLabel("OData URL").fill("/odata/s4-prod/SALES/Customers('C1')");
    await page.getByText("With your unsaved changes:", { exact: true }).waitFor();
    await page.getByText(/^Allowed: forwarded to/).waitFor();
    await page.getByText(/with your unsaved changes to its permissions \(nothing is saved\)\.$/).waitFor();
    assert.equal((await admin("GET", `/admin/api-keys/${ctx.keyId}`)).body.data.permissions, { "s4-prod": { SALES: { Customers: ["list"] } } }, "nothing saved yet");
    await form.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("status").getByText("Key invoice app v2 saved.").waitFor();
    const key = (await admin("GET", `/admin/api-keys/${ctx.keyId}`)).body.data;
    assert.is(key.name, "invoice app v2");
    assert.equal(key.rate_limits, { per_day: 5000 });
    assert.is(key.expires_at, `${soon}:00Z`);
    assert.equal(key.permissions, { "s4-prod": { SALES: { Customers: ["list", "get"] } } });
    const row = page.getByRole("row", { name: /invoice app v2/ });
    assert.is(await row.getAttribute("class"), "expiring");
    assert.ok((await row.textContent())!.includes("(expires in 3 days)"));
    // The saved permissions now allow the get: Explain follows by itself.
    await page.getByText("With the saved permissions:", { exact: true }).waitFor();
    await page.getByText(/^Allowed: forwarded to/).waitFor();
  });

  test("Explain explains the unsaved draft: an operation toggled off is denied before the save and after it; an invalid JSON draft is said so and not sent", async () => {
    const { page } = ctx;
    const form = page.getByRole("form", { name: "Edit key invoice app v2" });
    const explains: string[] = [];
    const onRequest = (req: { url(): string; postData(): string | null }) => {
      if (req.url().endsWith("/explain")) explains.push(req.postData() ?? "");
    };
    page.on("request", onRequest);
    try {
      const explained = page.waitForResponse((r) => r.url().endsWith("/explain"));
      await page.getByLabel("OData URL").fill("/odata/s4-prod/SALES/Customers?$top=5");
      await explained;
      await page.getByText("With the saved permissions:", { exact: true }).waitFor();
      await page.getByText(/^Allowed: forwarded to http:\/\/127\.0\.0\.1:\d+\/sales\/Customers\?\$top=5/).waitFor();
      assert.ok(explains.length > 0 && explains.every((b) => JSON.parse(b).permissions === undefined), "no draft is sent while nothing is edited");
      // Toggle list off without saving: the draft is explained (400 ms after the change), and denied.
      await form.getByRole("group", { name: "Entity set Customers in SALES of s4-prod" }).getByLabel("list").uncheck();
      const message = "API key lacks permission 'list' for entity 'Customers'";
      await page.getByText("With your unsaved changes:", { exact: true }).waitFor();
      const decision = page.getByText(/^Denied with 403 FORBIDDEN/);
      await decision.waitFor();
      assert.is(await decision.textContent(), `Denied with 403 FORBIDDEN: ${message} (step: OPERATION)`);
      assert.ok((await page.getByRole("row", { name: /Customers list/ }).textContent())!.includes(`denied: ${message}`));
      assert.equal(JSON.parse(explains.at(-1)!).permissions, { "s4-prod": { SALES: { Customers: ["get"] } } }, "the draft was sent");
      // The data path itself still lists with the saved key.
      assert.is((await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/SALES/Customers?$top=5`, { headers: { authorization: `Bearer ${ctx.secret}` } })).status, 200);

      // An invalid JSON draft: the panel says so and calls nothing.
      const json = form.getByLabel("Permissions as JSON");
      await json.fill('{ "s4-prod": ');
      await page.getByText(/^Your unsaved permissions are invalid, so they cannot be explained: Not valid JSON/).waitFor();
      const sent = explains.length;
      await page.waitForTimeout(900);
      assert.is(explains.length, sent, "no call with an invalid draft");
      assert.is(await page.getByText(/^Denied with|^Allowed/).count(), 0, "no stale decision is shown");
      await json.fill(JSON.stringify({ "s4-prod": { SALES: { Customers: ["get"] } } }));
      await decision.waitFor();

      // Saved: the same denial, now for the saved key.
      await form.getByRole("button", { name: "Save changes" }).click();
      await page.getByRole("status").getByText("Key invoice app v2 saved.").waitFor();
      await page.getByText("With the saved permissions:", { exact: true }).waitFor();
      assert.is(await decision.textContent(), `Denied with 403 FORBIDDEN: ${message} (step: OPERATION)`);
      assert.equal(JSON.parse(explains.at(-1)!).permissions, undefined, "the saved permissions are explained");
      assert.equal((await admin("GET", `/admin/api-keys/${ctx.keyId}`)).body.data.permissions, { "s4-prod": { SALES: { Customers: ["get"] } } });
      const real = await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/SALES/Customers?$top=5`, { headers: { authorization: `Bearer ${ctx.secret}` } });
      assert.equal([real.status, ((await real.json()) as any).error.message], [403, message]);
    } finally {
      page.off("request", onRequest);
    }
  });

  test("the editor has its own address: a reload reopens it, Back closes it, Forward reopens it, an unknown id is explained", async () => {
    const { page } = ctx;
    assert.is(new URL(page.url()).pathname, `/dashboard/api-keys/${ctx.keyId}`);
    await page.reload();
    await page.getByRole("heading", { name: "Edit key invoice app v2" }).waitFor();
    assert.is(await page.getByRole("form", { name: "Edit key invoice app v2" }).getByLabel("Requests per day").inputValue(), "5000");
    await page.goBack();
    await page.getByRole("heading", { name: "Edit key invoice app v2" }).waitFor({ state: "detached" });
    assert.is(new URL(page.url()).pathname, "/dashboard/api-keys");
    await page.goForward();
    await page.getByRole("heading", { name: "Edit key invoice app v2" }).waitFor();
    await page.getByRole("button", { name: "Close editor" }).click();
    await page.waitForURL((u) => u.pathname === "/dashboard/api-keys");

    const unknown = "key_00000000000000000000000000";
    const expected = await admin("GET", `/admin/api-keys/${unknown}`);
    assert.is(expected.status, 404);
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys/${unknown}`);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.ok((await alert.textContent())!.startsWith(`${expected.body.error.message} (request req_`), (await alert.textContent())!);
    assert.is(await page.getByRole("heading", { name: /^Edit key/ }).count(), 0);
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys`);
    await page.getByRole("row", { name: /invoice app v2/ }).waitFor();
  });

  test("two tabs on one key: the stale tab's save is refused and says what changed; overwrite sends only its own field; reload shows the other's", async () => {
    const created = await admin("POST", "/admin/api-keys", { name: "two tabs", permissions: { "s4-prod": { SALES: { Customers: ["list", "get"] } } }, rate_limits: { per_day: 100 } });
    assert.is(created.status, 201);
    const id = created.body.data.id as string;
    const patches: { ifMatch: string | undefined; body: unknown }[] = [];
    const [a, b] = [await ctx.context.newPage(), await ctx.context.newPage()];
    try {
      for (const p of [a, b]) {
        p.setDefaultTimeout(8000);
        await p.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys/${id}`);
        await p.getByRole("heading", { name: "Edit key two tabs" }).waitFor();
      }
      b.on("request", (r) => {
        if (r.method() === "PATCH") patches.push({ ifMatch: r.headers()["if-match"], body: r.postDataJSON() });
      });
      // Tab A lowers the limit and takes a grant away.
      const formA = a.getByRole("form", { name: "Edit key two tabs" });
      await formA.getByLabel("Requests per day").fill("50");
      await formA.getByRole("group", { name: "Entity set Customers in SALES of s4-prod" }).getByLabel("get").uncheck();
      await formA.getByRole("button", { name: "Save changes" }).click();
      await a.getByRole("status").getByText("Key two tabs saved.").waitFor();
      const afterA = (await admin("GET", `/admin/api-keys/${id}`)).body.data;
      assert.equal([afterA.rate_limits, afterA.permissions], [{ per_day: 50 }, { "s4-prod": { SALES: { Customers: ["list"] } } }]);

      // Tab B, still showing the old key, renames it: refused, nothing written, and told what changed.
      const formB = b.getByRole("form", { name: "Edit key two tabs" });
      await formB.getByLabel("Name").fill("two tabs, renamed");
      await formB.getByRole("button", { name: "Save changes" }).click();
      const conflict = b.getByRole("alert").filter({ hasText: "Not saved" });
      await conflict.waitFor();
      assert.is(
        (await conflict.locator("#key-conflict-title").textContent())?.trim(),
        "Not saved: this key was changed since you opened it (its permissions, rate limits).",
      );
      assert.equal(patches.at(-1), { ifMatch: created.body.data.etag, body: { name: "two tabs, renamed" } }, "only the changed field, against the version it opened");
      assert.equal((await admin("GET", `/admin/api-keys/${id}`)).body.data, afterA, "the stale save changed nothing");

      // Overwrite: only the name is sent, so A's limit and grant stay.
      await conflict.getByRole("button", { name: "Overwrite with my changes" }).click();
      await b.getByRole("status").getByText("Key two tabs, renamed saved.").waitFor();
      assert.equal(patches.at(-1), { ifMatch: afterA.etag, body: { name: "two tabs, renamed" } });
      const afterB = (await admin("GET", `/admin/api-keys/${id}`)).body.data;
      assert.equal([afterB.name, afterB.rate_limits, afterB.permissions], ["two tabs, renamed", { per_day: 50 }, { "s4-prod": { SALES: { Customers: ["list"] } } }]);

      // Tab A is stale now: its next save is refused too, and Reload shows the key as it is, its edit dropped.
      await formA.getByLabel("Requests per day").fill("75");
      await formA.getByRole("button", { name: "Save changes" }).click();
      const conflictA = a.getByRole("alert").filter({ hasText: "Not saved" });
      await conflictA.waitFor();
      assert.ok((await conflictA.textContent())!.includes("(its name)."));
      await conflictA.getByRole("button", { name: "Reload the key" }).click();
      await a.getByRole("heading", { name: "Edit key two tabs, renamed" }).waitFor();
      assert.is(await a.getByRole("form", { name: "Edit key two tabs, renamed" }).getByLabel("Requests per day").inputValue(), "50");
      assert.equal((await admin("GET", `/admin/api-keys/${id}`)).body.data.rate_limits, { per_day: 50 });
    } finally {
      await a.close();
      await b.close();
      await admin("DELETE", `/admin/api-keys/${id}`);
    }
  });

  test("search filters the list; revoke asks first and the key stops working", async () => {
    const { page } = ctx;
    assert.is((await admin("POST", "/admin/api-keys", { name: "ops", type: "admin" })).status, 201);
    await page.reload();
    await page.getByRole("row", { name: /ops/ }).waitFor();
    await page.getByLabel("Search keys").fill("invoice");
    await page.getByText("1 of 2 keys match “invoice”").waitFor();
    assert.is(await page.getByRole("row", { name: /ops/ }).count(), 0);
    await page.getByLabel("Search keys").fill("");

    await page.getByRole("button", { name: "Revoke key invoice app v2" }).click();
    const ask = page.getByRole("dialog", { name: "Revoke key invoice app v2?" });
    await ask.getByRole("button", { name: "Cancel" }).click();
    await ask.waitFor({ state: "detached" });
    await page.waitForTimeout(200);
    assert.is((await admin("GET", `/admin/api-keys/${ctx.keyId}`)).status, 200);
    await page.getByRole("button", { name: "Revoke key invoice app v2" }).click();
    assert.is(await ask.getByRole("paragraph").textContent(), `The key ${ctx.secret.slice(0, 12)}… stops working at once; this cannot be undone.`);
    await ask.getByRole("button", { name: "Revoke key" }).click();
    await page.getByRole("status").getByText("Key invoice app v2 revoked.").waitFor();
    const res = await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/SALES/Customers`, { headers: { authorization: `Bearer ${ctx.secret}` } });
    assert.is(res.status, 401);
    assert.is(await page.getByRole("row", { name: /invoice app v2/ }).count(), 0);
  });
}

test.run();
