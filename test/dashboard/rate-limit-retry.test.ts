/**
 * The dashboard under its session's admin budget, in a real browser against
 * a real erplink whose sessions get 20 calls a minute
 * (ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE=20): once the budget is spent, a
 * change is refused with the wait in words and is not sent again by
 * itself, while the page's reads wait out erplink's `Retry-After` under a
 * "erplink is busy: retrying in N s" countdown and then show their data.
 * The test spends the budget some 11 s before a UTC minute ends (the
 * minute window's end), so it waits up to a minute for that moment.
 * Skipped with one line when no Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page, Response } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminAnswer, adminCall, browserAvailable, launchBrowser, screenshot } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const NAME = "dashboard: a spent session budget";
const test = suite(NAME);

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}
const ctx = {} as Ctx;

/** Waits until 9 to 13 s remain in the current UTC minute. */
async function nearMinuteEnd(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  const wait = left >= 9_000 ? Math.max(0, left - 13_000) : left + 47_000;
  await new Promise((r) => setTimeout(r, wait));
}

/** Calls from the page itself (its cookie and CSRF token) until erplink refuses one with 429; returns how many passed. */
function spendSessionBudget(page: Page): Promise<number> {
  return page.evaluate(`(async () => {
    const csrf = document.cookie.split("; ").find((c) => c.startsWith("__Host-erplink_csrf="))?.split("=")[1] ?? "";
    for (let passed = 0; passed < 100; passed++) {
      const res = await fetch("/admin/sessions?page_size=1", { headers: { "x-csrf-token": csrf }, credentials: "same-origin" });
      if (res.status === 429) return passed;
    }
    return -1;
  })()`) as Promise<number>;
}

if (browserAvailable(NAME)) {
  test.before(async () => {
    try {
      ctx.erplink = await startErplink({ ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE: "20" });
      assert.is((await adminCall(ctx.erplink, "POST", "/admin/systems", { name: "s4-prod", description: "Production" })).status, 201);
      ctx.browser = await launchBrowser();
      ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 } });
      ctx.page = await ctx.context.newPage();
      await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/systems`);
      await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
      await ctx.page.getByRole("button", { name: "Sign in" }).click();
      await ctx.page.getByRole("row", { name: /s4-prod/ }).waitFor();
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

  test("with the session's budget spent: a change says how long to wait and is sent once; the reads count down 'erplink is busy: retrying in N s', then show the data", async () => {
    const { page } = ctx;
    await nearMinuteEnd();
    const passed = await spendSessionBudget(page);
    assert.ok(passed >= 0 && passed <= 20, `calls that passed before the 429: ${passed}`);

    // A change: refused, in words, with erplink's wait; not sent again by itself.
    const posts: Response[] = [];
    page.on("response", (r) => {
      if (r.request().method() === "POST" && new URL(r.url()).pathname === "/admin/systems") posts.push(r);
    });
    await page.getByLabel("Name").fill("s4-dev");
    const refusedPost = adminAnswer(page, "POST", "/admin/systems");
    await page.getByRole("button", { name: "Create system" }).click();
    const post = await refusedPost;
    assert.is(post.status(), 429);
    const postWait = post.headers()["retry-after"];
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.is(await alert.textContent(), `Too many changes at once: try again in ${postWait} s (request ${post.headers()["x-request-id"]})`);
    assert.is(await page.getByText(/^erplink is busy/).count(), 0, "a change does not wait to be retried");

    // The reads of a reload: each refused, each waits its Retry-After, counted down in one notice.
    const refusedReads: Response[] = [];
    const onRead = (r: Response) => {
      if (r.request().method() === "GET" && new URL(r.url()).pathname.startsWith("/admin/") && r.status() === 429) refusedReads.push(r);
    };
    page.on("response", onRead);
    const list = adminAnswer(page, "GET", "/admin/systems");
    await page.reload();
    const refusedList = await list;
    assert.is(refusedList.status(), 429);
    const retried = adminAnswer(page, "GET", "/admin/systems");
    const notice = page.getByRole("status").filter({ hasText: /^erplink is busy/ });
    await notice.waitFor();
    const longest = Math.max(...refusedReads.map((r) => Number(r.headers()["retry-after"])));
    assert.ok(longest >= 3 && longest <= 13, `Retry-After ${longest}`);
    const shown = (await notice.textContent()) ?? "";
    // The wait as erplink gave it, or a second less if the page has already counted one down.
    assert.ok([`erplink is busy: retrying in ${longest} s`, `erplink is busy: retrying in ${longest - 1} s`].includes(shown), shown);
    // Counting down, second by second.
    await page.getByText(`erplink is busy: retrying in ${longest - 2} s`, { exact: true }).waitFor();
    await screenshot(page, "dashboard-busy-retrying");

    // Past the minute: the retry is answered, the data shown, the notice gone.
    const answer = await retried;
    assert.is(answer.status(), 200);
    await page.getByRole("row", { name: /s4-prod/ }).waitFor();
    await notice.waitFor({ state: "detached" });
    assert.is(await page.getByText(/^erplink is busy/).count(), 0);
    page.off("response", onRead);

    // The change was sent once, and only the first system exists.
    assert.is(posts.length, 1);
    const stored = await adminCall(ctx.erplink, "GET", "/admin/systems");
    assert.equal(stored.body.data.map((s: { name: string }) => s.name), ["s4-prod"]);
  });

  test.run();
}
