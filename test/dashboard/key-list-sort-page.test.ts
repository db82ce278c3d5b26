/**
 * The API keys list sorts by a column (a header button; again: the other
 * way; `aria-sort` says which) and pages long lists (50 a page, the page's
 * place in words, Previous and Next, a page size), in a real browser; a
 * search starts again at the first page. Skipped with one line when no
 * Chromium is installed (fails under CI).
 */
import type { Browser, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: the key list sorts and pages");

const ctx = {} as { erplink: RunningErplink; browser: Browser; page: Page };

/** The names in the list's rows, top to bottom. */
const names = (page: Page) => page.locator(".api-keys table tbody th[scope=row]").allTextContents();

if (browserAvailable("dashboard key list suite")) {
  test.before(async () => {
    ctx.erplink = await startErplink({ ERPLINK_ADMIN_RATE_PER_MINUTE: "1000" });
    // 60 keys, created in an order that is not their names' order; one expires, the others do not.
    for (let i = 0; i < 60; i++) {
      const n = String((i * 37) % 60).padStart(2, "0");
      const res = await adminCall(ctx.erplink, "POST", "/admin/api-keys", {
        name: `key ${n}`,
        type: "admin",
        ...(n === "42" ? { expires_at: "2099-01-01T00:00:00Z" } : {}),
      });
      assert.is(res.status, 201, JSON.stringify(res.body));
    }
    ctx.browser = await launchBrowser();
    ctx.page = await (await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    ctx.page.setDefaultTimeout(8000);
    await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys`);
    await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
    await ctx.page.getByRole("button", { name: "Sign in" }).click();
    await ctx.page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
  });
  test.after(async () => {
    await ctx.browser?.close();
    await ctx.erplink?.close();
  });

  test("60 keys come in pages of 50, in creation order until a column is chosen", async () => {
    const { page } = ctx;
    const pager = page.getByRole("navigation", { name: "Pages of keys" });
    await pager.getByText("1–50 of 60 keys, page 1 of 2").waitFor();
    assert.is((await names(page)).length, 50);
    assert.equal((await names(page)).slice(0, 3), ["key 00", "key 37", "key 14"]);
    assert.ok(await pager.getByRole("button", { name: "Previous page" }).isDisabled());
    await pager.getByRole("button", { name: "Next page" }).click();
    await pager.getByText("51–60 of 60 keys, page 2 of 2").waitFor();
    assert.is((await names(page)).length, 10);
    assert.ok(await pager.getByRole("button", { name: "Next page" }).isDisabled());
    await pager.getByLabel("Keys per page").selectOption("25");
    await pager.getByText("1–25 of 60 keys, page 1 of 3").waitFor();
    await pager.getByLabel("Keys per page").selectOption("50");
    await assertAccessible(page, "key list pages");
  });

  test("a header sorts by its column, again the other way; a key that never expires sorts last", async () => {
    const { page } = ctx;
    const nameHeader = page.getByRole("columnheader", { name: "Name" });
    await page.getByRole("button", { name: "Sort by name" }).click();
    assert.is(await nameHeader.getAttribute("aria-sort"), "ascending");
    assert.equal((await names(page)).slice(0, 3), ["key 00", "key 01", "key 02"]);
    await page.getByRole("button", { name: "Sort by name, descending" }).click();
    assert.is(await nameHeader.getAttribute("aria-sort"), "descending");
    assert.equal((await names(page)).slice(0, 3), ["key 59", "key 58", "key 57"]);
    await page.getByRole("button", { name: "Sort by expires" }).click();
    assert.is(await nameHeader.getAttribute("aria-sort"), null);
    assert.is(await page.getByRole("columnheader", { name: "Expires" }).getAttribute("aria-sort"), "ascending");
    assert.is((await names(page))[0], "key 42");
  });

  test("a search starts again at the first page and counts what matches", async () => {
    const { page } = ctx;
    const pager = page.getByRole("navigation", { name: "Pages of keys" });
    await pager.getByRole("button", { name: "Next page" }).click();
    await pager.getByText("51–60 of 60 keys, page 2 of 2").waitFor();
    await page.getByLabel("Search keys").fill("key 1");
    await page.getByText("10 of 60 keys match “key 1”").waitFor();
    assert.is((await names(page)).length, 10);
    assert.is(await pager.count(), 0, "ten keys fit on one page: no pager");
  });
}

test.run();
