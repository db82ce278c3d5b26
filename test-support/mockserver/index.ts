/**
 * A second, independent real OData back end for tests: SAP's Fiori elements
 * mock server (`@sap-ux/fe-mockserver-core`, devDependency only) serving SAP's
 * published service definitions from third_party/sap-edmx/ —
 * API_BUSINESS_PARTNER and API_SALES_ORDER_SRV over OData V2 under
 * `/sap/opu/odata/sap/…`, TripPin over OData V4 — with the data in ./data/.
 * Every request needs HTTP basic authentication as `erp-user` / `erp-pass`
 * (else 401), except `GET /__effects/<id>`.
 *
 * `effects(requestId)` answers what the mock server's data layer did for the
 * request that carried `X-Request-Id: requestId`: the entity sets it read
 * (`get` by full key, else `list`) and wrote (`create`, `update`, `delete`).
 *
 * Each call to `startMockServer` spawns its own child process on 127.0.0.1
 * with fresh data; see README.md.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface StartMockServerOptions {
  /** Port on 127.0.0.1; default 0, an ephemeral port. */
  readonly port?: number;
  /**
   * Seed of the generated rows (entity sets without a data file in data/,
   * 150 rows each); default 1. Keys do not depend on it.
   */
  readonly seed?: number;
  /** Forward the mock server's logging to this process's stderr. */
  readonly debug?: boolean;
}

/** Service name -> root path to append to baseUrl, with a trailing slash. */
export interface MockServerRoots {
  readonly API_BUSINESS_PARTNER: "/sap/opu/odata/sap/API_BUSINESS_PARTNER/";
  readonly API_SALES_ORDER_SRV: "/sap/opu/odata/sap/API_SALES_ORDER_SRV/";
  readonly TripPin: "/odata/trippin/";
}

export const MOCKSERVER_ROOTS: MockServerRoots = {
  API_BUSINESS_PARTNER: "/sap/opu/odata/sap/API_BUSINESS_PARTNER/",
  API_SALES_ORDER_SRV: "/sap/opu/odata/sap/API_SALES_ORDER_SRV/",
  TripPin: "/odata/trippin/",
};

export type EffectOperation = "get" | "list" | "create" | "update" | "delete";

/**
 * One thing the data layer did on an entity set. `entitySet` is the entity
 * set's (or singleton's) name, or `(Type)` for rows that belong to no entity
 * set (a navigation without a binding, e.g. TripPin's `(Trip)`). `detail`:
 * the keys used, `|`-separated when several (`all` for a whole-set read).
 */
export interface Effect {
  readonly operation: EffectOperation;
  readonly entitySet: string;
  readonly detail?: string;
}

export interface MockServer {
  /** e.g. `http://127.0.0.1:41159`, no trailing slash. */
  readonly baseUrl: string;
  readonly roots: MockServerRoots;
  readonly credentials: { readonly username: string; readonly password: string };
  /**
   * What the data layer did for the request(s) that carried
   * `X-Request-Id: requestId`, one entry per (operation, entity set), in the
   * order first done; [] for an unknown id. `$batch` parts count for the
   * batch's id, and also for `<id>#<n>` (n-th part, from 1) and for the
   * part's own `X-Request-Id`.
   */
  effects(requestId: string): Promise<readonly Effect[]>;
  /** SIGTERM, then SIGKILL after 3 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

export const MOCKSERVER_CREDENTIALS = { username: "erp-user", password: "erp-pass" } as const;

const here = dirname(fileURLToPath(import.meta.url));
const STARTUP_TIMEOUT_MS = 20_000;
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Children also exit when their stdin (held by us) closes; this covers a normal exit.
  process.once("exit", () => {
    for (const child of live) child.kill("SIGKILL");
  });
}

function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
}

interface ReadyLine {
  readonly port: number;
  readonly roots: Record<string, string>;
}

export async function startMockServer(options: StartMockServerOptions = {}): Promise<MockServer> {
  installExitHook();
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  const child = spawn(process.execPath, [join(here, "server.mjs")], {
    cwd: here,
    env: {
      ...process.env,
      NODE_ENV: "test",
      NODE_OPTIONS: "",
      MOCKSERVER_PORT: String(options.port ?? 0),
      MOCKSERVER_SEED: String(options.seed ?? 1),
      MOCKSERVER_DEBUG: options.debug ? "1" : "0",
      MOCKSERVER_WATCH_STDIN: "1",
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  /** How the process ended, once it has. */
  let exit: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      live.delete(child);
      exit = `${signal ?? code}`;
      resolve();
    });
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    if (options.debug) process.stderr.write(chunk);
    else stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  };

  try {
    const ready = await new Promise<ReadyLine>((resolve, reject) => {
      let out: string | null = "";
      const timer = setTimeout(() => reject(new Error("the mock server did not start within 20 s")), deadline - Date.now());
      child.stdout!.on("data", (chunk: Buffer) => {
        if (options.debug) process.stderr.write(chunk);
        if (out === null) return;
        out += chunk.toString("utf8");
        const m = /^MOCKSERVER_READY (.*)$/m.exec(out);
        if (m) {
          out = null;
          clearTimeout(timer);
          resolve(JSON.parse(m[1]!) as ReadyLine);
        }
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the mock server exited during startup (${signal ?? code})`));
      });
      child.once("error", reject);
    });
    for (const [name, path] of Object.entries(MOCKSERVER_ROOTS)) {
      if (ready.roots[name] !== path) throw new Error(`the mock server serves ${name} at ${ready.roots[name]}, expected ${path}`);
    }

    const baseUrl = `http://127.0.0.1:${ready.port}`;
    const authorization = basicAuth(MOCKSERVER_CREDENTIALS.username, MOCKSERVER_CREDENTIALS.password);
    for (const root of Object.values(MOCKSERVER_ROOTS)) {
      const url = `${baseUrl}${root}$metadata`;
      for (;;) {
        const status = await fetch(url, { headers: { authorization } }).then(
          async (r) => (await r.arrayBuffer(), r.status),
          () => 0,
        );
        if (status === 200) break;
        if (Date.now() > deadline) throw new Error(`the mock server: ${url} answered ${status || "nothing"}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const effects = async (requestId: string): Promise<readonly Effect[]> => {
      if (exit !== undefined) throw new Error(`the mock server has exited (${exit}): ${stderr.slice(-1000)}`);
      const res = await fetch(`${baseUrl}/__effects/${encodeURIComponent(requestId)}`);
      if (res.status !== 200) throw new Error(`the mock server's effects answered ${res.status}`);
      return ((await res.json()) as { effects: Effect[] }).effects;
    };
    return { baseUrl, roots: MOCKSERVER_ROOTS, credentials: { ...MOCKSERVER_CREDENTIALS }, effects, stop };
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}${stderr ? `\n--- mock server stderr ---\n${stderr}` : ""}`, { cause: err });
  }
}
