/**
 * A system's own screen in a real browser: labels as chips in the list and
 * on the system, its id copied with a visible confirmation (and words when
 * the browser refuses the clipboard), edits sent as the fields changed only
 * with `If-Match`, and a save over someone else's change refused with a
 * conflict box that reloads or overwrites. Skipped with one line when no
 * Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: editing a system");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  id: string;
}
const ctx = {} as Ctx;
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

if (browserAvailable("dashboard system edit suite")) {
  test.before(async () => {
    try {
      ctx.erplink = await startErplink();
      const sys = await admin("POST", "/admin/systems", { name: "s4-prod", description: "Production", labels: { owner: "finance", tier: "1" } });
      assert.is(sys.status, 201);
      ctx.id = sys.body.data.id;
      ctx.browser = await launchBrowser();
      ctx.context = await ctx.browser.newContext({ viewport: { width: 1440, height: 900 } });
      await ctx.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: ctx.erplink.baseUrl });
      ctx.page = await ctx.context.newPage();
      ctx.page.setDefaultTimeout(10_000);
      await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/systems`);
      await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
      await ctx.page.getByRole("button", { name: "Sign in" }).click();
      await ctx.page.getByRole("heading", { name: "Systems", level: 1 }).waitFor();
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

  test("labels are chips in the list; Edit opens the system's own address with its id, copied on request", async () => {
    const { page } = ctx;
    const chips = page.getByRole("list", { name: "Labels of s4-prod" });
    assert.equal(await chips.getByRole("listitem").allTextContents(), ["owner: finance", "tier: 1"]);
    await page.getByRole("button", { name: "Edit system s4-prod" }).click();
    await page.getByRole("heading", { name: "System s4-prod", level: 1 }).waitFor();
    assert.is(new URL(page.url()).pathname, `/dashboard/systems/${ctx.id}`);
    assert.equal(await page.getByRole("list", { name: "Labels of s4-prod" }).getByRole("listitem").allTextContents(), ["owner: finance", "tier: 1"]);
    await page.getByRole("button", { name: "Copy system id" }).click();
    await page.getByRole("status").getByText("Copied", { exact: true }).waitFor();
    assert.is(await page.evaluate("navigator.clipboard.readText()"), ctx.id);
    assert.is(await page.getByLabel("Labels", { exact: true }).inputValue(), "owner = finance\ntier = 1");
    await assertAccessible(page, "system screen");
    // A reload keeps the screen.
    await page.reload();
    await page.getByRole("heading", { name: "System s4-prod", level: 1 }).waitFor();
  });

  test("a save sends only the changed fields with If-Match; the list then shows them", async () => {
    const { page } = ctx;
    const sent: Request[] = [];
    const listen = (r: Request) => r.method() === "PATCH" && sent.push(r);
    page.on("request", listen);
    await page.getByLabel("Labels", { exact: true }).fill("owner = controlling\ntier = 1\nregion = eu");
    await page.getByRole("button", { name: "Save system" }).click();
    await page.getByRole("status").getByText("System s4-prod saved.").waitFor();
    page.off("request", listen);
    assert.is(sent.length, 1);
    assert.is(sent[0]!.headers()["if-match"], '"1"');
    assert.equal(sent[0]!.postDataJSON(), { labels: { owner: "controlling", tier: "1", region: "eu" } });
    const stored = (await admin("GET", `/admin/systems/${ctx.id}`)).body.data;
    assert.equal([stored.name, stored.description, stored.labels], ["s4-prod", "Production", { owner: "controlling", tier: "1", region: "eu" }]);
    assert.equal(await page.getByRole("list", { name: "Labels of s4-prod" }).getByRole("listitem").allTextContents(), ["owner: controlling", "region: eu", "tier: 1"]);
    // Nothing changed: nothing sent.
    await page.getByRole("button", { name: "Save system" }).click();
    await page.getByRole("status").getByText("Nothing to save: no field was changed.").waitFor();
  });

  test("a label key the server refuses is marked on the field, in words", async () => {
    const { page } = ctx;
    await page.getByLabel("Labels", { exact: true }).fill("cost centre = 4711");
    await page.getByRole("button", { name: "Save system" }).click();
    const field = page.getByLabel("Labels", { exact: true });
    await page.locator("#edit-system-labels-error").waitFor();
    assert.is(await field.getAttribute("aria-invalid"), "true");
    assert.is(await field.getAttribute("aria-describedby"), "edit-system-labels-help edit-system-labels-error");
    assert.is(
      await page.locator("#edit-system-labels-error").textContent(),
      "Label key “cost centre”: Use letters, digits, `.`, `_`, `/` or `-`, starting with a letter or digit, up to 63 characters.",
    );
    assert.match((await page.getByRole("alert").textContent())!, /^Not saved: correct the marked field\. \(request req_[^)]+\)$/);
    await assertAccessible(page, "system field error");
    // The next success clears the banner and the field's message.
    await page.getByLabel("Labels", { exact: true }).fill("owner = controlling\ntier = 1\nregion = eu");
    await page.getByLabel("Description").fill("Production S/4HANA");
    await page.getByRole("button", { name: "Save system" }).click();
    await page.getByRole("status").getByText("System s4-prod saved.").waitFor();
    assert.is(await page.getByRole("alert").count(), 0);
    assert.is(await page.getByLabel("Labels", { exact: true }).getAttribute("aria-invalid"), null);
  });

  test("a save over someone else's change is refused: the conflict box names the fields, reloads or overwrites", async () => {
    const { page } = ctx;
    assert.is((await admin("PATCH", `/admin/systems/${ctx.id}`, { description: "Changed elsewhere" })).status, 200);
    await page.getByLabel("Name").fill("s4-production");
    await page.getByRole("button", { name: "Save system" }).click();
    const box = page.getByRole("alert").filter({ hasText: "Not saved: this system was changed since you opened it" });
    await box.waitFor();
    assert.is(await box.locator("#system-conflict-title").textContent(), "Not saved: this system was changed since you opened it (its description).");
    assert.is((await admin("GET", `/admin/systems/${ctx.id}`)).body.data.name, "s4-prod");
    await assertAccessible(page, "system conflict");
    // Overwrite: the admin's changed field only, against the version that refused it.
    await box.getByRole("button", { name: "Overwrite with my changes" }).click();
    await page.getByRole("status").getByText("System s4-production saved.").waitFor();
    const stored = (await admin("GET", `/admin/systems/${ctx.id}`)).body.data;
    assert.equal([stored.name, stored.description], ["s4-production", "Changed elsewhere"]);
    // Reload drops the edits and shows the other change.
    assert.is((await admin("PATCH", `/admin/systems/${ctx.id}`, { description: "Again elsewhere" })).status, 200);
    await page.getByLabel("Description").fill("Mine");
    await page.getByRole("button", { name: "Save system" }).click();
    await page.getByRole("button", { name: "Reload the system" }).click();
    await page.getByRole("status").getByText("System s4-production reloaded: your edits were dropped.").waitFor();
    assert.is(await page.getByLabel("Description").inputValue(), "Again elsewhere");
  });

  test("a clipboard the browser refuses: the Copy button says how to copy by hand", async () => {
    const context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await context.addInitScript("Object.defineProperty(navigator, 'clipboard', { value: { writeText: () => Promise.reject(new Error('denied')) } })");
      const page = await context.newPage();
      await page.goto(`${ctx.erplink.baseUrl}/dashboard/systems/${ctx.id}`);
      await page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("button", { name: "Copy system id" }).click();
      await page.getByRole("status").getByText("The browser did not allow copying: select the system id and press Ctrl+C.").waitFor();
    } finally {
      await context.close();
    }
  });
}

test.run();
