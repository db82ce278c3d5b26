/**
 * External suite: Envoy's ext_authz Check through grpc-go with Envoy's own
 * generated Go types (github.com/envoyproxy/go-control-plane, pinned in
 * clients/ext-authz-go/go.mod), against a real erplink process
 * (`src/main.ts`) and a recording OData back end of our own.
 *
 * Every case of the data path's table (test-support/data-cases.ts) is sent
 * to the data path of the same process over a raw socket, then checked by
 * the Go program as Envoy would ask; one line per case: the Check must
 * answer as the data path did (allowed exactly when it forwarded; else the
 * same status and envelope, with Envoy's request id), except a method
 * tunnel or a `$batch`, which Envoy cannot forward as authorized (400).
 * Then credential injection (with and without ERPLINK_EXT_AUTHZ_TOKEN) and
 * raw headers.
 *
 * Tools: Go. In CI (or with ERPLINK_INSTALL_TOOLS=1) the program is built
 * into the tools directory, its modules fetched from the Go module proxy;
 * elsewhere it is built from the module cache only, and the suite skips
 * when that is not possible.
 */
import { join } from "node:path";
import { REPO_ROOT } from "../test-support/e2e.js";
import { BASIC, DATA_CASES, JSON_TYPE, SALES, provisionCases, startCaseUpstream, type DataCase } from "../test-support/data-cases.js";
import { Skip, TOOLS_DIR, externalSuite, mayInstall, run } from "../test-support/external.js";
import { RESPELT_CASES } from "../test-support/ext-authz.js";
import { rest, startErplinkProcess } from "../test-support/processes.js";
import { rawHttp } from "../test-support/raw-http.js";

const MASTER_KEY = "erpl_external_master_key_0123456789abcdefghij";
const TOKEN = "ext-authz-go-token-0123456789abcdefghijklmn";
const PROGRAM_DIR = join(REPO_ROOT, "clients", "ext-authz-go");
const BINARY = join(TOOLS_DIR, "erplink-ext-authz-go");

/** A check as the Go program reads it (one JSON line). */
interface GoCheck {
  name: string;
  id: string;
  method: string;
  path: string;
  host: string;
  headers: Record<string, string>;
  rawHeaders?: boolean;
  body?: string;
  rawBody?: boolean;
  contextExtensions?: Record<string, string>;
}

/** What the Go program printed for a check. */
interface GoResult {
  name: string;
  grpcCode: string;
  grpcMessage?: string;
  code: number;
  allowed: boolean;
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  headersToRemove?: string[];
  responseHeadersToAdd?: Record<string, string>;
}

/** Builds the Go program (go build is its own cache: fast when nothing changed). */
async function build(): Promise<void> {
  const go = await run("go", ["version"], { timeoutMs: 30_000 });
  if (go.code !== 0) {
    if (mayInstall()) throw new Error(`the Go toolchain is needed: ${go.stderr}`);
    throw new Skip("the Go toolchain is not installed");
  }
  const env = { ...process.env, CGO_ENABLED: "0", ...(mayInstall() ? {} : { GOFLAGS: "-mod=mod", GOPROXY: "off" }) };
  const built = await run("go", ["build", "-o", BINARY, "."], { cwd: PROGRAM_DIR, env, timeoutMs: 600_000 });
  if (built.code !== 0) {
    if (mayInstall()) throw new Error(`go build failed: ${built.stderr}`);
    throw new Skip(`cannot build clients/ext-authz-go from the module cache (run with ERPLINK_INSTALL_TOOLS=1): ${built.stderr.split("\n")[0]}`);
  }
}

/** Runs the Go program on `checks`; one result per check, in order. */
async function runChecks(address: string, checks: readonly GoCheck[], token?: string): Promise<GoResult[]> {
  const { execFile } = await import("node:child_process");
  return new Promise((resolve, reject) => {
    const child = execFile(BINARY, ["-addr", address, ...(token ? ["-token", token] : [])], { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`ext-authz-go failed: ${err.message}\n${stderr}`));
      else resolve(stdout.trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as GoResult));
    });
    child.stdin!.end(checks.map((c) => JSON.stringify(c)).join("\n") + "\n");
  });
}

const isBatch = (c: DataCase) => /\/\$batch(\?|$)/.test(c.url);
const isTunnel = (c: DataCase) => Object.keys(c.headers ?? {}).some((n) => /^x-http-method(-override)?$/i.test(n));

await externalSuite("ext_authz Check through grpc-go with go-control-plane's types", async (checks) => {
  await build();
  const upstream = await startCaseUpstream();
  const erplink = await startErplinkProcess({
    ERPLINK_MASTER_KEY: MASTER_KEY,
    ERPLINK_DATA_DIR: ":memory:",
    ERPLINK_EXT_AUTHZ_TOKEN: TOKEN,
    ERPLINK_DATA_RATE_PER_MINUTE: "100000",
    ERPLINK_ADMIN_RATE_PER_MINUTE: "100000",
  });
  try {
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await rest(erplink.baseUrl, method, path, { auth: MASTER_KEY, body });
      return { status: res.status, body: res.body };
    };
    const { keys } = await provisionCases(admin, upstream.origin);

    // The data path's answers, over a raw socket; forwarded when the back end saw the request id.
    const answers: { status: number; body: string; forwarded: boolean }[] = [];
    const goChecks: GoCheck[] = [];
    for (const [i, c] of DATA_CASES.entries()) {
      const id = `dp-go-${i}`;
      const key = keys[c.key ?? "app"]!.key;
      const body = c.body ?? "";
      const headers: Record<string, string> = { ...c.headers };
      if (body !== "" || c.method === "POST") headers["content-length"] = String(Buffer.byteLength(body));
      const head = [
        `${c.method} ${c.url} HTTP/1.1`,
        `Host: ${erplink.address}`,
        `Authorization: Bearer ${key}`,
        `X-Request-Id: ${id}`,
        ...Object.entries(headers).map(([n, v]) => `${n}: ${v}`),
      ];
      const res = await rawHttp(erplink.port, head.join("\r\n"), body);
      answers.push({ status: res.status, body: res.body, forwarded: upstream.all.some((s) => s.headers["x-request-id"] === id) });
      const lower = Object.fromEntries(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), v]));
      goChecks.push({ name: `case ${i + 1}`, id: `go-${i}`, method: c.method, path: c.url, host: erplink.address, headers: { authorization: `Bearer ${key}`, ...lower }, ...(body !== "" ? { body, rawBody: true } : {}) });
    }
    const results = await runChecks(erplink.address, goChecks);
    for (const [i, c] of DATA_CASES.entries()) {
      const name = `case ${i + 1}: ${c.method} ${c.url}`;
      const r = results[i];
      const a = answers[i]!;
      if (r === undefined || r.grpcCode !== "OK") {
        checks.fail(name, `the call failed: ${JSON.stringify(r)}`);
        continue;
      }
      if (a.forwarded && (isBatch(c) || isTunnel(c) || RESPELT_CASES.has(c.url))) {
        checks.check(name, !r.allowed && r.status === 400 && (r.body ?? "").includes("erplink cannot authorize this request for Envoy"), `expected the Envoy-only refusal, got ${JSON.stringify(r)}`);
        continue;
      }
      if (a.forwarded) {
        checks.check(name, r.allowed && r.code === 0 && (r.headersToRemove ?? []).includes("authorization"), `the data path forwarded it; Check answered ${JSON.stringify(r)}`);
        continue;
      }
      let same = !r.allowed && r.status === a.status && r.code !== 0;
      if (same && c.method !== "HEAD") {
        const expected = { error: { ...JSON.parse(a.body).error, requestId: `go-${i}` } };
        same = JSON.stringify(JSON.parse(r.body ?? "{}")) === JSON.stringify(expected);
      }
      checks.check(name, same, `the data path answered ${a.status} ${a.body}; Check answered ${JSON.stringify(r)}`);
    }

    // Credential injection and raw headers.
    const app = keys.app!.key;
    const inject = (name: string, method: string, extra: Partial<GoCheck> = {}): GoCheck => ({
      name,
      id: name,
      method,
      path: `${SALES}/SalesOrders(1)`,
      host: erplink.address,
      headers: { authorization: `Bearer ${app}`, ...(method === "GET" ? {} : { ...JSON_TYPE, "if-match": "*", "content-length": "12" }) },
      ...(method === "GET" ? {} : { body: '{"Note":"x"}', rawBody: true }),
      contextExtensions: { erplink_inject_credentials: "true" },
      ...extra,
    });
    const [noToken] = await runChecks(erplink.address, [inject("inject without the token", "GET")]);
    checks.check("credential injection without the token: PermissionDenied", noToken?.grpcCode === "PermissionDenied", JSON.stringify(noToken));
    const [read, write, raw] = await runChecks(
      erplink.address,
      [inject("inject read", "GET"), inject("inject write", "PATCH"), inject("raw headers", "GET", { rawHeaders: true, contextExtensions: {} })],
      TOKEN,
    );
    checks.check(
      "credential injection with the token: the back end's Authorization replaces the key",
      read?.allowed === true && read.headers?.authorization === BASIC && !(read.headersToRemove ?? []).includes("authorization"),
      JSON.stringify(read),
    );
    checks.check(
      "credential injection on a write: the SAP CSRF token and its session",
      write?.allowed === true && write.headers?.["x-csrf-token"] === "tok-secret-1" && write.headers?.cookie === "SAP_SESSIONID=cookie-secret",
      JSON.stringify(write),
    );
    checks.check(
      "raw headers (encode_raw_headers): read as the map, no credentials without the flag",
      raw?.allowed === true && raw.headers?.authorization === undefined && (raw.headersToRemove ?? []).includes("authorization"),
      JSON.stringify(raw),
    );
  } finally {
    await erplink.kill();
    await upstream.close();
  }
});
