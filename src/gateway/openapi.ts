/**
 * The OpenAPI 3.1 document of the REST facade, generated from the route
 * table, the message descriptors and the proto comments.
 */
import { ScalarType } from "@bufbuild/protobuf";
import { docs } from "../gen/docs.js";
import { rulesOf } from "../schema/field-rules.js";
import { pageTokenPattern } from "../schema/resource-ids.js";
import { bodySchema, messageSchema, type JsonSchema } from "./json-schema.js";
import { answersEtag, type RestRoute } from "./route-table.js";

/** Options of {@link buildOpenApi}. */
export interface OpenApiOptions {
  /** Base URL clients reach erplink at, if known. */
  readonly serverUrl?: string;
}

const ERROR_RESPONSES: Readonly<Record<string, string>> = {
  "400": "The request is invalid (`VALIDATION_ERROR`); `details` names each bad field.",
  "401": "Missing, invalid, revoked or expired bearer token (`UNAUTHORIZED`).",
  "403": "A data key, which cannot manage erplink, or a cookie session request without its CSRF token or from another origin (`FORBIDDEN`).",
  "404": "No such resource (`NOT_FOUND`): an id in the path that names nothing, well-formed or not; or no such route.",
  "405": "The path exists but not with this method (`METHOD_NOT_ALLOWED`).",
  "409": "A unique field is taken, or the resource is still in use (`CONFLICT`).",
  "413": "The body is larger than 1 MiB (`PAYLOAD_TOO_LARGE`).",
  "415": "The body is not `application/json` (`UNSUPPORTED_MEDIA_TYPE`).",
  "429": "The admin token's rate limit is spent (`RATE_LIMITED`); see `Retry-After`.",
  "500": "Unexpected error (`INTERNAL`); the message is masked.",
  "503": "The store is unavailable (`UNAVAILABLE`).",
};

/** Further errors of routes with path parameters. */
const PATH_PARAM_RESPONSES: Readonly<Record<string, string>> = {
  "414": "A path parameter is longer than 256 characters, more than any valid value (`URI_TOO_LONG`).",
};

/** Further errors of conditional writes (`If-Match`, or an `etag` in the body). */
const CONDITIONAL_RESPONSES: Readonly<Record<string, string>> = {
  "412": "The resource's etag is not the one `If-Match` (or the body's `etag`) names: it changed since it was read (`PRECONDITION_FAILED`). Nothing was changed; read it again and retry.",
};

/** The `If-Match` parameter of a conditional write. */
const IF_MATCH_PARAMETER = {
  name: "If-Match",
  in: "header",
  required: false,
  description:
    "Makes the write conditional (RFC 9110): the resource's etag (as its `ETag` header and its `etag` field give it), a list of them, or `*` (any). " +
    "When the resource's etag is none of them, the answer is 412 and nothing changes; weak tags (`W/…`) never match. With an `etag` in the body as well, both must match.",
  schema: { type: "string" },
};

/** The header of an answer holding one resource with an etag. */
const ETAG_HEADER = {
  ETag: {
    description: "The resource's etag (a strong entity tag, the same as its `etag` field); send it back in `If-Match` to make a write conditional.",
    required: true,
    schema: { type: "string" },
  },
};

/** Further errors of routes that reach a back end. */
const UPSTREAM_RESPONSES: Readonly<Record<string, string>> = {
  "502": "The back end could not be reached, refused erplink's credentials or sent an unreadable answer (`BAD_GATEWAY`).",
  "504": "The back end did not answer within the upstream timeout (`GATEWAY_TIMEOUT`).",
};

const header = (description: string, type = "string") => ({ description, schema: { type } });

/** Headers of every counted /admin response. */
const RESPONSE_HEADERS: Readonly<Record<string, unknown>> = {
  "X-Request-Id": header("Id of this request (a well-formed incoming one is reused)."),
  "X-RateLimit-Limit": header("Limit of the admin rate-limit window with the fewest requests remaining.", "integer"),
  "X-RateLimit-Remaining": header("Requests remaining in that window.", "integer"),
  "X-RateLimit-Reset": header("Unix time, in seconds, at which that window ends.", "integer"),
  "RateLimit-Policy": header('Every window, as the IETF draft field: `"minute";q=100;w=60, "day";q=10000;w=86400`.'),
  RateLimit: header('Every window\'s state, as the IETF draft field: `"minute";r=99;t=23, "day";r=9999;t=56603`.'),
};

/** The header of a 201: where the new resource is. */
const LOCATION_HEADER = {
  Location: {
    description:
      "The path of the created resource (its `ERPLINK_PUBLIC_URL` form when configured, else path-absolute), such as `/admin/systems/sys_…`.",
    required: true,
    schema: { type: "string" },
  },
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The success envelope of `data`; `paged`: its meta may carry `nextPageToken`. */
function envelope(data: JsonSchema, paged: boolean): JsonSchema {
  const meta: JsonSchema = {
    type: "object",
    properties: {
      requestId: { type: "string", description: "Id of this request, as in the `X-Request-Id` header." },
      ...(paged
        ? { nextPageToken: { type: "string", description: "Pass as `page_token` for the next page; absent on the last." } }
        : {}),
    },
    required: ["requestId"],
  };
  return { type: "object", properties: { data, meta }, required: ["data", "meta"] };
}

/** Builds the document. */
export function buildOpenApi(routes: readonly RestRoute[], options: OpenApiOptions = {}): Record<string, unknown> {
  const schemas: Record<string, JsonSchema> = {
    Error: {
      type: "object",
      description: "Every error erplink answers with itself.",
      properties: {
        error: {
          type: "object",
          properties: {
            code: { type: "string", description: "Stable, machine-readable code, such as `VALIDATION_ERROR`." },
            message: { type: "string", description: "What went wrong, for people." },
            requestId: { type: "string" },
            details: {
              type: "array",
              items: {
                type: "object",
                properties: { field: { type: "string" }, message: { type: "string" } },
                required: ["field", "message"],
              },
            },
          },
          required: ["code", "message", "requestId"],
        },
      },
      required: ["error"],
    },
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const name = route.resource.name;
    schemas[name] ??= messageSchema(route.resource, { mode: "output", constraints: true });
    const operation: Record<string, unknown> = {
      operationId: route.operationId ?? route.rpc.name,
      summary: route.summary,
      tags: [route.tag],
      security: [{ bearer: [] }],
    };
    const description = docs[`${route.rpc.parent.typeName}.${route.rpc.name}`];
    if (description) operation.description = description;
    const parameters: Record<string, unknown>[] = [];
    for (const [param, field] of Object.entries(route.params ?? {})) {
      const doc = docs[`${route.rpc.input.typeName}.${field.split(".").pop()}`];
      const schema = { type: "string", ...route.paramSchemas?.[param] };
      parameters.push({ name: param, in: "path", required: true, schema, description: doc });
    }
    for (const q of route.query ?? []) {
      const doc = docs[`${route.rpc.input.typeName}.${q}`];
      const field = route.rpc.input.fields.find((f) => f.name === q);
      const rules = field === undefined ? undefined : rulesOf(field);
      // Empty values are as absent (proto3: unset), so patterns admit "".
      const schema =
        q === "page_size"
          ? { type: "integer", minimum: 0, maximum: route.maxPageSize ?? 500, default: route.maxPageSize === 1000 ? 100 : 50 }
          : q === "page_token" && route.listOf !== undefined
            ? { type: "string", pattern: `^$|${pageTokenPattern(route.listOf)}` }
            : field?.fieldKind === "message" && field.message.typeName === "google.protobuf.Timestamp"
              ? { type: "string", format: "date-time" }
              : field?.fieldKind === "scalar" && field.scalar === ScalarType.BOOL
                ? { type: "boolean" }
                : field?.fieldKind === "scalar" && field.scalar === ScalarType.INT32
                  ? { type: "integer", minimum: 0, ...(rules?.maxValue ? { maximum: rules.maxValue } : {}) }
                  : { type: "string", ...(rules?.pattern ? { pattern: `^$|${rules.pattern}` } : {}) };
      parameters.push({ name: q, in: "query", required: false, schema, description: doc });
    }
    if (route.conditional !== undefined) parameters.push(IF_MATCH_PARAMETER);
    if (parameters.length > 0) operation.parameters = parameters;
    if (route.body) {
      // A custom method's body is a message of its own, named as in the protos.
      const custom = route.body.schema !== route.resource;
      const extras = route.body.extras ?? [];
      // With fields of the request beside the message's, the body is neither: named after the RPC.
      const bodyName =
        extras.length > 0
          ? `${route.rpc.input.name.replace(/Request$/, "")}Body`
          : custom
            ? route.body.schema.name
            : `${name}${route.body.patch ? "Update" : "Create"}`;
      schemas[bodyName] ??= bodySchema(route.rpc.input, route.body, true);
      const beside = extras.length > 0 ? ` Beside its fields, in the same object: ${extras.map((e) => `\`${e}\``).join(", ")}.` : "";
      operation.requestBody = {
        required: route.body.optional !== true,
        description: route.body.patch
          ? `The fields to change; every field present is changed (the update mask).${beside}`
          : custom
            ? `${docs[route.body.schema.typeName] ?? "The request."}${beside}`
            : `The resource to create.${beside}`,
        content: {
          "application/json": { schema: ref(bodyName), ...(route.body.example === undefined ? {} : { example: route.body.example }) },
        },
      };
    }
    let data: JsonSchema = route.list ? { type: "array", items: ref(name) } : ref(name);
    if (route.merge !== undefined && route.merge.length > 0) {
      // The resource plus the response fields merged into `data` (a new secret, shown once).
      const base = schemas[name]!;
      const extra: Record<string, JsonSchema> = {};
      for (const field of route.merge) {
        extra[field] = { type: "string", description: docs[`${route.rpc.output.typeName}.${field}`] ?? "" };
      }
      const merged = `${name}Created`;
      schemas[merged] ??= { ...base, properties: { ...(base.properties as Record<string, JsonSchema>), ...extra } };
      data = ref(merged);
    }
    const responses: Record<string, unknown> = {
      [String(route.status)]: {
        description: route.status === 201 ? "Created." : "OK.",
        headers: {
          ...(route.location === undefined ? {} : LOCATION_HEADER),
          ...(answersEtag(route) ? ETAG_HEADER : {}),
          ...RESPONSE_HEADERS,
        },
        content: { "application/json": { schema: envelope(data, route.rpc.output.fields.some((f) => f.name === "next_page_token")) } },
      },
    };
    const errors = {
      ...ERROR_RESPONSES,
      ...(route.params === undefined ? {} : PATH_PARAM_RESPONSES),
      ...(route.upstream ? UPSTREAM_RESPONSES : {}),
      ...(route.conditional === undefined ? {} : CONDITIONAL_RESPONSES),
    };
    for (const [status, text] of Object.entries(errors).sort(([a], [b]) => Number(a) - Number(b))) {
      if (!route.body && (status === "413" || status === "415")) continue;
      responses[status] = {
        description: text,
        ...(status === "401" || status === "403" ? {} : { headers: RESPONSE_HEADERS }),
        content: { "application/json": { schema: ref("Error") } },
      };
    }
    operation.responses = responses;
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "erplink administration API",
      version: "v1",
      description:
        "Configure the ERP systems and instances erplink connects to. Every response is JSON in an envelope: " +
        "`{data, meta}` on success, `{error}` otherwise. The same operations are served over gRPC, gRPC-Web and " +
        "Connect (package `erplink.admin.v1`).",
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "The master key (`ERPLINK_MASTER_KEY`), an admin API key (`erpl_…`) or a session token (`erpls_…`, from " +
            "`POST /admin/sessions`). A browser session may instead send its `__Host-erplink_session` cookie with the " +
            "`X-CSRF-Token` header.",
        },
      },
    },
    security: [{ bearer: [] }],
  };
}
