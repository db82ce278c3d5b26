/**
 * The admin calls of the API keys screen, typed, on top of {@link call}:
 * keys (list, create, update, revoke), explain, and what the permission
 * editor offers (systems → instances, a service's catalog).
 */
import { call, listAll } from "./api.js";
import type { Permissions } from "./permission-draft.js";

export { INVOKE, OPERATIONS, SET_OPERATIONS, type Operation, type Permissions } from "./permission-draft.js";

export interface RateLimits {
  readonly per_minute?: number;
  readonly per_day?: number;
}

/** An API key as the API shows it (never its secret). */
export interface ApiKey {
  readonly id: string;
  readonly name: string;
  readonly type: "data" | "admin";
  readonly permissions?: Permissions;
  readonly rate_limits?: RateLimits;
  readonly prefix: string;
  readonly expires_at?: string;
  readonly created_at: string;
  readonly updated_at?: string;
  /** Changes with every change: sent back as `If-Match`. */
  readonly etag?: string;
  readonly last_used_at?: string;
}

/** The create answer: the key and, this once, its secret. */
export interface CreatedApiKey extends ApiKey {
  readonly key: string;
}

/** An instance (only what the editor needs). */
export interface Instance {
  readonly id: string;
  readonly name: string;
  readonly system_id?: string;
  readonly environment?: string;
  readonly services?: Readonly<Record<string, unknown>>;
}

export interface CatalogEntitySet {
  readonly name: string;
  readonly singleton?: boolean;
  readonly entity_type?: string;
}

/** A function or action of a service, as the catalog shows it. */
export interface CatalogOperation {
  /** The name a key grants it by: an import's name, a bound operation's qualified name. */
  readonly name: string;
  readonly kind: "function" | "action";
  readonly bound?: boolean;
  /** Bound operations: the entity sets it is called on. */
  readonly binding_entity_sets?: readonly string[];
  /** The entity sets its result lies in (none when the result is no entity). */
  readonly result_entity_sets?: readonly string[];
  /** V2 function imports: GET or POST. */
  readonly http_method?: string;
  /** The document does not say where some result lies: the data path refuses calls. */
  readonly result_unknown?: boolean;
}

export interface ServiceCatalog {
  readonly odata_version: string;
  readonly entity_sets?: readonly CatalogEntitySet[];
  readonly operations?: readonly CatalogOperation[];
}

/** One service of one instance, as {@link keysApi.catalogs} asks for it. */
export interface CatalogPair {
  readonly instance_id: string;
  readonly service: string;
}

/** The answer for one pair: its catalog, or why there is none (in words). */
export interface CatalogResult extends CatalogPair {
  readonly catalog?: ServiceCatalog;
  readonly error?: { readonly code: string; readonly message: string };
}

/** Most pairs one `POST /admin/catalogs:batchGet` takes. */
export const MAX_CATALOG_PAIRS = 100;

export interface AccessDecision {
  readonly entity_set: string;
  readonly operation: string;
  readonly reason: string;
  readonly allowed: boolean;
  readonly denial_step?: string;
  readonly message?: string;
}

export interface Explanation {
  readonly key_id: string;
  readonly instance: string;
  readonly service?: string;
  readonly allowed: boolean;
  readonly status?: number;
  readonly code?: string;
  readonly message?: string;
  readonly denial_step?: string;
  readonly accesses?: readonly AccessDecision[];
  readonly within_rate_limits?: boolean;
  readonly request?: { readonly kind?: string; readonly method?: string; readonly target?: string; readonly upstream_url?: string };
}

/** The fields a create or an update sends. */
export interface ApiKeyInput {
  name?: string;
  type?: "data" | "admin";
  permissions?: Permissions;
  rate_limits?: RateLimits | null;
  expires_at?: string | null;
}

const enc = encodeURIComponent;


export const keysApi = {
  list: () => listAll<ApiKey>("/admin/api-keys"),
  /** Every key, revoked ones included (each with its `revoked_at`). */
  listWithRevoked: () => listAll<ApiKey & { readonly revoked_at?: string }>("/admin/api-keys?show_revoked=true"),
  get: (id: string) => call<ApiKey>("GET", `/admin/api-keys/${enc(id)}`),
  create: (input: ApiKeyInput) => call<CreatedApiKey>("POST", "/admin/api-keys", { body: input }),
  /** Changes only the fields in `input` (the update mask), and only if the key is still at `etag`. */
  update: (id: string, input: ApiKeyInput, etag?: string) => call<ApiKey>("PATCH", `/admin/api-keys/${enc(id)}`, { body: input, ifMatch: etag }),
  revoke: (id: string, etag?: string) => call<ApiKey>("DELETE", `/admin/api-keys/${enc(id)}`, { ifMatch: etag }),
  /** With `permissions`, explains that draft instead of the key's saved permissions (nothing is stored). */
  explain: (id: string, request: { instance: string; method: string; url: string; permissions?: Permissions }) =>
    call<Explanation>("POST", `/admin/api-keys/${enc(id)}/explain`, { body: request }),
  /** Every instance of every system (one call a page, not one per system). */
  instances: (): Promise<Instance[]> => listAll<Instance>("/admin/instances"),
  /**
   * The catalogs of many (instance, service) pairs, one admin call per
   * {@link MAX_CATALOG_PAIRS}: one result per pair, in order, each its
   * catalog or its own error, so that one failing back end fails no other.
   */
  catalogs: async (pairs: readonly CatalogPair[]): Promise<CatalogResult[]> => {
    const out: CatalogResult[] = [];
    for (let i = 0; i < pairs.length; i += MAX_CATALOG_PAIRS) {
      const services = pairs.slice(i, i + MAX_CATALOG_PAIRS).map(({ instance_id, service }) => ({ instance_id, service }));
      out.push(...(await call<CatalogResult[]>("POST", "/admin/catalogs:batchGet", { body: { services }, idempotent: true })).data);
    }
    return out;
  },
};
