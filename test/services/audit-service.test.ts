/**
 * The audit trail through typed Connect clients over the in-process router
 * transport: every admin write (systems, instances, API keys) records one
 * entry with its actor, snapshots and diff, secrets redacted; refused writes
 * leave none; a write whose entry cannot be written fails with `unavailable`
 * and changes nothing; and AuditService lists (every filter, paging,
 * validation) and gets entries.
 */
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { TimestampSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, createClient, createRouterTransport, type Client, type Interceptor } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeyService, ApiKeyType } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { AuditEntrySchema, AuditService, type AuditEntry } from "../../src/gen/erplink/admin/v1/audit_pb.js";
import { BackendAuthType, InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { SessionService } from "../../src/gen/erplink/admin/v1/session_pb.js";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { kPrincipal } from "../../src/services/auth.js";
import { DELETION_MARK_TTL_MS } from "../../src/services/system-service.js";
import { StoreUnavailableError } from "../../src/store/index.js";
import { rejects, tick, violations, worldTests, type TestWorld } from "../../test-support/rpc.js";

type World = TestWorld;

const test = suite("AuditService and the audit trail of admin writes");
const it = worldTests(test);

const AUD_ID = /^aud_[0-9A-HJKMNP-TV-Z]{26}$/;
const SESSION = "ses_01KAS000000000000000000000";
const UNAVAILABLE = "the store is unavailable; try again later";

/** An entry as proto JSON with proto names, as REST shows it (it has no enums to rename). */
function entryJson(e: AuditEntry | undefined): Record<string, JsonValue> {
  assert.ok(e, "entry is set");
  return toJson(AuditEntrySchema, e, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<string, JsonValue>;
}

/** Every entry, newest first (one page). */
async function trail(w: World): Promise<Record<string, JsonValue>[]> {
  const res = await w.client(AuditService).listAuditEntries({ pageSize: 500 });
  assert.is(res.nextPageToken, "");
  return res.auditEntries.map(entryJson);
}

/** The world's clock as the API writes it. */
function iso(w: World): string {
  return toJson(TimestampSchema, timestampFromDate(w.now)) as string;
}

/** A client of the public router (authenticated and counted) presenting `token`, optionally through a dashboard session. */
function clientAs<S extends DescService>(w: World, service: S, token: string, sessionId?: string): Client<S> {
  // Stands in for the session interceptor: the principal the admin
  // interceptor admitted, plus the session it came through.
  const session: Interceptor = (next) => (req) => {
    const principal = req.contextValues.get(kPrincipal);
    if (principal && sessionId) req.contextValues.set(kPrincipal, { ...principal, sessionId });
    return next(req);
  };
  const transport = createRouterTransport(w.layer.routes, {
    router: { interceptors: [...w.layer.publicInterceptors, session] },
    transport: {
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${token}`);
          req.header.set("x-request-id", "req_from_client");
          return next(req);
        },
      ],
    },
  });
  return createClient(service, transport);
}

async function createSystem(w: World, name = "erp") {
  const res = await w.client(SystemService).createSystem({ system: { name, labels: { "app.kubernetes.io/name": "erp" } } });
  return res.system!;
}

async function createInstance(w: World, systemId: string, name = "s4-prod") {
  const res = await w.client(InstanceService).createInstance({
    systemId,
    instance: {
      name,
      baseUrl: "https://s4.example.com/odata/",
      auth: { type: BackendAuthType.BASIC, username: "svc", password: "pw-one-hunter2" },
    },
  });
  return res.instance!;
}

// --- one entry per write ----------------------------------------------------------

it("CreateSystem, UpdateSystem, DeleteSystem each record one applied entry with before, after and the changes", async (w) => {
  const sys = await createSystem(w);
  const created = iso(w);
  tick(w);
  await w.client(SystemService).updateSystem({
    system: { id: sys.id, description: "Finance", labels: { team: "fin" } },
    updateMask: { paths: ["description", "labels"] },
  });
  const updated = iso(w);
  tick(w);
  await w.client(SystemService).deleteSystem({ id: sys.id });
  const deleted = iso(w);

  const common = { actor: "master", session_id: "", resource_type: "system", resource_id: sys.id, state: "applied" };
  const entries = await trail(w);
  for (const e of entries) assert.match(e.id as string, AUD_ID);
  assert.equal(
    entries.map(({ id: _id, request_id: _r, ...rest }) => rest),
    [
      {
        ...common,
        timestamp: deleted,
        action: "delete",
        changes: [
          { path: ["id"], before: sys.id, after: null },
          { path: ["name"], before: "erp", after: null },
          { path: ["description"], before: "Finance", after: null },
          { path: ["labels"], before: { team: "fin" }, after: null },
          { path: ["created_at"], before: created, after: null },
        ],
        before: { id: sys.id, name: "erp", description: "Finance", labels: { team: "fin" }, created_at: created, updated_at: updated },
        after: null,
      },
      {
        ...common,
        timestamp: updated,
        action: "update",
        changes: [
          { path: ["description"], before: "", after: "Finance" },
          { path: ["labels", "app.kubernetes.io/name"], before: "erp", after: null },
          { path: ["labels", "team"], before: null, after: "fin" },
        ],
        before: { id: sys.id, name: "erp", description: "", labels: { "app.kubernetes.io/name": "erp" }, created_at: created, updated_at: created },
        after: { id: sys.id, name: "erp", description: "Finance", labels: { team: "fin" }, created_at: created, updated_at: updated },
      },
      {
        ...common,
        timestamp: created,
        action: "create",
        changes: [
          { path: ["id"], before: null, after: sys.id },
          { path: ["name"], before: null, after: "erp" },
          { path: ["description"], before: null, after: "" },
          { path: ["labels"], before: null, after: { "app.kubernetes.io/name": "erp" } },
          { path: ["created_at"], before: null, after: created },
        ],
        before: null,
        after: { id: sys.id, name: "erp", description: "", labels: { "app.kubernetes.io/name": "erp" }, created_at: created, updated_at: created },
      },
    ],
  );
});

it("instances: credentials appear only as [redacted]; a changed password is a change, the same one re-sent is none", async (w) => {
  const sys = await createSystem(w);
  const ins = await createInstance(w, sys.id);
  const c = w.client(InstanceService);
  tick(w);
  // The same password again, and a new SAP client.
  await c.updateInstance({
    instance: { id: ins.id, auth: { type: BackendAuthType.BASIC, username: "svc", password: "pw-one-hunter2" }, sapClient: "100" },
    updateMask: { paths: ["auth", "sap_client"] },
  });
  tick(w);
  await c.updateInstance({
    instance: { id: ins.id, auth: { type: BackendAuthType.BASIC, username: "svc", password: "pw-two-hunter2" } },
    updateMask: { paths: ["auth"] },
  });
  tick(w);
  await c.updateInstance({
    instance: {
      id: ins.id,
      auth: { type: BackendAuthType.OAUTH2_CLIENT_CREDENTIALS, tokenUrl: "https://idp.example.com/token", clientId: "cid", clientSecret: "cs-hunter2" },
    },
    updateMask: { paths: ["auth"] },
  });
  tick(w);
  await c.updateInstance({ instance: { id: ins.id }, updateMask: { paths: ["auth"] } });
  tick(w);
  await c.deleteInstance({ id: ins.id });

  const entries = (await trail(w)).filter((e) => e.resource_type === "instance").reverse();
  assert.equal(entries.map((e) => e.action), ["create", "update", "update", "update", "update", "delete"]);
  const [create, same, changed, oauth, removed, del] = entries;
  assert.equal((create!.after as Record<string, JsonValue>).auth, { type: "basic", username: "svc", password: "[redacted]" });
  assert.ok(
    (create!.changes as JsonValue[]).some(
      (ch) => JSON.stringify(ch) === JSON.stringify({ path: ["auth"], before: null, after: { type: "basic", username: "svc", password: "[redacted]" } }),
    ),
  );
  assert.equal(same!.changes, [{ path: ["sap_client"], before: "", after: "100" }]);
  assert.equal(changed!.changes, [{ path: ["auth", "password"], before: "[redacted]", after: "[redacted]" }]);
  assert.equal(oauth!.changes, [
    { path: ["auth", "type"], before: "basic", after: "oauth2_client_credentials" },
    { path: ["auth", "username"], before: "svc", after: null },
    { path: ["auth", "password"], before: "[redacted]", after: null },
    { path: ["auth", "token_url"], before: null, after: "https://idp.example.com/token" },
    { path: ["auth", "client_id"], before: null, after: "cid" },
    { path: ["auth", "client_secret"], before: null, after: "[redacted]" },
  ]);
  assert.equal(removed!.changes, [
    { path: ["auth"], before: { type: "oauth2_client_credentials", token_url: "https://idp.example.com/token", client_id: "cid", client_secret: "[redacted]" }, after: null },
  ]);
  assert.is(del!.after, null);
  const text = JSON.stringify(await trail(w));
  assert.not.match(text, /hunter2|v1\.[A-Za-z0-9_-]{8,}\./, "no secret and no sealed value in the trail");
});

it("API keys: create, update of permissions (shown exactly), revoke; the secret and its hash never appear", async (w) => {
  const c = w.client(ApiKeyService);
  const { apiKey, key: secret } = await c.createApiKey({
    apiKey: { name: "invoices", permissions: { "s4.prod": { API_BP: { A_BusinessPartner: ["list", "get"] } } }, rateLimits: { perMinute: 60 } },
  });
  const created = iso(w);
  tick(w);
  await c.updateApiKey({
    apiKey: {
      id: apiKey!.id,
      permissions: {
        "s4.prod": { API_BP: { A_BusinessPartner: ["list", "get", "update"] }, "*": { A_Currency: ["list"] } },
        dev: { "*": { "*": ["list"] } },
      },
      rateLimits: { perMinute: 30, perDay: 1000 },
    },
    updateMask: { paths: ["permissions", "rate_limits"] },
  });
  const updated = iso(w);
  tick(w);
  await c.deleteApiKey({ id: apiKey!.id });
  const revoked = iso(w);

  const [revoke, update, create] = await trail(w);
  assert.equal(
    { action: create!.action, resource_type: create!.resource_type, resource_id: create!.resource_id },
    { action: "create", resource_type: "api_key", resource_id: apiKey!.id },
  );
  assert.equal(create!.after, {
    id: apiKey!.id,
    name: "invoices",
    type: "data",
    permissions: { "s4.prod": { API_BP: { A_BusinessPartner: ["list", "get"] } } },
    rate_limits: { per_minute: 60 },
    prefix: apiKey!.prefix,
    created_at: created,
    updated_at: created,
    key: "[redacted]",
  });
  assert.equal(update!.changes, [
    { path: ["permissions", "s4.prod", "API_BP", "A_BusinessPartner"], before: ["list", "get"], after: ["list", "get", "update"] },
    { path: ["permissions", "s4.prod", "*"], before: null, after: { A_Currency: ["list"] } },
    { path: ["permissions", "dev"], before: null, after: { "*": { "*": ["list"] } } },
    { path: ["rate_limits", "per_minute"], before: 60, after: 30 },
    { path: ["rate_limits", "per_day"], before: null, after: 1000 },
  ]);
  assert.equal((update!.after as Record<string, JsonValue>).updated_at, updated);
  assert.equal(
    { action: revoke!.action, changes: revoke!.changes },
    { action: "revoke", changes: [{ path: ["revoked_at"], before: null, after: revoked }] },
  );
  assert.equal((revoke!.after as Record<string, JsonValue>).key, "[redacted]");
  const rec = await w.store.apiKeys.changedSince(new Date(0), 10);
  const text = JSON.stringify(await trail(w));
  assert.not.ok(text.includes(secret), "the secret is not in the trail");
  assert.not.ok(text.includes(rec[0]!.keyHash), "the secret's hash is not in the trail");
  assert.not.ok(text.includes(secret.slice(12)), "no part of the secret beyond its shown prefix");
});

it("an admin key's entries name the key; a session's name the key and the session; the request id is the caller's", async (w) => {
  const { apiKey: admin, key: adminSecret } = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "ops", type: ApiKeyType.ADMIN } });
  await clientAs(w, SystemService, adminSecret).createSystem({ system: { name: "by-key" } });
  await clientAs(w, SystemService, adminSecret, SESSION).createSystem({ system: { name: "by-session" } });
  const [bySession, byKey, keyCreated] = await trail(w);
  assert.equal(
    [bySession, byKey].map((e) => ({ actor: e!.actor, session_id: e!.session_id, request_id: e!.request_id })),
    [
      { actor: admin!.id, session_id: SESSION, request_id: "req_from_client" },
      { actor: admin!.id, session_id: "", request_id: "req_from_client" },
    ],
  );
  assert.equal({ actor: keyCreated!.actor, session_id: keyCreated!.session_id }, { actor: "master", session_id: "" });
});

it("sessions: creating and revoking one is recorded (token [redacted]); writes made with it name the session", async (w) => {
  const { apiKey: admin, key: adminSecret } = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "ops", type: ApiKeyType.ADMIN } });
  const created = iso(w);
  const { session, token } = await clientAs(w, SessionService, adminSecret).createSession({ session: { label: "laptop" } });
  tick(w);
  await clientAs(w, SystemService, token).createSystem({ system: { name: "via-session" } });
  tick(w);
  await clientAs(w, SessionService, token).deleteSession({ id: "current" });
  const revoked = iso(w);

  const [logout, write, login] = await trail(w);
  const snapshot = {
    id: session!.id,
    label: "laptop",
    acts_for: admin!.id,
    cookie: false,
    created_at: created,
    expires_at: toJson(TimestampSchema, session!.expiresAt!) as string,
    token: "[redacted]",
  };
  assert.equal(
    { actor: login!.actor, session_id: login!.session_id, action: login!.action, resource_type: login!.resource_type, resource_id: login!.resource_id, before: login!.before, after: login!.after },
    { actor: admin!.id, session_id: "", action: "create", resource_type: "session", resource_id: session!.id, before: null, after: snapshot },
  );
  assert.equal(
    { actor: write!.actor, session_id: write!.session_id, action: write!.action, resource_type: write!.resource_type },
    { actor: admin!.id, session_id: session!.id, action: "create", resource_type: "system" },
  );
  assert.equal(
    { actor: logout!.actor, session_id: logout!.session_id, action: logout!.action, changes: logout!.changes, after: logout!.after },
    {
      actor: admin!.id,
      session_id: session!.id,
      action: "revoke",
      changes: [{ path: ["revoked_at"], before: null, after: revoked }],
      after: { ...snapshot, revoked_at: revoked },
    },
  );
  const found = await w.client(AuditService).listAuditEntries({ actor: session!.id });
  assert.equal(found.auditEntries.map((e) => e.action), ["revoke", "create"]);
  const text = JSON.stringify(await trail(w));
  assert.not.ok(text.includes(token), "the session token");
  assert.not.ok(text.includes(token.slice(10)), "any part of it");
  assert.not.ok(text.includes(adminSecret), "the admin key");
});

it("a session whose audit entry cannot be written is not created, and one whose revocation cannot be recorded stays", async (w) => {
  const { token } = await w.client(SessionService).createSession({ session: { label: "a" } });
  breakAudit(w);
  await rejects(w.client(SessionService).createSession({ session: { label: "b" } }), Code.Unavailable, UNAVAILABLE);
  await rejects(clientAs(w, SessionService, token).deleteSession({ id: "current" }), Code.Unavailable, UNAVAILABLE);
  const live = await w.client(SessionService).listSessions({});
  assert.equal(live.sessions.map((x) => x.label), ["a"]);
  // The session still works.
  await clientAs(w, SystemService, token).listSystems({});
});

it("a write through a router without the admin interceptor (in-process, no principal) is recorded as internal", async (w) => {
  const bare = createClient(SystemService, createRouterTransport(w.layer.routes));
  await bare.createSystem({ system: { name: "made-internally" } });
  const [entry] = await trail(w);
  assert.equal({ actor: entry!.actor, session_id: entry!.session_id, request_id: entry!.request_id }, { actor: "internal", session_id: "", request_id: "" });
});

// --- refused writes leave nothing -------------------------------------------------

it("refused writes record nothing: a taken name, unknown ids, a system with instances, invalid input, a revoked key", async (w) => {
  const sys = await createSystem(w);
  await createInstance(w, sys.id);
  const { apiKey } = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "k" } });
  await w.client(ApiKeyService).deleteApiKey({ id: apiKey!.id });
  const before = await trail(w);
  const UNKNOWN_SYS = "sys_01J00000000000000000000000";
  const UNKNOWN_INS = "ins_01J00000000000000000000000";
  await rejects(w.client(SystemService).createSystem({ system: { name: "erp" } }), Code.AlreadyExists);
  await rejects(w.client(SystemService).createSystem({ system: { name: "" } }), Code.InvalidArgument);
  await rejects(w.client(SystemService).updateSystem({ system: { id: UNKNOWN_SYS, description: "x" }, updateMask: { paths: ["description"] } }), Code.NotFound);
  await rejects(w.client(SystemService).deleteSystem({ id: sys.id }), Code.FailedPrecondition);
  await rejects(w.client(SystemService).deleteSystem({ id: UNKNOWN_SYS }), Code.NotFound);
  await rejects(
    w.client(InstanceService).createInstance({ systemId: sys.id, instance: { name: "s4-prod", baseUrl: "https://other.example.com/" } }),
    Code.AlreadyExists,
  );
  await rejects(w.client(InstanceService).createInstance({ systemId: UNKNOWN_SYS, instance: { name: "x", baseUrl: "https://x.example.com/" } }), Code.NotFound);
  await rejects(w.client(InstanceService).updateInstance({ instance: { id: UNKNOWN_INS, environment: "x" }, updateMask: { paths: ["environment"] } }), Code.NotFound);
  await rejects(w.client(InstanceService).deleteInstance({ id: UNKNOWN_INS }), Code.NotFound);
  await rejects(w.client(ApiKeyService).updateApiKey({ apiKey: { id: apiKey!.id, name: "n" }, updateMask: { paths: ["name"] } }), Code.NotFound);
  await rejects(w.client(ApiKeyService).deleteApiKey({ id: apiKey!.id }), Code.NotFound);
  await rejects(w.client(ApiKeyService).createApiKey({ apiKey: { name: "a", type: ApiKeyType.ADMIN, permissions: { p: {} } } }), Code.InvalidArgument);
  assert.equal(await trail(w), before);
});

it("a system that gains an instance while being deleted is not deleted, and its delete entry is removed (the change was refused)", async (w) => {
  const sys = await createSystem(w);
  const count = w.store.instances.countBySystem.bind(w.store.instances);
  let calls = 0;
  // The first count (the precondition) sees none, the count under the deletion's mark sees one.
  w.store.instances.countBySystem = async (id) => (++calls === 1 ? 0 : 1 + (await count(id)));
  const before = await trail(w);
  await rejects(w.client(SystemService).deleteSystem({ id: sys.id }), Code.FailedPrecondition, "system gained an instance while being deleted; delete it first");
  assert.ok(await w.store.systems.get(sys.id), "the system was never deleted");
  assert.is(await w.store.systems.deletionInProgress(sys.id, new Date(0)), false, "the deletion's mark is removed");
  assert.equal(await trail(w), before);
});

it("a deletion whose mark cannot be removed still answers as it went; the mark only keeps instances out until it expires", async (w) => {
  const sys = await createSystem(w);
  const count = w.store.instances.countBySystem.bind(w.store.instances);
  let calls = 0;
  w.store.instances.countBySystem = async (id) => (++calls === 1 ? 0 : 1 + (await count(id)));
  w.store.systems.endDeletion = async () => {
    throw new StoreUnavailableError({ cause: new Error("ECONNREFUSED") });
  };
  const before = await trail(w);
  await rejects(w.client(SystemService).deleteSystem({ id: sys.id }), Code.FailedPrecondition, "system gained an instance while being deleted; delete it first");
  assert.equal(await trail(w), before);
  assert.ok(await w.store.systems.get(sys.id));
  // The mark left behind refuses new instances (and keeps none), then expires.
  await rejects(
    w.client(InstanceService).createInstance({ systemId: sys.id, instance: { name: "late", baseUrl: "https://late.example.com/" } }),
    Code.FailedPrecondition,
    "system is being deleted",
  );
  assert.is((await w.store.instances.list({ limit: 10, systemId: sys.id })).items.length, 0);
  assert.equal(await trail(w), before);
  w.now = new Date(w.now.getTime() + DELETION_MARK_TTL_MS + 1);
  const late = await w.client(InstanceService).createInstance({ systemId: sys.id, instance: { name: "late", baseUrl: "https://late.example.com/" } });
  assert.is(late.instance?.systemId, sys.id);
});

// --- the audit write fails: the change fails and nothing changes -----------------

/** Makes every audit insert fail as an unreachable store does. */
function breakAudit(w: World): void {
  w.store.audit.append = async () => {
    throw new StoreUnavailableError({ cause: new Error("ECONNREFUSED") });
  };
}

/** Everything a write could have changed: systems, instances, API keys (revoked ones too), the audit trail. */
async function state(w: World): Promise<unknown> {
  return {
    systems: (await w.store.systems.list({ limit: 100 })).items,
    instances: (await w.store.instances.list({ limit: 100 })).items,
    keys: await w.store.apiKeys.changedSince(new Date(0), 100),
    audit: (await w.store.audit.query({ limit: 100 })).items,
  };
}

const WRITES: [string, (w: World, ids: { sys: string; ins: string; key: string }) => Promise<unknown>][] = [
  ["CreateSystem", (w) => w.client(SystemService).createSystem({ system: { name: "new" } })],
  ["UpdateSystem", (w, { sys }) => w.client(SystemService).updateSystem({ system: { id: sys, name: "renamed" }, updateMask: { paths: ["name"] } })],
  ["DeleteSystem", async (w) => w.client(SystemService).deleteSystem({ id: (await w.store.systems.list({ limit: 10 })).items[1]!.id })],
  ["CreateInstance", (w, { sys }) => w.client(InstanceService).createInstance({ systemId: sys, instance: { name: "s4-dev", baseUrl: "https://dev.example.com/" } })],
  [
    "UpdateInstance",
    (w, { ins }) =>
      w.client(InstanceService).updateInstance({
        instance: { id: ins, auth: { type: BackendAuthType.BEARER, token: "tok-hunter2" } },
        updateMask: { paths: ["auth"] },
      }),
  ],
  ["DeleteInstance", (w, { ins }) => w.client(InstanceService).deleteInstance({ id: ins })],
  ["CreateApiKey", (w) => w.client(ApiKeyService).createApiKey({ apiKey: { name: "new" } })],
  [
    "UpdateApiKey",
    (w, { key }) =>
      w.client(ApiKeyService).updateApiKey({ apiKey: { id: key, permissions: { prod: { "*": { "*": ["delete"] } } } }, updateMask: { paths: ["permissions"] } }),
  ],
  ["DeleteApiKey (revoke)", (w, { key }) => w.client(ApiKeyService).deleteApiKey({ id: key })],
];

for (const [name, write] of WRITES) {
  it(`${name} fails with unavailable when its audit entry cannot be written, and changes nothing`, async (w) => {
    const sys = await createSystem(w);
    await createSystem(w, "spare");
    const ins = await createInstance(w, sys.id);
    const { apiKey, key: secret } = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "k", permissions: { prod: { "*": { "*": ["get"] } } } } });
    tick(w);
    const before = await state(w);
    breakAudit(w);
    await rejects(write(w, { sys: sys.id, ins: ins.id, key: apiKey!.id }), Code.Unavailable, UNAVAILABLE);
    assert.equal(await state(w), before);
    // The key still works as it did (the in-memory registry was not touched either).
    const active = await w.layer.deps.keys.lookup(secret);
    // (Stored permissions are null-prototype maps: compared as JSON.)
    assert.equal(JSON.parse(JSON.stringify(active?.permissions ?? null)), { prod: { "*": { "*": ["get"] } } }, "the key is active, unchanged, in the registry");
  });
}

// --- AuditService: listing, filters, paging, validation, get ---------------------

/** Seeds a trail: master creates two systems, an admin key (with and without a session) updates them. */
async function seed(w: World) {
  const { apiKey: admin, key: adminSecret } = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "ops", type: ApiKeyType.ADMIN } }); // 0
  tick(w, 60_000);
  const a = await createSystem(w, "a"); // 1
  tick(w, 60_000);
  const b = await createSystem(w, "b"); // 2
  tick(w, 60_000);
  await clientAs(w, SystemService, adminSecret).updateSystem({ system: { id: a.id, description: "x" }, updateMask: { paths: ["description"] } }); // 3
  tick(w, 60_000);
  await clientAs(w, SystemService, adminSecret, SESSION).deleteSystem({ id: b.id }); // 4
  tick(w, 60_000);
  const entries = (await w.client(AuditService).listAuditEntries({})).auditEntries.reverse();
  assert.is(entries.length, 5);
  return { admin: admin!, a, b, ids: entries.map((e) => e.id), times: entries.map((e) => e.timestamp!) };
}

it("ListAuditEntries: newest first; each filter alone and together; from/to is [from, to)", async (w) => {
  const { admin, a, b, ids, times } = await seed(w);
  const c = w.client(AuditService);
  const found = async (req: Parameters<typeof c.listAuditEntries>[0]) => (await c.listAuditEntries(req)).auditEntries.map((e) => ids.indexOf(e.id));
  assert.equal(await found({}), [4, 3, 2, 1, 0]);
  assert.equal(await found({ actor: "master" }), [2, 1, 0]);
  assert.equal(await found({ actor: admin.id }), [4, 3]);
  assert.equal(await found({ actor: SESSION }), [4]);
  assert.equal(await found({ actor: "internal" }), []);
  assert.equal(await found({ resourceType: "system" }), [4, 3, 2, 1]);
  assert.equal(await found({ resourceType: "api_key" }), [0]);
  assert.equal(await found({ resourceType: "session" }), []);
  assert.equal(await found({ resourceId: a.id }), [3, 1]);
  assert.equal(await found({ resourceId: b.id, action: "delete" }), [4]);
  assert.equal(await found({ action: "create" }), [2, 1, 0]);
  assert.equal(await found({ action: "revoke" }), []);
  assert.equal(await found({ from: times[1], to: times[3] }), [2, 1]);
  assert.equal(await found({ from: times[3] }), [4, 3]);
  assert.equal(await found({ to: times[1] }), [0]);
  assert.equal(await found({ actor: "master", resourceType: "system", from: times[2] }), [2]);
});

it("ListAuditEntries pages with next_page_token (default 50, at most 500); a bad token is invalid_argument", async (w) => {
  const { ids } = await seed(w);
  const c = w.client(AuditService);
  const p1 = await c.listAuditEntries({ pageSize: 2 });
  assert.equal(p1.auditEntries.map((e) => ids.indexOf(e.id)), [4, 3]);
  assert.is.not(p1.nextPageToken, "");
  const p2 = await c.listAuditEntries({ pageSize: 2, pageToken: p1.nextPageToken });
  assert.equal(p2.auditEntries.map((e) => ids.indexOf(e.id)), [2, 1]);
  const p3 = await c.listAuditEntries({ pageSize: 2, pageToken: p2.nextPageToken });
  assert.equal(p3.auditEntries.map((e) => ids.indexOf(e.id)), [0]);
  assert.is(p3.nextPageToken, "");
  // Filters apply across pages.
  const f1 = await c.listAuditEntries({ pageSize: 1, actor: "master" });
  const f2 = await c.listAuditEntries({ pageSize: 1, actor: "master", pageToken: f1.nextPageToken });
  assert.equal([...f1.auditEntries, ...f2.auditEntries].map((e) => ids.indexOf(e.id)), [2, 1]);

  for (let i = 0; i < 50; i++) await createSystem(w, `bulk-${i}`);
  const first = await c.listAuditEntries({});
  assert.is(first.auditEntries.length, 50);
  assert.is.not(first.nextPageToken, "");
  let err = await rejects(c.listAuditEntries({ pageSize: 501 }), Code.InvalidArgument, "page_size: must be between 1 and 500");
  assert.equal(violations(err), [{ field: "page_size", description: "must be between 1 and 500" }]);
  err = await rejects(c.listAuditEntries({ pageToken: "bm90LWEtdG9rZW4" }), Code.InvalidArgument, "page_token: is not a token this list returned");
  // A token of another list (a log id) is not one of this list's.
  const logToken = Buffer.from("v1:log_01KA0000000000000000000000").toString("hex");
  await rejects(c.listAuditEntries({ pageToken: logToken }), Code.InvalidArgument, "page_token: is not a token this list returned");
});

it("ListAuditEntries validates every filter and lists each violation", async (w) => {
  const c = w.client(AuditService);
  const err = await rejects(
    c.listAuditEntries({
      actor: "root",
      resourceType: "systems",
      resourceId: "not an id",
      action: "destroy",
      from: timestampFromDate(new Date("2026-01-02T00:00:00Z")),
      to: timestampFromDate(new Date("2026-01-01T00:00:00Z")),
    }),
    Code.InvalidArgument,
    "4 fields are invalid",
  );
  // A `to` before `from` is no violation: an empty range (below).
  assert.equal(violations(err), [
    { field: "actor", description: "must be master, internal, an API key id (key_…) or a session id (ses_…)" },
    { field: "resource_id", description: "must be a resource id such as sys_…, ins_…, key_… or ses_…" },
    { field: "resource_type", description: "must be one of system, instance, api_key, session" },
    { field: "action", description: "must be one of create, update, delete, revoke" },
  ]);
  for (const actor of ['{"$ne":null}', "key_short", "MASTER", "ses_", "ses_a b"]) {
    await rejects(c.listAuditEntries({ actor }), Code.InvalidArgument, "actor: must be master, internal, an API key id (key_…) or a session id (ses_…)");
  }
  await rejects(c.listAuditEntries({ from: { seconds: 253402300800n, nanos: 0 } }), Code.InvalidArgument);
});

it("ListAuditEntries: a range whose `to` is not after its `from` matches nothing (no error)", async (w) => {
  await createSystem(w);
  const c = w.client(AuditService);
  const at = w.now;
  assert.is((await c.listAuditEntries({})).auditEntries.length, 1, "one entry to match");
  for (const [from, to] of [[at, at], [new Date(at.getTime() + 1), at], [new Date(at.getTime() + 86_400_000), new Date(at.getTime() - 86_400_000)]]) {
    const res = await c.listAuditEntries({ from: timestampFromDate(from!), to: timestampFromDate(to!) });
    assert.equal([res.auditEntries.length, res.nextPageToken], [0, ""], `${from!.toISOString()} .. ${to!.toISOString()}`);
  }
  const around = await c.listAuditEntries({ from: timestampFromDate(at), to: timestampFromDate(new Date(at.getTime() + 1)) });
  assert.is(around.auditEntries.length, 1, "the same entry in a range around it");
});

it("GetAuditEntry returns the entry as listed; unknown or malformed is not_found naming the id, empty invalid_argument", async (w) => {
  await createSystem(w);
  const c = w.client(AuditService);
  const [listed] = (await c.listAuditEntries({})).auditEntries;
  const got = await c.getAuditEntry({ id: listed!.id });
  assert.equal(entryJson(got.auditEntry), entryJson(listed));
  await rejects(c.getAuditEntry({ id: "aud_01J00000000000000000000000" }), Code.NotFound, 'audit entry "aud_01J00000000000000000000000" not found');
  await rejects(c.getAuditEntry({ id: "log_01J00000000000000000000000" }), Code.NotFound, 'audit entry "log_01J00000000000000000000000" not found');
  await rejects(c.getAuditEntry({ id: "" }), Code.InvalidArgument, "id: is required");
});

it("AuditService needs an administrator: no token is unauthenticated, a data key permission_denied", async (w) => {
  const { key: dataSecret } = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "data" } });
  await rejects(clientAs(w, AuditService, "erpl_wrong").listAuditEntries({}), Code.Unauthenticated);
  await rejects(clientAs(w, AuditService, dataSecret).listAuditEntries({}), Code.PermissionDenied, "API key is not an admin key");
  await rejects(clientAs(w, AuditService, dataSecret).getAuditEntry({ id: "aud_01J00000000000000000000000" }), Code.PermissionDenied);
});

test.run();
