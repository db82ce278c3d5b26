/**
 * Helpers for the dashboard's browser suites (test/dashboard): Debian's
 * Chromium driven by playwright-core, axe-core run in the page, and
 * screenshots under `.tmp/screenshots/`. Lives outside test/ because uvu
 * runs every file there.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { chromium, type Browser, type Page, type Response } from "playwright-core";
import * as assert from "uvu/assert";
import { REPO_ROOT, type RunningErplink } from "./e2e.js";

/** The Chromium executable: `ERPLINK_CHROMIUM`, default Debian's `/usr/bin/chromium`. */
export const CHROMIUM = process.env.ERPLINK_CHROMIUM ?? "/usr/bin/chromium";

/**
 * Whether the browser suites can run. Without Chromium they are skipped
 * with one line locally, and fail under CI (`CI` set), where
 * `scripts/chromium.sh` should have installed it.
 */
export function browserAvailable(suiteName: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI !== undefined && process.env.CI !== "") {
    throw new Error(`${suiteName}: no Chromium at ${CHROMIUM} under CI; run scripts/chromium.sh or set ERPLINK_CHROMIUM`);
  }
  console.log(`SKIP ${suiteName}: no Chromium at ${CHROMIUM} (install it with scripts/chromium.sh or set ERPLINK_CHROMIUM)`);
  return false;
}

/** Launches headless Chromium (playwright-core passes `--no-sandbox` itself when root). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

const require = createRequire(import.meta.url);
/** axe-core's browser build, read once. */
let axeSource: string | undefined;

/** One axe violation, as reported. */
export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: readonly { readonly target: readonly unknown[] }[];
}

/**
 * Runs axe-core in the page and returns its critical and serious violations.
 * The script is evaluated through the DevTools protocol (the page's CSP
 * forbids inline scripts, and rightly so).
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))",
  )) as AxeViolation[];
  return violations.filter((v) => v.impact === "critical" || v.impact === "serious");
}

/** Saves a full-page screenshot as `.tmp/screenshots/<name>.png` (not committed). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = path.join(REPO_ROOT, ".tmp", "screenshots");
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

/** Fails the test when axe finds a critical or serious violation on the page (`where` names the screen). */
export async function assertAccessible(page: Page, where: string): Promise<void> {
  const violations = await seriousViolations(page);
  assert.equal(violations, [], `${where}: axe violations ${JSON.stringify(violations, null, 2)}`);
}

/**
 * The page's next answer from the admin API to `method` `path` (a query
 * that has at least `query`'s parameters): start it before the action that
 * makes the call, await it after. `waitForLoadState("networkidle")` is no
 * wait for a call the app makes on its own (after sign-in, a pushState, a
 * typed filter): once the page has been idle for 500 ms the state holds
 * and it returns at once, with the call still in flight.
 */
export function adminAnswer(page: Page, method: string, path: string, query: Readonly<Record<string, string>> = {}): Promise<Response> {
  return page.waitForResponse((r) => {
    const url = new URL(r.url());
    return r.request().method() === method && url.pathname === path && Object.entries(query).every(([k, v]) => url.searchParams.get(k) === v);
  });
}

/** An admin API call with the master key of a running erplink, outside the browser (setup and checks). */
export async function adminCall(erplink: RunningErplink, method: string, path: string, body?: unknown) {
  const res = await fetch(`${erplink.baseUrl}${path}`, {
    method,
    headers: { authorization: erplink.authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, body: (await res.json()) as any };
}
