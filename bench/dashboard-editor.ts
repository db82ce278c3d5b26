/**
 * `npm run bench:dashboard`: the permission editor of the dashboard at
 * 1,000, 4,000 and 10,000 entity sets, in a real Chromium against a real
 * erplink and a loopback back end whose `$metadata` has that many entity sets
 * (test-support/wide-odata-backend.ts). A data key holding list and get on
 * every one of them is opened in the editor, and the bench times, in the
 * page (performance.now()), from the action to the next frame after the
 * page has updated:
 *
 * - click: one operation's checkbox of an entity set row;
 * - filter keystroke: a letter typed into the filter box (the rows narrow);
 * - matrix column: the header checkbox of a column of the matrix view
 *   (all N entity sets change);
 * - open JSON: the JSON view opened (its text made);
 * - paste: a whole N-set JSON document pasted into the JSON view, until the
 *   tree shows it (documents alternate between two, so that every paste
 *   changes every entry);
 * - paste into a new key: the same document pasted into the new key form's
 *   empty editor, until the tree shows it.
 *
 * Median and p95 (nearest rank) over `--reps` repetitions (pastes: half as
 * many), a pause between repetitions so that the Explain panel's call after a
 * change (400 ms later) does not land inside the next measurement. Also the
 * page's JS heap after the pastes (Chromium's precise memory info, after a
 * GC). Loopback only; exits by itself (a watchdog gives up at 20 minutes).
 *
 *   npm run bench:dashboard
 *   npm run bench:dashboard -- --sizes 1000,4000,10000 --reps 20
 */
import { chromium, type Page } from "playwright-core";
import { CHROMIUM } from "../test-support/browser.js";
import { startErplink } from "../test-support/e2e.js";
import { startWideBackend, wideSetName, wideSetNames } from "../test-support/wide-odata-backend.js";
import { intOption, runBench } from "./lib.js";

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1] ?? "");
const SIZES = (args.get("sizes") ?? "1000,4000,10000").split(",").map((s) => intOption("sizes", s, 10_000));
const REPS = intOption("reps", args.get("reps") ?? "20", 200);
/** Between repetitions: past the Explain panel's 400 ms pause and its call. */
const PAUSE_MS = 700;

const INSTANCE = "bench";

/** Order statistics of one scenario (ms). */
interface Row {
  readonly size: number;
  readonly scenario: string;
  readonly n: number;
  readonly median: number;
  readonly p95: number;
  readonly max: number;
}

function stats(size: number, scenario: string, xs: number[]): Row {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return { size, scenario, n: s.length, median: at(50), p95: at(95), max: s[s.length - 1]! };
}

/**
 * In the page: runs `act` (a function body, given `arg`), then waits until
 * `done` (a function body, given `arg`) is true, checked after each frame,
 * and then for the next frame to be produced; returns the milliseconds.
 */
async function timed(page: Page, act: string, done: string, arg: unknown): Promise<number> {
  // A string, not a function: the page runs exactly this (no helper a compiler may have added around a function).
  const script = `(async () => {
    const arg = ${JSON.stringify(arg)};
    const run = (arg) => { ${act} };
    const check = (arg) => { ${done} };
    const t0 = performance.now();
    run(arg);
    // Preact renders in a microtask: yield once, then look after each frame.
    await Promise.resolve();
    for (let i = 0; !check(arg); i++) {
      if (i > 3000) throw new Error("not updated: " + ${JSON.stringify(done)});
      await new Promise((r) => requestAnimationFrame(() => r()));
    }
    // The next frame after the update, produced.
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    return performance.now() - t0;
  })()`;
  const ms = (await page.evaluate(script)) as number;
  await page.waitForTimeout(PAUSE_MS);
  return ms;
}

/** The permissions of a key holding `ops` on every entity set of the service of size `n`. */
function document(n: number, ops: string[]) {
  return { [INSTANCE]: { [`S${n}`]: Object.fromEntries(wideSetNames(n).map((name) => [name, ops])) } };
}

/** The id the editor gives an element (permission-editor.tsx makeId). */
const elementId = (prefix: string, ...parts: string[]) => `${prefix}-${parts.map((p) => p.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0)}`)).join("-")}`;

async function main(): Promise<boolean> {
  const backend = await startWideBackend();
  const erplink = await startErplink({ ERPLINK_ADMIN_RATE_PER_MINUTE: "1000000", ERPLINK_ADMIN_RATE_PER_DAY: "1000000000" });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--enable-precise-memory-info", "--js-flags=--expose-gc"] });
  const rows: Row[] = [];
  const heap: string[] = [];
  try {
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${erplink.baseUrl}${path}`, {
        method,
        headers: { authorization: erplink.authorization, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as { data: { id: string } };
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json.data;
    };
    const system = await admin("POST", "/admin/systems", { name: "bench" });
    await admin("POST", `/admin/systems/${system.id}/instances`, {
      name: INSTANCE,
      base_url: backend.baseUrl,
      services: Object.fromEntries(SIZES.map((n) => [`S${n}`, { path: `wide${n}` }])),
    });
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.setDefaultTimeout(120_000);
    await page.goto(`${erplink.baseUrl}/dashboard/api-keys`);
    await page.getByLabel("Admin key").fill(erplink.masterKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();

    for (const n of SIZES) {
      const service = `S${n}`;
      const key = await admin("POST", "/admin/api-keys", { name: `editor ${n}`, permissions: document(n, ["list", "get"]) });
      await page.goto(`${erplink.baseUrl}/dashboard/api-keys/${key.id}`);
      const form = page.getByRole("form", { name: `Edit key editor ${n}` });
      await form.getByRole("button", { name: `Expand instance ${INSTANCE}` }).click();
      await form.getByText(`${n} entity sets in $metadata`).waitFor();
      await form.getByRole("button", { name: `Expand service ${service} of ${INSTANCE}` }).click();
      const box = (entity: string, op: string) => elementId("edit-perm", "op", INSTANCE, service, entity, op);
      await page.locator(`#${box(wideSetName(1), "get")}`).waitFor();

      // A click on one checkbox, in the first rows.
      const clicks: number[] = [];
      for (let i = 0; i < REPS; i++) {
        const id = box(wideSetName(1 + (i % 5)), "get");
        const before = await page.locator(`#${id}`).isChecked();
        clicks.push(
          await timed(
            page,
            "document.getElementById(arg.id).click()",
            "return document.getElementById(arg.id).checked === arg.want && document.getElementById(arg.id).closest('.perm-entity') !== null",
            { id, want: !before },
          ),
        );
      }
      rows.push(stats(n, "click", clicks));

      // A letter typed into the filter, then cleared (both timed).
      const filterId = "edit-perm-filter";
      const typing: number[] = [];
      for (let i = 0; i < REPS; i++) {
        const text = i % 2 === 0 ? wideSetName(1 + ((i * 37) % n)) : "";
        typing.push(
          await timed(
            page,
            "const f = document.getElementById(arg.filterId); f.value = arg.text; f.dispatchEvent(new InputEvent('input', { bubbles: true }))",
            "const rows = document.querySelectorAll('.perm-row').length; return arg.text === '' ? rows > 1 : rows === 1",
            { filterId, text },
          ),
        );
      }
      rows.push(stats(n, "filter keystroke", typing));

      // The matrix: a whole column on and off.
      await form.getByRole("button", { name: `Matrix view of ${service} on ${INSTANCE}` }).click();
      const column = `${elementId("edit-perm", "matrix", INSTANCE, service)}-col-create`;
      await page.locator(`#${column}`).waitFor();
      const columnClicks: number[] = [];
      for (let i = 0; i < REPS; i++) {
        const want = i % 2 === 0;
        columnClicks.push(
          await timed(
            page,
            "document.getElementById(arg.column).click()",
            "const c = document.getElementById(arg.column); return c.checked === arg.want && !c.indeterminate && document.querySelector('.perm-matrix tbody input[aria-label=\"create ' + arg.first + '\"]').checked === arg.want",
            { column, want, first: wideSetName(1) },
          ),
        );
      }
      rows.push(stats(n, "matrix column", columnClicks));
      await form.getByRole("button", { name: `Matrix view of ${service} on ${INSTANCE}` }).click();

      // The JSON view opened, then pastes of whole documents.
      const jsonToggle = form.getByRole("button", { name: "Show JSON" });
      const opening: number[] = [];
      for (let i = 0; i < Math.max(2, REPS / 4); i++) {
        opening.push(
          await timed(
            page,
            "[...document.querySelectorAll('.perm-json button')].find((b) => b.textContent === 'Show JSON').click()",
            "const t = document.getElementById('edit-perm-json'); return t !== null && t.value.length > 0",
            {},
          ),
        );
        await form.getByRole("button", { name: "Hide JSON" }).click();
      }
      rows.push(stats(n, "open JSON", opening));
      await jsonToggle.click();
      const docs = [JSON.stringify(document(n, ["list"]), null, 2), JSON.stringify(document(n, ["list", "get", "update"]), null, 2)];
      const pastes: number[] = [];
      for (let i = 0; i < Math.max(2, REPS / 2); i++) {
        const which = i % 2;
        pastes.push(
          await timed(
            page,
            "const t = document.getElementById('edit-perm-json'); t.value = arg.text; t.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertFromPaste' }))",
            "const u = document.getElementById(arg.get); return u !== null && u.checked === arg.want && document.getElementById('edit-perm-json-status').textContent === 'In sync with the tree.'",
            { text: docs[which], get: box(wideSetName(1), "get"), want: which === 1 },
          ),
        );
      }
      rows.push(stats(n, "paste", pastes));
      heap.push(`${n}: ${await usedHeapMb(page)} MB after ${pastes.length} pastes`);

      // A paste into the new key form's empty editor.
      await page.goto(`${erplink.baseUrl}/dashboard/api-keys`);
      await page.getByRole("button", { name: "New API key" }).click();
      const fresh: number[] = [];
      for (let i = 0; i < Math.max(2, REPS / 4); i++) {
        fresh.push(
          await timed(
            page,
            "const t = document.getElementById('new-perm-json'); t.value = arg.text; t.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertFromPaste' }))",
            "return [...document.querySelectorAll('.perm-instance .hint')].some((p) => p.textContent === arg.summary)",
            { text: docs[0], summary: `Collapsed: 1 service, ${n} entries.` },
          ),
        );
        // Back to empty, for the next repetition.
        await timed(
          page,
          "const t = document.getElementById('new-perm-json'); t.value = '{}'; t.dispatchEvent(new InputEvent('input', { bubbles: true }))",
          "return document.querySelector('.perm-instance') === null",
          {},
        );
      }
      rows.push(stats(n, "paste into a new key", fresh));
      await admin("DELETE", `/admin/api-keys/${key.id}`).catch(() => undefined);
    }
  } finally {
    await browser.close();
    await erplink.close();
    await backend.close();
  }

  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  console.log(line(["entity sets", "action", "runs", "median ms", "p95 ms", "max ms"]));
  console.log(line(["---:", "---", "---:", "---:", "---:", "---:"]));
  for (const r of rows) console.log(line([r.size, r.scenario, r.n, r.median.toFixed(1), r.p95.toFixed(1), r.max.toFixed(1)]));
  console.log(`\npage JS heap (after a GC): ${heap.join("; ")}`);
  const slow = rows.filter((r) => (r.scenario === "click" && r.size <= 10_000 && r.p95 >= 50) || (r.scenario.startsWith("paste") && r.p95 >= 1000));
  for (const r of slow) console.error(`over budget: ${r.scenario} at ${r.size} entity sets, p95 ${r.p95.toFixed(1)} ms`);
  return slow.length === 0;
}

/** The page's used JS heap in MB after a GC (Chromium's `performance.memory`). */
async function usedHeapMb(page: Page): Promise<string> {
  return (await page.evaluate(`(async () => {
    if (typeof gc === "function") gc();
    await new Promise((r) => setTimeout(r, 50));
    return performance.memory === undefined ? "?" : (performance.memory.usedJSHeapSize / 2 ** 20).toFixed(0);
  })()`)) as string;
}

await runBench(20 * 60_000, main);
process.exit(process.exitCode ?? 0);
