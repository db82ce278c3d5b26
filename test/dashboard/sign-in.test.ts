/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core),
 * against erplink on a real port: sign in and out, a wrong key, a session
 * revoked while the page is open, a cookie request from another origin,
 * and axe-core on each screen. Driven by role and label, as a person reads
 * the page. Skipped with one line when no Chromium is installed (fails under CI).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminAnswer, adminCall, assertAccessible, browserAvailable, launchBrowser, screenshot } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: sign in");
const NAME = "dashboard sign-in suite";

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}
const ctx = {} as Ctx;

/** Opens a fresh browser context (no cookies) on the dashboard. */
async function freshPage(): Promise<Page> {
  await ctx.context?.close();
  ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.page = await ctx.context.newPage();
  await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard`);
  return ctx.page;
}

/** Signs in through the form with a key. */
async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel("Admin key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** Fails with the list when axe finds critical or serious violations. */
/** The master key's own call to the admin API. */
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

if (browserAvailable(NAME)) {
  test.before(async () => {
    ctx.erplink = await startErplink();
    ctx.browser = await launchBrowser();
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
  });

  test("/dashboard shows the sign-in form; the page keeps the strict CSP and runs no inline script", async () => {
    const page = await freshPage();
    assert.is(new URL(page.url()).pathname, "/dashboard/");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.ok(await page.getByLabel("Admin key").isVisible());
    // An inline script would be refused by the CSP: prove the policy is live in the browser.
    const ran = await page.evaluate(`new Promise((resolve) => {
      document.addEventListener("securitypolicyviolation", () => resolve("blocked"), { once: true });
      const s = document.createElement("script");
      s.textContent = "window.__inline = 1";
      document.body.append(s);
      setTimeout(() => resolve(window.__inline === 1 ? "ran" : "not run"), 500);
    })`);
    assert.is(ran, "blocked");
    await assertAccessible(page, "sign-in");
    await screenshot(page, "sign-in");
  });

  test("a wrong key is explained in words (not the server's 'invalid bearer token'), with the request id, and the field is cleared", async () => {
    const page = await freshPage();
    const expected = (await (await fetch(`${ctx.erplink.baseUrl}/admin/sessions?cookie=true`, { method: "POST", headers: { authorization: "Bearer erpl_wrong_key_0123456789abcdefghijklmnopqrstu" } })).json()) as any;
    assert.is(expected.error.message, "invalid bearer token");
    await signIn(page, "erpl_wrong_key_0123456789abcdefghijklmnopqrstu");
    const alert = page.getByRole("alert");
    await alert.waitFor();
    const text = (await alert.textContent()) ?? "";
    assert.match(text, /^This is not a valid admin key: check that you pasted all of it, and that it has not been revoked or expired\. \(request req_[0-9a-f-]+\)$/);
    assert.is(await page.getByLabel("Admin key").inputValue(), "");
    assert.is((await ctx.context.cookies()).length, 0, "no session cookie");
    await assertAccessible(page, "sign-in with an error");
  });

  test("sign in with the master key: the shell, a cookie session, the key kept nowhere; sign out returns to sign-in", async () => {
    const page = await freshPage();
    await signIn(page, ctx.erplink.masterKey);
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    for (const name of ["Overview", "Systems", "API keys", "Logs", "Audit", "Sessions"]) {
      assert.ok(await page.getByRole("link", { name, exact: true }).isVisible(), name);
    }
    assert.is(await page.getByRole("link", { name: "Overview" }).getAttribute("aria-current"), "page");
    const cookies = await ctx.context.cookies();
    const session = cookies.find((c) => c.name === "__Host-erplink_session");
    assert.ok(session !== undefined && session.httpOnly && session.secure && session.sameSite === "Strict");
    assert.ok(cookies.some((c) => c.name === "__Host-erplink_csrf" && !c.httpOnly));
    // Nothing the page can read holds the key.
    const stored = await page.evaluate("JSON.stringify([document.cookie, { ...localStorage }, { ...sessionStorage }, document.documentElement.outerHTML])");
    assert.not.ok(String(stored).includes(ctx.erplink.masterKey), "the key is not kept by the page");
    await assertAccessible(page, "overview");
    await screenshot(page, "overview");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.is(await page.getByRole("status").textContent(), "You are signed out.");
    assert.equal((await ctx.context.cookies()).map((c) => c.name), [], "the server cleared both cookies");
    const sessions = await admin("GET", "/admin/sessions");
    assert.equal(sessions.body.data, [], "the session was revoked");
  });

  test("a session revoked while the page is open returns to sign-in with the server's message", async () => {
    const page = await freshPage();
    // The shell's session check and the overview's own calls must be answered first:
    // one still in flight when the session is revoked gets the 401 itself and signs
    // the page out before the reload. (The shell opens without a navigation: a
    // wait for "networkidle" returns at once when the sign-in form sat idle.)
    const answers = Promise.all([
      adminAnswer(page, "GET", "/admin/sessions"),
      adminAnswer(page, "GET", "/admin/usage", { group_by: "api_key" }),
      adminAnswer(page, "GET", "/admin/usage", { group_by: "entity" }),
      adminAnswer(page, "GET", "/admin/logs", { status: "4xx" }),
    ]);
    await signIn(page, ctx.erplink.masterKey);
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    assert.equal((await answers).map((r) => r.status()), [200, 200, 200, 200]);
    const { body } = await admin("GET", "/admin/sessions");
    assert.is(body.data.length, 1);
    assert.is((await admin("DELETE", `/admin/sessions/${body.data[0].id}`)).status, 200);
    await page.reload();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.is(await page.getByRole("status").textContent(), "invalid session token: it was revoked, has expired or never existed");
    await assertAccessible(page, "sign-in after a revoked session");
    // The dead session's CSRF cookie is dropped: the next load opens sign-in at once.
    assert.equal((await ctx.context.cookies()).map((c) => c.name), ["__Host-erplink_session"]);
  });

  test("the sign-in form works from the keyboard alone", async () => {
    const page = await freshPage();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.keyboard.press("Tab");
    assert.is(await page.evaluate("document.activeElement.id"), "key");
    await page.keyboard.type(ctx.erplink.masterKey);
    await page.keyboard.press("Enter");
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    // Tab reaches the navigation and Sign out; Enter on a link opens its screen.
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    assert.is(await page.evaluate("document.activeElement.textContent"), "Systems");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Systems", level: 1 }).waitFor();
  });

  test("a request from another origin carrying the session cookie is refused", async () => {
    const page = await freshPage();
    await signIn(page, ctx.erplink.masterKey);
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    // Another origin on the same host (same-site: SameSite=Strict still sends the cookie).
    const other = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>other</title>");
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const otherPage = await ctx.context.newPage();
      await otherPage.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
      // The classic attack: a form posted to erplink (no preflight, the cookie
      // goes along on a same-site navigation); only the server's checks stop it.
      const navigation = otherPage.waitForResponse(`${ctx.erplink.baseUrl}/admin/systems`);
      await otherPage.evaluate(`(() => {
        const form = document.createElement("form");
        form.method = "POST";
        form.enctype = "text/plain";
        form.action = ${JSON.stringify(`${ctx.erplink.baseUrl}/admin/systems`)};
        const field = document.createElement("input");
        field.name = '{"name":"evil","x":"';
        field.value = '"}';
        form.append(field);
        document.body.append(form);
        form.submit();
      })()`);
      const refusal = await navigation;
      assert.is(refusal.status(), 403);
      // This refusal is only given to a request that carried the session cookie
      // (without one, the request would be an unauthenticated 401).
      const error = ((await refusal.json()) as any).error;
      assert.equal(error, {
        code: "FORBIDDEN",
        message: 'a request that is not same-origin cannot use the session cookie (Sec-Fetch-Site "same-site")',
        requestId: error.requestId,
      });
      const systems = await admin("GET", "/admin/systems");
      assert.equal(systems.body.data, [], "nothing was created");
      // The request log is written after the response: wait for the refusal to appear.
      let refused: any;
      for (let i = 0; i < 40 && refused === undefined; i++) {
        const logs = await admin("GET", "/admin/logs");
        refused = (logs.body.data as any[]).find((l) => l.method === "POST" && l.path === "/admin/systems");
        if (refused === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(refused !== undefined, "the refused request is in the request log");
      assert.is(refused.status, 403);
      assert.is(refused.error_code, "FORBIDDEN");
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });
}

test.run();
