/**
 * A real OData back end for tests: a simulated ERP built with SAP CAP
 * (`@sap/cds`, devDependency only) on an in-memory sql.js database, serving
 * API_BUSINESS_PARTNER and API_SALES_ORDER over OData V4 and, through
 * `@cap-js-community/odata-v2-adapter`, over OData V2. Every request needs
 * HTTP basic authentication as `erp-user` / `erp-pass` (else 401).
 *
 * Each call to `startCapBackend` spawns its own child process (CAP allows one
 * app per process) on 127.0.0.1 with fresh sample data; see README.md.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface StartCapBackendOptions {
  /** Port on 127.0.0.1; default 0, an ephemeral port. */
  readonly port?: number;
  /**
   * Extra A_BusinessPartner rows to seed (ids 9000000001…, ~0.5 KB of JSON
   * each), for large responses: 10000 rows make about 5 MB with `$top=10000`.
   */
  readonly bulkBusinessPartners?: number;
  /** Forward CAP's logging (request log included) to this process's stderr. */
  readonly debug?: boolean;
}

export interface CapBackend {
  /** e.g. `http://127.0.0.1:41159`, no trailing slash. */
  readonly baseUrl: string;
  /** Service name -> V4 root path to append to baseUrl, e.g. `/odata/v4/api-business-partner/`. */
  readonly v4: Record<string, string>;
  /** Service name -> V2 root path to append to baseUrl, e.g. `/odata/v2/api-business-partner/`. */
  readonly v2: Record<string, string>;
  readonly credentials: { readonly username: string; readonly password: string };
  /**
   * The SQL CAP ran for the request that carried `X-Request-Id: requestId`
   * (its correlation id), each statement with the service entities it names.
   */
  ledger(requestId: string): Promise<readonly LedgerStatement[]>;
  /**
   * What the database really did for the request that carried
   * `X-Request-Id: requestId`: one entry per operation and table, in the
   * order first seen. Writes come row by row from SQLite's update hook, reads
   * from SQLite's query plan of each statement (see README.md, "The effect
   * oracle", for how reads are told apart as `get` or `list`).
   */
  effects(requestId: string): Promise<readonly CapEffect[]>;
  /** SIGTERM, then SIGKILL after 3 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

/** One SQL statement CAP ran. */
export interface LedgerStatement {
  readonly sql: string;
  /** Per table or view the statement names: the service entities it may stand for. */
  readonly touches: readonly (readonly CapEntity[])[];
}

/** An entity set of a CAP service. */
export interface CapEntity {
  readonly service: string;
  readonly entity: string;
}

/** What the database did on one table for a request (see {@link CapBackend.effects}). */
export interface CapEffect {
  /**
   * `get`: a read of one row by its full primary key (equality on every key
   * column, to a parameter, a literal or a column of an outer row); `list`:
   * any other read; `create`/`update`/`delete`: rows inserted, updated,
   * deleted (at least one).
   */
  readonly operation: "get" | "list" | "create" | "update" | "delete";
  /** The SQLite table, e.g. `erp_BusinessPartner`. */
  readonly table: string;
  /**
   * Reads only: made by a write statement to find the rows it writes (a
   * cascade's `DELETE … WHERE exists (SELECT … FROM parent …)`); nothing of
   * them reaches the client.
   */
  readonly locates?: true;
  /** The service entity sets the table stands for (several if several services project it). */
  readonly touches: readonly CapEntity[];
  /** The first 300 characters of the (first) statement with this effect. */
  readonly sql: string;
  /** Reads only: the statement's query plan (`EXPLAIN QUERY PLAN`), one line per step, indented by depth. */
  readonly plan?: readonly string[];
}

export const CAP_CREDENTIALS = { username: "erp-user", password: "erp-pass" } as const;

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
  readonly v4: Record<string, string>;
  readonly v2: Record<string, string>;
}

export async function startCapBackend(options: StartCapBackendOptions = {}): Promise<CapBackend> {
  installExitHook();
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  const child = spawn(process.execPath, [join(here, "server.mjs")], {
    cwd: here,
    env: {
      ...process.env,
      NODE_ENV: "test",
      NODE_OPTIONS: "",
      CAP_PORT: String(options.port ?? 0),
      CAP_BULK_BP: String(options.bulkBusinessPartners ?? 0),
      CAP_DEBUG: options.debug ? "1" : "0",
      CAP_WATCH_STDIN: "1",
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
      const timer = setTimeout(() => reject(new Error("CAP back end did not start within 20 s")), deadline - Date.now());
      child.stdout!.on("data", (chunk: Buffer) => {
        if (options.debug) process.stderr.write(chunk);
        if (out === null) return;
        out += chunk.toString("utf8");
        const m = /^CAP_READY (.*)$/m.exec(out);
        if (m) {
          out = null;
          clearTimeout(timer);
          resolve(JSON.parse(m[1]!) as ReadyLine);
        }
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`CAP back end exited during startup (${signal ?? code})`));
      });
      child.once("error", reject);
    });

    const baseUrl = `http://127.0.0.1:${ready.port}`;
    const authorization = basicAuth(CAP_CREDENTIALS.username, CAP_CREDENTIALS.password);
    const probes = [...Object.values(ready.v4), ...Object.values(ready.v2)].map((p) => `${baseUrl}${p}$metadata`);
    for (const url of probes) {
      for (;;) {
        const status = await fetch(url, { headers: { authorization } }).then(
          async (r) => (await r.arrayBuffer(), r.status),
          () => 0,
        );
        if (status === 200) break;
        if (Date.now() > deadline) throw new Error(`CAP back end: ${url} answered ${status || "nothing"}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const ledger = async (requestId: string): Promise<readonly LedgerStatement[]> => {
      if (exit !== undefined) throw new Error(`the CAP back end has exited (${exit}): ${stderr.slice(-1000)}`);
      const res = await fetch(`${baseUrl}/__ledger/${encodeURIComponent(requestId)}`);
      if (res.status !== 200) throw new Error(`CAP's ledger answered ${res.status}`);
      return ((await res.json()) as { statements: LedgerStatement[] }).statements;
    };
    const effects = async (requestId: string): Promise<readonly CapEffect[]> => {
      if (exit !== undefined) throw new Error(`the CAP back end has exited (${exit}): ${stderr.slice(-1000)}`);
      const res = await fetch(`${baseUrl}/__effects/${encodeURIComponent(requestId)}`);
      if (res.status !== 200) throw new Error(`CAP's effect oracle answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { effects: CapEffect[] }).effects;
    };
    return { baseUrl, v4: ready.v4, v2: ready.v2, credentials: { ...CAP_CREDENTIALS }, ledger, effects, stop };
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}${stderr ? `\n--- CAP stderr ---\n${stderr}` : ""}`, { cause: err });
  }
}
