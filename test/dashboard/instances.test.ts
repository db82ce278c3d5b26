/**
 * The dashboard's instances (inside the Systems screen) in a real browser:
 * create an instance with Basic credentials for a loopback OData back end,
 * the secret never shown after save (nor in any admin answer the page got),
 * a successful step-by-step connection test, edit (keep, then remove the
 * credentials) and delete; axe-core and a screenshot.
 * Skipped with one line when no Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { fieldMessage } from "../../src/dashboard/field-messages.js";
import { startBasicODataBackend, type BasicODataBackend } from "../../test-support/basic-odata-backend.js";
import { adminCall, browserAvailable, launchBrowser, screenshot, seriousViolations } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: instances");

const PASSWORD = "s3cret-Backend-pw-4711";

interface Ctx {
  erplink: RunningErplink;
  backend: BasicODataBackend;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Bodies of every /admin answer the page received. */
  adminBodies: string[];
}
const ctx = { adminBodies: [] } as unknown as Ctx;

/** The master key's own call to the admin API. */
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

if (browserAvailable("dashboard instances suite")) {
  test.before(async () => {
    ctx.erplink = await startErplink();
    ctx.backend = await startBasicODataBackend("erp-user", PASSWORD);
    assert.is((await admin("POST", "/admin/systems", { name: "s4-prod", description: "Production" })).status, 201);
    ctx.browser = await launchBrowser();
    ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
    ctx.page = await ctx.context.newPage();
    ctx.page.on("response", async (res) => {
      if (new URL(res.url()).pathname.startsWith("/admin/")) ctx.adminBodies.push(await res.text().catch(() => ""));
    });
    await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/systems`);
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

  test("create an instance with Basic credentials: listed with its type and 'set', the secret never shown", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: "Instances of s4-prod" }).click();
    await page.getByRole("heading", { name: "Instances of s4-prod" }).waitFor();
    await page.getByText("No instances yet.").waitFor();
    await page.getByRole("button", { name: "New instance" }).click();
    await page.getByLabel("Instance name").fill("stub-prod");
    await page.getByLabel("Environment").fill("production");
    await page.getByLabel("Base URL").fill(ctx.backend.baseUrl);
    await page.getByLabel("Service paths").fill("sales = sales");
    await page.getByLabel("SAP client").fill("100");
    await page.getByLabel("Credentials", { exact: true }).selectOption("basic");
    await page.getByLabel("User name").fill("erp-user");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Create instance" }).click();
    await page.getByRole("status").getByText("Instance stub-prod created.").waitFor();
    const row = page.getByRole("row", { name: /stub-prod/ });
    assert.is(
      ((await row.textContent()) ?? "").replace(/\s+/g, " "),
      `stub-prodproduction${ctx.backend.baseUrl}basic (erp-user), password set100EditTest connectionDelete`,
    );
    const systemId = (await admin("GET", "/admin/systems")).body.data[0].id;
    const stored = await admin("GET", `/admin/systems/${systemId}/instances`);
    assert.equal(
      stored.body.data.map((i: any) => [i.name, i.environment, i.base_url, i.services, i.sap_client, i.auth]),
      [["stub-prod", "production", ctx.backend.baseUrl, { sales: { path: "sales" } }, "100", { type: "basic", username: "erp-user" }]],
    );
    // The edit form offers to keep the credentials and shows no secret.
    await page.getByRole("button", { name: "Edit instance stub-prod" }).click();
    assert.is(await page.getByLabel("Credentials", { exact: true }).inputValue(), "keep");
    assert.is(await page.getByLabel("Password").count(), 0);
    await page.getByText("Current: basic (erp-user), password set.").waitFor();
    const html = await page.content();
    assert.not.ok(html.includes(PASSWORD), "the page holds the secret");
    assert.not.ok(ctx.adminBodies.some((b) => b.includes(PASSWORD)), "an admin answer holds the secret");
    await page.getByRole("button", { name: "Cancel" }).click();
  });

  test("Test connection: every step passes against the back end that requires Basic", async () => {
    const { page } = ctx;
    const before = ctx.backend.requests.length;
    await page.getByRole("button", { name: "Test connection of stub-prod" }).click();
    await page.getByRole("heading", { name: "Connection test of stub-prod" }).waitFor();
    assert.is(await page.getByLabel("Service to test (optional)").inputValue(), "sales");
    await page.getByRole("button", { name: "Run test" }).click();
    await page.getByText(/^Connection OK in \d+ ms \(OData 4\.0\)\.$/).waitFor();
    const steps = await page.getByRole("list", { name: "Steps" }).getByRole("listitem").allTextContents();
    assert.equal(
      steps.map((s) => s.split(" (")[0]),
      ["dns: passed", "tcp: passed", "http: passed", "odata_version: passed", "csrf: passed"],
      JSON.stringify(steps),
    );
    // The back end saw the credentials (and the secret is still nowhere in the page).
    assert.ok(ctx.backend.requests.slice(before).some((r) => r.path === "/sales/$metadata" && r.authorized));
    assert.not.ok((await page.content()).includes(PASSWORD));
    const violations = await seriousViolations(page);
    assert.equal(violations, [], `instances: axe violations ${JSON.stringify(violations, null, 2)}`);
    await screenshot(page, "instances");
    await page.setViewportSize({ width: 800, height: 900 });
    await screenshot(page, "instances-narrow");
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  test("edit the base URL, environment and service paths keeping the credentials; the server's field error is shown in words", async () => {
    const { page } = ctx;
    const sys = (await admin("GET", "/admin/systems")).body.data[0];
    const before = (await admin("GET", `/admin/systems/${sys.id}/instances`)).body.data[0];
    await page.getByRole("button", { name: "Edit instance stub-prod" }).click();
    const form = page.getByRole("form", { name: "Edit instance stub-prod" });
    // A base URL with credentials in it: the server refuses it, naming the field; nothing is saved.
    const withCredentials = ctx.backend.baseUrl.replace("http://", "http://someone:secret-in-url@");
    await form.getByLabel("Base URL").fill(`${withCredentials}/`);
    await form.getByRole("button", { name: "Save instance" }).click();
    const expected = await admin("PATCH", `/admin/instances/${before.id}`, { base_url: `${withCredentials}/` });
    assert.is(expected.status, 400, JSON.stringify(expected.body));
    const alert = form.getByRole("alert");
    await alert.waitFor();
    assert.match((await alert.textContent())!, /^Not saved: correct the marked field\. \(request req_[^)]+\)$/);
    // The field's own message, beside it, in words.
    assert.is(expected.body.error.details[0].field, "base_url");
    assert.is(await form.locator("#instance-base-url-error").textContent(), fieldMessage(expected.body.error.details[0].message));
    assert.is(await form.getByLabel("Base URL").getAttribute("aria-invalid"), "true");
    assert.not.ok((await admin("GET", `/admin/instances/${before.id}`)).body.data.base_url.includes("secret-in-url"));

    await form.getByLabel("Base URL").fill(`${ctx.backend.baseUrl}/`);
    await form.getByLabel("Environment").fill("staging");
    await form.getByLabel("Service paths").fill("sales = sales\nBILLING = billing/v2");
    assert.is(await form.getByLabel("Credentials", { exact: true }).inputValue(), "keep");
    await form.getByRole("button", { name: "Save instance" }).click();
    await page.getByRole("status").getByText("Instance stub-prod saved.").waitFor();
    const after = (await admin("GET", `/admin/instances/${before.id}`)).body.data;
    assert.is(after.environment, "staging");
    assert.equal(after.services, { sales: { path: "sales" }, BILLING: { path: "billing/v2" } });
    assert.equal(after.auth, before.auth, "the credentials were kept");
    // Kept for real: the back end still gets them.
    await page.getByRole("button", { name: "Test connection of stub-prod" }).click();
    await page.getByRole("button", { name: "Run test" }).click();
    await page.getByText(/^Connection OK in \d+ ms/).waitFor();
    // Back to production for the tests that follow.
    assert.is((await admin("PATCH", `/admin/instances/${before.id}`, { environment: "production" })).status, 200);
    await page.reload();
    await page.getByRole("button", { name: "Instances of s4-prod" }).click();
    const row = page.getByRole("row", { name: /stub-prod/ });
    await row.waitFor();
    assert.match((await row.textContent()) ?? "", /^stub-prodproduction/);
  });

  test("a wrong password makes the test fail at http in words; removing the credentials is saved", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: "Edit instance stub-prod" }).click();
    await page.getByLabel("Credentials", { exact: true }).selectOption("basic");
    await page.getByLabel("User name").fill("erp-user");
    await page.getByLabel("Password").fill("wrong-password");
    await page.getByRole("button", { name: "Save instance" }).click();
    await page.getByRole("status").getByText("Instance stub-prod saved.").waitFor();
    await page.getByRole("button", { name: "Test connection of stub-prod" }).click();
    await page.getByRole("button", { name: "Run test" }).click();
    const failed = page.getByText(/^Connection failed: http: /);
    await failed.waitFor();
    assert.match((await failed.textContent())!, /401/);
    assert.not.ok((await page.content()).includes("wrong-password"));

    await page.getByRole("button", { name: "Edit instance stub-prod" }).click();
    await page.getByLabel("Credentials", { exact: true }).selectOption("none");
    await page.getByRole("button", { name: "Save instance" }).click();
    await page.getByRole("status").getByText("Instance stub-prod saved.").waitFor();
    const row = page.getByRole("row", { name: /stub-prod/ });
    assert.match(((await row.textContent()) ?? ""), /\/none100/);
    const sys = (await admin("GET", "/admin/systems")).body.data[0];
    const ins = (await admin("GET", `/admin/systems/${sys.id}/instances`)).body.data[0];
    assert.is(ins.auth, undefined);
  });

  test("delete an instance with confirmation", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: "Delete instance stub-prod" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete instance stub-prod?" });
    assert.is(await dialog.getByRole("paragraph").textContent(), "No API key names this instance. This cannot be undone.");
    await dialog.getByRole("button", { name: "Delete instance" }).click();
    await page.getByRole("status").getByText("Instance stub-prod deleted.").waitFor();
    await page.getByText("No instances yet.").waitFor();
  });
}

test.run();
