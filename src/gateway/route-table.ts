/**
 * The REST facade as data: every `/admin` route and the RPC it maps to
 * (grpc-gateway style). The gateway registers routes from this table and
 * the OpenAPI document is generated from it; nothing else defines a route.
 */
import type { DescMessage, DescMethod } from "@bufbuild/protobuf";
import { ApiKeySchema, ApiKeyService } from "../gen/erplink/admin/v1/api_key_pb.js";
import { InstanceSchema, InstanceService } from "../gen/erplink/admin/v1/instance_pb.js";
import { AuthorizationService } from "../gen/erplink/authz/v1/authorization_pb.js";
import { SystemSchema, SystemService } from "../gen/erplink/admin/v1/system_pb.js";

/** HTTP methods the facade routes. */
export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

/** One REST route and how it maps to an RPC. */
export interface RestRoute {
  readonly method: HttpMethod;
  /** Path in OpenAPI form, parameters in braces: `/admin/systems/{id}`. */
  readonly path: string;
  readonly rpc: DescMethod;
  /** One-line summary for the OpenAPI document. */
  readonly summary: string;
  /** OpenAPI tag. */
  readonly tag: string;
  /** Path parameter -> dot path of the request field it fills. */
  readonly params?: Readonly<Record<string, string>>;
  /** Query parameters -> request fields of the same name (integers or strings). */
  readonly query?: readonly string[];
  /**
   * The request field the JSON body fills, and its message. With `patch`, the
   * body's top-level keys become the update mask named by `patch`.
   */
  readonly body?: { readonly field: string; readonly schema: DescMessage; readonly patch?: string };
  /** The response field that becomes the envelope's `data`. */
  readonly data: string;
  /** Further response fields added to `data` (the secret of a new API key). */
  readonly merge?: readonly string[];
  /** The resource message of `data` (an array of it for lists). */
  readonly resource: DescMessage;
  /** Whether `data` is a list whose response has `next_page_token`. */
  readonly list?: boolean;
  /** Status of a success. */
  readonly status: 200 | 201;
  /** Who may call it. */
  readonly auth: "admin";
}

const PAGING = ["page_size", "page_token"] as const;
const m = <S extends { method: Record<string, DescMethod> }>(s: S, name: keyof S["method"]) =>
  s.method[name as string]!;

/** Every REST route. */
export const ROUTES: readonly RestRoute[] = [
  {
    method: "GET",
    path: "/admin/systems",
    rpc: m(SystemService, "listSystems"),
    summary: "List systems",
    tag: "Systems",
    query: PAGING,
    data: "systems",
    resource: SystemSchema,
    list: true,
    status: 200,
    auth: "admin",
  },
  {
    method: "POST",
    path: "/admin/systems",
    rpc: m(SystemService, "createSystem"),
    summary: "Create a system",
    tag: "Systems",
    body: { field: "system", schema: SystemSchema },
    data: "system",
    resource: SystemSchema,
    status: 201,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/systems/{id}",
    rpc: m(SystemService, "getSystem"),
    summary: "Get a system",
    tag: "Systems",
    params: { id: "id" },
    data: "system",
    resource: SystemSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "PATCH",
    path: "/admin/systems/{id}",
    rpc: m(SystemService, "updateSystem"),
    summary: "Update a system",
    tag: "Systems",
    params: { id: "system.id" },
    body: { field: "system", schema: SystemSchema, patch: "update_mask" },
    data: "system",
    resource: SystemSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "DELETE",
    path: "/admin/systems/{id}",
    rpc: m(SystemService, "deleteSystem"),
    summary: "Delete a system (it must have no instances)",
    tag: "Systems",
    params: { id: "id" },
    data: "system",
    resource: SystemSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/systems/{id}/instances",
    rpc: m(InstanceService, "listInstances"),
    summary: "List the instances of a system",
    tag: "Instances",
    params: { id: "system_id" },
    query: PAGING,
    data: "instances",
    resource: InstanceSchema,
    list: true,
    status: 200,
    auth: "admin",
  },
  {
    method: "POST",
    path: "/admin/systems/{id}/instances",
    rpc: m(InstanceService, "createInstance"),
    summary: "Add an instance to a system",
    tag: "Instances",
    params: { id: "system_id" },
    body: { field: "instance", schema: InstanceSchema },
    data: "instance",
    resource: InstanceSchema,
    status: 201,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/instances/{id}",
    rpc: m(InstanceService, "getInstance"),
    summary: "Get an instance",
    tag: "Instances",
    params: { id: "id" },
    data: "instance",
    resource: InstanceSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "PATCH",
    path: "/admin/instances/{id}",
    rpc: m(InstanceService, "updateInstance"),
    summary: "Update an instance",
    tag: "Instances",
    params: { id: "instance.id" },
    body: { field: "instance", schema: InstanceSchema, patch: "update_mask" },
    data: "instance",
    resource: InstanceSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "DELETE",
    path: "/admin/instances/{id}",
    rpc: m(InstanceService, "deleteInstance"),
    summary: "Delete an instance",
    tag: "Instances",
    params: { id: "id" },
    data: "instance",
    resource: InstanceSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/api-keys",
    rpc: m(ApiKeyService, "listApiKeys"),
    summary: "List API keys",
    tag: "API keys",
    query: PAGING,
    data: "api_keys",
    resource: ApiKeySchema,
    list: true,
    status: 200,
    auth: "admin",
  },
  {
    method: "POST",
    path: "/admin/api-keys",
    rpc: m(ApiKeyService, "createApiKey"),
    summary: "Issue an API key (its secret is returned once, in data.key)",
    tag: "API keys",
    body: { field: "api_key", schema: ApiKeySchema },
    data: "api_key",
    merge: ["key"],
    resource: ApiKeySchema,
    status: 201,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/api-keys/{id}",
    rpc: m(ApiKeyService, "getApiKey"),
    summary: "Get an API key (never its secret)",
    tag: "API keys",
    params: { id: "id" },
    data: "api_key",
    resource: ApiKeySchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "PATCH",
    path: "/admin/api-keys/{id}",
    rpc: m(ApiKeyService, "updateApiKey"),
    summary: "Change an API key's name, permissions, rate limits or expiry",
    tag: "API keys",
    params: { id: "api_key.id" },
    body: { field: "api_key", schema: ApiKeySchema, patch: "update_mask" },
    data: "api_key",
    resource: ApiKeySchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "DELETE",
    path: "/admin/api-keys/{id}",
    rpc: m(ApiKeyService, "deleteApiKey"),
    summary: "Revoke an API key",
    tag: "API keys",
    params: { id: "id" },
    data: "api_key",
    resource: ApiKeySchema,
    status: 200,
    auth: "admin",
  },
];

/**
 * RPCs deliberately not on the REST facade (reachable over gRPC/Connect
 * only), by fully-qualified method name. A test fails for any RPC that is
 * neither routed nor listed here.
 */
export const INTERNAL_ONLY_RPCS: ReadonlySet<string> = new Set<string>([
  // Called by internal services over gRPC; the OData gateway uses the same engine.
  `${AuthorizationService.typeName}.${AuthorizationService.method.authorize.name}`,
]);

/** The Fastify form of an OpenAPI path: `{id}` -> `:id`. */
export function fastifyPath(path: string): string {
  return path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ":$1");
}
