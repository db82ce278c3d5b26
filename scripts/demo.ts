/**
 * `npm run demo`: erplink with a demo OData back end, configured and ready
 * to call, in one command.
 *
 * Starts the SAP CAP back end the tests use (test-support/cap: a simulated
 * S/4HANA serving API_BUSINESS_PARTNER and API_SALES_ORDER with sample data,
 * over OData V4 and V2), then erplink composed as `npm start` composes it
 * (loadConfig + createErplink, src/main.ts) on the embedded store in a fresh
 * temporary data directory, configures both through erplink's own admin API,
 * and prints the dashboard URL, the master key and ready-to-run curl lines.
 * Ctrl-C (SIGINT) or SIGTERM stops erplink and CAP and removes the data
 * directory.
 *
 * The embedded store gets a temporary directory rather than `:memory:` so
 * that the demo runs the store exactly as `npm start` does (files on disk,
 * the request log persisted beside them), while leaving nothing behind.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createErplink, type Erplink } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import type { CapBackend } from "../test-support/cap/index.js";

const HELP = `Usage: npm run demo

Starts erplink with a demo OData back end (SAP CAP, the back end erplink's
tests use: API_BUSINESS_PARTNER and API_SALES_ORDER with sample data, OData V4
and V2), configures a system, two instances and a data key through erplink's
admin API, and prints the dashboard URL, the master key to sign in with, and
curl lines to try. Ctrl-C stops everything and deletes the demo's data.

The demo back end needs erplink's dev dependencies (@sap/cds is one): install
with \`npm ci\`, as the README says, not with \`npm ci --omit=dev\`.

Environment (optional):
  PORT       erplink's port (default 8080; 0 picks a free one)
  HOST       the address erplink listens on (default 127.0.0.1)
  LOG_LEVEL  erplink's log level (default warn)
`;

/** How the line printed once everything is ready begins (test/e2e/demo.test.ts waits for it). */
const READY = "Ready.";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  process.stdout.write(HELP);
  process.exit(0);
}

try {
  createRequire(import.meta.url).resolve("@sap/cds");
} catch {
  process.stderr.write(
    "erplink demo: the demo back end needs @sap/cds, a dev dependency: run `npm ci` (with dev dependencies), then `npm run demo` again.\n",
  );
  process.exit(1);
}
const { startCapBackend } = await import("../test-support/cap/index.js");

let dataDir: string | undefined;
let cap: CapBackend | undefined;
let erplink: Erplink | undefined;
let stopping = false;

/** Stops what has started, newest first, and removes the data directory. */
async function cleanUp(): Promise<void> {
  const steps: [string, (() => Promise<unknown>) | undefined][] = [
    ["erplink", erplink && (() => erplink!.close())],
    ["the demo back end", cap && (() => cap!.stop())],
    ["the data directory", dataDir !== undefined ? () => rm(dataDir!, { recursive: true, force: true }) : undefined],
  ];
  for (const [what, step] of steps) {
    try {
      await step?.();
    } catch (err) {
      process.stderr.write(`erplink demo: could not stop ${what}: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}

/** An admin API call with the master key: the envelope's `data`; throws on anything but 2xx. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function admin(baseUrl: string, masterKey: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${masterKey}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { data: unknown }).data;
}

/** A shell word: single-quoted unless it needs no quoting. */
function sh(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

async function start(): Promise<void> {
  dataDir = await mkdtemp(join(tmpdir(), "erplink-demo-"));
  cap = await startCapBackend();
  if (stopping) return;

  const masterKey = `erpl_master_${randomBytes(32).toString("base64url")}`;
  const env: Record<string, string | undefined> = {
    ...process.env,
    HOST: process.env.HOST || "127.0.0.1",
    PORT: process.env.PORT || "8080",
    LOG_LEVEL: process.env.LOG_LEVEL || "warn",
    ERPLINK_DATA_DIR: dataDir,
    ERPLINK_MASTER_KEY: masterKey,
    // The credentials erplink seals die with the data directory: a key of the run's own.
    ERPLINK_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
  };
  // The demo always runs on the embedded store.
  delete env.MONGODB_URL;
  const config = loadConfig(env);
  erplink = await createErplink(config);
  await erplink.app.listen({ host: config.host, port: config.port });
  if (stopping) return;
  const address = erplink.app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.port;
  const host = config.host === "" || config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host.includes(":") ? `[${config.host}]` : config.host;
  const baseUrl = `http://${host}:${port}`;
  const dashboard = config.publicUrl !== undefined ? `${config.publicUrl.replace(/\/+$/, "")}/dashboard/` : `${baseUrl}/dashboard/`;

  // Configured as an admin would, through the admin API.
  const call = (method: string, path: string, body?: unknown) => admin(baseUrl, masterKey, method, path, body);
  const system = await call("POST", "/admin/systems", { name: "S/4HANA demo", description: "SAP CAP demo back end with sample data" });
  const auth = { type: "basic", username: cap.credentials.username, password: cap.credentials.password };
  const services = Object.fromEntries(
    ["API_BUSINESS_PARTNER", "API_SALES_ORDER"].map((name) => [name, { path: name.toLowerCase().replace(/_/g, "-") }]),
  );
  await call("POST", `/admin/systems/${system.id}/instances`, { name: "s4", base_url: `${cap.baseUrl}/odata/v4/`, services, auth });
  await call("POST", `/admin/systems/${system.id}/instances`, { name: "s4-v2", base_url: `${cap.baseUrl}/odata/v2/`, services, auth });
  const key = await call("POST", "/admin/api-keys", {
    name: "demo-reader",
    type: "data",
    permissions: { s4: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get"], A_BusinessPartnerAddress: ["list", "get"] } } },
  });
  if (stopping) return;

  const refusedPath = "/odata/s4/API_SALES_ORDER/A_SalesOrder";
  const explainBody = JSON.stringify({ instance: "s4", method: "GET", url: refusedPath });
  const curl = (...args: string[]) => `curl -sS -i ${args.map(sh).join(" ")}`;
  const dataAuth = `Authorization: Bearer ${key.key}`;
  process.stdout.write(
    [
      "",
      "erplink demo",
      "",
      `  Dashboard:        ${dashboard}`,
      `  Sign-in key:      ${masterKey}   (the master key of this run)`,
      `  Data key:         ${key.key}   (demo-reader: list/get on A_BusinessPartner and A_BusinessPartnerAddress on s4)`,
      `  Demo back end:    ${cap.baseUrl}   (SAP CAP; instances s4 = OData V4, s4-v2 = OData V2)`,
      `  Data directory:   ${dataDir}   (removed on exit)`,
      "",
      "  Allowed: two business partners",
      `    ${curl("-H", dataAuth, `${baseUrl}/odata/s4/API_BUSINESS_PARTNER/A_BusinessPartner?$top=2`)}`,
      "",
      "  Refused (403): sales orders are not in demo-reader's permissions",
      `    ${curl("-H", dataAuth, `${baseUrl}${refusedPath}`)}`,
      "",
      "  Explained: why the refused request is refused (admin API, master key)",
      `    ${curl("-X", "POST", "-H", `Authorization: Bearer ${masterKey}`, "-H", "Content-Type: application/json", "--data", explainBody, `${baseUrl}/admin/api-keys/${key.id}/explain`)}`,
      "",
      `${READY} Press Ctrl-C to stop erplink and the demo back end and remove the data directory.`,
      "",
    ].join("\n"),
  );
}

const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`\nerplink demo: ${signal}: stopping\n`);
  // Whatever is still starting finishes first, so that all of it is stopped.
  void starting.then(cleanUp).then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));

const starting = start().catch(async (err: unknown) => {
  // A ConfigError's message lists every bad variable.
  const reason = err instanceof Error ? err.message : String(err);
  process.stderr.write(`erplink demo: failed to start: ${reason}\n`);
  stopping = true;
  await cleanUp();
  process.exit(1);
});
