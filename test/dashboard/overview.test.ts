/**
 * The dashboard's Overview in a real browser: data requests made through
 * /odata with a data key (allowed and denied) show in the totals, the denial
 * steps, the top keys and entity sets and the recent refused requests; the
 * uPlot charts render under the page's CSP with no violation reported.
 * Skipped with one line when no Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startBasicODataBackend, type BasicODataBackend } from "../../test-support/basic-odata-backend.js";
import { adminCall, browserAvailable, launchBrowser, screenshot, seriousViolations } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: overview");

interface Ctx {
  erplink: RunningErplink;
  backend: BasicODataBackend;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  keyId: string;
  /** The 403 message the denied data request was answered with. */
  deniedMessage: string;
  violations: string[];
}
const ctx = { violations: [] } as unknown as Ctx;

/** The master key's own call to the admin API. */
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

const valueOf = (page: Page, term: string) => page.locator(".overview-totals > div", { has: page.getByText(term, { exact: true }) }).locator("dd");

if (browserAvailable("dashboard overview suite")) {
  test.before(async () => {
    ctx.erplink = await startErplink();
    ctx.backend = await startBasicODataBackend("erp-user", "pw-overview-1234");
    const sys = await admin("POST", "/admin/systems", { name: "s4" });
    const ins = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
      name: "stub",
      base_url: ctx.backend.baseUrl,
      auth: { type: "basic", username: "erp-user", password: "pw-overview-1234" },
    });
    assert.is(ins.status, 201, JSON.stringify(ins.body));
    const key = await admin("POST", "/admin/api-keys", { name: "invoice app", permissions: { stub: { sales: { Customers: ["list"] } } } });
    assert.is(key.status, 201);
    ctx.keyId = key.body.data.id;
    const odata = (path: string) =>
      fetch(`${ctx.erplink.baseUrl}/odata/stub/sales/${path}`, { headers: { authorization: `Bearer ${key.body.data.key}` } });
    for (let i = 0; i < 3; i++) assert.is((await odata("Customers")).status, 200);
    const denied = await odata("SalesOrders");
    assert.is(denied.status, 403);
    ctx.deniedMessage = ((await denied.json()) as { error: { message: string } }).error.message;
    // The request log and its rollups are written in batches (every second).
    for (let i = 0; i < 50; i++) {
      const usage = await admin("GET", "/admin/usage");
      if (usage.body.data.total?.requests === "4") break;
      await new Promise((r) => setTimeout(r, 200));
    }
    ctx.browser = await launchBrowser();
    ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
    ctx.page = await ctx.context.newPage();
    // CSP violations are reported in the page: collect them (and the console's CSP messages).
    await ctx.page.addInitScript(
      'document.addEventListener("securitypolicyviolation", (e) => { (window.__cspViolations ??= []).push(e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile + ":" + e.lineNumber); });',
    );
    ctx.page.on("console", (msg) => {
      if (/Content Security Policy/i.test(msg.text())) ctx.violations.push(msg.text());
    });
    await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
    await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
    await ctx.page.getByRole("button", { name: "Sign in" }).click();
    await ctx.page.getByRole("navigation", { name: "Main" }).waitFor();
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
    await ctx.backend?.close();
  });

  test("the Overview counts the data requests just made, by outcome, step, key and entity set", async () => {
    const { page } = ctx;
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    assert.ok(await page.getByLabel("Last 24 hours").isChecked());
    await valueOf(page, "Requests").waitFor();
    assert.is(await valueOf(page, "Requests").textContent(), "4");
    assert.is(await valueOf(page, "Allowed").textContent(), "3");
    assert.is(await valueOf(page, "Denied").textContent(), "1");
    assert.is(await valueOf(page, "Rate limited").textContent(), "0");
    assert.is(await valueOf(page, "Upstream errors").textContent(), "00 4xx, 0 5xx");

    const steps = page.getByRole("table", { name: "Denials by step" });
    assert.equal(await steps.getByRole("row").allTextContents(), [
      "StepMeaningDenied",
      "ENTITYthe key has no permission for this entity set, function or action1",
    ]);
    const keys = page.getByRole("table", { name: "Top API keys" });
    assert.equal(await keys.getByRole("row").allTextContents(), ["API keyRequestsDenied", `invoice app (${ctx.keyId})41`]);
    // The key's name links to its page; an entity set to its log entries.
    assert.is(await keys.getByRole("link", { name: `invoice app (${ctx.keyId})` }).getAttribute("href"), `/dashboard/api-keys/${ctx.keyId}`);
    const entities = page.getByRole("table", { name: "Top entity sets" });
    assert.equal(await entities.getByRole("row").allTextContents(), ["Entity setRequestsDenied", "Customers30", "SalesOrders11"]);
    assert.is(await entities.getByRole("link", { name: "Customers" }).getAttribute("href"), "/dashboard/logs?entity=Customers");
    const denials = page.getByRole("table", { name: "Recent refused requests (4xx) of the data path and the admin API, newest first" });
    const rows = denials.getByRole("row");
    assert.is(await rows.count(), 2);
    const text = (await rows.nth(1).textContent()) ?? "";
    assert.ok(text.includes("403data pathGET /odata/stub/sales/SalesOrders"), text);
    assert.ok(text.includes(`invoice app (${ctx.keyId})`), text);
    // The message the client was answered, word for word, after the step that refused.
    assert.match(ctx.deniedMessage, /SalesOrders/);
    assert.is(await rows.nth(1).getByRole("cell").nth(5).textContent(), `ENTITY: ${ctx.deniedMessage}`);
  });

  test("the uPlot charts render under the CSP without a violation; 7 and 30 days reload", async () => {
    const { page } = ctx;
    const canvases = page.locator(".chart canvas");
    await canvases.first().waitFor();
    assert.is(await canvases.count(), 2);
    const box = await canvases.first().boundingBox();
    assert.ok(box !== null && box.width > 200 && box.height > 100, JSON.stringify(box));
    // uPlot's legend shows the series, so its script and stylesheet both ran.
    await page.locator(".u-legend").first().getByText("Requests").waitFor();
    assert.is(await page.locator(".u-legend").first().evaluate((el) => (globalThis as any).getComputedStyle(el).textAlign), "center");

    await page.getByLabel("Last 30 days").check();
    await page.getByText(/one point per day\.$/).waitFor();
    assert.is(await valueOf(page, "Requests").textContent(), "4");
    await page.getByLabel("Last 7 days").check();
    await page.getByText(/one point per hour\.$/).waitFor();
    assert.is(await valueOf(page, "Requests").textContent(), "4");
    await canvases.nth(1).waitFor();

    const reported = (await page.evaluate("window.__cspViolations ?? []")) as string[];
    assert.equal([...reported, ...ctx.violations], [], "CSP violations");
    const violations = await seriousViolations(page);
    assert.equal(violations, [], `overview: axe violations ${JSON.stringify(violations, null, 2)}`);
    await page.getByLabel("Last 24 hours").check();
    await page.getByText(/one point per hour\.$/).waitFor();
    await screenshot(page, "overview");
    await page.setViewportSize({ width: 800, height: 900 });
    await page.waitForTimeout(100);
    await screenshot(page, "overview-narrow");
    const narrow = await canvases.first().boundingBox();
    assert.ok(narrow !== null && narrow.width <= 800, JSON.stringify(narrow));
  });
}

test.run();
