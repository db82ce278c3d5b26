/**
 * External suites: programs outside uvu (Schemathesis, the Go and Python
 * client examples, grpcurl, Envoy's generated ext_authz client) run against a
 * real erplink process. Each suite is a file `test-external/<name>.ts` run by
 * `scripts/test.ts` as `node --import tsx <file>`; it prints one line per
 * check (`ok - <name>` / `not ok - <name>: <why>`) and ends with
 * `N passed, M failed`, or with `skipped: <reason>` when its tool is missing
 * outside CI. Its totals join the test command's final line.
 *
 * Tools: when `CI` is set (or `ERPLINK_INSTALL_TOOLS=1`) a suite installs what
 * it needs (idempotently, under `.tmp/`) and a failed install is a failure;
 * otherwise it uses what is already installed and skips when it is missing,
 * so `npm test` on a fresh clone needs no Python, Go tools or network.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./e2e.js";

/** Where suites keep the tools they install (gitignored). */
export const TOOLS_DIR = process.env.ERPLINK_TOOLS_DIR ?? join(REPO_ROOT, ".tmp", "bin");

/** Whether a suite may install its tools (CI, or asked to). */
export function mayInstall(): boolean {
  return (process.env.CI !== undefined && process.env.CI !== "") || process.env.ERPLINK_INSTALL_TOOLS === "1";
}

/** Thrown by a suite to skip as a whole (outside CI only; in CI it counts as a failure). */
export class Skip extends Error {}

export interface Checks {
  /** Records one passed check. */
  pass(name: string): void;
  /** Records one failed check with the reason. */
  fail(name: string, why: string): void;
  /** Records `name` passed when `ok`, failed with `why` otherwise. */
  check(name: string, ok: boolean, why?: string): void;
}

/**
 * Runs one external suite: `body` records its checks; a thrown {@link Skip}
 * skips it (fails it in CI), any other error is one more failure. Prints the
 * summary line last and sets the exit code.
 */
export async function externalSuite(name: string, body: (checks: Checks) => Promise<void>): Promise<void> {
  let passed = 0;
  let failed = 0;
  const checks: Checks = {
    pass(check) {
      passed++;
      process.stdout.write(`ok - ${check}\n`);
    },
    fail(check, why) {
      failed++;
      process.stdout.write(`not ok - ${check}: ${why.replace(/\s+/g, " ").slice(0, 2000)}\n`);
    },
    check(check, ok, why = "check failed") {
      if (ok) this.pass(check);
      else this.fail(check, why);
    },
  };
  process.stdout.write(`# ${name}\n`);
  try {
    await body(checks);
  } catch (err) {
    if (err instanceof Skip && !mayInstall()) {
      process.stdout.write(`skipped: ${err.message}\n`);
      return;
    }
    checks.fail(`${name} (suite)`, err instanceof Error ? (err.stack ?? err.message) : String(err));
  }
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program to its end (bounded by `timeoutMs`), never rejecting on a non-zero exit. */
export function run(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: options.cwd ?? REPO_ROOT, env: options.env ?? process.env, timeout: options.timeoutMs ?? 600_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof (err as NodeJS.ErrnoException).code === "number" ? Number((err as NodeJS.ErrnoException).code) : null;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) + (err !== null && code === null ? `\n${err.message}` : "") });
      },
    );
  });
}
