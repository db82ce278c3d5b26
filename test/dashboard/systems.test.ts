/**
 * The dashboard's Systems screen in a real browser: list, create (with the
 * server's conflict message), delete with confirmation in the page's own
 * dialog, and a system that still has instances refused before asking, with
 * how many; axe-core and a screenshot.
 * Skipped with one line when no Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser, screenshot } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: systems");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}
const ctx = {} as Ctx;

/** The master key's own call to the admin API. */
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

if (browserAvailable("dashboard systems suite")) {
  test.before(async () => {
    ctx.erplink = await startErplink();
    ctx.browser = await launchBrowser();
    ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 } });
    ctx.page = await ctx.context.newPage();
    await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
    await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
    await ctx.page.getByRole("button", { name: "Sign in" }).click();
    await ctx.page.getByRole("navigation", { name: "Main" }).waitFor();
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
  });

  test("the Systems link opens the screen at /dashboard/systems; an empty list says so", async () => {
    const { page } = ctx;
    await page.getByRole("link", { name: "Systems" }).click();
    await page.getByRole("heading", { name: "Systems", level: 1 }).waitFor();
    assert.is(new URL(page.url()).pathname, "/dashboard/systems");
    assert.is(await page.getByRole("link", { name: "Systems" }).getAttribute("aria-current"), "page");
    await page.getByText("No systems yet").waitFor();
    // A reload keeps the screen (client route served the page) and the session.
    await page.reload();
    await page.getByRole("heading", { name: "Systems", level: 1 }).waitFor();
  });

  test("create a system: it is listed and stored; a duplicate name shows the server's message", async () => {
    const { page } = ctx;
    await page.getByLabel("Name").fill("s4-prod");
    await page.getByLabel("Description").fill("Production S/4HANA");
    await page.getByRole("button", { name: "Create system" }).click();
    await page.getByRole("status").getByText("System s4-prod created.").waitFor();
    const row = page.getByRole("row", { name: /s4-prod/ });
    await row.waitFor();
    assert.ok((await row.textContent())!.includes("Production S/4HANA"));
    const stored = await admin("GET", "/admin/systems");
    assert.equal(stored.body.data.map((s: any) => [s.name, s.description]), [["s4-prod", "Production S/4HANA"]]);

    // A second system of the same name: the server's 409, in its words.
    await page.getByLabel("Name").fill("s4-prod");
    await page.getByRole("button", { name: "Create system" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    const expected = await admin("POST", "/admin/systems", { name: "s4-prod" });
    assert.is(expected.status, 409);
    const shown = (await alert.textContent()) ?? "";
    assert.ok(shown.startsWith(`${expected.body.error.message} (request req_`), shown);
    assert.is((await admin("GET", "/admin/systems")).body.data.length, 1);
  });

  test("deleting a system with instances says so, with how many, before asking; without them it is deleted after the dialog", async () => {
    const { page } = ctx;
    const sys = (await admin("GET", "/admin/systems")).body.data[0];
    const ins = await admin("POST", `/admin/systems/${sys.id}/instances`, {
      name: "s4-prod-main",
      environment: "production",
      base_url: "https://s4.example.com/sap/opu/odata4/",
    });
    assert.is(ins.status, 201, JSON.stringify(ins.body));
    await page.getByRole("button", { name: "Delete system s4-prod" }).click();
    // The refusal of the previous test is still shown until this answer replaces it.
    const alert = page.getByRole("alert").filter({ hasText: "s4-prod has 1 instance" });
    await alert.waitFor();
    assert.is(await alert.textContent(), "s4-prod has 1 instance: delete it first (they are listed below), then the system.");
    // Nothing was asked, and the instances to delete are shown.
    assert.is(await page.getByRole("dialog").count(), 0);
    await page.getByRole("heading", { name: "Instances of s4-prod" }).waitFor();
    assert.is((await admin("GET", "/admin/systems")).body.data.length, 1);
    await assertAccessible(page, "systems");
    await screenshot(page, "systems");

    assert.is((await admin("DELETE", `/admin/instances/${ins.body.data.id}`)).status, 200);
    await page.getByRole("button", { name: "Delete system s4-prod" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete system s4-prod?" });
    await dialog.waitFor();
    assert.is(await dialog.getByRole("paragraph").textContent(), "It has no instances. This cannot be undone.");
    await dialog.getByRole("button", { name: "Delete system" }).click();
    await page.getByRole("status").getByText("System s4-prod deleted.").waitFor();
    // The success replaced the earlier refusal.
    assert.is(await page.getByRole("alert").count(), 0);
    await page.getByText("No systems yet").waitFor();
    assert.equal((await admin("GET", "/admin/systems")).body.data, []);
  });

  test("declining the confirmation deletes nothing", async () => {
    const { page } = ctx;
    assert.is((await admin("POST", "/admin/systems", { name: "s4-qa" })).status, 201);
    await page.reload();
    await page.getByRole("button", { name: "Delete system s4-qa" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete system s4-qa?" });
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    await page.waitForTimeout(200);
    assert.is((await admin("GET", "/admin/systems")).body.data.length, 1);
  });
}

test.run();
