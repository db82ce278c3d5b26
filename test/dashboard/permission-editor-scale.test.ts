/**
 * The permission editor at scale, in a real browser against a loopback back
 * end whose services have 300 and 10,000 entity sets
 * (test-support/wide-odata-backend.ts):
 *
 * - a large key's instance and service start collapsed, expand and collapse
 *   again; the rows are virtualized (only some are in the page); the JSON view
 *   starts closed and, opened, shows the key exactly;
 * - the filter narrows the rows to the entity sets whose name contains it;
 * - the matrix view: one click selects a whole column (of the filtered rows)
 *   or a whole row, headers show "mixed", the arrow keys and Space work, and
 *   the saved permissions (read back through the admin API) are exactly those;
 * - a 10,000-set document pasted into the JSON view is saved exactly;
 * - axe-core finds nothing serious, and the page reports no
 *   Content-Security-Policy violation (the virtualized rows are placed
 *   through the CSSOM, which the policy allows).
 *
 * Skipped with one line when no Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser, screenshot } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { startWideBackend, wideSetName, wideSetNames, type WideBackend } from "../../test-support/wide-odata-backend.js";

const test = suite("dashboard: the permission editor at 300 and 10,000 entity sets");

interface Ctx {
  erplink: RunningErplink;
  backend: WideBackend;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}
const ctx = {} as Ctx;
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);
type Doc = Record<string, Record<string, Record<string, string[]>>>;

/** Every entity set of the service `W<n>` of instance `wide`, each with `ops(i)` (i from 1). */
const wideDoc = (n: number, ops: (i: number) => string[]): Doc => ({ wide: { [`W${n}`]: Object.fromEntries(wideSetNames(n).map((name, i) => [name, ops(i + 1)])) } });

/** The Content-Security-Policy violations the page reported since it loaded (listened for before any script of the page runs). */
const violations = (page: Page) => page.evaluate("globalThis.__cspViolations ?? []") as Promise<string[]>;

async function openEditor(name: string, permissions: Doc) {
  const created = await admin("POST", "/admin/api-keys", { name, permissions });
  assert.is(created.status, 201, JSON.stringify(created.body).slice(0, 500));
  await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys/${created.body.data.id}`);
  const form = ctx.page.getByRole("form", { name: `Edit key ${name}` });
  await form.waitFor();
  return { id: created.body.data.id as string, form };
}

const saved = async (id: string) => (await admin("GET", `/admin/api-keys/${id}`)).body.data.permissions;

if (browserAvailable("dashboard permission editor scale suite")) {
  test.before(async () => {
    try {
      ctx.backend = await startWideBackend();
      ctx.erplink = await startErplink();
      const sys = await admin("POST", "/admin/systems", { name: "wide" });
      assert.is(sys.status, 201);
      const ins = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
        name: "wide",
        base_url: ctx.backend.baseUrl,
        services: { W300: { path: "wide300" }, W10000: { path: "wide10000" } },
      });
      assert.is(ins.status, 201, JSON.stringify(ins.body));
      ctx.browser = await launchBrowser();
      ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
      await ctx.context.addInitScript({
        content: `globalThis.__cspViolations = [];
          document.addEventListener("securitypolicyviolation", (e) => globalThis.__cspViolations.push(e.effectiveDirective + " " + e.blockedURI));`,
      });
      ctx.page = await ctx.context.newPage();
      ctx.page.setDefaultTimeout(15_000);
      await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys`);
      await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
      await ctx.page.getByRole("button", { name: "Sign in" }).click();
      await ctx.page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
    } catch (err) {
      console.error("before:", err);
      throw err;
    }
  });
  test.after(async () => {
    await ctx.context?.close();
    await ctx.browser?.close();
    await ctx.erplink?.close();
    await ctx.backend?.close();
  });

  test("a large key starts collapsed, expands and collapses; its rows are virtualized; the filter narrows them; the JSON view opens on the exact key; no CSP violation", async () => {
    const permissions = wideDoc(300, (i) => (i % 3 === 0 ? ["list", "get"] : ["list"]));
    const { form } = await openEditor("wide reader", permissions);
    const { page } = ctx;
    const expandInstance = form.getByRole("button", { name: "Expand instance wide" });
    assert.is(await expandInstance.getAttribute("aria-expanded"), "false");
    await form.getByText("Collapsed: 1 service, 300 entries.").waitFor();
    assert.is(await form.getByRole("group", { name: /^Service W300/ }).count(), 0, "a collapsed instance shows no service");
    await expandInstance.click();
    await form.getByText("300 entity sets in $metadata").waitFor();
    await form.getByText("Collapsed: 300 entity sets and 0 granted operations.").waitFor();
    const expandService = form.getByRole("button", { name: "Expand service W300 of wide" });
    assert.is(await expandService.getAttribute("aria-expanded"), "false");
    await expandService.click();
    const row = (entity: string) => form.getByRole("group", { name: `Entity set ${entity} in W300 of wide` });
    await row("Set00001").waitFor();
    assert.ok(await row("Set00003").getByLabel("get").isChecked());
    assert.not.ok(await row("Set00002").getByLabel("get").isChecked());
    const rendered = await form.locator(".perm-row").count();
    assert.ok(rendered > 5 && rendered < 60, `only the rows in view are in the page: ${rendered}`);
    assert.is(await form.getByRole("button", { name: "Collapse service W300 of wide" }).getAttribute("aria-expanded"), "true");

    // The filter: any case, a part of the name; the rest of the rows go.
    await form.getByLabel("Filter entity sets").fill("set0012");
    await form.getByText("10 of 300 entity sets match the filter.").waitFor();
    const legends = await form.locator(".perm-row legend").evaluateAll((ls) => ls.map((l) => (l as unknown as { textContent: string }).textContent));
    assert.equal(legends, Array.from({ length: 10 }, (_, i) => `Entity set Set0012${i} in W300 of wide`));
    // Toggling a filtered row changes that entry only.
    await row("Set00125").getByLabel("update").check();
    await assertAccessible(page, "large key, expanded and filtered");
    await screenshot(page, "permission-editor-filtered");
    await form.getByLabel("Filter entity sets").fill("no such set");
    await form.getByText("0 of 300 entity sets match the filter.").waitFor();
    assert.is(await form.locator(".perm-row").count(), 0);
    await form.getByLabel("Filter entity sets").fill("");
    await row("Set00001").waitFor();

    // Collapsed again, the service's rows leave the page; expanded, they come back as they were.
    await form.getByRole("button", { name: "Collapse service W300 of wide" }).click();
    await form.getByText("Collapsed: 300 entity sets and 0 granted operations.").waitFor();
    assert.is(await form.locator(".perm-row").count(), 0);
    await form.getByRole("button", { name: "Expand service W300 of wide" }).click();
    await row("Set00001").waitFor();
    // Rows far down are rendered once scrolled to.
    await form.locator(".perm-rows").evaluate((el) => ((el as unknown as { scrollTop: number }).scrollTop = 1e9));
    await row("Set00300").waitFor();
    assert.ok(await row("Set00300").getByLabel("get").isChecked());
    assert.is(await row("Set00001").count(), 0, "the first rows left the page");

    // The JSON view starts closed for a large key; opened, it is the key with the one change.
    assert.is(await form.getByLabel("Permissions as JSON").count(), 0);
    await form.getByRole("button", { name: "Show JSON" }).click();
    const expected = structuredClone(permissions);
    expected.wide!.W300!.Set00125 = ["list", "update"];
    assert.equal(JSON.parse(await form.getByLabel("Permissions as JSON").inputValue()), expected);
    await form.getByText("In sync with the tree.").waitFor();
    await assertAccessible(page, "large key, JSON view open");
    assert.equal(await violations(page), [], "no Content-Security-Policy violation");

    // The listener does hear a violation when there is one: a style attribute written into the page.
    await page.evaluate("document.body.setAttribute('style', 'outline: 1px solid red')");
    await page.waitForFunction("(globalThis.__cspViolations ?? []).length > 0");
    assert.equal(await violations(page), ["style-src-attr inline"]);
  });

  test("matrix view: one click selects a column of the filtered rows or a whole row; headers show mixed; arrow keys and Space work; exactly that is saved", async () => {
    const permissions = wideDoc(300, () => ["list"]);
    // An entity set's entry may also hold invoke: the matrix keeps it.
    permissions.wide!.W300!.Set00001 = ["list", "invoke"];
    const { id, form } = await openEditor("matrix", permissions);
    const { page } = ctx;
    await form.getByRole("button", { name: "Expand instance wide" }).click();
    await form.getByRole("button", { name: "Expand service W300 of wide" }).click();
    await form.getByRole("button", { name: "Matrix view of W300 on wide" }).click();
    assert.is(await form.getByRole("button", { name: "Matrix view of W300 on wide" }).getAttribute("aria-pressed"), "true");
    const matrix = form.getByRole("table", { name: "Operations on the entity sets of W300 on wide" });
    await matrix.waitFor();
    const headers = await matrix.locator("thead th").evaluateAll((hs) => hs.map((h) => [(h as unknown as { scope: string }).scope, (h as unknown as { textContent: string }).textContent!.trim()]));
    assert.equal(headers, [["col", "Entity set"], ["col", "all"], ["col", "list"], ["col", "get"], ["col", "create"], ["col", "update"], ["col", "delete"]]);
    assert.is(await matrix.getAttribute("aria-rowcount"), "301");
    const rendered = await matrix.locator("tbody tr:not(.perm-spacer)").count();
    assert.ok(rendered > 5 && rendered < 80, `only the rows in view are in the page: ${rendered}`);
    assert.ok(await matrix.getByRole("checkbox", { name: "list, every entity set" }).isChecked());

    // A column, for the rows the filter shows (Set00100 … Set00199).
    await form.getByLabel("Filter entity sets").fill("Set001");
    const filtered = form.getByRole("table", { name: "Operations on the entity sets of W300 on wide (100 shown by the filter)" });
    await filtered.waitFor();
    await filtered.getByRole("checkbox", { name: "create, every entity set shown" }).check();
    assert.ok(await filtered.getByRole("checkbox", { name: "create Set00110" }).isChecked());
    await form.getByLabel("Filter entity sets").fill("");
    await matrix.waitFor();
    const createColumn = matrix.getByRole("checkbox", { name: "create, every entity set" });
    assert.is(await createColumn.evaluate((c) => [(c as unknown as { checked: boolean }).checked, (c as unknown as { indeterminate: boolean }).indeterminate].join()), "false,true", "100 of 300: mixed");
    assert.not.ok(await matrix.getByRole("checkbox", { name: "create Set00001" }).isChecked());

    // A whole row.
    const rowBox = matrix.getByRole("checkbox", { name: "Every operation of Set00001" });
    await rowBox.check();
    for (const op of ["list", "get", "create", "update", "delete"]) assert.ok(await matrix.getByRole("checkbox", { name: `${op} Set00001` }).isChecked(), op);

    // The keyboard: arrows move between the checkboxes, Space toggles.
    await matrix.getByRole("checkbox", { name: "list Set00002" }).focus();
    await page.keyboard.press("ArrowRight");
    assert.is(await page.evaluate("document.activeElement.getAttribute('aria-label')"), "get Set00002");
    await page.keyboard.press("Space");
    await page.keyboard.press("ArrowDown");
    assert.is(await page.evaluate("document.activeElement.getAttribute('aria-label')"), "get Set00003");
    assert.ok(await matrix.getByRole("checkbox", { name: "get Set00002" }).isChecked());
    // Partly granted, Set00002's row checkbox is mixed.
    assert.is(await matrix.getByRole("checkbox", { name: "Every operation of Set00002" }).evaluate((c) => (c as unknown as { indeterminate: boolean }).indeterminate), true);
    await assertAccessible(page, "matrix view");
    await screenshot(page, "permission-matrix");
    assert.equal(await violations(page), [], "no Content-Security-Policy violation");

    const expected = structuredClone(permissions);
    for (let i = 100; i <= 199; i++) expected.wide!.W300![wideSetName(i)] = ["list", "create"];
    expected.wide!.W300!.Set00001 = ["list", "get", "create", "update", "delete", "invoke"];
    expected.wide!.W300!.Set00002 = ["list", "get"];
    await form.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("status").getByText("Key matrix saved.").waitFor();
    assert.equal(await saved(id), expected);
  });

  test("a 10,000-set document pasted into the JSON view shows in the tree and is saved exactly", async () => {
    const { id, form } = await openEditor("pasted", { wide: { W10000: { Set00001: ["get"] } } });
    const { page } = ctx;
    const ops = [["list"], ["list", "get"], ["get", "update", "invoke"], ["list", "get", "create", "update", "delete"]];
    const doc = wideDoc(10_000, (i) => ops[i % 4]!);
    // Pasted: the whole text replaced in one input event.
    await form.getByLabel("Permissions as JSON").evaluate((t, text) => {
      const area = t as unknown as { value: string; dispatchEvent(e: unknown): boolean };
      area.value = text;
      area.dispatchEvent(new (globalThis as unknown as { InputEvent: new (type: string, init: object) => unknown }).InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
    }, JSON.stringify(doc, null, 2));
    await form.getByText("Collapsed: 1 service, 10000 entries.").waitFor();
    await form.getByText("In sync with the tree.").waitFor();
    await form.getByRole("button", { name: "Expand instance wide" }).click();
    await form.getByText("10000 entity sets in $metadata").waitFor();
    await form.getByRole("button", { name: "Expand service W10000 of wide" }).click();
    await form.getByLabel("Filter entity sets").fill("Set09998");
    const last = form.getByRole("group", { name: "Entity set Set09998 in W10000 of wide" });
    await last.getByText("Also granted, kept as it is: invoke.").waitFor();
    assert.equal(
      await last.getByRole("checkbox").evaluateAll((cs) => cs.map((c) => (c as unknown as { checked: boolean }).checked)),
      [false, true, false, true, false],
    );
    await form.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("status").getByText("Key pasted saved.").waitFor();
    assert.equal(await saved(id), doc);
    assert.equal(await violations(page), [], "no Content-Security-Policy violation");
  });
}

test.run();
