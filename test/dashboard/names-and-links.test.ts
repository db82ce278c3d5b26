/**
 * Names beside ids, and ids as links, in a real browser against a real
 * erplink: a log entry names its key and instance and links to the key's
 * page, to the keys naming the instance and to Explain filled in with the
 * request; a key's page links to its log entries; the logs' key picker
 * filters by a key found by its name; revoked keys are listed only on
 * request, marked, and read-only; an instance's deletion says how many keys
 * name it. axe-core on each screen. Skipped with one line when no Chromium
 * is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: names and links");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  systemId: string;
  instanceId: string;
  invoice: { id: string; key: string };
  reporting: { id: string; key: string };
  old: { id: string; key: string };
  requestId: string;
}
const ctx = {} as Ctx;

const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

async function created(path: string, body: unknown): Promise<any> {
  const res = await admin("POST", path, body);
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** Waits until the request log has an entry matching the query (writes are batched about every second). */
async function logged(query: string): Promise<any[]> {
  for (let i = 0; i < 50; i++) {
    const res = await admin("GET", `/admin/logs?${query}`);
    if (res.body.data.length > 0) return res.body.data;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`nothing logged for ${query}`);
}

if (browserAvailable("dashboard names and links suite")) {
  test.before(async () => {
    try {
      ctx.erplink = await startErplink();
      const system = await created("/admin/systems", { name: "S/4 production" });
      ctx.systemId = system.id;
      // A back end nobody listens on: requests are logged under the instance, answered 502.
      const instance = await created(`/admin/systems/${system.id}/instances`, { name: "s4-prod", base_url: "http://127.0.0.1:9/" });
      ctx.instanceId = instance.id;
      const grant = { "s4-prod": { API_BP: { A_BusinessPartner: ["list"] } } };
      ctx.invoice = await created("/admin/api-keys", { name: "invoice app", permissions: grant });
      ctx.reporting = await created("/admin/api-keys", { name: "reporting", permissions: grant });
      ctx.old = await created("/admin/api-keys", { name: "old app", permissions: {} });
      assert.is((await admin("DELETE", `/admin/api-keys/${ctx.old.id}`)).status, 200);
      const data = await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/API_BP/A_BusinessPartner?$top=2`, { headers: { authorization: `Bearer ${ctx.invoice.key}` } });
      ctx.requestId = data.headers.get("x-request-id")!;
      await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/API_BP/A_BusinessPartner`, { headers: { authorization: `Bearer ${ctx.old.key}` } });
      await logged(`request_id=${ctx.requestId}`);
      await logged(`api_key_id=${ctx.old.id}`);

      ctx.browser = await launchBrowser();
      ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
      ctx.page = await ctx.context.newPage();
      await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/logs`);
      await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
      await ctx.page.getByRole("button", { name: "Sign in" }).click();
      await ctx.page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
    } catch (err) {
      console.error(err);
      throw err;
    }
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
  });

  test("a log entry names its key and instance beside their ids; the revoked key's refused request is attributed to it", async () => {
    const { page } = ctx;
    const row = page.getByRole("row").filter({ has: page.getByRole("button", { name: new RegExp(`\\(${ctx.requestId}\\)$`) }) });
    await row.getByRole("link", { name: `invoice app (${ctx.invoice.id})` }).waitFor();
    assert.is(await row.getByRole("link", { name: `s4-prod (${ctx.instanceId})` }).count(), 1);
    const revokedRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: `old app (${ctx.old.id}) revoked` }) });
    await revokedRow.first().waitFor();
    assert.match((await revokedRow.first().textContent())!, /401 UNAUTHORIZED/);
    await assertAccessible(page, "logs with names");
  });

  test("the key picker finds a key by name and filters the log by its id", async () => {
    const { page } = ctx;
    await page.getByLabel("Search keys").fill("reporting");
    assert.is(await page.getByLabel("API key", { exact: true }).inputValue(), ctx.reporting.id);
    await page.getByLabel("Search keys").fill("invoice");
    assert.is(await page.getByLabel("API key", { exact: true }).inputValue(), ctx.invoice.id);
    // Revoked keys are among the choices, marked.
    await page.getByLabel("Search keys").fill("");
    const labels = await page.getByLabel("API key", { exact: true }).locator("option").allTextContents();
    assert.ok(labels.includes(`old app (${ctx.old.id}) revoked`), JSON.stringify(labels));
    assert.ok(labels.includes("master key (master)"), JSON.stringify(labels));
    await page.getByLabel("API key", { exact: true }).selectOption(ctx.invoice.id);
    await page.getByLabel("Instance", { exact: true }).selectOption("s4-prod");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL((u) => u.searchParams.get("api_key_id") === ctx.invoice.id && u.searchParams.get("instance") === "s4-prod");
    await page.getByRole("table").getByRole("link", { name: `invoice app (${ctx.invoice.id})` }).first().waitFor();
    const keys = await page.getByRole("table").getByRole("link", { name: / \(key_/ }).allTextContents();
    assert.ok(keys.length >= 1 && keys.every((k) => k === `invoice app (${ctx.invoice.id})`), JSON.stringify(keys));
  });

  test("a log entry's links: Explain filled in with its request, its key's page, and back to the key's log entries", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: new RegExp(`\\(${ctx.requestId}\\)$`) }).click();
    await page.getByRole("link", { name: "Explain this request with its key" }).click();
    await page.waitForURL((u) => u.pathname === `/dashboard/api-keys/${ctx.invoice.id}`);
    await page.getByRole("heading", { name: "Edit key invoice app" }).waitFor();
    assert.is(await page.getByLabel("OData URL").inputValue(), "/odata/s4-prod/API_BP/A_BusinessPartner?$top=2");
    assert.is(await page.getByLabel("Method", { exact: true }).inputValue(), "GET");
    // Explained at once: the back end cannot be reached for its $metadata.
    await page.locator(".explain-result, .explain .error").first().waitFor();
    await page.getByRole("heading", { name: "Usage of invoice app" }).waitFor();
    await assertAccessible(page, "key page with usage");
    await page.getByRole("link", { name: "Log entries of invoice app" }).click();
    await page.waitForURL((u) => u.pathname === "/dashboard/logs" && u.search === `?api_key_id=${ctx.invoice.id}`);
    await page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
    assert.is(await page.getByLabel("API key", { exact: true }).inputValue(), ctx.invoice.id);
  });

  test("an instance links to the keys that name it", async () => {
    const { page } = ctx;
    await page.getByRole("table").getByRole("link", { name: `s4-prod (${ctx.instanceId})` }).first().click();
    await page.waitForURL((u) => u.pathname === "/dashboard/api-keys" && u.searchParams.get("instance") === "s4-prod");
    await page.getByText("Keys whose permissions name instance s4-prod.").waitFor();
    await page.getByRole("table").getByText("2 keys").waitFor();
    assert.equal(await page.getByRole("rowheader").allTextContents(), ["invoice app", "reporting"]);
    await page.getByRole("link", { name: "Show every key" }).click();
    await page.waitForURL((u) => u.search === "");
  });

  test("revoked keys are hidden until asked for, then marked with when, and read-only", async () => {
    const { page } = ctx;
    await page.getByRole("table").getByText("2 keys").waitFor();
    assert.is(await page.getByRole("row", { name: /old app/ }).count(), 0);
    await page.getByLabel("Show revoked keys (1)").check();
    await page.getByRole("table").getByText("3 keys").waitFor();
    const row = page.getByRole("row", { name: /old app/ });
    assert.match((await row.getByRole("rowheader").textContent())!, /^old app revoked \d/);
    assert.is(await row.getByRole("button", { name: "Edit key old app" }).count(), 0);
    assert.is(await row.getByRole("button", { name: "Revoke key old app" }).count(), 0);
    await assertAccessible(page, "keys with revoked");
    await row.getByRole("button", { name: "View revoked key old app" }).click();
    await page.waitForURL((u) => u.pathname === `/dashboard/api-keys/${ctx.old.id}`);
    await page.getByRole("heading", { name: "Revoked key old app" }).waitFor();
    assert.is(await page.getByRole("button", { name: "Save changes" }).count(), 0);
    assert.is(await page.locator("#edit-key-name").count(), 0, "no name field to change");
    // Opened by its address (a reload), it is still shown read-only.
    await page.reload();
    await page.getByRole("heading", { name: "Revoked key old app" }).waitFor();
    await page.getByText(/It no longer works and cannot be changed/).waitFor();
  });

  test("deleting an instance says how many keys name it, and which", async () => {
    const { page } = ctx;
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/systems?system=${ctx.systemId}`);
    await page.getByRole("heading", { name: "Instances of S/4 production" }).waitFor();
    await page.getByRole("button", { name: "Delete instance s4-prod" }).click();
    const ask = page.getByRole("dialog", { name: "Delete instance s4-prod?" });
    assert.is(await ask.getByRole("paragraph").textContent(), "2 keys name this instance: invoice app, reporting. They stop reaching it. This cannot be undone.");
    await ask.getByRole("button", { name: "Cancel" }).click();
    await ask.waitFor({ state: "detached" });
    assert.is((await admin("GET", `/admin/instances/${ctx.instanceId}`)).status, 200, "declined: nothing deleted");
  });
}

test.run();
