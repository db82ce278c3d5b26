/**
 * The test command (`npm test`): runs the whole uvu suite on the embedded
 * store, then again on MongoDB when one is configured (MONGODB_URL), and
 * ends with one line `N passed, M failed` totalling every run. Exits
 * non-zero if any test failed or a run crashed.
 *
 * Usage: node --import tsx scripts/test.ts [uvu dir] [uvu pattern]
 */
import { spawn } from "node:child_process";

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

const base: NodeJS.ProcessEnv = { ...process.env };
delete base.ERPLINK_TEST_MONGODB_URL;
delete base.MONGODB_URL;
const results: RunResult[] = [await runUvu("embedded store", base)];
const mongoUrl = process.env.MONGODB_URL;
if (mongoUrl) {
  results.push(await runUvu("MongoDB store", { ...base, ERPLINK_TEST_MONGODB_URL: mongoUrl }));
} else {
  process.stdout.write("\n(MONGODB_URL is not set: the MongoDB run is skipped)\n");
}
const sum = (k: keyof RunResult) => results.reduce((n, r) => n + r[k], 0);
const skipped = sum("skipped");
process.stdout.write(`\n${sum("passed")} passed, ${sum("failed")} failed${skipped > 0 ? `, ${skipped} skipped` : ""}\n`);
process.exitCode = sum("failed") > 0 ? 1 : 0;
