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
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startChildBackend } from "../child-backend.js";

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
  /**
   * For rows with no entity set (`(Type)`): the service's entity sets of
   * that type, where the `$metadata` places such an entity (V2 navigation
   * data the mock server keeps inside the row it belongs to).
   */
  readonly entitySets?: readonly string[];
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

interface ReadyLine {
  readonly port: number;
  readonly roots: Record<string, string>;
}

export async function startMockServer(options: StartMockServerOptions = {}): Promise<MockServer> {
  const backend = await startChildBackend<ReadyLine>(
    {
      name: "the mock server",
      script: join(here, "server.mjs"),
      env: {
        MOCKSERVER_PORT: String(options.port ?? 0),
        MOCKSERVER_SEED: String(options.seed ?? 1),
        MOCKSERVER_DEBUG: options.debug ? "1" : "0",
        MOCKSERVER_WATCH_STDIN: "1",
      },
      marker: "MOCKSERVER_READY",
      credentials: MOCKSERVER_CREDENTIALS,
      ...(options.debug ? { debug: true } : {}),
    },
    (ready) => {
      for (const [name, path] of Object.entries(MOCKSERVER_ROOTS)) {
        if (ready.roots[name] !== path) throw new Error(`the mock server serves ${name} at ${ready.roots[name]}, expected ${path}`);
      }
      return Object.values(MOCKSERVER_ROOTS);
    },
  );
  const effects = async (requestId: string): Promise<readonly Effect[]> =>
    (await backend.getJson<{ effects: Effect[] }>(`/__effects/${encodeURIComponent(requestId)}`)).effects;
  return { baseUrl: backend.baseUrl, roots: MOCKSERVER_ROOTS, credentials: { ...MOCKSERVER_CREDENTIALS }, effects, stop: backend.stop };
}
