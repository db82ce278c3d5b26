/**
 * Shared by the external suites of the client programs in other languages
 * (test-external/clients-go.ts, clients-python.ts): an erplink process with
 * the API keys the programs expect (set up over the admin REST API), and the
 * reading of a program's `ok - <name>` / `not ok - <name>: <why>` lines into
 * checks. What the programs do is described in clients/README.md.
 */
import { E2E_MASTER_KEY } from "./e2e.js";
import type { Checks, RunResult } from "./external.js";
import { rest, sleep, startErplinkProcess, type ErplinkProcess } from "./processes.js";

/** The checks every client program reports, in its order (the same names in every language). */
export const CLIENT_CHECKS: readonly string[] = [
  "authorize allowed",
  "authorize denied: key invalid",
  "authorize denied: key expired",
  "authorize denied: instance",
  "authorize denied: service",
  "authorize denied: entity",
  "authorize denied: operation",
  "authorize denied: rate limited",
  "authorize invalid request",
  "unknown method is unimplemented",
  "admin call without token is unauthenticated",
  "create system",
  "list systems",
  "validation error carries a BadRequest detail",
  "rate-limit metadata",
  "rate-limit metadata on an error",
];

/** The grant of the programs' data key (clients/README.md): `get` on one entity set, nothing else. */
const PERMISSIONS = { "s4-prod": { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get"] } } };

/** A started erplink and the environment of each program run. */
export interface ClientWorld {
  readonly erplink: ErplinkProcess;
  /** The environment of run `i` (each run has its own rate-limited key). */
  readonly envs: readonly Readonly<Record<string, string>>[];
}

async function createKey(erplink: ErplinkProcess, body: Record<string, unknown>): Promise<string> {
  const res = await rest(erplink.baseUrl, "POST", "/admin/api-keys", { auth: E2E_MASTER_KEY, body });
  if (res.status !== 201 || typeof res.body?.data?.key !== "string") {
    throw new Error(`creating API key ${JSON.stringify(body.name)}: ${res.status} ${res.text}`);
  }
  return res.body.data.key as string;
}

/**
 * Starts erplink (embedded store, in memory) and creates, over `/admin`, the
 * keys the programs need: one data key with {@link PERMISSIONS}, one that
 * expires a moment later (waited for), and one key limited to a single
 * request per minute and per day for each of `runs` program runs.
 */
export async function startClientWorld(runs: number): Promise<ClientWorld> {
  const erplink = await startErplinkProcess({ ERPLINK_DATA_DIR: ":memory:", ERPLINK_MASTER_KEY: E2E_MASTER_KEY });
  try {
    const dataKey = await createKey(erplink, { name: "clients data key", permissions: PERMISSIONS });
    const expiresAt = new Date(Date.now() + 1500);
    const expiredKey = await createKey(erplink, {
      name: "clients expired key",
      permissions: PERMISSIONS,
      expires_at: expiresAt.toISOString(),
    });
    const envs: Record<string, string>[] = [];
    for (let i = 0; i < runs; i++) {
      const limitedKey = await createKey(erplink, {
        name: `clients limited key ${i}`,
        permissions: PERMISSIONS,
        // Both windows at 1: a minute rolling over between the program's two calls cannot let the second through.
        rate_limits: { per_minute: 1, per_day: 1 },
      });
      envs.push({
        ERPLINK_URL: erplink.baseUrl,
        ERPLINK_TOKEN: E2E_MASTER_KEY,
        ERPLINK_DATA_KEY: dataKey,
        ERPLINK_EXPIRED_KEY: expiredKey,
        ERPLINK_LIMITED_KEY: limitedKey,
      });
    }
    await sleep(Math.max(0, expiresAt.getTime() - Date.now() + 50));
    return { erplink, envs };
  } catch (err) {
    await erplink.kill();
    throw err;
  }
}

/**
 * Turns one program run into checks named `<label>: <check>`: each of
 * {@link CLIENT_CHECKS} must be reported `ok` exactly once (a `not ok` line
 * fails with the program's reason, a missing one fails as not reported), no
 * other check may appear, and the exit code must be 0 exactly when every
 * check passed.
 */
export function recordProgramRun(checks: Checks, label: string, result: RunResult): void {
  const seen = new Map<string, string | undefined>();
  const unexpected: string[] = [];
  for (const line of result.stdout.split("\n")) {
    const m = /^(ok|not ok) - (.*)$/.exec(line);
    if (m === null) continue;
    const [name, why] = m[1] === "ok" ? [m[2]!, undefined] : splitReason(m[2]!);
    if (!CLIENT_CHECKS.includes(name) || seen.has(name)) unexpected.push(line);
    else seen.set(name, why);
  }
  for (const name of CLIENT_CHECKS) {
    if (!seen.has(name)) {
      checks.fail(`${label}: ${name}`, `not reported (exit ${result.code}); stderr: ${result.stderr.slice(-1500)}`);
    } else {
      const why = seen.get(name);
      checks.check(`${label}: ${name}`, why === undefined, why);
    }
  }
  const allOk = seen.size === CLIENT_CHECKS.length && [...seen.values()].every((why) => why === undefined);
  checks.check(
    `${label}: reports every check once and exits ${allOk ? 0 : 1}`,
    unexpected.length === 0 && result.code === (allOk ? 0 : 1),
    `exit ${result.code}; unexpected lines: ${JSON.stringify(unexpected)}; stderr: ${result.stderr.slice(-1500)}`,
  );
}

/** `<name>: <why>` of a `not ok` line, the name being one of {@link CLIENT_CHECKS}. */
function splitReason(rest: string): [string, string] {
  const name = CLIENT_CHECKS.find((n) => rest.startsWith(`${n}: `));
  return name === undefined ? [rest, "failed"] : [name, rest.slice(name.length + 2) || "failed"];
}
