/**
 * The REST facade as data: every `/admin` route and the RPC it maps to
 * (grpc-gateway style). The gateway registers routes from this table and
 * the OpenAPI document is generated from it; nothing else defines a route.
 */
import type { DescMessage, DescMethod, JsonValue } from "@bufbuild/protobuf";
import { ApiKeySchema, ApiKeyService } from "../gen/erplink/admin/v1/api_key_pb.js";
import { AuditEntrySchema, AuditService } from "../gen/erplink/admin/v1/audit_pb.js";
import {
  ConnectionTestOptionsSchema,
  ConnectionTestSchema,
  DataRequestSchema,
  ExplanationSchema,
  ServiceCatalogSchema,
} from "../gen/erplink/admin/v1/diagnostics_pb.js";
import {
  BatchGetServiceCatalogsRequestSchema,
  InstanceSchema,
  InstanceService,
  ServiceCatalogResultSchema,
} from "../gen/erplink/admin/v1/instance_pb.js";
import { LogService, RequestLogSchema } from "../gen/erplink/admin/v1/request_log_pb.js";
import { AuthorizationService } from "../gen/erplink/authz/v1/authorization_pb.js";
import { SessionSchema, SessionService } from "../gen/erplink/admin/v1/session_pb.js";
import { SystemSchema, SystemService } from "../gen/erplink/admin/v1/system_pb.js";
import { UsageSchema, UsageService } from "../gen/erplink/admin/v1/usage_pb.js";
import { rulesOf } from "../schema/field-rules.js";
import { ETAG_FIELD } from "../schema/etag.js";
import { idPattern, type IdPrefix } from "../schema/resource-ids.js";

/** HTTP methods the facade routes. */
export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

/** One REST route and how it maps to an RPC. */
export interface RestRoute {
  readonly method: HttpMethod;
  /** Path in OpenAPI form, parameters in braces: `/admin/systems/{id}`. */
  readonly path: string;
  readonly rpc: DescMethod;
  /** The OpenAPI operation id when the RPC has a second route (default: the RPC's name). */
  readonly operationId?: string;
  /** One-line summary for the OpenAPI document. */
  readonly summary: string;
  /** OpenAPI tag. */
  readonly tag: string;
  /** Path parameter -> dot path of the request field it fills. */
  readonly params?: Readonly<Record<string, string>>;
  /**
   * Path parameter -> the form of its valid values (an id of one type, a
   * name), published in the OpenAPI document. An id that does not match
   * names no resource: the services answer 404 `NOT_FOUND`.
   */
  readonly paramSchemas?: Readonly<Record<string, ParamSchema>>;
  /** The id type of a list's items, for the pattern of its `page_token`. */
  readonly listOf?: IdPrefix;
  /**
   * The path of the resource a 201 created, `{id}` standing for `data.id`:
   * sent as its `Location`.
   */
  readonly location?: string;
  /** Query parameters -> request fields of the same name (integers, booleans, timestamps or strings). */
  readonly query?: readonly string[];
  /** Largest `page_size` of a list (default 500). */
  readonly maxPageSize?: number;
  /**
   * The request field the JSON body fills, and its message; `*`: the body is
   * the request message itself (`schema` is then the RPC's input), as
   * grpc-gateway's `body: "*"`. With `patch`, the
   * body's top-level keys become the update mask named by `patch`. With
   * `optional`, a request with neither a body nor a `Content-Type` is as `{}`.
   */
  readonly body?: {
    readonly field: string;
    readonly schema: DescMessage;
    readonly patch?: string;
    readonly optional?: boolean;
    /**
     * Further fields of the RPC's request message, siblings of `field`, read
     * from the same JSON object: the body holds `schema`'s fields and these
     * side by side (explain's draft `permissions` beside the request it
     * explains). None may share a name with a field of `schema`; with
     * `patch`, they are not part of the update mask.
     */
    readonly extras?: readonly string[];
    /** An example body for the OpenAPI document (Schemathesis' examples phase sends it too). */
    readonly example?: JsonValue;
  };
  /** The response field that becomes the envelope's `data`. */
  readonly data: string;
  /** Further response fields added to `data` (the secret of a new API key). */
  readonly merge?: readonly string[];
  /** The resource message of `data` (an array of it for lists). */
  readonly resource: DescMessage;
  /** Whether `data` is a list (an array of `resource`); a response's `next_page_token`, when it has one, becomes `meta.nextPageToken`. */
  readonly list?: boolean;
  /** Status of a success. */
  readonly status: 200 | 201;
  /** Who may call it. */
  readonly auth: "admin";
  /** Whether it reaches a back end, so that 502 `BAD_GATEWAY` and 504 `GATEWAY_TIMEOUT` are answers too. */
  readonly upstream?: boolean;
  /**
   * Session cookies: `set` sets them from the response's `token` and
   * `csrf_token` when the request asked for browser mode (`cookie=true`),
   * and leaves the token out of the body; `clear` clears them when the
   * session revoked is the one the request's cookie carried.
   */
  readonly sessionCookies?: "set" | "clear";
  /**
   * On the writes (PATCH, DELETE) of a resource with an etag: the write
   * honours `If-Match` and the body's `etag` (412 `PRECONDITION_FAILED`
   * when stale). `get` reads the resource when several tags must be
   * compared with its etag; `singular` names it in messages.
   */
  readonly conditional?: { readonly get: DescMethod; readonly singular: string };
}

/**
 * Whether a route answers one resource that has an etag (a GET of one, a
 * create, an update, a delete), which it then also sends as `ETag`.
 */
export function answersEtag(route: RestRoute): boolean {
  return route.list !== true && route.resource.fields.some((f) => f.name === ETAG_FIELD);
}

/** The JSON Schema of a path parameter's string. */
export interface ParamSchema {
  readonly pattern: string;
  readonly maxLength?: number;
}

const PAGING = ["page_size", "page_token"] as const;

/** How one resource's five standard routes (AIP-style CRUD) are laid out. */
interface ResourceLayout {
  readonly service: { readonly method: Readonly<Record<string, DescMethod>> };
  readonly resource: DescMessage;
  readonly tag: string;
  /** "system", for summaries. */
  readonly singular: string;
  /** Path of the collection (list, create): `/admin/systems`. */
  readonly collection: string;
  /** Path parameters of the collection path -> request fields (list and create). */
  readonly collectionParams?: Readonly<Record<string, string>>;
  /** The id types of the collection path's parameters (the parent's). */
  readonly collectionParamIds?: Readonly<Record<string, IdPrefix>>;
  /** The id type of the resource: `sys`. */
  readonly idPrefix: IdPrefix;
  /** Path of one item (get, update, delete); its `{id}` fills `id`. */
  readonly item: string;
  /** Request field the body fills and the response field of one resource: `system`. */
  readonly field: string;
  /** Response field of a page: `systems`. */
  readonly listField: string;
  /** RPC local names: listSystems, createSystem, getSystem, updateSystem, deleteSystem. */
  readonly rpcs: readonly [list: string, create: string, get: string, update: string, remove: string];
  /** Query parameters of the list beyond paging (its filters). */
  readonly listQuery?: readonly string[];
  /** Summaries that differ from the generated ones. */
  readonly summaries?: Partial<Record<"list" | "create" | "get" | "update" | "delete", string>>;
  /** Extra response fields of create merged into `data`. */
  readonly createMerge?: readonly string[];
  /** Example bodies of create and update. */
  readonly examples: { readonly create: JsonValue; readonly update: JsonValue };
}

/** The five routes of a resource. */
function resourceRoutes(r: ResourceLayout): RestRoute[] {
  const [list, create, get, update, remove] = r.rpcs.map((name) => r.service.method[name]!);
  const a = /^[aeiou]/i.test(r.singular) ? "an" : "a";
  const common = { tag: r.tag, resource: r.resource, auth: "admin" as const };
  const collectionPatterns = r.collectionParamIds ? idPatterns(r.collectionParamIds) : undefined;
  const itemPatterns = idPatterns({ id: r.idPrefix });
  const conditional = r.resource.fields.some((f) => f.name === ETAG_FIELD) ? { conditional: { get: get!, singular: r.singular } } : {};
  return [
    {
      ...common,
      method: "GET",
      path: r.collection,
      rpc: list!,
      summary: r.summaries?.list ?? `List ${r.listField.replace(/_/g, " ")}`,
      params: r.collectionParams,
      paramSchemas: collectionPatterns,
      query: [...PAGING, ...(r.listQuery ?? [])],
      data: r.listField,
      list: true,
      listOf: r.idPrefix,
      status: 200,
    },
    {
      ...common,
      method: "POST",
      path: r.collection,
      rpc: create!,
      summary: r.summaries?.create ?? `Create ${a} ${r.singular}`,
      params: r.collectionParams,
      paramSchemas: collectionPatterns,
      body: { field: r.field, schema: r.resource, example: r.examples.create },
      data: r.field,
      merge: r.createMerge,
      status: 201,
      location: r.item,
    },
    {
      ...common,
      method: "GET",
      path: r.item,
      rpc: get!,
      summary: r.summaries?.get ?? `Get ${a} ${r.singular}`,
      params: { id: "id" },
      paramSchemas: itemPatterns,
      data: r.field,
      status: 200,
    },
    {
      ...common,
      method: "PATCH",
      path: r.item,
      rpc: update!,
      summary: r.summaries?.update ?? `Update ${a} ${r.singular}`,
      params: { id: `${r.field}.id` },
      paramSchemas: itemPatterns,
      body: { field: r.field, schema: r.resource, patch: "update_mask", example: r.examples.update },
      data: r.field,
      status: 200,
      ...conditional,
    },
    {
      ...common,
      method: "DELETE",
      path: r.item,
      rpc: remove!,
      summary: r.summaries?.delete ?? `Delete ${a} ${r.singular}`,
      params: { id: "id" },
      paramSchemas: itemPatterns,
      data: r.field,
      status: 200,
      ...conditional,
    },
  ];
}

/**
 * A service name as the data path accepts it (`checkServiceName`): 1 to 200
 * characters a path segment may hold unencoded, but not `.` or `..`; the
 * rule of the connection test's `service`.
 */
const SERVICE_NAME: ParamSchema = {
  pattern: rulesOf(ConnectionTestOptionsSchema.field.service).pattern,
  maxLength: rulesOf(ConnectionTestOptionsSchema.field.service).maxLen,
};

/** Every REST route. */
export const ROUTES: readonly RestRoute[] = [
  ...resourceRoutes({
    service: SystemService,
    resource: SystemSchema,
    tag: "Systems",
    singular: "system",
    idPrefix: "sys",
    collection: "/admin/systems",
    item: "/admin/systems/{id}",
    field: "system",
    listField: "systems",
    rpcs: ["listSystems", "createSystem", "getSystem", "updateSystem", "deleteSystem"],
    summaries: { delete: "Delete a system (it must have no instances)" },
    examples: {
      create: { name: "S/4HANA Finance", description: "Group finance", labels: { team: "fin" } },
      update: { description: "Finance and controlling" },
    },
  }),
  ...resourceRoutes({
    service: InstanceService,
    resource: InstanceSchema,
    tag: "Instances",
    singular: "instance",
    idPrefix: "ins",
    collection: "/admin/systems/{id}/instances",
    collectionParams: { id: "system_id" },
    collectionParamIds: { id: "sys" },
    item: "/admin/instances/{id}",
    field: "instance",
    listField: "instances",
    rpcs: ["listInstances", "createInstance", "getInstance", "updateInstance", "deleteInstance"],
    summaries: { list: "List the instances of a system", create: "Add an instance to a system" },
    examples: {
      create: {
        name: "s4-prod",
        environment: "production",
        base_url: "https://s4.example.com/sap/opu/odata4/",
        auth: { type: "basic", username: "ERPLINK", password: "…" },
        sap_client: "100",
      },
      update: { base_url: "https://s4-new.example.com/sap/opu/odata4/" },
    },
  }),
  {
    method: "GET",
    path: "/admin/instances",
    rpc: InstanceService.method.listInstances,
    operationId: "ListAllInstances",
    summary: "List the instances of every system",
    tag: "Instances",
    query: PAGING,
    data: "instances",
    list: true,
    listOf: "ins",
    resource: InstanceSchema,
    status: 200,
    auth: "admin",
  },
  ...resourceRoutes({
    service: ApiKeyService,
    resource: ApiKeySchema,
    tag: "API keys",
    singular: "API key",
    idPrefix: "key",
    collection: "/admin/api-keys",
    item: "/admin/api-keys/{id}",
    field: "api_key",
    listField: "api_keys",
    rpcs: ["listApiKeys", "createApiKey", "getApiKey", "updateApiKey", "deleteApiKey"],
    listQuery: ["show_revoked"],
    summaries: {
      list: "List API keys (revoked ones too with show_revoked=true)",
      create: "Issue an API key (its secret is returned once, in data.key)",
      get: "Get an API key (never its secret)",
      update: "Change an API key's name, permissions, rate limits or expiry",
      delete: "Revoke an API key",
    },
    createMerge: ["key"],
    examples: {
      create: {
        name: "invoice app",
        permissions: { "s4-prod": { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get"] }, "*": { A_Currency: ["list"] } } },
        rate_limits: { per_minute: 120, per_day: 50000 },
        expires_at: "2027-12-31T00:00:00Z",
      },
      update: { rate_limits: { per_minute: 60 } },
    },
  }),
  {
    method: "POST",
    path: "/admin/sessions",
    rpc: SessionService.method.createSession,
    summary: "Exchange the master key or an admin key for a session (its token is returned once, in data.token)",
    tag: "Sessions",
    query: ["cookie"],
    body: { field: "session", schema: SessionSchema, optional: true, example: { label: "nightly export script" } },
    data: "session",
    merge: ["token", "csrf_token"],
    resource: SessionSchema,
    status: 201,
    location: "/admin/sessions/{id}",
    auth: "admin",
    sessionCookies: "set",
  },
  {
    method: "GET",
    path: "/admin/sessions",
    rpc: SessionService.method.listSessions,
    summary: "List live sessions, newest first (all for the master key, your own for an admin key)",
    tag: "Sessions",
    query: PAGING,
    data: "sessions",
    resource: SessionSchema,
    list: true,
    listOf: "ses",
    status: 200,
    auth: "admin",
  },
  {
    method: "DELETE",
    path: "/admin/sessions/{id}",
    rpc: SessionService.method.deleteSession,
    summary: "Revoke a session (`current`: the calling session, to log out)",
    tag: "Sessions",
    params: { id: "id" },
    paramSchemas: { id: { pattern: `^current$|${idPattern("ses")}` } },
    data: "session",
    resource: SessionSchema,
    status: 200,
    auth: "admin",
    sessionCookies: "clear",
  },
  {
    method: "GET",
    path: "/admin/logs",
    rpc: LogService.method.queryLogs,
    summary: "Query the request log, newest first",
    tag: "Request logs",
    query: [
      "from",
      "to",
      "api_key_id",
      "instance",
      "service",
      "entity",
      "operation",
      "method",
      "status",
      "request_id",
      ...PAGING,
    ],
    maxPageSize: 1000,
    data: "logs",
    resource: RequestLogSchema,
    list: true,
    listOf: "log",
    status: 200,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/logs/{id}",
    rpc: LogService.method.getLog,
    summary: "Get a request-log entry",
    tag: "Request logs",
    params: { id: "id" },
    paramSchemas: idPatterns({ id: "log" }),
    data: "log",
    resource: RequestLogSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/audit",
    rpc: AuditService.method.listAuditEntries,
    summary: "List the audit trail of administrative changes, newest first",
    tag: "Audit trail",
    query: ["from", "to", "actor", "resource_type", "resource_id", "action", ...PAGING],
    data: "audit_entries",
    resource: AuditEntrySchema,
    list: true,
    listOf: "aud",
    status: 200,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/audit/{id}",
    rpc: AuditService.method.getAuditEntry,
    summary: "Get an audit entry",
    tag: "Audit trail",
    params: { id: "id" },
    paramSchemas: idPatterns({ id: "aud" }),
    data: "audit_entry",
    resource: AuditEntrySchema,
    status: 200,
    auth: "admin",
  },
  // Diagnostics (AIP-136 custom methods on API keys and instances).
  {
    method: "POST",
    path: "/admin/api-keys/{id}/explain",
    rpc: ApiKeyService.method.explainApiKey,
    summary: "Explain what the data path would decide for a request with this key (nothing is forwarded or counted)",
    tag: "API keys",
    params: { id: "id" },
    paramSchemas: idPatterns({ id: "key" }),
    body: {
      field: "data_request",
      schema: DataRequestSchema,
      // The draft permissions to explain, beside the request's fields.
      extras: ["permissions"],
      example: {
        instance: "s4-prod",
        method: "GET",
        url: "/odata/s4-prod/API_BUSINESS_PARTNER/A_BusinessPartner?$top=10",
        permissions: { "s4-prod": { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get"] } } },
      },
    },
    data: "explanation",
    resource: ExplanationSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/instances/{id}/services/{service}/catalog",
    rpc: InstanceService.method.getServiceCatalog,
    summary: "List a service's entity sets, navigations and operations from its $metadata",
    tag: "Instances",
    params: { id: "id", service: "service" },
    // A service name as the data path takes it (src/gateway/data/resolve-instance.ts).
    paramSchemas: { ...idPatterns({ id: "ins" }), service: SERVICE_NAME },
    data: "catalog",
    resource: ServiceCatalogSchema,
    status: 200,
    auth: "admin",
    upstream: true,
  },
  {
    method: "POST",
    path: "/admin/catalogs:batchGet",
    rpc: InstanceService.method.batchGetServiceCatalogs,
    summary: "Get the catalogs of several services, of one instance or several, in one call (each answered with its catalog or its own error)",
    tag: "Instances",
    body: {
      field: "*",
      schema: BatchGetServiceCatalogsRequestSchema,
      example: {
        services: [
          { instance_id: "ins_01KA0000000000000000000000", service: "API_BUSINESS_PARTNER" },
          { instance_id: "ins_01KA0000000000000000000000", service: "API_SALES_ORDER_SRV" },
        ],
      },
    },
    data: "results",
    list: true,
    resource: ServiceCatalogResultSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "POST",
    path: "/admin/instances/{id}/test",
    rpc: InstanceService.method.testInstanceConnection,
    summary: "Test the connection to an instance's back end, step by step",
    tag: "Instances",
    params: { id: "id" },
    paramSchemas: idPatterns({ id: "ins" }),
    body: { field: "options", schema: ConnectionTestOptionsSchema, optional: true, example: { service: "API_BUSINESS_PARTNER" } },
    data: "connection_test",
    resource: ConnectionTestSchema,
    status: 200,
    auth: "admin",
  },
  {
    method: "GET",
    path: "/admin/usage",
    rpc: UsageService.method.getUsage,
    summary: "Usage of the data path over time: totals, a series by hour or day, top groups",
    tag: "Usage",
    query: ["from", "to", "bucket", "group_by", "group_limit"],
    data: "usage",
    resource: UsageSchema,
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

/** The schemas of path parameters that hold ids of the given types. */
function idPatterns(ids: Readonly<Record<string, IdPrefix>>): Record<string, ParamSchema> {
  return Object.fromEntries(Object.entries(ids).map(([param, prefix]) => [param, { pattern: idPattern(prefix) }]));
}

/** The Fastify form of an OpenAPI path: `{id}` -> `:id`; a literal `:` (a custom method's, `:batchGet`) -> `::`. */
export function fastifyPath(path: string): string {
  return path.replace(/:/g, "::").replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ":$1");
}
