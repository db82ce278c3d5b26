/**
 * Messages a person understands, in a real browser against a real erplink:
 * field errors beside their fields (`aria-invalid`, `aria-describedby`) in
 * words, not patterns; a banner that clears on the next success; a taken
 * instance name that names the system holding it; an expiry in the past
 * refused in the form; a connection test's 404 at the root explained, and an
 * old result gone once the instance changes; sign-in's error tied to its
 * field. Skipped with one line when no Chromium is installed (fails under CI).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: messages");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** A back end with nothing at its root (404) and one service. */
  backend: http.Server;
  backendUrl: string;
}
const ctx = {} as Ctx;
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

if (browserAvailable("dashboard messages suite")) {
  test.before(async () => {
    try {
      ctx.backend = http.createServer((req, res) => {
        if ((req.url ?? "").split("?")[0] === "/API_X/") {
          res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" });
          res.end('{"value":[]}');
          return;
        }
        if ((req.url ?? "").startsWith("/API_X/$metadata")) {
          res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0" });
          res.end('<?xml version="1.0"?><edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0"><edmx:DataServices><Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="X"><EntityContainer Name="C"/></Schema></edmx:DataServices></edmx:Edmx>');
          return;
        }
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not found");
      });
      await new Promise<void>((resolve) => ctx.backend.listen(0, "127.0.0.1", resolve));
      ctx.backendUrl = `http://127.0.0.1:${(ctx.backend.address() as AddressInfo).port}/`;
      ctx.erplink = await startErplink();
      assert.is((await admin("POST", "/admin/systems", { name: "s4-prod" })).status, 201);
      const qa = await admin("POST", "/admin/systems", { name: "s4-qa" });
      assert.is((await admin("POST", `/admin/systems/${qa.body.data.id}/instances`, { name: "main", base_url: ctx.backendUrl })).status, 201);
      ctx.browser = await launchBrowser();
      ctx.context = await ctx.browser.newContext({ viewport: { width: 1440, height: 900 } });
      ctx.page = await ctx.context.newPage();
      ctx.page.setDefaultTimeout(10_000);
      await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
    } catch (err) {
      console.error(err);
      throw err;
    }
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
    await new Promise((resolve) => ctx.backend?.close(resolve));
  });

  test("sign-in: an empty or refused key is said beside the field, which is marked invalid", async () => {
    const { page } = ctx;
    const key = page.getByLabel("Admin key");
    assert.is(await key.getAttribute("aria-invalid"), null);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("Paste the master key or an admin key.").waitFor();
    assert.is(await key.getAttribute("aria-invalid"), "true");
    assert.is(await key.getAttribute("aria-describedby"), "sign-in-error");
    await assertAccessible(page, "sign-in error");
    await key.fill(ctx.erplink.masterKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
  });

  test("instance form: each refused field is marked, with what to do in words; the next success clears them", async () => {
    const { page } = ctx;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Systems" }).click();
    await page.getByRole("button", { name: "Instances of s4-prod" }).click();
    await page.getByRole("button", { name: "New instance" }).click();
    const form = page.getByRole("form", { name: "New instance of s4-prod" });
    await form.getByLabel("Instance name").fill("s4 prod!");
    await form.getByLabel("Base URL").fill(ctx.backendUrl);
    await form.getByLabel("SAP client").fill("10");
    await form.getByLabel("Service paths").fill("SALES = ../up");
    await form.getByRole("button", { name: "Create instance" }).click();
    await form.locator("#instance-name-error").waitFor();
    const expectations: readonly (readonly [string, string, string])[] = [
      ["Instance name", "instance-name", "Use letters, digits, `.`, `_` or `-`, starting with a letter or digit, up to 64 characters."],
      ["SAP client", "instance-sap-client", "Use exactly three digits, such as 100, or leave it empty for the back end's default client."],
      [
        "Service paths",
        "instance-services",
        "Path of service “SALES”: Use a path below the base URL, such as `sap/API_BUSINESS_PARTNER`: segments of letters, digits and `_ ~ ! $ & ' ( ) * + , ; = : @ . -` joined by single `/`, with no `.` or `..` segment and no `/` at either end.",
      ],
    ];
    for (const [label, id, words] of expectations) {
      const field = form.getByLabel(label, { exact: true });
      assert.is(await field.getAttribute("aria-invalid"), "true", label);
      assert.is(await field.getAttribute("aria-describedby"), `${id}-help ${id}-error`, label);
      assert.is(await form.locator(`#${id}-error`).textContent(), words, label);
    }
    assert.match((await form.getByRole("alert").textContent())!, /^Not created: correct the 3 marked fields\. \(request req_[^)]+\)$/);
    assert.not.ok((await page.content()).includes("must match"));
    await assertAccessible(page, "instance field errors");

    await form.getByLabel("Instance name").fill("s4-prod-main");
    await form.getByLabel("SAP client").fill("100");
    await form.getByLabel("Service paths").fill("SALES = sap/sales");
    await form.getByRole("button", { name: "Create instance" }).click();
    await page.getByRole("status").getByText("Instance s4-prod-main created.").waitFor();
    assert.is(await page.getByRole("alert").count(), 0);
    assert.is(await page.locator("[aria-invalid='true']").count(), 0);
  });

  test("a taken instance name names the system that has it", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: "New instance" }).click();
    const form = page.getByRole("form", { name: "New instance of s4-prod" });
    await form.getByLabel("Instance name").fill("main");
    await form.getByLabel("Base URL").fill(ctx.backendUrl);
    await form.getByRole("button", { name: "Create instance" }).click();
    await form.locator("#instance-name-error").getByText("Already used by an instance of system s4-qa.").waitFor();
    assert.match(
      (await form.getByRole("alert").textContent())!,
      /^Not created: another instance already has the name main, in system s4-qa\. Instance names are unique across all systems, because API keys and \/odata\/main\/… address an instance by its name: choose another name\. \(request req_[^)]+\)$/,
    );
    assert.is(await form.getByLabel("Instance name").getAttribute("aria-invalid"), "true");
    // What was typed is not saved: Cancel asks before dropping it.
    await form.getByRole("button", { name: "Cancel" }).click();
    await page.getByRole("dialog", { name: "Unsaved changes" }).getByRole("button", { name: "Discard changes" }).click();
  });

  test("connection test: a 404 at the root without a service is explained; an old result goes when the instance changes", async () => {
    const { page } = ctx;
    await page.getByRole("button", { name: "Test connection of s4-prod-main" }).click();
    const panel = page.getByRole("region", { name: "Connection test of s4-prod-main" });
    // The instance has a service: the field starts with it. Emptied, the root is tested.
    await panel.getByLabel("Service to test (optional)").fill("");
    await panel.getByRole("button", { name: "Run test" }).click();
    await panel.getByText(/HTTP 404/).first().waitFor();
    await panel
      .getByText(
        "HTTP 404 at the base URL does not mean it is wrong: many OData back ends (SAP Gateway among them) have nothing at their root. Name a service above, such as API_BUSINESS_PARTNER, and run the test again: erplink then fetches that service's $metadata.",
      )
      .waitFor();
    await assertAccessible(page, "connection test 404");
    // The instance changes (here, its environment): the old result is not shown for the new version.
    await page.getByRole("button", { name: "Edit instance s4-prod-main" }).click();
    await page.getByLabel("Environment").fill("production");
    await page.getByRole("button", { name: "Save instance" }).click();
    await page.getByRole("status").getByText("Instance s4-prod-main saved.").waitFor();
    await panel.waitFor();
    assert.is(await panel.getByText(/HTTP 404/).count(), 0);
    assert.is(await panel.getByRole("list", { name: "Steps" }).count(), 0);
    // With a service, its $metadata is fetched: no hint.
    await panel.getByLabel("Service to test (optional)").fill("API_X");
    await panel.getByRole("button", { name: "Run test" }).click();
    await panel.getByText(/^Connection OK in \d+ ms/).waitFor();
    assert.is(await panel.getByText(/does not mean it is wrong/).count(), 0);
  });

  test("API key form: an expiry in the past and a bad rate limit are refused beside their fields, before anything is sent", async () => {
    const { page } = ctx;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
    await page.getByRole("button", { name: "New API key" }).click();
    const form = page.getByRole("form", { name: "New API key" });
    await form.getByLabel("Name").fill("reporting");
    await form.getByLabel("Type").selectOption("admin");
    await form.getByLabel("Requests per minute").fill("1.5");
    await form.getByLabel("Expires at (UTC)").fill("2020-01-31T10:00");
    let posted = 0;
    const count = (r: { method(): string; url(): string }) => {
      if (r.method() === "POST" && r.url().endsWith("/admin/api-keys")) posted++;
    };
    page.on("request", count);
    await form.getByRole("button", { name: "Create key" }).click();
    await form.locator("#new-key-per-minute-error").waitFor();
    assert.is(await form.locator("#new-key-per-minute-error").textContent(), "Write a whole number above 0, or leave it empty for the default.");
    assert.is(await form.getByLabel("Requests per minute").getAttribute("aria-describedby"), "new-key-limits-help new-key-per-minute-error");
    await form.getByLabel("Requests per minute").fill("60");
    await form.getByRole("button", { name: "Create key" }).click();
    await form.locator("#new-key-expires-error").waitFor();
    assert.is(
      await form.locator("#new-key-expires-error").textContent(),
      "This moment has already passed: choose a time in the future, or leave it empty so that the key never expires.",
    );
    assert.is(await form.getByLabel("Expires at (UTC)").getAttribute("aria-invalid"), "true");
    assert.is(await form.getByLabel("Requests per minute").getAttribute("aria-invalid"), null);
    assert.is(await page.getByRole("alert").textContent(), "Not created: correct the marked field.");
    assert.is(posted, 0);
    await assertAccessible(page, "key form errors");
    await form.getByLabel("Expires at (UTC)").fill("2099-01-31T10:00");
    await form.getByRole("button", { name: "Create key" }).click();
    const dialog = page.getByRole("dialog", { name: "Key reporting created" });
    await dialog.waitFor();
    page.off("request", count);
    assert.is(posted, 1);
    assert.is(await page.getByRole("alert").count(), 0);
    await dialog.getByRole("button", { name: "Close" }).click();
    await page.getByRole("dialog", { name: "Close without the secret?" }).getByRole("button", { name: "Close, I stored it" }).click();
    await dialog.waitFor({ state: "hidden" });
  });
}

test.run();
