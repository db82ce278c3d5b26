/**
 * Two dashboard flows end to end in a real browser:
 * 1. against the real SAP CAP test back end (test-support/cap): create a
 *    system and an instance with CAP's basic credentials, Test connection
 *    passes step by step, then a data key whose entity set is picked from
 *    the catalog CAP's `$metadata` offers; the key works on `/odata` (and
 *    only for what it was given).
 * 2. a session that expires by time (its absolute expiry, set in the past in
 *    the store of the running erplink) sends the open page back to sign-in
 *    with the server's message, once the session cache re-reads it
 *    (`ERPLINK_KEY_SYNC_MS`).
 * axe-core and screenshots as the other suites. Skipped with one line when
 * no Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser, screenshot } from "../../test-support/browser.js";
import { startCapBackend, type CapBackend } from "../../test-support/cap/index.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}

const admin = adminCall;

async function openSignedIn(ctx: Ctx, path: string): Promise<void> {
  ctx.browser = await launchBrowser();
  ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
  ctx.page = await ctx.context.newPage();
  ctx.page.setDefaultTimeout(15_000);
  await ctx.page.goto(`${ctx.erplink.baseUrl}${path}`);
  await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
  await ctx.page.getByRole("button", { name: "Sign in" }).click();
  await ctx.page.getByRole("navigation", { name: "Main" }).waitFor();
}

async function closeAll(ctx: Partial<Ctx>): Promise<void> {
  await ctx.context?.close();
  await ctx.browser?.close();
  await ctx.erplink?.close();
}

// ---------------------------------------------------------------------------
// 1. An instance against SAP CAP, a key from its catalog.

const cap = suite("dashboard flows: an instance against SAP CAP");
const capCtx = {} as Ctx & { cap: CapBackend; secret: string; refusedMessage: string };
const BP_SERVICE = "API_BUSINESS_PARTNER";

if (browserAvailable("dashboard flows suite (CAP)")) {
  cap.before(async () => {
    capCtx.cap = await startCapBackend();
    capCtx.erplink = await startErplink();
    await openSignedIn(capCtx, "/dashboard/systems");
  });
  cap.after(async () => {
    await closeAll(capCtx);
    await capCtx.cap?.stop();
  });

  cap("create a system and an instance pointing at CAP with its credentials", async () => {
    const { page, cap: backend } = capCtx;
    await page.getByRole("heading", { name: "Systems", level: 1 }).waitFor();
    await page.getByLabel("Name").fill("cap");
    await page.getByLabel("Description").fill("SAP CAP test back end");
    await page.getByRole("button", { name: "Create system" }).click();
    await page.getByRole("status").getByText("System cap created.").waitFor();

    await page.getByRole("button", { name: "Instances of cap" }).click();
    await page.getByRole("heading", { name: "Instances of cap" }).waitFor();
    await page.getByRole("button", { name: "New instance" }).click();
    await page.getByLabel("Instance name").fill("cap-dev");
    await page.getByLabel("Environment").fill("development");
    await page.getByLabel("Base URL").fill(`${backend.baseUrl}/odata/v4/`);
    await page.getByLabel("Service paths").fill(`${BP_SERVICE} = api-business-partner\nAPI_NOTES = api-notes`);
    await page.getByLabel("Credentials", { exact: true }).selectOption("basic");
    await page.getByLabel("User name").fill(backend.credentials.username);
    await page.getByLabel("Password").fill(backend.credentials.password);
    await page.getByRole("button", { name: "Create instance" }).click();
    await page.getByRole("status").getByText("Instance cap-dev created.").waitFor();

    const sys = (await admin(capCtx.erplink, "GET", "/admin/systems")).body.data[0];
    const stored = await admin(capCtx.erplink, "GET", `/admin/systems/${sys.id}/instances`);
    assert.equal(
      stored.body.data.map((i: any) => [i.name, i.base_url, i.services, i.sap_client, i.auth]),
      [
        [
          "cap-dev",
          `${backend.baseUrl}/odata/v4/`,
          { [BP_SERVICE]: { path: "api-business-partner" }, API_NOTES: { path: "api-notes" } },
          "",
          { type: "basic", username: backend.credentials.username },
        ],
      ],
    );
  });

  cap("Test connection passes against CAP, every step shown", async () => {
    const { page } = capCtx;
    await page.getByRole("button", { name: "Test connection of cap-dev" }).click();
    await page.getByRole("heading", { name: "Connection test of cap-dev" }).waitFor();
    assert.is(await page.getByLabel("Service to test (optional)").inputValue(), BP_SERVICE);
    await page.getByRole("button", { name: "Run test" }).click();
    await page.getByText(/^Connection OK in \d+ ms \(OData 4\.0\)\.$/).waitFor();
    const steps = await page.getByRole("list", { name: "Steps" }).getByRole("listitem").allTextContents();
    assert.equal(
      steps.map((s) => s.split(" (")[0]),
      ["dns: passed", "tcp: passed", "http: passed", "odata_version: passed", "csrf: passed"],
      JSON.stringify(steps),
    );
    assert.not.ok((await page.content()).includes(capCtx.cap.credentials.password), "the page holds CAP's password");
    await assertAccessible(page, "instance against CAP");
    await screenshot(page, "flows-cap-connection-test");
  });

  cap("a data key with an entity set picked from CAP's catalog works on /odata, and only there", async () => {
    const { page, erplink } = capCtx;
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
    await page.getByRole("button", { name: "New API key" }).click();
    const form = page.getByRole("form", { name: "New API key" });
    await form.getByLabel("Name").fill("cap reader");
    await form.getByLabel("Add instance").fill("cap-dev");
    await form.getByRole("button", { name: "Add instance" }).click();
    await form.getByLabel("Add service to cap-dev").fill(BP_SERVICE);
    await form.getByRole("button", { name: "Add service" }).click();
    // The editor offers the entity sets of CAP's $metadata, as the catalog endpoint reads them.
    const sys = (await admin(erplink, "GET", "/admin/systems")).body.data[0];
    const instanceId = (await admin(erplink, "GET", `/admin/systems/${sys.id}/instances`)).body.data[0].id;
    const catalog = await admin(erplink, "GET", `/admin/instances/${instanceId}/services/${BP_SERVICE}/catalog`);
    assert.is(catalog.status, 200, JSON.stringify(catalog.body));
    const sets: string[] = catalog.body.data.entity_sets.map((e: any) => e.name);
    assert.ok(sets.includes("A_BusinessPartner") && sets.includes("A_BusinessPartnerAddress"), sets.join());
    await form.getByText(`${sets.length} entity sets in $metadata`).waitFor();
    const offered = await form
      .locator("datalist[id^='new-perm-sets'] option")
      .evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
    assert.equal(offered, ["*", ...sets]);
    await form.getByLabel(`Add entity set to ${BP_SERVICE} on cap-dev`).fill("A_BusinessPartner");
    await form.getByRole("button", { name: "Add entity set" }).click();
    const group = form.getByRole("group", { name: `Entity set A_BusinessPartner in ${BP_SERVICE} of cap-dev` });
    assert.ok(await group.getByLabel("list").isChecked());
    assert.ok(await group.getByLabel("get").isChecked());
    assert.equal(JSON.parse(await form.getByLabel("Permissions as JSON").inputValue()), {
      "cap-dev": { [BP_SERVICE]: { A_BusinessPartner: ["list", "get"] } },
    });
    await assertAccessible(page, "new key against CAP");
    await screenshot(page, "flows-cap-key");
    await form.getByRole("button", { name: "Create key" }).click();
    const dialog = page.getByRole("dialog", { name: "Key cap reader created" });
    await dialog.waitFor();
    const secret = await dialog.getByLabel("Secret").inputValue();
    assert.match(secret, /^erpl_[A-Za-z0-9]{49}$/);
    capCtx.secret = secret;
    await dialog.getByRole("button", { name: "Close" }).click();
    await page.getByRole("dialog", { name: "Close without the secret?" }).getByRole("button", { name: "Close, I stored it" }).click();
    await dialog.waitFor({ state: "hidden" });
    await page.getByRole("row", { name: /cap reader/ }).waitFor();

    // The key reads CAP's business partners through erplink...
    const bearer = { authorization: `Bearer ${secret}` };
    const list = await fetch(`${erplink.baseUrl}/odata/cap-dev/${BP_SERVICE}/A_BusinessPartner?$top=2&$select=BusinessPartner`, { headers: bearer });
    const listBody = (await list.json()) as any;
    assert.is(list.status, 200, JSON.stringify(listBody));
    assert.is(listBody.value.length, 2, JSON.stringify(listBody));
    const first = listBody.value[0].BusinessPartner as string;
    const one = await fetch(`${erplink.baseUrl}/odata/cap-dev/${BP_SERVICE}/A_BusinessPartner('${first}')`, { headers: bearer });
    assert.is(one.status, 200);
    assert.is(((await one.json()) as any).BusinessPartner, first);
    // ...and nothing it was not given: another entity set, and a write.
    const addresses = await fetch(`${erplink.baseUrl}/odata/cap-dev/${BP_SERVICE}/A_BusinessPartnerAddress`, { headers: bearer });
    assert.is(addresses.status, 403);
    assert.is(((await addresses.json()) as any).error.message, "API key has no access to entity 'A_BusinessPartnerAddress'");
    const write = await fetch(`${erplink.baseUrl}/odata/cap-dev/${BP_SERVICE}/A_BusinessPartner('${first}')`, {
      method: "PATCH",
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ FirstName: "Mallory" }),
    });
    assert.is(write.status, 403);
    capCtx.refusedMessage = ((await write.json()) as any).error.message;
  });

  cap("Logs show the refused write with the message the client got; Audit shows the key's creation", async () => {
    const { page } = capCtx;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Logs" }).click();
    await page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
    await page.getByLabel("Method", { exact: true }).selectOption("PATCH");
    await page.getByLabel("Status", { exact: true }).fill("4xx");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/status=4xx/);
    // The request log is written in batches: reload until the entry is there.
    const details = page.getByRole("button", { name: /^Details of PATCH \/odata\/cap-dev\/API_BUSINESS_PARTNER\/A_BusinessPartner\(/ });
    for (let i = 0; i < 20 && (await details.count()) === 0; i++) {
      await new Promise((r) => setTimeout(r, 250));
      await page.reload();
      await page.getByRole("heading", { name: "Logs", level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
    }
    await details.click();
    const region = page.getByRole("region", { name: /^Entry log_/ });
    await region.waitFor();
    const text = (await region.textContent())!;
    for (const part of ["403 FORBIDDEN", `Message${capCtx.refusedMessage}`, "Denial stepOPERATION", "A_BusinessPartner: update", "(nothing sent)"]) {
      assert.ok(text.includes(part), `${part} in ${text}`);
    }
    assert.ok(!text.includes(capCtx.secret), "the key's secret is not in the entry");

    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit" }).click();
    await page.getByRole("heading", { name: "Audit", level: 1 }).waitFor();
    await page.getByRole("heading", { name: /^create API key cap reader \(key_/ }).waitFor();
    const created = (await page.getByRole("list", { name: /^Changes of key_/ }).first().textContent())!;
    assert.ok(created.includes("name: (none) → cap reader"), created);
    assert.ok(created.includes("key: (none) → [redacted]"), created);
    assert.ok(!(await page.content()).includes(capCtx.secret));
  });
}

cap.run();

// ---------------------------------------------------------------------------
// 2. A session expired by time returns the open page to sign-in.

const expiry = suite("dashboard flows: an expired session");
const expCtx = {} as Ctx;
/** The session cache's re-read interval for this erplink (ms). */
const KEY_SYNC_MS = 200;

if (browserAvailable("dashboard flows suite (expiry)")) {
  expiry.before(async () => {
    expCtx.erplink = await startErplink({ ERPLINK_KEY_SYNC_MS: String(KEY_SYNC_MS) });
    await openSignedIn(expCtx, "/dashboard/systems");
  });
  expiry.after(() => closeAll(expCtx));

  expiry("a session past its expiry returns to sign-in with the server's message", async () => {
    const { page, erplink } = expCtx;
    await page.getByRole("heading", { name: "Systems", level: 1 }).waitFor();
    const { body } = await admin(erplink, "GET", "/admin/sessions");
    assert.is(body.data.length, 1, JSON.stringify(body));
    const id = body.data[0].id as string;
    // Time passes: the session's absolute expiry is now behind it (in the
    // store, as another process or the clock would leave it).
    const stored = await erplink.erplink.store.sessions.get(id);
    assert.ok(stored !== undefined, "the browser's session is in the store");
    const past = new Date(Date.now() - 1000);
    await erplink.erplink.store.sessions.update(id, { expiresAt: past });
    // The page keeps working on its cached copy at most one sync interval;
    // after that any use re-reads the store. Wait that long (a lower bound
    // on elapsed time, whatever the load), then use the page.
    await new Promise((resolve) => setTimeout(resolve, KEY_SYNC_MS * 2));
    await page.getByRole("link", { name: "Audit" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.is(await page.getByRole("status").textContent(), "session expired: sign in again");
    // The expired session no longer lists, and the page is usable again.
    assert.equal((await admin(erplink, "GET", "/admin/sessions")).body.data, []);
    await assertAccessible(page, "sign-in after an expired session");
    await screenshot(page, "flows-session-expired");
    await page.getByLabel("Admin key").fill(erplink.masterKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    assert.is((await admin(erplink, "GET", "/admin/sessions")).body.data.length, 1);
  });
}

expiry.run();
