/**
 * The admin calls for a system's instances: list, create, update, delete,
 * and the step-by-step connection test. Back-end secrets are write-only:
 * the API returns the credential type and its non-secret fields only.
 */
import { call } from "./api.js";

/** The credential types an instance may use towards its back end. */
export type AuthType = "none" | "basic" | "bearer" | "oauth2_client_credentials";

/** Back-end credentials as the API returns them (never a secret). */
export interface BackendAuth {
  readonly type?: AuthType;
  readonly username?: string;
  readonly token_url?: string;
  readonly client_id?: string;
  readonly scope?: string;
}

/** Back-end credentials as sent to the API (secrets included, write-only). */
export interface BackendAuthInput {
  readonly type: AuthType;
  readonly username?: string;
  readonly password?: string;
  readonly token?: string;
  readonly token_url?: string;
  readonly client_id?: string;
  readonly client_secret?: string;
  readonly scope?: string;
}

/** An instance: one OData endpoint of a system. */
export interface Instance {
  readonly id: string;
  readonly system_id: string;
  readonly name: string;
  readonly environment?: string;
  readonly base_url: string;
  readonly services?: Readonly<Record<string, { readonly path: string }>>;
  readonly auth?: BackendAuth;
  readonly sap_client?: string;
  readonly upstream_connections?: number;
  readonly created_at: string;
  readonly updated_at: string;
  /** Changes with every change: sent back as `If-Match`. */
  readonly etag?: string;
}

/** The fields of an instance a form sends (`auth: null` removes the credentials). */
export interface InstanceInput {
  readonly name?: string;
  readonly environment?: string;
  readonly base_url?: string;
  readonly services?: Readonly<Record<string, { readonly path: string }>>;
  readonly sap_client?: string | null;
  readonly upstream_connections?: number;
  readonly auth?: BackendAuthInput | null;
}

/** One step of a connection test. */
export interface ConnectionTestStep {
  readonly name: string;
  readonly ok?: boolean;
  readonly duration_ms?: number;
  readonly detail?: string;
}

/** A connection test's outcome. */
export interface ConnectionTest {
  readonly ok?: boolean;
  readonly error?: string;
  readonly url?: string;
  readonly http_status?: number;
  readonly odata_version?: string;
  readonly csrf_token?: boolean;
  readonly duration_ms?: number;
  readonly steps?: readonly ConnectionTestStep[];
}

const id = (value: string) => encodeURIComponent(value);

export const instancesApi = {
  list: (systemId: string, pageToken = "") =>
    call<Instance[]>(
      "GET",
      `/admin/systems/${id(systemId)}/instances?page_size=500${pageToken === "" ? "" : `&page_token=${encodeURIComponent(pageToken)}`}`,
    ),
  get: (instanceId: string) => call<Instance>("GET", `/admin/instances/${id(instanceId)}`),
  create: (systemId: string, body: InstanceInput) => call<Instance>("POST", `/admin/systems/${id(systemId)}/instances`, { body }),
  /** Changes only the fields in `body` (the update mask), and only if the instance is still at `etag`. */
  update: (instanceId: string, body: InstanceInput, etag?: string) => call<Instance>("PATCH", `/admin/instances/${id(instanceId)}`, { body, ifMatch: etag }),
  remove: (instanceId: string, etag?: string) => call<Instance>("DELETE", `/admin/instances/${id(instanceId)}`, { ifMatch: etag }),
  test: (instanceId: string, service: string) =>
    call<ConnectionTest>("POST", `/admin/instances/${id(instanceId)}/test`, { body: service === "" ? {} : { service } }),
};
