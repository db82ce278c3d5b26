/**
 * The test command (`npm test`): runs the whole uvu suite on the embedded
 * store, then again on MongoDB when one is available (MONGODB_URL, or a
 * throwaway FerretDB when its binary is built), and
 * ends with one line `N passed, M failed` totalling every run. Exits
 * non-zero if any test failed or a run crashed.
 *
 * Usage: node --import tsx scripts/test.ts [uvu dir] [uvu pattern]
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

interface RunResult {
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
}

const [dir = "test", pattern] = process.argv.slice(2);

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
      resolve({ passed, failed, skipped });
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
const mongoUrl = process.env.MONGODB_URL || startThrowawayFerretDb();
if (mongoUrl) {
  try {
    results.push(await runUvu("MongoDB store", { ...base, ERPLINK_TEST_MONGODB_URL: mongoUrl }));
  } finally {
    // Stop only the instance started here.
    const port = /:(\d+)\//.exec(mongoUrl)?.[1];
    if (!process.env.MONGODB_URL && port) spawnSync("bash", ["scripts/ferretdb.sh", "stop", port], { stdio: "ignore" });
  }
} else {
  process.stdout.write(
    "\n(no MongoDB: set MONGODB_URL, or build FerretDB with `npm run db:ferret -- install`, to run the suite on it too)\n",
  );
}
const sum = (k: keyof RunResult) => results.reduce((n, r) => n + r[k], 0);
const skipped = sum("skipped");
process.stdout.write(`\n${sum("passed")} passed, ${sum("failed")} failed${skipped > 0 ? `, ${skipped} skipped` : ""}\n`);
process.exitCode = sum("failed") > 0 ? 1 : 0;
