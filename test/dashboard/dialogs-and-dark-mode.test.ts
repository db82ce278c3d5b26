/**
 * The dashboard's frame in a real browser: confirmations in the page's own
 * modal dialog (focus kept inside, Escape cancels, the button names the
 * action), `/` to the current screen's search field, every screen free of
 * axe violations in light and dark, charts coloured from the scheme's CSS
 * variables with whole-number ticks for counts, and the page using its width
 * (the overview's tables never overlapping) from 1280 to 1920 px. Skipped
 * with one line when no Chromium is installed (fails under CI).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, assertAccessible, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: dialogs, shortcuts, dark mode, width");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}
const ctx = {} as Ctx;
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);
const LONG = "A_VeryLongEntitySetNameThatSAPLikesToUse_WithMoreWordsInIt_AndEvenMore";

if (browserAvailable("dashboard dialogs and dark mode suite")) {
  test.before(async () => {
    try {
      ctx.erplink = await startErplink();
      const sys = await admin("POST", "/admin/systems", { name: "s4", labels: { owner: "finance" } });
      assert.is((await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, { name: "s4-prod", base_url: "http://127.0.0.1:9/" })).status, 201);
      const key = await admin("POST", "/admin/api-keys", { name: "invoice app", permissions: { "s4-prod": { SALES: { [LONG]: ["list"] } } } });
      assert.is(key.status, 201);
      // A few data requests (refused or failed): small counts on the overview's chart, long names in its tables.
      for (let i = 0; i < 3; i++) {
        await fetch(`${ctx.erplink.baseUrl}/odata/s4-prod/SALES/${LONG}`, { headers: { authorization: `Bearer ${key.body.data.key}` } });
      }
      ctx.browser = await launchBrowser();
      ctx.context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
      ctx.page = await ctx.context.newPage();
      ctx.page.setDefaultTimeout(10_000);
      await ctx.page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
      await ctx.page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
      await ctx.page.getByRole("button", { name: "Sign in" }).click();
      await ctx.page.getByRole("navigation", { name: "Main" }).waitFor();
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

  test("a confirmation is a modal <dialog>: focus stays inside, Escape cancels, the button names the action", async () => {
    const { page } = ctx;
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/api-keys`);
    const revoke = page.getByRole("button", { name: "Revoke key invoice app" });
    await revoke.click();
    const dialog = page.getByRole("dialog", { name: "Revoke key invoice app?" });
    await dialog.waitFor();
    assert.ok((await page.evaluate("document.querySelector('dialog.confirm-dialog').matches(':modal')")) as boolean);
    assert.equal(await dialog.getByRole("button").allTextContents(), ["Cancel", "Revoke key"]);
    // The safe choice has the focus; Tab and Shift+Tab go round inside the dialog.
    const focused = () => page.evaluate("document.activeElement.textContent") as Promise<string>;
    assert.is(await focused(), "Cancel");
    await page.keyboard.press("Tab");
    assert.is(await focused(), "Revoke key");
    await page.keyboard.press("Tab");
    assert.is(await focused(), "Cancel");
    await page.keyboard.press("Shift+Tab");
    assert.is(await focused(), "Revoke key");
    await assertAccessible(page, "confirmation dialog");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    // Focus is back on the button that asked; nothing was revoked.
    assert.is(await page.evaluate("document.activeElement.getAttribute('aria-label')"), "Revoke key invoice app");
    assert.is((await admin("GET", "/admin/api-keys")).body.data.length, 1);
  });

  test("`/` focuses the screen's search or filter field, but not while typing in a field", async () => {
    const { page } = ctx;
    for (const [path, label] of [["api-keys", "Search keys"], ["systems", "Filter systems"], ["logs", "Search keys"], ["audit", "Actor"]] as const) {
      await page.goto(`${ctx.erplink.baseUrl}/dashboard/${path}`);
      await page.getByLabel(label, { exact: true }).waitFor();
      await page.locator("h1").click();
      await page.keyboard.press("/");
      assert.is(await page.evaluate("document.activeElement.id"), await page.getByLabel(label, { exact: true }).getAttribute("id"), path);
      assert.is(await page.getByLabel(label, { exact: true }).inputValue(), "", `${path}: the slash was not typed`);
    }
    // Typing a `/` in another field types it.
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/systems`);
    await page.getByLabel("Description").click();
    await page.keyboard.type("a/b");
    assert.is(await page.getByLabel("Description").inputValue(), "a/b");
  });

  const SCREENS: readonly { readonly path: string; readonly heading: string | RegExp; readonly open?: (page: Page) => Promise<void> }[] = [
    { path: "", heading: "Overview" },
    {
      path: "systems",
      heading: "Systems",
      open: async (page) => {
        await page.getByRole("button", { name: "Instances of s4" }).click();
        await page.getByRole("button", { name: "Edit instance s4-prod" }).click();
        await page.getByRole("button", { name: "Test connection of s4-prod" }).click();
      },
    },
    { path: "systems/", heading: "System s4" },
    {
      path: "api-keys",
      heading: "API keys",
      open: async (page) => {
        await page.getByRole("button", { name: "Edit key invoice app" }).click();
        await page.getByRole("heading", { name: "Edit key invoice app" }).waitFor();
      },
    },
    { path: "logs", heading: "Logs" },
    { path: "audit", heading: "Audit" },
    {
      path: "sessions",
      heading: "Sessions",
      open: async (page) => {
        await page.getByRole("button", { name: /^Revoke session / }).first().click();
        await page.getByRole("dialog").waitFor();
      },
    },
  ];

  test("every screen is free of axe violations in light and in dark mode; dark mode really is dark", async () => {
    const { page } = ctx;
    const sysId = (await admin("GET", "/admin/systems")).body.data[0].id;
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const screen of SCREENS) {
        await page.goto(`${ctx.erplink.baseUrl}/dashboard/${screen.path === "systems/" ? `systems/${sysId}` : screen.path}`);
        await page.getByRole("heading", { name: screen.heading, level: 1, exact: true }).waitFor();
        await page.waitForLoadState("networkidle");
        await screen.open?.(page);
        await assertAccessible(page, `${screen.path || "overview"} (${scheme})`);
      }
      const bg = (await page.evaluate("getComputedStyle(document.documentElement).backgroundColor")) as string;
      assert.is(bg, scheme === "dark" ? "rgb(20, 24, 29)" : "rgb(255, 255, 255)");
      await page.keyboard.press("Escape");
    }
    // Sign-in, signed out, in both.
    const signedOut = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const p = await signedOut.newPage();
      for (const scheme of ["light", "dark"] as const) {
        await p.emulateMedia({ colorScheme: scheme });
        await p.goto(`${ctx.erplink.baseUrl}/dashboard/`);
        await p.getByRole("button", { name: "Sign in" }).click();
        await p.getByRole("alert").waitFor();
        await assertAccessible(p, `sign-in (${scheme})`);
      }
    } finally {
      await signedOut.close();
    }
    await page.emulateMedia({ colorScheme: "light" });
  });

  test("charts take their colours from the scheme and count in whole numbers", async () => {
    const { page } = ctx;
    const strokeOf = async () => {
      await page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
      const chart = page.locator(".chart").first();
      await chart.locator("canvas").waitFor();
      await page.waitForFunction("document.querySelector('.chart').dataset.yTicks !== undefined");
      return {
        ticks: ((await chart.getAttribute("data-y-ticks")) ?? "").split(" ").map(Number),
        // The legend's marker of the first line shows the stroke uPlot was given.
        marker: (await page.evaluate("getComputedStyle(document.querySelector('.chart .u-series:nth-child(2) .u-marker')).borderColor")) as string,
      };
    };
    await page.emulateMedia({ colorScheme: "light" });
    const light = await strokeOf();
    assert.is(light.marker, "rgb(11, 92, 173)");
    assert.ok(light.ticks.length >= 2, JSON.stringify(light.ticks));
    for (const t of light.ticks) assert.ok(Number.isInteger(t), `tick ${t} of ${JSON.stringify(light.ticks)}`);
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = await strokeOf();
    assert.is(dark.marker, "rgb(122, 184, 255)");
    await page.emulateMedia({ colorScheme: "light" });
  });

  test("1280 to 1920 px: the page uses its width and the overview's top tables never overlap", async () => {
    const { page } = ctx;
    await page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
    // The refused requests never reached an entity set: the row reads "(no entity set: …)", the table's longest text.
    await page.getByRole("table", { name: "Top entity sets" }).getByText(/^\(no entity set/).waitFor();
    for (let width = 1280; width <= 1920; width += 64) {
      await page.setViewportSize({ width, height: 900 });
      const boxes = (await page.evaluate(`(() => {
        const box = (el) => { const r = el.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, overflow: el.scrollWidth - el.clientWidth }; };
        const tables = [...document.querySelectorAll(".overview-tables > table")];
        const byCaption = (c) => tables.find((t) => t.caption.textContent.startsWith(c));
        return { keys: box(byCaption("Top API keys")), sets: box(byCaption("Top entity sets")), main: box(document.querySelector("main")), page: document.documentElement.scrollWidth - document.documentElement.clientWidth };
      })()`)) as Record<string, { left: number; right: number; top: number; bottom: number; overflow: number }> & { page: number };
      const { keys, sets, main } = boxes;
      const overlap = keys.left < sets.right && sets.left < keys.right && keys.top < sets.bottom && sets.top < keys.bottom;
      assert.not.ok(overlap, `${width} px: ${JSON.stringify(boxes)}`);
      assert.ok(keys.overflow <= 0 && sets.overflow <= 0, `${width} px: a table's content spills out ${JSON.stringify(boxes)}`);
      assert.is(boxes.page, 0, `${width} px: the page scrolls sideways`);
      // No narrow column: main spans the window, less its padding.
      assert.ok(main.right - main.left >= width - 20, `${width} px: main is ${main.right - main.left} px wide`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });
}

test.run();
