/**
 * The dashboard's layout at a narrow laptop width (800 px) and on a wide
 * monitor (1920 px), every screen: the page never scrolls sideways (wide
 * tables scroll inside their own frame), every control is inside the
 * viewport's width, large enough to hit (24 px, WCAG 2.2 target size) and
 * not covered by another element at its centre. Skipped with one line when
 * no Chromium is installed (fails under CI).
 */
import type { Browser, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminAnswer, adminCall, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite("dashboard: layout at 800 and 1920 px");

interface Ctx {
  erplink: RunningErplink;
  browser: Browser;
  keyId: string;
}
const ctx = {} as Ctx;
const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

/** A control the layout check found wrong. */
interface Problem {
  readonly control: string;
  readonly problem: string;
}

/**
 * Runs in the page: the page-level horizontal overflow and every visible
 * control outside the viewport's width (unless inside a frame that scrolls
 * sideways itself), smaller than 24 px in both directions, or covered at its
 * centre by something that is not itself or inside it.
 */
const LAYOUT_PROBLEMS = `(() => {
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) problems.push({ control: "page", problem: "scrolls sideways: " + doc.scrollWidth + " > " + doc.clientWidth });
  const scrollsSideways = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p);
      if ((s.overflowX === "auto" || s.overflowX === "scroll") && p.scrollWidth > p.clientWidth) return true;
    }
    return false;
  };
  const name = (el) => (el.tagName.toLowerCase() + " " + (el.getAttribute("aria-label") || el.id || el.textContent || "").trim().slice(0, 60));
  for (const el of document.querySelectorAll("a[href], button, input, select, textarea, summary")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue; // not rendered
    if (getComputedStyle(el).visibility === "hidden") continue;
    if (el.type === "checkbox" || el.type === "radio") {
      // Small by nature: its label is the target; it must still be inside the width.
    } else if (r.width < 24 || r.height < 24) {
      problems.push({ control: name(el), problem: "target " + Math.round(r.width) + "x" + Math.round(r.height) + " px" });
    }
    if (!scrollsSideways(el) && (r.left < -1 || r.right > doc.clientWidth + 1)) {
      problems.push({ control: name(el), problem: "outside the width: " + Math.round(r.left) + ".." + Math.round(r.right) });
    }
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (y >= 0 && y < innerHeight && x >= 0 && x < innerWidth && !scrollsSideways(el)) {
      const top = document.elementFromPoint(x, y);
      if (top && top !== el && !el.contains(top) && !top.contains(el) && !(el.labels && [...el.labels].some((l) => l.contains(top)))) {
        problems.push({ control: name(el), problem: "covered by " + name(top) });
      }
    }
  }
  return problems;
})()`;

async function problemsOf(page: Page): Promise<Problem[]> {
  return (await page.evaluate(LAYOUT_PROBLEMS)) as Problem[];
}

/** Scrolls the page through its whole height and collects the problems at each step (covering depends on position). */
async function allProblems(page: Page): Promise<Problem[]> {
  const seen = new Map<string, Problem>();
  const height = (await page.evaluate("document.documentElement.scrollHeight")) as number;
  const viewport = page.viewportSize()!.height;
  for (let y = 0; y < height; y += viewport - 100) {
    await page.evaluate(`window.scrollTo(0, ${y})`);
    for (const p of await problemsOf(page)) seen.set(`${p.control}|${p.problem}`, p);
  }
  await page.evaluate("window.scrollTo(0, 0)");
  return [...seen.values()];
}

const SCREENS: readonly { readonly path: string; readonly heading: string; readonly open?: (page: Page) => Promise<void> }[] = [
  { path: "", heading: "Overview" },
  {
    path: "systems",
    heading: "Systems",
    open: async (page) => {
      await page.getByRole("button", { name: "Instances of s4" }).click();
      await page.getByRole("heading", { name: "Instances of s4" }).waitFor();
      await page.getByRole("button", { name: "Edit instance s4-prod" }).click();
      await page.getByRole("heading", { name: "Edit instance s4-prod" }).waitFor();
    },
  },
  {
    path: "api-keys",
    heading: "API keys",
    open: async (page) => {
      await page.getByRole("button", { name: "Edit key invoice app" }).click();
      await page.getByRole("heading", { name: "Edit key invoice app" }).waitFor();
      // The Explain panel asks 400 ms after the typing: measure its answer on screen, not the wait for it.
      const explained = adminAnswer(page, "POST", `/admin/api-keys/${ctx.keyId}/explain`);
      await page.getByLabel("OData URL").fill("/odata/s4-prod/SALES/Customers");
      assert.is((await explained).status(), 200);
      await page.getByText("With the saved permissions:").waitFor();
    },
  },
  { path: "logs", heading: "Logs", open: async (page) => void (await page.getByRole("button", { name: /^Details of / }).first().waitFor()) },
  { path: "audit", heading: "Audit" },
  { path: "sessions", heading: "Sessions" },
];

if (browserAvailable("dashboard layout suite")) {
  test.before(async () => {
    ctx.erplink = await startErplink();
    const sys = await admin("POST", "/admin/systems", { name: "s4", description: "A system whose description is long enough to wrap on a narrow screen, as real ones are" });
    assert.is(sys.status, 201);
    const ins = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
      name: "s4-prod",
      environment: "production",
      base_url: "http://127.0.0.1:9/sap/opu/odata4/sap/a_very_long_service_group_name/srvd_a2x/sap/",
      services: { SALES: { path: "sales" } },
      auth: { type: "basic", username: "erp-user", password: "pw-layout-1234" },
    });
    assert.is(ins.status, 201, JSON.stringify(ins.body));
    // With an operation's grant too, so the editor's Operations rows are laid out (the back end is unreachable: no catalog).
    const key = await admin("POST", "/admin/api-keys", {
      name: "invoice app",
      permissions: { "s4-prod": { SALES: { Customers: ["list", "get"], "API_SALES_ORDER_SRV.a_very_long_namespace_of_a_bound_operation.releaseApprovalRequest": ["invoke"] } } },
    });
    assert.is(key.status, 201);
    ctx.keyId = key.body.data.id;
    ctx.browser = await launchBrowser();
  });
  test.after(async () => {
    await ctx.browser?.close();
    await ctx.erplink?.close();
  });

  for (const width of [800, 1920]) {
    test(`${width} px: no sideways scrolling, every control inside the width, at least 24 px and not covered`, async () => {
      const context = await ctx.browser.newContext({ viewport: { width, height: 900 } });
      try {
        const page = await context.newPage();
        page.setDefaultTimeout(15_000);
        await page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
        assert.equal(await allProblems(page), [], "sign-in");
        await page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("navigation", { name: "Main" }).waitFor();
        for (const screen of SCREENS) {
          await page.goto(`${ctx.erplink.baseUrl}/dashboard/${screen.path}`);
          await page.getByRole("heading", { name: screen.heading, level: 1 }).waitFor();
          await page.waitForLoadState("networkidle");
          // Each open() waits for what it shows itself: no navigation follows, so "networkidle" would not wait.
          await screen.open?.(page);
          assert.equal(await allProblems(page), [], `${screen.heading} at ${width} px`);
        }
      } finally {
        await context.close();
      }
    });
  }
}

test.run();
