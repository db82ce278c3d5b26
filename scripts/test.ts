/**
 * The test command (`npm test`): runs the whole uvu suite on the embedded
 * store, then again on MongoDB when one is available (MONGODB_URL, or a
 * throwaway FerretDB when its binary is built), and
 * then the external suites (`test-external/*.ts`: Schemathesis, client
 * programs in other languages; see test-support/external.ts), and
 * ends with one line `N passed, M failed` totalling every run. Exits
 * non-zero if any test failed or a run crashed.
 *
 * Usage: node --import tsx scripts/test.ts [uvu dir] [uvu pattern]
 * (with arguments, only the uvu runs; `ERPLINK_EXTERNAL=<regex>` picks
 * external suites by file name, `ERPLINK_EXTERNAL=none` runs none;
 * `ERPLINK_TEST_STORES=embedded` skips the MongoDB run)
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { failingSuites } from "./uvu-output.js";

interface RunResult {
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  /** What failed, one line each, repeated just above the final line (CI keeps only the end of a long log). */
  readonly failures?: readonly string[];
}


const argv = process.argv.slice(2);
const [dir = "test", pattern] = argv;

function runUvu(label: string, env: NodeJS.ProcessEnv): Promise<RunResult> {
  process.stdout.write(`\n=== ${label} ===\n`);
  const args = ["--import", "tsx", "node_modules/uvu/bin.js", dir, ...(pattern ? [pattern] : []), "--color=false"];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      process.stdout.write(chunk);
    });
    child.on("close", (code) => {
      const total = Number(/Total:\s+(\d+)/.exec(out)?.[1] ?? NaN);
      const passed = Number(/Passed:\s+(\d+)/.exec(out)?.[1] ?? NaN);
      const skipped = Number(/Skipped:\s+(\d+)/.exec(out)?.[1] ?? 0);
      if (Number.isNaN(total) || Number.isNaN(passed)) {
        // The run crashed before uvu's summary (e.g. a failing before hook).
        process.stdout.write(`\n${label}: the test run crashed (exit ${code}) before its summary\n`);
        resolve({ passed: 0, failed: 1, skipped: 0 });
        return;
      }
      const failed = total - passed + (code !== 0 && total === passed ? 1 : 0);
      resolve({ passed, failed, skipped, failures: failingSuites(out).map((f) => `${label}: ${f}`) });
    });
  });
}

/**
 * Starts a throwaway FerretDB when its binary is already built (it is not
 * built here: that takes a minute and needs Go). Returns its URL.
 */
function startThrowawayFerretDb(): string | undefined {
  const built = existsSync(".tmp/bin/erplink-ferretdb") || spawnSync("sh", ["-c", "command -v erplink-ferretdb"]).status === 0;
  if (!built) return undefined;
  const started = spawnSync("bash", ["scripts/ferretdb.sh", "start"], { encoding: "utf8" });
  const url = started.stdout.trim();
  if (started.status !== 0 || !url.startsWith("mongodb://")) return undefined;
  return `${url}erplink_test`;
}

const base: NodeJS.ProcessEnv = { ...process.env };
delete base.ERPLINK_TEST_MONGODB_URL;
delete base.MONGODB_URL;
const results: RunResult[] = [await runUvu("embedded store", base)];
const embeddedOnly = process.env.ERPLINK_TEST_STORES === "embedded";
const mongoUrl = embeddedOnly ? undefined : process.env.MONGODB_URL || startThrowawayFerretDb();
if (mongoUrl) {
  try {
    results.push(await runUvu("MongoDB store", { ...base, ERPLINK_TEST_MONGODB_URL: mongoUrl }));
  } finally {
    // Stop only the instance started here.
    const port = /:(\d+)\//.exec(mongoUrl)?.[1];
    if (!process.env.MONGODB_URL && port) spawnSync("bash", ["scripts/ferretdb.sh", "stop", port], { stdio: "ignore" });
  }
} else if (!embeddedOnly) {
  process.stdout.write(
    "\n(no MongoDB: set MONGODB_URL, or build FerretDB with `npm run db:ferret -- install`, to run the suite on it too)\n",
  );
}
results.push(...(await runExternalSuites()));
const sum = (k: "passed" | "failed" | "skipped") => results.reduce((n, r) => n + r[k], 0);
const skipped = sum("skipped");
const failures = results.flatMap((r) => r.failures ?? []);
if (failures.length > 0) process.stdout.write(`\nFailing:\n${failures.map((f) => `  ${f}\n`).join("")}`);
process.stdout.write(`\n${sum("passed")} passed, ${sum("failed")} failed${skipped > 0 ? `, ${skipped} skipped` : ""}\n`);
process.exitCode = sum("failed") > 0 ? 1 : 0;

/**
 * Runs each `test-external/*.ts` as its own process (in name order) and reads
 * its last line: `N passed, M failed`, or `skipped: <reason>` (counted as one
 * skipped suite). A suite that ends without either counts as one failure.
 */
async function runExternalSuites(): Promise<RunResult[]> {
  const choice = process.env.ERPLINK_EXTERNAL;
  if (choice === "none" || (argv.length > 0 && choice === undefined)) return [];
  const picked = choice === undefined ? undefined : new RegExp(choice);
  const files = existsSync("test-external")
    ? readdirSync("test-external")
        .filter((f) => f.endsWith(".ts") && (picked === undefined || picked.test(f)))
        .sort()
    : [];
  const out: RunResult[] = [];
  for (const file of files) out.push(await runExternal(`test-external/${file}`));
  return out;
}

function runExternal(file: string): Promise<RunResult> {
  process.stdout.write(`\n=== external: ${file} ===\n`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", file], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      process.stdout.write(chunk);
    });
    child.on("close", (code) => {
      const last = out.trimEnd().split("\n").at(-1) ?? "";
      const counts = /^(\d+) passed, (\d+) failed$/.exec(last);
      if (counts !== null) {
        const failed = Number(counts[2]) + (code !== 0 && counts[2] === "0" ? 1 : 0);
        const notOk = out.split("\n").filter((l) => l.startsWith("not ok - ")).map((l) => `${file}: ${l}`);
        resolve({ passed: Number(counts[1]), failed, skipped: 0, failures: notOk });
      } else if (last.startsWith("skipped: ") && code === 0) {
        resolve({ passed: 0, failed: 0, skipped: 1 });
      } else {
        process.stdout.write(`\n${file}: ended (exit ${code}) without its summary line\n`);
        resolve({ passed: 0, failed: 1, skipped: 0 });
      }
    });
  });
}
