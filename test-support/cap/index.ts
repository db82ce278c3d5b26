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
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startChildBackend } from "../child-backend.js";

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

interface ReadyLine {
  readonly port: number;
  readonly v4: Record<string, string>;
  readonly v2: Record<string, string>;
}

export async function startCapBackend(options: StartCapBackendOptions = {}): Promise<CapBackend> {
  const backend = await startChildBackend<ReadyLine>(
    {
      name: "the CAP back end",
      script: join(here, "server.mjs"),
      env: {
        CAP_PORT: String(options.port ?? 0),
        CAP_BULK_BP: String(options.bulkBusinessPartners ?? 0),
        CAP_DEBUG: options.debug ? "1" : "0",
        CAP_WATCH_STDIN: "1",
      },
      marker: "CAP_READY",
      credentials: CAP_CREDENTIALS,
      ...(options.debug ? { debug: true } : {}),
    },
    (ready) => [...Object.values(ready.v4), ...Object.values(ready.v2)],
  );
  const { v4, v2 } = backend.ready;
  const ledger = async (requestId: string): Promise<readonly LedgerStatement[]> =>
    (await backend.getJson<{ statements: LedgerStatement[] }>(`/__ledger/${encodeURIComponent(requestId)}`)).statements;
  const effects = async (requestId: string): Promise<readonly CapEffect[]> =>
    (await backend.getJson<{ effects: CapEffect[] }>(`/__effects/${encodeURIComponent(requestId)}`)).effects;
  return { baseUrl: backend.baseUrl, v4, v2, credentials: { ...CAP_CREDENTIALS }, ledger, effects, stop: backend.stop };
}
