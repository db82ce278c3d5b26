/**
 * The dashboard's Logs, Audit and Sessions screens in a real browser:
 * changes made through the API (a system, a key, its permissions) appear in
 * Audit with readable diffs and in Logs with their details; a filter set
 * lives in the URL and survives a reload; sessions are revoked with
 * confirmation, and revoking the current one returns to sign-in. axe-core
 * and a screenshot per screen. Skipped with one line when no Chromium is
 * installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser, screenshot } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: logs, audit, sessions");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  keyId: string;
  secret: string;
}
const ctx = {} as Ctx;

/** The master key's own call to the admin API. */
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

/** Waits until the request log has written an entry matching the query (writes are batched about every second). */
async function logged(query: string): Promise<any[]> {
  for (let i = 0; i < 50; i++) {
    const res = await admin("GET", `/admin/logs?${query}`);
    if (res.body.data.length > 0) return res.body.data;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`nothing logged for ${query}`);
}

if (browserAvailable("dashboard logs/audit/sessions suite")) {
  test.before(async () => {
    ctx.erplink = await startErplink();
    ctx.browser = await launchBrowser();
    ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
    ctx.page = await ctx.context.newPage();
    await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
    await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
    await ctx.page.getByRole("button", { name: "Sign in" }).click();
    await ctx.page.getByRole("navigation", { name: "Main" }).waitFor();

    // Changes made through the API, as a script would.
    assert.is((await admin("POST", "/admin/systems", { name: "s4-prod", description: "Production" })).status, 201);
    const key = await admin("POST", "/admin/api-keys", {
      name: "invoice app",
      permissions: { prod: { API_BP: { A_BusinessPartner: ["list"] } } },
    });
    assert.is(key.status, 201, JSON.stringify(key.body));
    ctx.keyId = key.body.data.id;
    ctx.secret = key.body.data.key;
    assert.match(ctx.secret, /^erpl_/);
    const patched = await admin("PATCH", `/admin/api-keys/${ctx.keyId}`, {
      permissions: { prod: { API_BP: { A_BusinessPartner: ["list", "get"] } }, qa: { "*": { "*": ["list"] } } },
    });
    assert.is(patched.status, 200, JSON.stringify(patched.body));
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
  });

  test("Audit shows the API's changes with readable diffs; secrets read [redacted]", async () => {
    const { page } = ctx;
    await page.getByRole("link", { name: "Audit" }).click();
    await page.getByRole("heading", { name: "Audit", level: 1 }).waitFor();
    assert.is(new URL(page.url()).pathname, "/dashboard/audit");

    const update = page.getByRole("list", { name: `Changes of ${ctx.keyId}` }).first();
    await page.getByRole("heading", { name: `update API key invoice app (${ctx.keyId})` }).waitFor();
    const lines = await page.getByRole("listitem").filter({ hasText: "permissions › " }).allTextContents();
    assert.ok(lines.includes("permissions › prod › API_BP › A_BusinessPartner: list → list, get"), JSON.stringify(lines));
    assert.ok(lines.includes("permissions › qa: (none) → {*: {*: list}}"), JSON.stringify(lines));
    assert.ok(await update.isVisible());
    // The creation lists the key's fields; its secret reads [redacted].
    await page.getByRole("heading", { name: `create API key invoice app (${ctx.keyId})` }).waitFor();
    const created = await page.getByRole("list", { name: `Changes of ${ctx.keyId}` }).nth(1).textContent();
    assert.ok(created!.includes("key: (none) → [redacted]"), created!);
    assert.ok(!created!.includes(ctx.secret), created!);
    assert.ok(!(await page.content()).includes(ctx.secret));
    await page.getByRole("heading", { name: /^create system s4-prod \(sys_/ }).waitFor();
    await assertAccessible(page, "audit");
    await screenshot(page, "audit");
  });

  test("an audit filter set is put in the URL and survives a reload", async () => {
    const { page } = ctx;
    await page.getByLabel("Resource type").selectOption("api_key");
    await page.getByLabel("Action").selectOption("update");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/resource_type=api_key/);
    const url = new URL(page.url());
    assert.is(url.searchParams.get("resource_type"), "api_key");
    assert.is(url.searchParams.get("action"), "update");
    await page.reload();
    await page.getByRole("heading", { name: `update API key invoice app (${ctx.keyId})` }).waitFor();
    assert.is(await page.getByLabel("Resource type").inputValue(), "api_key");
    assert.is(await page.getByLabel("Action").inputValue(), "update");
    assert.is(await page.getByRole("heading", { name: /^create / }).count(), 0);
    assert.is(await page.getByRole("list", { name: "1 change, newest first" }).count(), 1);
  });

  test("audit paging: older changes on a second page, kept in the URL across a reload", async () => {
    const { page } = ctx;
    // 50 more systems: 51 system creations, one more than a page holds.
    for (let i = 0; i < 50; i++) assert.is((await admin("POST", "/admin/systems", { name: `bulk-${String(i).padStart(2, "0")}` })).status, 201);
    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.getByLabel("Resource type").selectOption("system");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.getByRole("list", { name: "50 changes, newest first" }).waitFor();
    await page.getByRole("heading", { name: /^create system / }).first().waitFor();
    await page.getByRole("listitem").filter({ hasText: "name: (none) → bulk-49" }).first().waitFor();
    await page.getByRole("button", { name: "Older changes" }).click();
    await page.getByRole("list", { name: "1 change, newest first" }).waitFor();
    assert.ok(new URL(page.url()).searchParams.get("page_token"));
    assert.is(new URL(page.url()).searchParams.get("resource_type"), "system");
    assert.ok((await page.getByRole("list", { name: "1 change, newest first" }).textContent())!.includes("name: (none) → s4-prod"));
    assert.is(await page.getByRole("button", { name: "Older changes" }).count(), 0);
    await page.reload();
    await page.getByRole("list", { name: "1 change, newest first" }).waitFor();
    // Back returns to the first page.
    await page.goBack();
    await page.getByRole("list", { name: "50 changes, newest first" }).waitFor();
    await page.getByRole("button", { name: "Older changes" }).click();
    await page.getByRole("button", { name: "Newest changes" }).click();
    await page.getByRole("list", { name: "50 changes, newest first" }).waitFor();
    assert.is(new URL(page.url()).searchParams.get("page_token"), null);
  });

  test("Logs: the PATCH is listed; filters (method, status class) survive a reload; the detail shows the entry", async () => {
    const { page } = ctx;
    const [entry] = await logged(`method=PATCH&status=2xx`);
    await page.getByRole("link", { name: "Logs" }).click();
    await page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
    assert.is(new URL(page.url()).search, "", "the nav link opens the unfiltered view");
    await page.getByLabel("Method", { exact: true }).selectOption("PATCH");
    await page.getByLabel("Status", { exact: true }).fill("2xx");
    await page.getByLabel("API key", { exact: true }).selectOption("master");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/method=PATCH/);
    await page.reload();
    const details = page.getByRole("button", { name: `Details of PATCH /admin/api-keys/${ctx.keyId} (${entry.request_id})` });
    await details.waitFor();
    assert.is(await page.getByLabel("Status", { exact: true }).inputValue(), "2xx");
    assert.is(await page.getByLabel("Method", { exact: true }).inputValue(), "PATCH");
    assert.is(await page.getByLabel("API key", { exact: true }).inputValue(), "master");
    assert.is(await page.getByRole("button", { name: /^Details of / }).count(), 1);

    await details.click();
    await page.getByRole("heading", { name: `Entry ${entry.id}` }).waitFor();
    assert.is(new URL(page.url()).searchParams.get("id"), entry.id);
    const text = (await page.getByRole("region", { name: `Entry ${entry.id}` }).textContent())!;
    for (const part of ["Request id", entry.request_id, "200", "Denial step", "(not denied)", "Upstream status", "(not forwarded)"]) {
      assert.ok(text.includes(part), `${part} in ${text}`);
    }
    // A reload keeps the opened entry (the URL holds it).
    await page.reload();
    await page.getByRole("heading", { name: `Entry ${entry.id}` }).waitFor();
    await assertAccessible(page, "logs");
    await screenshot(page, "logs");
    await page.getByRole("button", { name: "Close details" }).click();
    await page.getByRole("heading", { name: `Entry ${entry.id}` }).waitFor({ state: "detached" });
    assert.is(new URL(page.url()).searchParams.get("id"), null);
    assert.is(new URL(page.url()).searchParams.get("method"), "PATCH");

    // A status the server refuses: its 400 naming the parameter, in its words.
    await page.getByLabel("Status", { exact: true }).fill("6xx");
    await page.getByRole("button", { name: "Apply filters" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    const expected = await admin("GET", "/admin/logs?status=6xx");
    assert.is(expected.status, 400);
    const shown = (await alert.textContent()) ?? "";
    assert.ok(shown.startsWith(`${expected.body.error.message} (request req_`), shown);
    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.waitForURL((u) => u.search === "");
  });

  test("Sessions: another session is revoked after confirmation; declining revokes nothing", async () => {
    const { page } = ctx;
    const other = await admin("POST", "/admin/sessions", { label: "nightly export" });
    assert.is(other.status, 201);
    await page.getByRole("link", { name: "Sessions" }).click();
    await page.getByRole("heading", { name: "Sessions", level: 1 }).waitFor();
    const revokeOther = page.getByRole("button", { name: `Revoke session nightly export ${other.body.data.id}` });
    await revokeOther.waitFor();
    // The page finds its own session (through the request log) and marks it.
    await page.getByText("this session").waitFor();
    await assertAccessible(page, "sessions");
    await screenshot(page, "sessions");

    await revokeOther.click();
    const ask = page.getByRole("dialog", { name: `Revoke session nightly export (${other.body.data.id})?` });
    await ask.waitFor();
    await page.keyboard.press("Escape");
    await ask.waitFor({ state: "detached" });
    await page.waitForTimeout(200);
    assert.is((await admin("GET", "/admin/sessions")).body.data.length, 2);

    await revokeOther.click();
    assert.is(await ask.getByRole("paragraph").textContent(), "Whoever uses it is signed out at once.");
    await ask.getByRole("button", { name: "Revoke session" }).click();
    await page.getByRole("status").getByText(`Session nightly export (${other.body.data.id}) revoked.`).waitFor();
    const left = (await admin("GET", "/admin/sessions")).body.data;
    assert.is(left.length, 1);
    assert.is(left[0].cookie, true);
    await revokeOther.waitFor({ state: "detached" });
  });

  test("revoking the current session signs out and returns to sign-in", async () => {
    const { page } = ctx;
    const mine = (await admin("GET", "/admin/sessions")).body.data[0];
    await page.getByRole("button", { name: `Revoke session ${mine.id}` }).click();
    const ask = page.getByRole("dialog", { name: `Revoke your current session ${mine.id}?` });
    assert.is(await ask.getByRole("paragraph").textContent(), "You will be signed out.");
    await ask.getByRole("button", { name: "Revoke and sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByText("You revoked your current session: you are signed out.").waitFor();
    assert.equal((await admin("GET", "/admin/sessions")).body.data, []);
    // A reload stays signed out (the cookies are gone).
    await page.reload();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
  });

  test("narrow (800px): the screens keep every control reachable", async () => {
    const page = await ctx.context.newPage();
    await page.setViewportSize({ width: 800, height: 900 });
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/logs?status=2xx`);
    await page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
    assert.is(await page.getByLabel("Status", { exact: true }).inputValue(), "2xx");
    await page.getByRole("button", { name: /^Details of / }).first().waitFor();
    await assertAccessible(page, "logs narrow");
    await screenshot(page, "logs-narrow");
    await page.close();
  });
}

test.run();
