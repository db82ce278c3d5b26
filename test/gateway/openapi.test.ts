/**
 * The OpenAPI 3.1 document: valid for a real validator, generated from the
 * route table (every route present), and the reference page is served.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { docs } from "../../src/gen/docs.js";
import { ROUTES } from "../../src/gateway/route-table.js";
import { HTTP_URL_PATTERN } from "../../src/schema/http-url.js";
import { idPattern, pageTokenPattern } from "../../src/schema/resource-ids.js";
import { json, patch, post } from "../../test-support/http.js";
import { createWorld, type World } from "../../test-support/world.js";

const OpenApi = suite<{ world: World; doc: Record<string, any> }>("openapi");

OpenApi.before(async (ctx) => {
  ctx.world = await createWorld();
  const res = await ctx.world.app.inject({ method: "GET", url: "/api-reference/openapi.json" });
  assert.is(res.statusCode, 200);
  assert.match(res.headers["content-type"] as string, /^application\/json/);
  ctx.doc = JSON.parse(res.body);
});
OpenApi.after(async (ctx) => {
  await ctx.world.close();
});

OpenApi("validates as OpenAPI 3.1", async ({ doc }) => {
  assert.is(doc.openapi, "3.1.0");
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  assert.equal(result.errors, undefined);
  assert.is(result.valid, true);
  assert.is(validator.version, "3.1");
});

OpenApi("lists every routed /admin path and method, with id path parameters", ({ doc }) => {
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
  );
  const routed = ROUTES.map((r) => `${r.method} ${r.path}`);
  assert.equal(documented.sort(), routed.sort());
  for (const path of ["/admin/systems/{id}", "/admin/systems/{id}/instances", "/admin/instances/{id}"]) {
    for (const op of Object.values(doc.paths[path]) as { parameters: { name: string; in: string; required: boolean }[] }[]) {
      const param = op.parameters.find((p) => p.in === "path");
      assert.equal({ name: param?.name, required: param?.required }, { name: "id", required: true });
    }
  }
});

OpenApi("describes bodies, envelopes, errors and the bearer scheme", ({ doc }) => {
  assert.equal(doc.components.securitySchemes.bearer.scheme, "bearer");
  assert.equal(doc.components.securitySchemes.bearer.type, "http");
  const create = doc.paths["/admin/systems"].post;
  assert.is(create.operationId, "CreateSystem");
  assert.equal(create.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/SystemCreate" });
  assert.equal(Object.keys(create.responses).sort(), ["201", "400", "401", "403", "404", "405", "409", "413", "415", "429", "500", "503"]);
  const envelope = create.responses["201"].content["application/json"].schema;
  assert.equal(envelope.properties.data, { $ref: "#/components/schemas/System" });
  assert.equal(envelope.required, ["data", "meta"]);
  const list = doc.paths["/admin/systems"].get;
  assert.equal(list.parameters.map((p: { name: string }) => p.name), ["page_size", "page_token"]);
  // Zero means the default (AIP-158), as over gRPC.
  assert.equal(list.parameters[0].schema, { type: "integer", minimum: 0, maximum: 500, default: 50 });

  const system = doc.components.schemas.System;
  assert.is(system.properties.id.readOnly, true);
  assert.is(system.properties.name.maxLength, 100);
  assert.is(system.properties.created_at.format, "date-time");
  assert.match(system.properties.name.description, /unique across all systems/);
  const systemCreate = doc.components.schemas.SystemCreate;
  assert.equal(systemCreate.required, ["name"]);
  assert.equal(Object.keys(systemCreate.properties), ["name", "description", "labels"]);
  assert.is(systemCreate.additionalProperties, false);
  const instancePatch = doc.components.schemas.InstanceUpdate;
  assert.is(instancePatch.minProperties, 1);
  assert.is(instancePatch.required, undefined);
  assert.is(doc.components.schemas.InstanceCreate.properties.name.pattern, "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  assert.equal(doc.components.schemas.Error.properties.error.required, ["code", "message", "requestId"]);
  // One alternative per type (admin keys have no permissions), and one without `type` (a data key).
  const keyCreate = doc.components.schemas.ApiKeyCreate;
  assert.equal(keyCreate.oneOf.map((v: { title: string }) => v.title), ["data", "admin", "data (type left out)"]);
  const [data, admin, untyped] = keyCreate.oneOf;
  assert.equal(data.properties.type, {
    type: "string",
    enum: ["data"],
    description: "`data` (the default) or `admin`. Set at creation; never changes.",
  });
  assert.equal(Object.keys(data.properties), ["name", "type", "permissions", "rate_limits", "expires_at"]);
  assert.equal([data.required, admin.required, untyped.required], [["name", "type"], ["name", "type"], ["name"]]);
  assert.equal(admin.properties.permissions, { type: "object", maxProperties: 0, description: "Not used with type `admin`: empty or absent." });
  assert.equal(untyped.properties.permissions, data.properties.permissions);
  assert.equal(Object.keys(untyped.properties), ["name", "permissions", "rate_limits", "expires_at"]);
  assert.is(doc.components.schemas.ApiKeyUpdate.properties.type, undefined);
  const created = doc.paths["/admin/api-keys"].post.responses["201"];
  assert.equal(Object.keys(created.headers), [
    "Location",
    "ETag",
    "X-Request-Id",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "RateLimit-Policy",
    "RateLimit",
  ]);
});

OpenApi("an optional field's pattern admits \"\" (unset), as the services do; a required one's does not", ({ doc }) => {
  for (const name of ["Instance", "InstanceCreate", "InstanceUpdate"]) {
    assert.is(doc.components.schemas[name].properties.sap_client.pattern, "^$|^[0-9]{3}$", name);
  }
  assert.is(doc.components.schemas.InstanceCreate.properties.name.pattern, "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
});

OpenApi("path parameters: each id's pattern (a malformed one is a 404), `current` for sessions, service names as the data path takes them", ({ doc }) => {
  const param = (path: string, method: string, name: string) =>
    doc.paths[path][method].parameters.find((p: { name: string; in: string }) => p.name === name && p.in === "path").schema;
  assert.equal(param("/admin/systems/{id}", "get", "id"), { type: "string", pattern: "^sys_[0-9A-HJKMNP-TV-Z]{26}$" });
  assert.equal(param("/admin/systems/{id}/instances", "post", "id"), { type: "string", pattern: idPattern("sys") });
  assert.equal(param("/admin/instances/{id}", "patch", "id"), { type: "string", pattern: idPattern("ins") });
  assert.equal(param("/admin/api-keys/{id}/explain", "post", "id"), { type: "string", pattern: idPattern("key") });
  assert.equal(param("/admin/logs/{id}", "get", "id"), { type: "string", pattern: idPattern("log") });
  assert.equal(param("/admin/audit/{id}", "get", "id"), { type: "string", pattern: idPattern("aud") });
  assert.equal(param("/admin/sessions/{id}", "delete", "id"), { type: "string", pattern: `^current$|${idPattern("ses")}` });
  const service = param("/admin/instances/{id}/services/{service}/catalog", "get", "service");
  assert.equal(service.maxLength, 200);
  const re = new RegExp(service.pattern);
  assert.equal(["API_BP", "srv;v=2", "a.b", "...", "x@y"].filter((n) => !re.test(n)), []);
  assert.equal([".", "..", "a/b", "a b", "%41", "ä", ""].filter((n) => re.test(n)), []);
  // Every route with a path parameter documents 414 (a parameter longer than any valid value).
  for (const route of ROUTES) {
    const documented = Object.keys(doc.paths[route.path][route.method.toLowerCase()].responses);
    assert.is(documented.includes("414"), route.params !== undefined, `${route.method} ${route.path}`);
    for (const name of Object.keys(route.params ?? {})) assert.type(param(route.path, route.method.toLowerCase(), name).pattern, "string", `${route.path} ${name}`);
  }
});

OpenApi("query parameters: page tokens of each list, and the filters' formats as the services check them", ({ doc }) => {
  const query = (path: string, name: string) => doc.paths[path].get.parameters.find((p: { name: string }) => p.name === name).schema;
  const lists: [string, Parameters<typeof pageTokenPattern>[0]][] = [
    ["/admin/systems", "sys"],
    ["/admin/systems/{id}/instances", "ins"],
    ["/admin/api-keys", "key"],
    ["/admin/sessions", "ses"],
    ["/admin/logs", "log"],
    ["/admin/audit", "aud"],
  ];
  for (const [path, prefix] of lists) assert.equal(query(path, "page_token"), { type: "string", pattern: `^$|${pageTokenPattern(prefix)}` }, path);
  assert.equal(query("/admin/logs", "page_size"), { type: "integer", minimum: 0, maximum: 1000, default: 100 });
  assert.equal(query("/admin/logs", "status"), { type: "string", pattern: "^$|^[1-5]([0-9]{2}|[xX]{2})$" });
  assert.equal(query("/admin/logs", "method"), { type: "string", pattern: "^$|^[A-Z]{1,16}$" });
  assert.equal(query("/admin/logs", "instance"), { type: "string", pattern: "^$|^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$" });
  assert.equal(query("/admin/logs", "request_id"), { type: "string", pattern: "^$|^[A-Za-z0-9._:-]{1,128}$" });
  assert.equal(query("/admin/logs", "from"), { type: "string", format: "date-time" });
  assert.equal(query("/admin/usage", "bucket"), { type: "string", pattern: "^$|^(hour|day)$" });
  assert.equal(query("/admin/usage", "group_limit"), { type: "integer", minimum: 0, maximum: 100 });
});

OpenApi("bodies: rules JSON Schema can write are written (positive integers, required strings, URLs, back-end credentials per type, permissions)", ({ doc }) => {
  const schemas = doc.components.schemas;
  const limits = schemas.ApiKeyCreate.oneOf[0].properties.rate_limits.properties;
  assert.equal([limits.per_minute.minimum, limits.per_day.minimum], [1, 1]);
  // An expiry in the past is accepted (the key is expired at once): nothing more than a date-time.
  assert.equal(Object.keys(schemas.ApiKeyUpdate.properties.expires_at).sort(), ["description", "format", "type"]);
  const explain = schemas.ExplainApiKeyBody;
  assert.equal([explain.properties.url.minLength, explain.properties.instance.minLength], [1, 1]);
  assert.equal(schemas.InstanceCreate.properties.base_url.pattern, HTTP_URL_PATTERN);
  // The credentials: the fields each type needs, the others empty.
  const auth = schemas.InstanceCreate.properties.auth;
  assert.equal(auth.oneOf.map((v: { title: string }) => v.title), ["none", "basic", "bearer", "oauth2_client_credentials"]);
  const oauth = auth.oneOf[3];
  assert.equal(oauth.required, ["type", "token_url", "client_id", "client_secret"]);
  assert.equal([oauth.properties.token_url.pattern, oauth.properties.token_url.minLength], [HTTP_URL_PATTERN, 1]);
  assert.equal(oauth.properties.password, { type: "string", maxLength: 0, description: "Not used with type `oauth2_client_credentials`: empty or absent." });
  assert.is(oauth.properties.scope.maxLength, 1024);
  assert.equal(auth.oneOf[0].required, ["type"]);
  // In a patch, null removes the credentials.
  assert.equal(schemas.InstanceUpdate.properties.auth.oneOf.at(-1), { type: "null" });
  // Permissions: instance -> service or * -> entity set or * -> at least one operation.
  const perms = schemas.ApiKeyUpdate.properties.permissions;
  assert.equal(perms.type, ["object", "null"]);
  assert.equal(perms.propertyNames, { pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$" });
  const entities = perms.additionalProperties.additionalProperties;
  assert.equal(entities.additionalProperties, { type: "array", minItems: 1, items: { type: "string", enum: ["list", "get", "create", "update", "delete", "invoke"] } });
  // `*` at entity level never includes an operation, so the schema does not let it hold `invoke`.
  assert.equal(entities.properties, { "*": { type: "array", minItems: 1, items: { type: "string", enum: ["list", "get", "create", "update", "delete"] } } });
  // Header names and values of an explained request.
  const headers = explain.properties.headers;
  assert.equal([headers.propertyNames.pattern, headers.additionalProperties.pattern], ["^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", "^[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]*$"]);
  // Beside the explained request's fields (and no other field), the draft permissions of ExplainApiKeyRequest, with their rules.
  assert.equal(Object.keys(explain.properties), ["instance", "service", "method", "url", "headers", "body", "permissions"]);
  assert.equal([explain.required, explain.additionalProperties], [["instance", "method", "url"], false]);
  const draft = explain.properties.permissions;
  const { description: draftDoc, ...draftShape } = draft;
  const { description: _savedDoc, ...savedShape } = schemas.ApiKeyCreate.oneOf[0].properties.permissions;
  assert.equal(draftShape, savedShape, "the rules of ApiKey.permissions");
  assert.is(draftDoc, docs["erplink.admin.v1.ExplainApiKeyRequest.permissions"]);
  assert.match(draftDoc, /instead of the key's saved ones/);
  const body = doc.paths["/admin/api-keys/{id}/explain"].post.requestBody;
  assert.equal(body.content["application/json"].schema, { $ref: "#/components/schemas/ExplainApiKeyBody" });
  assert.match(body.description, /Beside its fields, in the same object: `permissions`\.$/);
});

OpenApi("every 201 declares the Location header; every body example is accepted by its route", async ({ doc, world }) => {
  for (const route of ROUTES.filter((r) => r.status === 201)) {
    assert.is(doc.paths[route.path].post.responses["201"].headers.Location.required, true, route.path);
  }
  // The examples (Schemathesis' examples phase sends them too), against real resources.
  const systemId = json(await post(world.app, "/admin/systems", { name: "examples" })).data.id;
  const instanceId = json(await post(world.app, `/admin/systems/${systemId}/instances`, { name: "examples-ins", base_url: "http://127.0.0.1:9/" })).data.id;
  const keyId = json(await post(world.app, "/admin/api-keys", { name: "examples-key" })).data.id;
  const ids: Record<string, string> = { "/admin/systems": systemId, "/admin/instances": instanceId, "/admin/api-keys": keyId };
  let tried = 0;
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const example = op.requestBody?.content["application/json"].example;
      if (example === undefined) continue;
      const url = path.replace("{id}", ids[Object.keys(ids).find((p) => path.startsWith(`${p}/`)) ?? ""] ?? "");
      const res = method === "patch" ? await patch(world.app, url, example) : await post(world.app, url, example);
      assert.ok(res.statusCode === 200 || res.statusCode === 201, `${method} ${url}: ${res.statusCode} ${res.body}`);
      tried++;
    }
  }
  assert.is(tried, 10, "create and update of systems, instances and API keys, a session, an explanation, a connection test, a batch of catalogs");
});

OpenApi("POST /admin/catalogs:batchGet: the request message as the body (at most 100 services), an array of results, each a catalog or an error, and no page token", ({ doc }) => {
  const op = doc.paths["/admin/catalogs:batchGet"].post;
  assert.is(op.operationId, "BatchGetServiceCatalogs");
  assert.is(op.description, docs["erplink.admin.v1.InstanceService.BatchGetServiceCatalogs"]);
  assert.equal(op.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/BatchGetServiceCatalogsRequest" });
  const body = doc.components.schemas.BatchGetServiceCatalogsRequest;
  assert.equal(Object.keys(body.properties), ["services"]);
  assert.equal([body.properties.services.type, body.properties.services.maxItems, body.additionalProperties], ["array", 100, false]);
  assert.equal(Object.keys(body.properties.services.items.properties), ["instance_id", "service"]);
  const envelope = op.responses["200"].content["application/json"].schema;
  assert.equal(envelope.properties.data, { type: "array", items: { $ref: "#/components/schemas/ServiceCatalogResult" } });
  assert.equal(Object.keys(envelope.properties.meta.properties), ["requestId"]);
  const result = doc.components.schemas.ServiceCatalogResult;
  assert.equal(Object.keys(result.properties), ["instance_id", "service", "catalog", "error"]);
  assert.equal(Object.keys(result.properties.error.properties), ["code", "message"]);
  // Per-pair failures are answers, not statuses: no 502 or 504 for the call.
  assert.equal(Object.keys(op.responses).sort(), ["200", "400", "401", "403", "404", "405", "409", "413", "415", "429", "500", "503"]);
});

OpenApi("etags: PATCH and DELETE of systems, instances and API keys take If-Match and may answer 412; every answer holding one of them declares ETag; a PATCH body may carry etag", ({ doc }) => {
  const conditional: string[] = [];
  const etagged: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const name = `${method.toUpperCase()} ${path}`;
      const ifMatch = (op.parameters ?? []).find((p: { name: string }) => p.name === "If-Match");
      if (ifMatch !== undefined) {
        conditional.push(name);
        assert.equal([ifMatch.in, ifMatch.required, ifMatch.schema], ["header", false, { type: "string" }], name);
        assert.match(op.responses["412"].description, /PRECONDITION_FAILED/, name);
        assert.equal(op.responses["412"].content["application/json"].schema, { $ref: "#/components/schemas/Error" }, name);
      } else {
        assert.is(op.responses["412"], undefined, `${name}: no 412 without If-Match`);
      }
      const ok = op.responses["200"] ?? op.responses["201"];
      if (ok.headers.ETag !== undefined) {
        etagged.push(name);
        assert.equal(ok.headers.ETag.schema, { type: "string" }, name);
      }
    }
  }
  const items = ["/admin/systems/{id}", "/admin/instances/{id}", "/admin/api-keys/{id}"];
  assert.equal(conditional.sort(), items.flatMap((p) => [`DELETE ${p}`, `PATCH ${p}`]).sort());
  assert.equal(
    etagged.sort(),
    [...items.flatMap((p) => [`DELETE ${p}`, `GET ${p}`, `PATCH ${p}`]), "POST /admin/systems", "POST /admin/systems/{id}/instances", "POST /admin/api-keys"].sort(),
  );
  for (const name of ["SystemUpdate", "InstanceUpdate", "ApiKeyUpdate"]) {
    assert.equal(doc.components.schemas[name].properties.etag?.type, ["string", "null"], `${name} takes etag`);
  }
  for (const name of ["System", "Instance", "ApiKey"]) assert.is(doc.components.schemas[name].properties.etag.readOnly, true, name);
});

OpenApi("serves a browsable reference page without a token", async ({ world }) => {
  const res = await world.app.inject({ method: "GET", url: "/api-reference" });
  const page = res.statusCode === 302 ? await world.app.inject({ method: "GET", url: res.headers.location as string }) : res;
  assert.is(page.statusCode, 200);
  assert.match(page.headers["content-type"] as string, /^text\/html/);
  assert.match(page.body, /swagger-ui/i);
  // Same origin as the dashboard: its own files only (no inline script or style, nothing from elsewhere), never framed.
  assert.is(
    page.headers["content-security-policy"],
    "default-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='; img-src 'self' data:; font-src 'self' data:; " +
      "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
  );
});

OpenApi.run();
