/**
 * No edit is lost without a question, in a real browser: a key editor or an
 * instance form holding unsaved input asks in the page's own dialog before
 * another screen, Back, Close, Cancel or sign-out would drop it (Stay keeps
 * every character), and the browser asks before the tab is closed; a session
 * that ends while a form is open asks for sign-in over the page and keeps the
 * form, which then saves; an instance changed by someone else meanwhile is
 * not overwritten: the form says what changed and offers reload or
 * overwrite. Skipped with one line when no Chromium is installed (fails
 * under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: no edit lost without a question");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  systemId: string;
  instanceId: string;
  keyId: string;
}
const ctx = {} as Ctx;

const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

async function signIn(page: Page): Promise<void> {
  await page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** The leave dialog, once shown. */
function leaveDialog(page: Page) {
  return page.getByRole("dialog", { name: "Unsaved changes" });
}

if (browserAvailable("dashboard unsaved edits suite")) {
  test.before(async () => {
    ctx.erplink = await startErplink();
    const sys = await admin("POST", "/admin/systems", { name: "s4" });
    assert.is(sys.status, 201);
    ctx.systemId = sys.body.data.id;
    const ins = await admin("POST", `/admin/systems/${ctx.systemId}/instances`, { name: "s4-prod", environment: "production", base_url: "http://127.0.0.1:9/" });
    assert.is(ins.status, 201, JSON.stringify(ins.body));
    ctx.instanceId = ins.body.data.id;
    const key = await admin("POST", "/admin/api-keys", { name: "orders-reader", type: "data", permissions: { "s4-prod": { SALES: { Orders: ["get"] } } } });
    assert.is(key.status, 201, JSON.stringify(key.body));
    ctx.keyId = key.body.data.id;
    ctx.browser = await launchBrowser();
    ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
    ctx.page = await ctx.context.newPage();
    ctx.page.setDefaultTimeout(8000);
    await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys/${ctx.keyId}`);
    await signIn(ctx.page);
    await ctx.page.getByRole("heading", { name: "Edit key orders-reader" }).waitFor();
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
  });

  test("another screen with an edited key asks first; Stay keeps the input, Leave goes", async () => {
    const { page } = ctx;
    const name = page.locator("#edit-key-name");
    await name.fill("orders-reader-2");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Logs" }).click();
    const dialog = leaveDialog(page);
    await dialog.waitFor();
    assert.is(await dialog.locator("#leave-text").textContent(), "Your changes to key orders-reader are not saved. They are lost if you go on.");
    await assertAccessible(page, "leave dialog");
    await dialog.getByRole("button", { name: "Stay and keep editing" }).click();
    await dialog.waitFor({ state: "hidden" });
    assert.is(new URL(page.url()).pathname, `/dashboard/api-keys/${ctx.keyId}`);
    assert.is(await name.inputValue(), "orders-reader-2");
    // Escape is Stay too.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit" }).click();
    await dialog.waitFor();
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    assert.is(await name.inputValue(), "orders-reader-2");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Logs" }).click();
    await dialog.getByRole("button", { name: "Leave without saving" }).click();
    await page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
    assert.is(new URL(page.url()).pathname, "/dashboard/logs");
    // Nothing was saved.
    assert.is((await admin("GET", `/admin/api-keys/${ctx.keyId}`)).body.data.name, "orders-reader");
  });

  test("Back with an edited key asks first and keeps the address until the admin leaves", async () => {
    const { page } = ctx;
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys`);
    await page.getByRole("button", { name: "Edit key orders-reader" }).click();
    await page.getByRole("heading", { name: "Edit key orders-reader" }).waitFor();
    await page.locator("#edit-key-per-minute").fill("7");
    await page.goBack();
    const dialog = leaveDialog(page);
    await dialog.waitFor();
    assert.is(new URL(page.url()).pathname, `/dashboard/api-keys/${ctx.keyId}`);
    await dialog.getByRole("button", { name: "Stay and keep editing" }).click();
    assert.is(await page.locator("#edit-key-per-minute").inputValue(), "7");
    // Close editor is asked about too.
    await page.getByRole("button", { name: "Close editor" }).click();
    await dialog.waitFor();
    assert.is(await dialog.getByRole("button", { name: "Close without saving" }).count(), 1);
    await dialog.getByRole("button", { name: "Stay and keep editing" }).click();
    // Saved: nothing is unsaved any more, and Back goes without a question.
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Key orders-reader saved.").waitFor();
    await page.goBack();
    await page.waitForURL(`${ctx.erplink.baseUrl}/dashboard/api-keys`);
    assert.is(await dialog.count(), 0);
    assert.is((await admin("GET", `/admin/api-keys/${ctx.keyId}`)).body.data.rate_limits.per_minute, 7);
  });

  test("the browser asks before a tab with unsaved input is closed", async () => {
    const page = await ctx.context.newPage();
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys/${ctx.keyId}`);
    await page.getByRole("heading", { name: "Edit key orders-reader" }).waitFor();
    const asked: string[] = [];
    page.on("dialog", (d) => {
      asked.push(d.type());
      void d.dismiss();
    });
    // Typed as a person does (Chromium asks only on pages the user has interacted with).
    await page.locator("#edit-key-name").click();
    await page.keyboard.type(" renamed");
    await page.close({ runBeforeUnload: true });
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(asked, ["beforeunload"]);
    assert.not.ok(page.isClosed(), "the tab stays open when the admin stays");
    // Without unsaved input, closing asks nothing.
    await page.locator("#edit-key-name").fill("orders-reader");
    const closed = page.waitForEvent("close");
    await page.close({ runBeforeUnload: true });
    await closed;
    assert.equal(asked, ["beforeunload"]);
  });

  test("sign-out with unsaved input asks first", async () => {
    const { page } = ctx;
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys/${ctx.keyId}`);
    await page.locator("#edit-key-name").fill("orders-reader-3");
    await page.getByRole("button", { name: "Sign out" }).click();
    const dialog = leaveDialog(page);
    await dialog.getByRole("button", { name: "Stay and keep editing" }).click();
    assert.is(await page.locator("#edit-key-name").inputValue(), "orders-reader-3");
    await page.getByRole("button", { name: "Sign out" }).click();
    await dialog.getByRole("button", { name: "Sign out without saving" }).click();
    await page.getByText("You are signed out.").waitFor();
    await signIn(page);
    await page.getByRole("heading", { name: "Edit key orders-reader" }).waitFor();
    assert.is(await page.locator("#edit-key-name").inputValue(), "orders-reader");
  });

  test("a session that ends under an open form asks for sign-in over the page, keeps the form, and the save then goes through", async () => {
    const { page } = ctx;
    await page.locator("#edit-key-name").fill("orders-reader-kept");
    await page.locator("#edit-key-per-minute").fill("11");
    // The session is revoked from elsewhere (the master key, over the API).
    const sessions = await admin("GET", "/admin/sessions");
    assert.is(sessions.status, 200);
    for (const s of sessions.body.data) assert.is((await admin("DELETE", `/admin/sessions/${s.id}`)).status, 200);
    await page.getByRole("button", { name: "Save changes" }).click();
    const again = page.getByRole("dialog", { name: "Sign in again" });
    await again.waitFor();
    await again.getByText("Your session ended. Sign in again to go on: what you typed on this page is still here, not yet saved.").waitFor();
    await assertAccessible(page, "sign-in over the page");
    // Nothing was saved, and the form is still there behind the dialog.
    assert.is((await admin("GET", `/admin/api-keys/${ctx.keyId}`)).body.data.name, "orders-reader");
    assert.is(await page.locator("#edit-key-name").inputValue(), "orders-reader-kept");
    await again.getByLabel("Admin key").fill(ctx.erplink.masterKey);
    await again.getByRole("button", { name: "Sign in" }).click();
    await again.waitFor({ state: "detached" });
    assert.is(await page.locator("#edit-key-name").inputValue(), "orders-reader-kept");
    assert.is(await page.locator("#edit-key-per-minute").inputValue(), "11");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Key orders-reader-kept saved.").waitFor();
    const saved = (await admin("GET", `/admin/api-keys/${ctx.keyId}`)).body.data;
    assert.is(saved.name, "orders-reader-kept");
    assert.is(saved.rate_limits.per_minute, 11);
  });

  test("an instance changed meanwhile is not overwritten: the form names what changed, then reloads or overwrites", async () => {
    const { page } = ctx;
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/systems`);
    await page.getByRole("button", { name: "Instances of s4" }).click();
    await page.getByRole("button", { name: "Edit instance s4-prod" }).click();
    const form = page.getByRole("form", { name: "Edit instance s4-prod" });
    await form.getByLabel("Environment").fill("prod-eu");
    // Cancel asks, and Stay keeps the input.
    await form.getByRole("button", { name: "Cancel" }).click();
    await leaveDialog(page).getByRole("button", { name: "Stay and keep editing" }).click();
    assert.is(await form.getByLabel("Environment").inputValue(), "prod-eu");
    // Someone else changes its SAP client and base URL meanwhile.
    const other = await admin("PATCH", `/admin/instances/${ctx.instanceId}`, { sap_client: "200", base_url: "http://127.0.0.1:10/" });
    assert.is(other.status, 200, JSON.stringify(other.body));
    await form.getByRole("button", { name: "Save instance" }).click();
    const conflict = form.getByRole("alert");
    await conflict.getByText("Not saved: this instance was changed since you opened it").waitFor();
    assert.is(await conflict.locator("p").first().textContent(), "Not saved: this instance was changed since you opened it (its base URL, SAP client).");
    await assertAccessible(page, "instance conflict");
    let now = (await admin("GET", `/admin/instances/${ctx.instanceId}`)).body.data;
    assert.is(now.environment, "production");
    // Reload: the form shows the current version, the edit dropped.
    await conflict.getByRole("button", { name: "Reload the instance" }).click();
    assert.is(await form.getByLabel("Environment").inputValue(), "production");
    assert.is(await form.getByLabel("SAP client").inputValue(), "200");
    // Edit again; changed meanwhile again; overwrite sends only the admin's field, against the newer version.
    await form.getByLabel("Environment").fill("prod-eu");
    assert.is((await admin("PATCH", `/admin/instances/${ctx.instanceId}`, { sap_client: "300" })).status, 200);
    await form.getByRole("button", { name: "Save instance" }).click();
    await form.getByRole("alert").getByRole("button", { name: "Overwrite with my changes" }).click();
    await page.getByText("Instance s4-prod saved.").waitFor();
    now = (await admin("GET", `/admin/instances/${ctx.instanceId}`)).body.data;
    assert.is(now.environment, "prod-eu");
    assert.is(now.sap_client, "300");
    assert.is(now.base_url, "http://127.0.0.1:10/");
  });
}

test.run();
