/**
 * The audit trail's writing side (src/services/audit.ts) as units: redacted
 * markers, snapshots in REST form, the diff (table-driven), the actor of a
 * call, and AuditRecorder.record's write order on a real store (embedded,
 * or MongoDB when ERPLINK_TEST_MONGODB_URL is set): entry before change,
 * refused changes leave nothing, uncertain ones stay pending, a failed
 * entry write stops the change; and the audit trail's own retention.
 */
import { inspect } from "node:util";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeySchema, ApiKeyService, ApiKeyType } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { BackendAuthType, InstanceSchema } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { kRequestId } from "../../src/schema/call-facts.js";
import {
  AuditRecorder,
  actorOf,
  diffSnapshots,
  redact,
  snapshotOf,
  uncertain,
  type AuditEvent,
  type AuditSnapshot,
} from "../../src/services/audit.js";
import { kPrincipal, type Principal } from "../../src/services/auth.js";
import { createIdGenerator } from "../../src/services/ids.js";
import { createServiceLayer, purgeRevokedKeys } from "../../src/services/layer.js";
import { DuplicateKeyError, NotFoundError, StoreUnavailableError, type AuditRecord } from "../../src/store/index.js";
import { ENCRYPTION_KEY, MASTER_KEY, openTestStore } from "../../test-support/world.js";

// ---------------------------------------------------------------- markers

const Markers = suite("audit: redacted markers");

Markers("a marker serializes, prints and inspects as [redacted], never as its secret", () => {
  const secret = "hunter2-very-secret";
  const marker = redact(secret);
  assert.is(JSON.stringify({ password: marker }), '{"password":"[redacted]"}');
  assert.is(String(marker), "[redacted]");
  assert.not.match(inspect(marker, { showHidden: true, depth: 5 }), /hunter2/);
  assert.not.match(JSON.stringify(marker), /hunter2/);
});

Markers("markers of the same secret are equal, of different secrets not", () => {
  assert.ok(redact("a").equals(redact("a")));
  assert.not.ok(redact("a").equals(redact("b")));
  assert.not.ok(redact("").equals(redact(" ")));
});

Markers.run();

// ---------------------------------------------------------------- snapshots

const Snapshots = suite("audit: snapshots");

Snapshots("a message in REST form: proto names, enums in lower case, empty nested strings dropped, secrets only as markers", () => {
  const instance = create(InstanceSchema, {
    id: "ins_1",
    systemId: "sys_1",
    name: "s4-prod",
    environment: "",
    baseUrl: "https://s4.example.com/",
    services: { "API.PO": { path: "srvd/po" } },
    // Secrets set in the message (they never are, from the store) must not
    // show: only the markers given do.
    auth: { type: BackendAuthType.BASIC, username: "u", password: "hunter2", token: "tok-hunter2", tokenUrl: "" },
  });
  const marker = redact("hunter2");
  const snap = snapshotOf(InstanceSchema, instance, { secrets: [[["auth", "password"], marker]] });
  assert.equal(JSON.parse(JSON.stringify(snap)), {
    id: "ins_1",
    system_id: "sys_1",
    name: "s4-prod",
    environment: "",
    base_url: "https://s4.example.com/",
    services: { "API.PO": { path: "srvd/po" } },
    auth: { type: "basic", username: "u", password: "[redacted]" },
    sap_client: "",
    upstream_connections: 0,
  });
  assert.is((snap.auth as Record<string, unknown>).password, marker);
  assert.not.match(inspect(snap, { depth: 10 }), /hunter2/);
});

Snapshots("omit leaves fields out; a secret path creates its parent; enums of API keys read as data/admin", () => {
  const key = create(ApiKeySchema, { id: "key_1", name: "ops", type: ApiKeyType.ADMIN, prefix: "erpl_abcdefg" });
  const snap = snapshotOf(ApiKeySchema, key, { omit: ["rate_limits", "prefix"], secrets: [[["key"], redact("h")], [["x", "y"], redact("z")]] });
  assert.equal(JSON.parse(JSON.stringify(snap)), { id: "key_1", name: "ops", type: "admin", key: "[redacted]", x: { y: "[redacted]" } });
});

Snapshots.run();

// ---------------------------------------------------------------- diff

const Diff = suite("audit: diffSnapshots");

const S = redact("secret-1");
const S_AGAIN = redact("secret-1");
const S2 = redact("secret-2");

const DIFFS: [string, AuditSnapshot | null, AuditSnapshot | null, unknown][] = [
  ["nothing changed", { name: "a", labels: { x: "1" } }, { name: "a", labels: { x: "1" } }, []],
  [
    "a creation lists every field, each map or message whole (it has no before to compare with key by key)",
    null,
    { name: "a", labels: { "app.kubernetes.io/name": "x" }, rate_limits: {}, ops: ["list"] },
    [
      { path: ["name"], before: null, after: "a" },
      { path: ["labels"], before: null, after: { "app.kubernetes.io/name": "x" } },
      { path: ["rate_limits"], before: null, after: {} },
      { path: ["ops"], before: null, after: ["list"] },
    ],
  ],
  [
    "a deletion lists every field the other way",
    { name: "a", labels: { k: "v" } },
    null,
    [
      { path: ["name"], before: "a", after: null },
      { path: ["labels"], before: { k: "v" }, after: null },
    ],
  ],
  [
    "updated_at is left out at the top level only",
    { name: "a", updated_at: "2026-01-01T00:00:00Z", labels: { updated_at: "1" } },
    { name: "a", updated_at: "2026-01-02T00:00:00Z", labels: { updated_at: "2" } },
    [{ path: ["labels", "updated_at"], before: "1", after: "2" }],
  ],
  [
    "permissions: operations changed, an entity added, a service removed, an instance added (exact operations; what is added or removed whole, as it was)",
    {
      permissions: {
        "s4.prod": { API_BP: { A_BP: ["list"], A_Addr: ["get"] }, API_OLD: { X: ["delete"] } },
      },
    },
    {
      permissions: {
        "s4.prod": { API_BP: { A_BP: ["list", "get"], A_Addr: ["get"], "*": ["list"] } },
        dev: { "*": { "*": ["list", "get"] } },
      },
    },
    [
      { path: ["permissions", "s4.prod", "API_BP", "A_BP"], before: ["list"], after: ["list", "get"] },
      { path: ["permissions", "s4.prod", "API_BP", "*"], before: null, after: ["list"] },
      { path: ["permissions", "s4.prod", "API_OLD"], before: { X: ["delete"] }, after: null },
      { path: ["permissions", "dev"], before: null, after: { "*": { "*": ["list", "get"] } } },
    ],
  ],
  [
    "lists compare as whole values, order included",
    { ops: ["list", "get"] },
    { ops: ["get", "list"] },
    [{ path: ["ops"], before: ["list", "get"], after: ["get", "list"] }],
  ],
  [
    "an instance left granting nothing (an empty map) stays, and its service is what was removed",
    { permissions: { prod: { API: { E: ["get"] } } } },
    { permissions: { prod: {} } },
    [{ path: ["permissions", "prod", "API"], before: { E: ["get"] }, after: null }],
  ],
  [
    "an instance removed is a change of its own, not its last grant removed (regression: the two read alike)",
    { permissions: { prod: { API: { E: ["get"] } } } },
    { permissions: {} },
    [{ path: ["permissions", "prod"], before: { API: { E: ["get"] } }, after: null }],
  ],
  [
    "a map appearing empty is a value of its own",
    { permissions: { prod: { API: {} } } },
    { permissions: { prod: { API: {} }, dev: {} } },
    [{ path: ["permissions", "dev"], before: null, after: {} }],
  ],
  ["the same secret is no change", { auth: { type: "basic", password: S } }, { auth: { type: "basic", password: S_AGAIN } }, []],
  [
    "a changed secret reads [redacted] on both sides",
    { auth: { type: "basic", password: S } },
    { auth: { type: "basic", password: S2 } },
    [{ path: ["auth", "password"], before: "[redacted]", after: "[redacted]" }],
  ],
  [
    "a secret set, and one removed with its type",
    { auth: { type: "bearer", token: S } },
    { auth: { type: "basic", username: "u", password: S2 } },
    [
      { path: ["auth", "type"], before: "bearer", after: "basic" },
      { path: ["auth", "token"], before: "[redacted]", after: null },
      { path: ["auth", "username"], before: null, after: "u" },
      { path: ["auth", "password"], before: null, after: "[redacted]" },
    ],
  ],
  [
    "credentials removed altogether",
    { auth: { type: "basic", username: "u", password: S } },
    {},
    [{ path: ["auth"], before: { type: "basic", username: "u", password: "[redacted]" }, after: null }],
  ],
  [
    "a value that changes kind is one change, secrets inside rendered",
    { x: { a: 1, s: S } },
    { x: "flat" },
    [{ path: ["x"], before: { a: 1, s: "[redacted]" }, after: "flat" }],
  ],
  ["null and absent are the same", { a: null, b: 1 }, { b: 1 }, []],
  [
    "numbers and booleans compare by value",
    { per_minute: 60, on: true },
    { per_minute: 120, on: false },
    [
      { path: ["per_minute"], before: 60, after: 120 },
      { path: ["on"], before: true, after: false },
    ],
  ],
];

for (const [name, before, after, expected] of DIFFS) {
  Diff(name, () => {
    const changes = diffSnapshots(before, after);
    assert.equal(JSON.parse(JSON.stringify(changes)), expected);
    assert.not.match(JSON.stringify(changes), /secret-/);
  });
}

Diff.run();

// ---------------------------------------------------------------- actor

const Actor = suite("audit: actorOf");

function handlerContext(values: { principal?: Principal; requestId?: string }, header: Record<string, string> = {}) {
  const contextValues = createContextValues();
  if (values.principal) contextValues.set(kPrincipal, values.principal);
  if (values.requestId !== undefined) contextValues.set(kRequestId, values.requestId);
  return createHandlerContext({
    service: ApiKeyService,
    method: ApiKeyService.method.createApiKey,
    protocolName: "connect",
    requestMethod: "POST",
    url: "http://localhost/erplink.admin.v1.ApiKeyService/CreateApiKey",
    requestHeader: header,
    contextValues,
  });
}

Actor("the admitted principal and the gateway's request id; the header when the gateway passed none", () => {
  const principal: Principal = { kind: "admin_key", keyId: "key_1", sessionId: "ses_1" };
  assert.equal(actorOf(handlerContext({ principal, requestId: "req_a" }, { "x-request-id": "req_header" })), {
    principal,
    requestId: "req_a",
  });
  assert.equal(actorOf(handlerContext({ principal: { kind: "master" } }, { "x-request-id": "req_header" })), {
    principal: { kind: "master" },
    requestId: "req_header",
  });
  assert.equal(actorOf(handlerContext({})), { principal: undefined, requestId: "" });
  // A malformed id (the header of an unchecked caller) is not recorded.
  assert.equal(actorOf(handlerContext({}, { "x-request-id": "bad id\twith spaces" })).requestId, "");
});

Actor.run();

// ---------------------------------------------------------------- recorder

type Store = Awaited<ReturnType<typeof openTestStore>>;
interface RecorderCtx {
  store: Store;
  recorder: AuditRecorder;
  reported: { err: unknown; message: string }[];
  now: Date;
}

const Recorder = suite<RecorderCtx>("audit: AuditRecorder.record");

Recorder.before.each(async (ctx) => {
  ctx.store = await openTestStore();
  ctx.reported = [];
  ctx.now = new Date("2026-01-02T03:04:05.000Z");
  const clock = () => ctx.now;
  ctx.recorder = new AuditRecorder({
    store: ctx.store.audit,
    clock,
    newId: createIdGenerator(clock),
    onError: (err, message) => ctx.reported.push({ err, message }),
  });
});
Recorder.after.each(async (ctx) => {
  await ctx.store.dispose();
});

const MASTER: Principal = { kind: "master" };
const EVENT: AuditEvent = {
  action: "update",
  resourceType: "system",
  resourceId: "sys_01KA0000000000000000000000",
  before: { name: "old", description: "" },
  after: { name: "new", description: "" },
};

async function entries(ctx: RecorderCtx): Promise<AuditRecord[]> {
  return (await ctx.store.audit.query({ limit: 100 })).items;
}

Recorder("the entry is written pending before the change, and marked applied with the resource as the change left it", async (ctx) => {
  let seen: AuditRecord[] = [];
  const result = await ctx.recorder.record(
    { principal: { kind: "admin_key", keyId: "key_01KA0000000000000000000001", sessionId: "ses_9" }, requestId: "req_1" },
    EVENT,
    async () => {
      seen = await entries(ctx);
      return { name: "new", description: "set by a concurrent write" };
    },
    (r) => r,
  );
  assert.equal(result, { name: "new", description: "set by a concurrent write" });
  assert.is(seen.length, 1);
  const pending = seen[0]!;
  assert.match(pending.id, /^aud_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.equal(pending, {
    id: pending.id,
    timestamp: ctx.now,
    actor: "key_01KA0000000000000000000001",
    sessionId: "ses_9",
    action: "update",
    resourceType: "system",
    resourceId: "sys_01KA0000000000000000000000",
    requestId: "req_1",
    state: "pending",
    before: { name: "old", description: "" },
    after: { name: "new", description: "" },
    changes: [{ path: ["name"], before: "old", after: "new" }],
  });
  assert.equal(await entries(ctx), [
    {
      ...pending,
      state: "applied",
      after: { name: "new", description: "set by a concurrent write" },
      changes: [
        { path: ["name"], before: "old", after: "new" },
        { path: ["description"], before: "", after: "set by a concurrent write" },
      ],
    },
  ]);
  assert.equal(ctx.reported, []);
});

Recorder("without afterOf the entry keeps the intended after; without a principal the actor is internal", async (ctx) => {
  await ctx.recorder.record({ principal: undefined, requestId: "" }, EVENT, async () => 1);
  const [entry] = await entries(ctx);
  assert.equal(
    { actor: entry!.actor, sessionId: entry!.sessionId, requestId: entry!.requestId, state: entry!.state, after: entry!.after },
    { actor: "internal", sessionId: "", requestId: "", state: "applied", after: { name: "new", description: "" } },
  );
});

Recorder("secrets are stored as [redacted] in snapshots and changes", async (ctx) => {
  await ctx.recorder.record(
    { principal: MASTER, requestId: "r" },
    { ...EVENT, before: { auth: { password: redact("hunter2") } }, after: { auth: { password: redact("hunter3") } } },
    async () => undefined,
  );
  const [entry] = await entries(ctx);
  assert.equal(entry!.before, { auth: { password: "[redacted]" } });
  assert.equal(entry!.after, { auth: { password: "[redacted]" } });
  assert.equal(entry!.changes, [{ path: ["auth", "password"], before: "[redacted]", after: "[redacted]" }]);
  assert.not.match(JSON.stringify(entry), /hunter/);
});

Recorder("when the entry cannot be written the change is not run and the store's error is thrown", async (ctx) => {
  const down = new StoreUnavailableError({ cause: new Error("ECONNREFUSED") });
  ctx.store.audit.append = async () => {
    throw down;
  };
  let ran = false;
  try {
    await ctx.recorder.record({ principal: MASTER, requestId: "r" }, EVENT, async () => {
      ran = true;
    });
    assert.unreachable("record succeeded");
  } catch (err) {
    assert.is(err, down);
  }
  assert.is(ran, false);
  assert.equal(await entries(ctx), []);
});

for (const [what, refusal] of [
  ["DuplicateKeyError", new DuplicateKeyError("systems", "name")],
  ["NotFoundError", new NotFoundError("systems", "sys_1")],
  ["failed_precondition", new ConnectError("system still has 1 instance", Code.FailedPrecondition)],
  ["not_found", new ConnectError("system not found", Code.NotFound)],
  ["invalid_argument", new ConnectError("bad", Code.InvalidArgument)],
] as const) {
  Recorder(`a change refused with ${what} removes its entry and throws the refusal`, async (ctx) => {
    try {
      await ctx.recorder.record({ principal: MASTER, requestId: "r" }, EVENT, async () => {
        assert.is((await entries(ctx)).length, 1, "the entry exists while the change runs");
        throw refusal;
      });
      assert.unreachable("record succeeded");
    } catch (err) {
      assert.is(err, refusal);
    }
    assert.equal(await entries(ctx), []);
    assert.equal(ctx.reported, []);
  });
}

for (const [what, failure] of [
  ["StoreUnavailableError (the write may have been made)", new StoreUnavailableError()],
  ["an unexpected error", new TypeError("boom")],
  ["unavailable", new ConnectError("down", Code.Unavailable)],
  ["internal (a failed compensation)", uncertain(new DuplicateKeyError("systems", "name")) as ConnectError],
] as const) {
  Recorder(`a change failing with ${what} keeps its entry pending`, async (ctx) => {
    try {
      await ctx.recorder.record({ principal: MASTER, requestId: "r" }, EVENT, async () => {
        throw failure;
      });
      assert.unreachable("record succeeded");
    } catch (err) {
      assert.is(err, failure);
    }
    const [entry] = await entries(ctx);
    assert.equal({ state: entry?.state, after: entry?.after }, { state: "pending", after: { name: "new", description: "" } });
  });
}

Recorder("uncertain() makes refusals internal (cause kept) and lets other errors through", () => {
  const dup = new DuplicateKeyError("systems", "name");
  const wrapped = uncertain(dup) as ConnectError;
  assert.instance(wrapped, ConnectError);
  assert.is(wrapped.code, Code.Internal);
  assert.is(wrapped.cause, dup);
  const down = new StoreUnavailableError();
  assert.is(uncertain(down), down);
});

Recorder("when the entry cannot be marked applied the change still succeeds, the entry stays pending and it is reported", async (ctx) => {
  const down = new StoreUnavailableError();
  ctx.store.audit.markApplied = async () => {
    throw down;
  };
  assert.is(await ctx.recorder.record({ principal: MASTER, requestId: "r" }, EVENT, async () => "made"), "made");
  const [entry] = await entries(ctx);
  assert.is(entry!.state, "pending");
  assert.is(ctx.reported.length, 1);
  assert.is(ctx.reported[0]!.err, down);
  assert.match(ctx.reported[0]!.message, new RegExp(`audit entry ${entry!.id} could not be marked applied; it stays pending`));
});

Recorder("when the entry of a refused change cannot be removed, the refusal is still thrown and the failure reported", async (ctx) => {
  ctx.store.audit.remove = async () => {
    throw new StoreUnavailableError();
  };
  const refusal = new DuplicateKeyError("systems", "name");
  try {
    await ctx.recorder.record({ principal: MASTER, requestId: "r" }, EVENT, async () => {
      throw refusal;
    });
    assert.unreachable("record succeeded");
  } catch (err) {
    assert.is(err, refusal);
  }
  assert.is((await entries(ctx))[0]!.state, "pending");
  assert.is(ctx.reported.length, 1);
  assert.match(ctx.reported[0]!.message, /of a refused change could not be removed; it stays pending/);
});

Recorder.run();

// ---------------------------------------------------------------- retention

const Retention = suite<{ store: Store }>("audit: retention");

Retention.before.each(async (ctx) => {
  ctx.store = await openTestStore();
});
Retention.after.each(async (ctx) => {
  await ctx.store.dispose();
});

const DAY = 86_400_000;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");

async function seedDays(store: Store, days: number[]): Promise<void> {
  for (const d of days) {
    const clock = () => new Date(T0 + d * DAY);
    const recorder = new AuditRecorder({ store: store.audit, clock, newId: createIdGenerator(clock), onError: () => undefined });
    await recorder.record({ principal: MASTER, requestId: `day-${d}` }, EVENT, async () => undefined);
  }
}

Retention("unlimited (no retention set): purge removes nothing, however old", async ({ store }) => {
  await seedDays(store, [0, 1, 400]);
  const recorder = new AuditRecorder({ store: store.audit, clock: () => new Date(), newId: createIdGenerator(), onError: () => undefined });
  assert.is(await recorder.purge(new Date(T0 + 10_000 * DAY)), 0);
  assert.is((await store.audit.query({ limit: 10 })).items.length, 3);
});

Retention("a retention of 30 days removes entries older than 30 days at the time of the purge", async ({ store }) => {
  await seedDays(store, [0, 10, 31, 40]);
  const recorder = new AuditRecorder({
    store: store.audit,
    clock: () => new Date(),
    newId: createIdGenerator(),
    retentionMs: 30 * DAY,
    onError: () => undefined,
  });
  assert.is(await recorder.purge(new Date(T0 + 41 * DAY)), 2);
  assert.equal((await store.audit.query({ limit: 10 })).items.map((e) => e.requestId), ["day-40", "day-31"]);
});

Retention("the service layer purges with the audit trail's own retention, not the request log's", async ({ store }) => {
  await seedDays(store, [0, 5]);
  const now = new Date(T0 + 8 * DAY);
  const layer = createServiceLayer(store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 100, perDay: 1000 },
    dataLimits: {},
    log: { error: () => undefined },
    // The request log keeps one day; the audit trail a week.
    logRetentionMs: DAY,
    auditRetentionMs: 7 * DAY,
    clock: () => now,
  });
  layer.start({ usageFlushMs: 60_000, keySyncMs: 60_000, logFlushMs: 60_000, purgeMs: 20 });
  try {
    const deadline = Date.now() + 5000;
    while ((await store.audit.query({ limit: 10 })).items.length > 1 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal((await store.audit.query({ limit: 10 })).items.map((e) => e.requestId), ["day-5"]);
  } finally {
    await layer.stop();
  }
});

Retention("the service layer removes keys revoked before the audit retention, and keeps later revoked keys and keys in force", async ({ store }) => {
  const key = (id: string, n: number) => ({
    id,
    name: `key ${n}`,
    type: "data" as const,
    keyHash: String(n).repeat(64),
    prefix: "erpl_abcdefg",
    permissions: {},
    rateLimits: {},
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    revision: 1,
  });
  const ids = createIdGenerator(() => new Date(T0));
  const [old, recent, live] = [ids("key"), ids("key"), ids("key")];
  for (const [id, n] of [[old, 1], [recent, 2], [live, 3]] as const) await store.apiKeys.create(key(id, n));
  await store.apiKeys.revoke(old, new Date(T0 + 1 * DAY));
  await store.apiKeys.revoke(recent, new Date(T0 + 6 * DAY));
  const now = new Date(T0 + 10 * DAY);
  const layer = createServiceLayer(store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 100, perDay: 1000 },
    dataLimits: {},
    log: { error: () => undefined },
    logRetentionMs: DAY,
    auditRetentionMs: 7 * DAY,
    clock: () => now,
  });
  layer.start({ usageFlushMs: 60_000, keySyncMs: 60_000, logFlushMs: 60_000, purgeMs: 20 });
  const listed = async () => (await store.apiKeys.list({ limit: 10 }, { showRevoked: true })).items.map((k) => k.id);
  try {
    const deadline = Date.now() + 5000;
    while ((await listed()).length > 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await listed(), [recent, live]);
  } finally {
    await layer.stop();
  }
});

Retention("with the audit trail kept for ever, revoked keys are kept for ever too", async ({ store }) => {
  const now = new Date(T0 + 10_000 * DAY);
  const layer = createServiceLayer(store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 100, perDay: 1000 },
    dataLimits: {},
    log: { error: () => undefined },
    logRetentionMs: DAY,
    clock: () => now,
  });
  const id = createIdGenerator(() => new Date(T0))("key");
  await store.apiKeys.create({
    id,
    name: "old",
    type: "admin",
    keyHash: "9".repeat(64),
    prefix: "erpl_abcdefg",
    permissions: {},
    rateLimits: {},
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    revision: 1,
  });
  await store.apiKeys.revoke(id, new Date(T0));
  assert.is(await purgeRevokedKeys(layer.deps, now), 0);
  assert.equal((await store.apiKeys.list({ limit: 10 }, { showRevoked: true })).items.map((k) => k.id), [id]);
});

Retention.run();
