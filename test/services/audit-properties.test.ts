/**
 * The audit trail under attack, property-based (fast-check, bounded):
 *
 * - diffs: for any two snapshots (keys with `.`, `*`, `$`, unicode, empty
 *   maps, and names of inherited members: `constructor`, `toString`,
 *   `__proto__`), applying an entry's changes to `before` gives `after`
 *   exactly, no change is a no-op, and everything is plain JSON;
 * - permission diffs through the API, over Connect and REST (names of
 *   inherited members; `__proto__` is reserved and refused): the entry's before, after and
 *   changes state the permissions exactly as the key held them, and the
 *   trail still lists;
 * - secrets: whatever secrets are written (instance credentials set,
 *   replaced and removed, API keys created, changed and revoked, sessions
 *   created and revoked), over REST and Connect, none of them, nor an API
 *   key's or a session token's hash, appears in a stored entry, an answer
 *   of the audit API, the request log or an error reported;
 * - every write RPC of the admin services (found by walking the service
 *   descriptors, so a new one fails this suite until it is listed), over
 *   REST and Connect: with the entry's write failing the call fails and
 *   nothing changes; with the change's own write failing the call fails and
 *   the entry stays `pending`; with the entry's confirmation failing the
 *   call succeeds and the entry stays `pending`. Never a change without its
 *   entry.
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_AUDIT_RUNS (40).
 */
import { createHash } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { Code, createConnectRouter } from "@connectrpc/connect";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeyService, ApiKeyType } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { AuditService } from "../../src/gen/erplink/admin/v1/audit_pb.js";
import { BackendAuthType, InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { LogService } from "../../src/gen/erplink/admin/v1/request_log_pb.js";
import { SessionService } from "../../src/gen/erplink/admin/v1/session_pb.js";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { UsageService } from "../../src/gen/erplink/admin/v1/usage_pb.js";
import { diffSnapshots, redact, rendered, type AuditSnapshot, type SnapshotValue } from "../../src/services/audit.js";
import { StoreUnavailableError, type AuditJson } from "../../src/store/index.js";
import { envInt, fuzzSeed } from "../../test-support/fuzz/harness.js";
import { json } from "../../test-support/http.js";
import { rejects, type TestWorld } from "../../test-support/rpc.js";
import { AUTH, MASTER_KEY, createWorld } from "../../test-support/world.js";

const RUNS = envInt("ERPLINK_AUDIT_RUNS", 40);
const params = (numRuns: number) => ({ seed: fuzzSeed(), numRuns, includeErrorInReport: true });

// ---------------------------------------------------------------- applying a diff

type Json = AuditJson;

/** A JSON value with null members dropped (absent and null mean the same in a snapshot). */
function normal(v: Json): Json {
  if (Array.isArray(v)) return v.map(normal);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, normal(x)]));
  }
  return v;
}

/** `before` with an entry's changes applied (own properties only). */
function apply(before: Json, changes: readonly { path: readonly string[]; before: Json; after: Json }[]): Json {
  let root: Json = structuredClone(before ?? {}) as Json;
  for (const c of changes) {
    if (c.path.length === 0) {
      root = c.after;
      continue;
    }
    let at = root as Record<string, Json>;
    for (const key of c.path.slice(0, -1)) {
      const next = Object.hasOwn(at, key) ? at[key] : undefined;
      if (next === null || next === undefined || typeof next !== "object" || Array.isArray(next)) {
        Object.defineProperty(at, key, { value: {}, enumerable: true, writable: true, configurable: true });
      }
      at = at[key] as Record<string, Json>;
    }
    const last = c.path[c.path.length - 1]!;
    if (c.after === null) delete at[last];
    else Object.defineProperty(at, last, { value: structuredClone(c.after), enumerable: true, writable: true, configurable: true });
  }
  return root;
}

/**
 * JSON text with keys sorted, to compare values holding keys such as
 * `constructor` (uvu's deep equality reads an object's `constructor`).
 */
function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : typeof x === "bigint"
        ? String(x)
        : x,
  );
}

/** JSON as the store and the API hold it: a round trip through text (own `__proto__` keys survive it). */
function viaText(v: unknown): Json {
  return JSON.parse(JSON.stringify(v)) as Json;
}

// ---------------------------------------------------------------- A: diffs

const Diff = suite("audit diffs (property-based)");

const KEYS = ["a", "b", "a.b", "*", "$x", "", "é", "名", "__proto__", "constructor", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf"];
const key = fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 3 }));
const SECRETS = ["s1", "s2"].map((s) => [s, redact(s)] as const);

/** Snapshot values: scalars, redacted markers, lists, and objects built with own keys only (as JSON.parse builds them). */
const value: fc.Arbitrary<SnapshotValue> = fc.letrec<{ v: SnapshotValue }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    // No null members: snapshots are proto JSON, which writes none (absent and null mean the same).
    fc.constantFrom<SnapshotValue>(true, false, 0, 1, -1.5, "", "x", "[redacted]"),
    fc.constantFrom(...SECRETS.map(([, m]) => m)),
    fc.array(tie("v"), { maxLength: 3 }),
    fc.array(fc.tuple(key, tie("v")), { maxLength: 4 }).map((entries) => Object.fromEntries(entries) as SnapshotValue),
  ),
})).v;
const snapshot = fc
  .array(fc.tuple(key, value), { maxLength: 6 })
  .map((entries) => Object.fromEntries(entries.filter(([k]) => k !== "updated_at")) as AuditSnapshot);

Diff("applying an entry's changes to before gives after exactly; no change is a no-op; all plain JSON", () => {
  fc.assert(
    fc.property(fc.option(snapshot, { nil: null }), fc.option(snapshot, { nil: null }), (before, after) => {
      const changes = viaText(diffSnapshots(before, after)) as unknown as { path: string[]; before: Json; after: Json }[];
      assert.is(canon(diffSnapshots(before, after)), canon(changes), "plain JSON");
      const b = viaText(rendered(before));
      const a = viaText(rendered(after));
      assert.is(canon(normal(apply(b, changes) ?? {})), canon(normal(a ?? {})), `changes ${JSON.stringify(changes)}`);
      for (const c of changes) {
        assert.ok(c.path.length > 0 || before === null || after === null, "a path");
        assert.ok("before" in c && "after" in c, `both sides are present: ${JSON.stringify(c)}`);
      }
      assert.is(diffSnapshots(after, after).length, 0, "a snapshot against itself: no change");
    }),
    params(RUNS * 25),
  );
});

Diff("names of inherited members are ordinary keys: a label or permission named constructor, toString or __proto__ is diffed as itself", () => {
  const before = viaText({ labels: { constructor: "x" }, permissions: { prod: { toString: { __proto__x: ["list"] } } } }) as AuditSnapshot;
  const after = JSON.parse('{"labels":{"toString":"y"},"permissions":{"prod":{"__proto__":{"constructor":["get"]}}}}') as AuditSnapshot;
  assert.is(
    canon(diffSnapshots(before, after)),
    canon([
      { path: ["labels", "constructor"], before: "x", after: null },
      { path: ["labels", "toString"], before: null, after: "y" },
      { path: ["permissions", "prod", "toString"], before: { __proto__x: ["list"] }, after: null },
      { path: ["permissions", "prod", "__proto__"], before: null, after: JSON.parse('{"constructor":["get"]}') },
    ]),
  );
  // Creations (before null) look keys up in an empty object: still nothing inherited.
  assert.is(canon(diffSnapshots(null, JSON.parse('{"constructor":"x"}') as AuditSnapshot)), canon([{ path: ["constructor"], before: null, after: "x" }]));
  assert.is(canon(diffSnapshots(JSON.parse('{"toString":"x"}') as AuditSnapshot, null)), canon([{ path: ["toString"], before: "x", after: null }]));
});

Diff.run();

// ---------------------------------------------------------------- B: permissions through the API

const Perms = suite("audit: permission diffs through the API (property-based)");

const INSTANCES = ["prod", "qa.1", "x-y"];
// `__proto__` is a reserved name of permissions (refused by the services); other inherited members' names are legal.
const SERVICES = ["*", "API_BP", "a.b", "svc;v=1", "constructor", "toString", "hasOwnProperty"];
const ENTITIES = ["*", "A_X", "_e", "constructor", "valueOf", "toLocaleString"];
const OPS = ["list", "get", "create", "update", "delete"];

/** A permissions document (own keys only). */
function permissions(): fc.Arbitrary<Record<string, unknown>> {
  const pick = (names: string[]) => fc.constantFrom(...names);
  const entities = fc.array(fc.tuple(pick(ENTITIES), fc.subarray(OPS, { minLength: 1 })), { maxLength: 3 }).map((e) => Object.fromEntries(e));
  const services = fc.array(fc.tuple(pick(SERVICES), entities), { maxLength: 3 }).map((e) => Object.fromEntries(e));
  return fc.array(fc.tuple(fc.constantFrom(...INSTANCES), services), { maxLength: 2 }).map((e) => Object.fromEntries(e));
}

/** Permissions as a key holds them: operations in canonical order. */
function canonical(p: Record<string, unknown>): Json {
  return viaText(
    Object.fromEntries(
      Object.entries(p).map(([i, s]) => [
        i,
        Object.fromEntries(Object.entries(s as object).map(([n, e]) => [n, Object.fromEntries(Object.entries(e as object).map(([x, ops]) => [x, OPS.filter((o) => (ops as string[]).includes(o))]))])),
      ]),
    ),
  );
}

Perms("an update's entry states the permissions before and after exactly, its changes turn one into the other, and the trail lists (Connect and REST)", async () => {
  const w = await createWorld();
  try {
    const keys = w.client(ApiKeyService);
    const audit = w.client(AuditService);
    await fc.assert(
      fc.asyncProperty(fc.boolean(), permissions(), permissions(), async (rest, p1, p2) => {
        let id: string;
        if (rest) {
          const created = await w.app.inject({ method: "POST", url: "/admin/api-keys", headers: AUTH, payload: { name: "k", permissions: p1 } });
          assert.is(created.statusCode, 201, created.body);
          id = json(created).data.id;
          const updated = await w.app.inject({ method: "PATCH", url: `/admin/api-keys/${id}`, headers: AUTH, payload: { permissions: p2 } });
          assert.is(updated.statusCode, 200, updated.body);
        } else {
          const created = await keys.createApiKey({ apiKey: { name: "k", permissions: p1 as never } });
          id = created.apiKey!.id;
          await keys.updateApiKey({ apiKey: { id, permissions: p2 as never }, updateMask: { paths: ["permissions"] } });
        }
        const held = viaText((await w.app.inject({ method: "GET", url: `/admin/api-keys/${id}`, headers: AUTH }).then(json)).data.permissions ?? {});
        assert.is(canon(held), canon(canonical(p2)), "the key holds what was sent");
        const list = await w.app.inject({ method: "GET", url: `/admin/audit?resource_id=${id}&action=update`, headers: AUTH });
        assert.is(list.statusCode, 200, list.body);
        const [entry] = json(list).data;
        const one = await w.app.inject({ method: "GET", url: `/admin/audit/${entry.id}`, headers: AUTH });
        assert.is(canon(json(one).data), canon(entry), "GET answers the entry as listed");
        assert.is(canon(entry.before.permissions ?? {}), canon(canonical(p1)));
        assert.is(canon(entry.after.permissions ?? {}), canon(canonical(p2)));
        assert.is(canon(normal(apply(entry.before, entry.changes))), canon(normal(entry.after)));
        assert.ok(
          entry.changes.every((c: { path: string[] }) => c.path[0] === "permissions"),
          `only permissions changed: ${JSON.stringify(entry.changes)}`,
        );
        // Over Connect too (the message form), and the whole trail still lists.
        const viaRpc = (await audit.getAuditEntry({ id: entry.id })).auditEntry!;
        assert.is(viaRpc.changes.length, entry.changes.length);
        const all = await w.app.inject({ method: "GET", url: "/admin/audit?page_size=500", headers: AUTH });
        assert.is(all.statusCode, 200, all.body);
      }),
      params(RUNS),
    );
    assert.equal(w.errors, [], "no masked internal errors");
  } finally {
    await w.close();
  }
});

Perms("a system labelled constructor, toString or valueOf is recorded as such, and the trail lists (regression: inherited members in diffs, a 500 on listing)", async () => {
  const w = await createWorld();
  try {
    const created = await w.app.inject({ method: "POST", url: "/admin/systems", headers: AUTH, payload: { name: "erp", labels: { constructor: "x", toString: "y" } } });
    assert.is(created.statusCode, 201, created.body);
    const id = json(created).data.id;
    const updated = await w.app.inject({ method: "PATCH", url: `/admin/systems/${id}`, headers: AUTH, payload: { labels: { valueOf: "z" } } });
    assert.is(updated.statusCode, 200, updated.body);
    const list = await w.app.inject({ method: "GET", url: "/admin/audit", headers: AUTH });
    assert.is(list.statusCode, 200, list.body);
    const [update, create] = json(list).data;
    assert.is(
      canon(create.changes.filter((c: { path: string[] }) => c.path[0] === "labels")),
      canon([{ path: ["labels"], before: null, after: JSON.parse('{"constructor":"x","toString":"y"}') }]),
    );
    assert.equal(update.changes, [
      { path: ["labels", "constructor"], before: "x", after: null },
      { path: ["labels", "toString"], before: "y", after: null },
      { path: ["labels", "valueOf"], before: null, after: "z" },
    ]);
    assert.equal(w.errors, []);
  } finally {
    await w.close();
  }
});

Perms("an entry stored with a value missing (as an earlier erplink could write it) lists with null there, not a 500", async () => {
  const w = await createWorld();
  try {
    await w.store.audit.append({
      id: "aud_01KAS000000000000000000000",
      timestamp: w.now,
      actor: "master",
      sessionId: "",
      action: "create",
      resourceType: "system",
      resourceId: "sys_01KAS000000000000000000000",
      requestId: "",
      state: "applied",
      before: null,
      after: { labels: { constructor: "x" } },
      // As JSON.stringify stored a function: the member is gone.
      changes: JSON.parse('[{"path":["labels","constructor"],"after":"x"}]'),
    });
    const list = await w.app.inject({ method: "GET", url: "/admin/audit", headers: AUTH });
    assert.is(list.statusCode, 200, list.body);
    assert.equal(json(list).data[0].changes, [{ path: ["labels", "constructor"], before: null, after: "x" }]);
    assert.equal(w.errors, []);
  } finally {
    await w.close();
  }
});

Perms("hostile filters and page tokens are 200 or a 400 naming the parameter, in the envelope: never an operator, never a 500", async () => {
  const w = await createWorld();
  try {
    await w.app.inject({ method: "POST", url: "/admin/systems", headers: AUTH, payload: { name: "erp" } });
    const names = fc.constantFrom("from", "to", "actor", "resource_type", "resource_id", "action", "page_size", "page_token", "actor[$ne]", "actor[]", "from[$gt]");
    const hostile = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.constantFrom("master", "internal", "ses_x", "key_01KAS000000000000000000000", "$ne", '{"$ne":null}', "sys_%00", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00+14:00", "0000-01-01T00:00:00Z", "1e3", "-1", "0x10", " 5", "NaN"),
      fc.string({ maxLength: 40 }).map((t) => Buffer.from(`v1:${t}`).toString("hex")),
      fc.constantFrom("aud_", "log_", "sys_").map((p) => Buffer.from(`v1:${p}01KAS000000000000000000000`).toString("hex")),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(names, hostile), { maxLength: 4 }), async (params) => {
        const query = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
        const res = await w.app.inject({ method: "GET", url: `/admin/audit?${query}`, headers: AUTH });
        assert.ok([200, 400].includes(res.statusCode), `${query} -> ${res.statusCode} ${res.body}`);
        const body = json(res);
        if (res.statusCode === 200) assert.ok(Array.isArray(body.data), res.body);
        else {
          assert.is(body.error.code, "VALIDATION_ERROR", res.body);
          for (const d of body.error.details) assert.ok(["from", "to", "actor", "resource_type", "resource_id", "action", "page_size", "page_token"].includes(d.field), res.body);
        }
      }),
      params(RUNS * 5),
    );
    assert.equal(w.errors, []);
  } finally {
    await w.close();
  }
});

Perms.run();

// ---------------------------------------------------------------- C: no secret anywhere

const Secrets = suite("audit: no secret in any entry, answer or log (property-based)");

/** A secret of the run, recognisable wherever it lands. */
const secret = fc.stringMatching(/^[A-Za-z0-9]{6,12}$/).map((s) => `S3CRET${s}`);

type Auth =
  | { type: "none" }
  | { type: "basic"; username: string; password: string }
  | { type: "bearer"; token: string }
  | { type: "oauth2_client_credentials"; token_url: string; client_id: string; client_secret: string }
  | null;

const auth: fc.Arbitrary<Auth> = fc.oneof(
  fc.constant(null),
  fc.constant({ type: "none" as const }),
  secret.map((password) => ({ type: "basic" as const, username: "svc", password })),
  secret.map((token) => ({ type: "bearer" as const, token })),
  secret.map((s) => ({ type: "oauth2_client_credentials" as const, token_url: "https://idp.example.com/token", client_id: "cid", client_secret: s })),
);

/** Proto form of an auth for Connect. */
function authMessage(a: Exclude<Auth, null>) {
  const type = { none: BackendAuthType.NONE, basic: BackendAuthType.BASIC, bearer: BackendAuthType.BEARER, oauth2_client_credentials: BackendAuthType.OAUTH2_CLIENT_CREDENTIALS }[a.type];
  return {
    type,
    username: "username" in a ? a.username : "",
    password: "password" in a ? a.password : "",
    token: "token" in a ? a.token : "",
    tokenUrl: "token_url" in a ? a.token_url : "",
    clientId: "client_id" in a ? a.client_id : "",
    clientSecret: "client_secret" in a ? a.client_secret : "",
  };
}

Secrets("credentials replaced and removed, keys issued and revoked, sessions opened and closed: no secret or hash reaches the trail, the audit API, the request log or an error", async () => {
  const w = await createWorld();
  try {
    const sys = json(await w.app.inject({ method: "POST", url: "/admin/systems", headers: AUTH, payload: { name: "erp" } })).data.id;
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.boolean(), auth), { minLength: 1, maxLength: 4 }), fc.boolean(), fc.boolean(), async (changes, rest, admin) => {
        const secrets: string[] = [];
        const seen = (await w.store.audit.query({ limit: 500 })).items.length;
        let writes = 0;
        // An instance, its credentials changed over REST or Connect, then deleted.
        const first = changes[0]![1];
        const created = await w.app.inject({
          method: "POST",
          url: `/admin/systems/${sys}/instances`,
          headers: AUTH,
          payload: { name: `i${++n}`, base_url: "https://s4.example.com/odata/", ...(first ? { auth: first } : {}) },
        });
        assert.is(created.statusCode, 201, created.body);
        writes++;
        const ins = json(created).data.id;
        for (const [, a] of changes) if (a) secrets.push(...Object.values(a).filter((v) => v.startsWith("S3CRET")));
        for (const [viaRest, a] of changes.slice(1)) {
          if (viaRest) {
            const res = await w.app.inject({ method: "PATCH", url: `/admin/instances/${ins}`, headers: AUTH, payload: { auth: a } });
            assert.is(res.statusCode, 200, res.body);
          } else {
            await w.client(InstanceService).updateInstance({ instance: { id: ins, ...(a ? { auth: authMessage(a) } : {}) }, updateMask: { paths: ["auth"] } });
          }
          writes++;
        }
        assert.is((await w.app.inject({ method: "DELETE", url: `/admin/instances/${ins}`, headers: AUTH })).statusCode, 200);
        writes++;
        // A key issued, changed and revoked; a session opened with it (an admin key) or with the master key, and closed.
        let keySecret: string;
        let keyId: string;
        if (rest) {
          const res = json(await w.app.inject({ method: "POST", url: "/admin/api-keys", headers: AUTH, payload: { name: "k", ...(admin ? { type: "admin" } : { permissions: { prod: { "*": { "*": ["list"] } } } }) } }));
          [keySecret, keyId] = [res.data.key, res.data.id];
        } else {
          const res = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "k", ...(admin ? { type: ApiKeyType.ADMIN } : {}) } });
          [keySecret, keyId] = [res.key, res.apiKey!.id];
        }
        writes++;
        const keyRecord = (await w.store.apiKeys.get(keyId))!;
        secrets.push(keySecret, keySecret.slice(12), keyRecord.keyHash);
        await w.app.inject({ method: "PATCH", url: `/admin/api-keys/${keyId}`, headers: AUTH, payload: { name: "k2", expires_at: "2030-01-01T00:00:00Z" } });
        writes++;
        const opener = admin ? keySecret : MASTER_KEY;
        const session = json(await w.app.inject({ method: "POST", url: "/admin/sessions", headers: { authorization: `Bearer ${opener}` } })).data;
        writes++;
        const sessionRecord = (await w.store.sessions.get(session.id))!;
        secrets.push(session.token, session.csrf_token, sessionRecord.tokenHash, sessionRecord.principalHash);
        // A write made through the session, then the session closed with itself, then the key revoked.
        assert.is((await w.app.inject({ method: "PATCH", url: `/admin/systems/${sys}`, headers: { authorization: `Bearer ${session.token}` }, payload: { description: `d${n}` } })).statusCode, 200);
        writes++;
        assert.is((await w.app.inject({ method: "DELETE", url: "/admin/sessions/current", headers: { authorization: `Bearer ${session.token}` } })).statusCode, 200);
        writes++;
        assert.is((await w.app.inject({ method: "DELETE", url: `/admin/api-keys/${keyId}`, headers: AUTH })).statusCode, 200);
        writes++;
        // Hashes of the secrets, in case one were stored as SHA-256 elsewhere.
        for (const s of [...secrets]) secrets.push(createHash("sha256").update(s).digest("hex"), createHash("sha256").update(s).digest("base64url"));

        const entries = (await w.store.audit.query({ limit: 500 })).items;
        assert.is(entries.length - seen, writes, "one entry per write");
        assert.ok(entries.slice(0, writes).every((e) => e.state === "applied"), "each applied");
        await w.layer.logWriter.flush();
        const texts = [
          JSON.stringify(entries),
          (await w.app.inject({ method: "GET", url: "/admin/audit?page_size=500", headers: AUTH })).body,
          ...(await Promise.all(entries.slice(0, writes).map(async (e) => (await w.app.inject({ method: "GET", url: `/admin/audit/${e.id}`, headers: AUTH })).body))),
          canon((await w.client(AuditService).listAuditEntries({ pageSize: 500 })).auditEntries),
          canon((await w.client(LogService).queryLogs({ pageSize: 1000 })).logs),
          canon((await w.store.logs.query({ limit: 1000 })).items),
          JSON.stringify(w.errors, Object.getOwnPropertyNames(w.errors[0] ?? {})),
        ];
        for (const text of texts) for (const s of secrets) assert.not.ok(text.includes(s), `a secret (${s.slice(0, 10)}…) in ${text.slice(0, 200)}`);
      }),
      params(Math.max(5, Math.round(RUNS / 4))),
    );
    assert.equal(w.errors, [], "no masked internal errors");
  } finally {
    await w.close();
  }
});

Secrets.run();

// ---------------------------------------------------------------- D: every write RPC, failures at each step

const Writes = suite("audit: every admin write RPC, with each of its writes failing (REST and Connect)");

interface Ids {
  readonly sys: string;
  readonly spare: string;
  readonly ins: string;
  readonly key: string;
  readonly ses: string;
}

interface Write {
  /** The store method the change itself writes with. */
  readonly store: readonly [aggregate: "systems" | "instances" | "apiKeys" | "sessions", method: string];
  readonly rpc: (w: TestWorld, ids: Ids) => Promise<unknown>;
  readonly rest: (w: TestWorld, ids: Ids) => { method: "POST" | "PATCH" | "DELETE"; url: string; payload?: object; status: number };
}

/** Every write RPC, by `Service.Method`: how to call it over Connect and over REST. */
const WRITES: Readonly<Record<string, Write>> = {
  "SystemService.CreateSystem": {
    store: ["systems", "create"],
    rpc: (w) => w.client(SystemService).createSystem({ system: { name: "new" } }),
    rest: () => ({ method: "POST", url: "/admin/systems", payload: { name: "new" }, status: 201 }),
  },
  "SystemService.UpdateSystem": {
    store: ["systems", "revise"],
    rpc: (w, { sys }) => w.client(SystemService).updateSystem({ system: { id: sys, description: "d" }, updateMask: { paths: ["description"] } }),
    rest: (_, { sys }) => ({ method: "PATCH", url: `/admin/systems/${sys}`, payload: { description: "d" }, status: 200 }),
  },
  "SystemService.DeleteSystem": {
    store: ["systems", "delete"],
    rpc: (w, { spare }) => w.client(SystemService).deleteSystem({ id: spare }),
    rest: (_, { spare }) => ({ method: "DELETE", url: `/admin/systems/${spare}`, status: 200 }),
  },
  "InstanceService.CreateInstance": {
    store: ["instances", "create"],
    rpc: (w, { sys }) => w.client(InstanceService).createInstance({ systemId: sys, instance: { name: "new", baseUrl: "https://n.example.com/" } }),
    rest: (_, { sys }) => ({ method: "POST", url: `/admin/systems/${sys}/instances`, payload: { name: "new", base_url: "https://n.example.com/" }, status: 201 }),
  },
  "InstanceService.UpdateInstance": {
    store: ["instances", "revise"],
    rpc: (w, { ins }) =>
      w.client(InstanceService).updateInstance({ instance: { id: ins, auth: { type: BackendAuthType.BEARER, token: "S3CRET-tok" } }, updateMask: { paths: ["auth"] } }),
    rest: (_, { ins }) => ({ method: "PATCH", url: `/admin/instances/${ins}`, payload: { auth: { type: "bearer", token: "S3CRET-tok" } }, status: 200 }),
  },
  "InstanceService.DeleteInstance": {
    store: ["instances", "delete"],
    rpc: (w, { ins }) => w.client(InstanceService).deleteInstance({ id: ins }),
    rest: (_, { ins }) => ({ method: "DELETE", url: `/admin/instances/${ins}`, status: 200 }),
  },
  "ApiKeyService.CreateApiKey": {
    store: ["apiKeys", "create"],
    rpc: (w) => w.client(ApiKeyService).createApiKey({ apiKey: { name: "new" } }),
    rest: () => ({ method: "POST", url: "/admin/api-keys", payload: { name: "new" }, status: 201 }),
  },
  "ApiKeyService.UpdateApiKey": {
    store: ["apiKeys", "revise"],
    rpc: (w, { key }) => w.client(ApiKeyService).updateApiKey({ apiKey: { id: key, name: "renamed" }, updateMask: { paths: ["name"] } }),
    rest: (_, { key }) => ({ method: "PATCH", url: `/admin/api-keys/${key}`, payload: { name: "renamed" }, status: 200 }),
  },
  "ApiKeyService.DeleteApiKey": {
    store: ["apiKeys", "revoke"],
    rpc: (w, { key }) => w.client(ApiKeyService).deleteApiKey({ id: key }),
    rest: (_, { key }) => ({ method: "DELETE", url: `/admin/api-keys/${key}`, status: 200 }),
  },
  "SessionService.CreateSession": {
    store: ["sessions", "create"],
    rpc: (w) => w.client(SessionService).createSession({ session: { label: "new" } }),
    rest: () => ({ method: "POST", url: "/admin/sessions", payload: { label: "new" }, status: 201 }),
  },
  "SessionService.DeleteSession": {
    store: ["sessions", "delete"],
    rpc: (w, { ses }) => w.client(SessionService).deleteSession({ id: ses }),
    rest: (_, { ses }) => ({ method: "DELETE", url: `/admin/sessions/${ses}`, status: 200 }),
  },
};

/** RPCs that write nothing (reads, and the diagnostics, which reach back ends but no store). */
const READ = /^(Get|BatchGet|List|Query|Explain|Test)/;

Writes("every write RPC of the admin services is listed here (a new one must be added, with its failure cases)", async () => {
  const w = await createWorld();
  try {
    const services: DescService[] = [SystemService, InstanceService, ApiKeyService, SessionService, AuditService, LogService, UsageService];
    const writes = services.flatMap((s) => s.methods.filter((m) => !READ.test(m.name)).map((m) => `${s.name}.${m.name}`));
    assert.equal(writes.sort(), Object.keys(WRITES).sort());
    // And these are every admin service the router serves.
    const router = createConnectRouter();
    w.layer.routes(router);
    for (const name of new Set(router.handlers.map((h) => h.service.typeName))) {
      if (name.startsWith("erplink.admin.v1.")) assert.ok(services.some((s) => s.typeName === name), `${name} is walked`);
    }
  } finally {
    await w.close();
  }
});

/** A world with a system (and a spare one), an instance, a key and a session; the ids. */
async function seeded(): Promise<{ w: TestWorld; ids: Ids }> {
  const w = await createWorld();
  const sys = await w.client(SystemService).createSystem({ system: { name: "erp" } });
  const spare = await w.client(SystemService).createSystem({ system: { name: "spare" } });
  const ins = await w.client(InstanceService).createInstance({ systemId: sys.system!.id, instance: { name: "s4", baseUrl: "https://s4.example.com/" } });
  const key = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "k" } });
  const ses = await w.client(SessionService).createSession({ session: { label: "s" } });
  return { w, ids: { sys: sys.system!.id, spare: spare.system!.id, ins: ins.instance!.id, key: key.apiKey!.id, ses: ses.session!.id } };
}

/** Everything a write could change (sessions included), the trail aside. */
async function resources(w: TestWorld): Promise<unknown> {
  return viaText({
    systems: (await w.store.systems.list({ limit: 100 })).items,
    instances: (await w.store.instances.list({ limit: 100 })).items,
    keys: await w.store.apiKeys.changedSince(new Date(0), 100),
    sessions: (await w.store.sessions.listNewest({ limit: 100, now: new Date(0) })).items,
  });
}

const unavailable = () => new StoreUnavailableError({ cause: new Error("ECONNREFUSED") });

/** Calls a write over one protocol; resolves to whether it succeeded, asserting `unavailable` / 503 otherwise. */
async function call(w: TestWorld, ids: Ids, write: Write, protocol: "rest" | "connect", expect: "ok" | "unavailable"): Promise<void> {
  if (protocol === "connect") {
    if (expect === "ok") await write.rpc(w, ids);
    else await rejects(write.rpc(w, ids), Code.Unavailable);
    return;
  }
  const r = write.rest(w, ids);
  const res = await w.app.inject({ method: r.method, url: r.url, headers: AUTH, ...(r.payload ? { payload: r.payload } : {}) });
  assert.is(res.statusCode, expect === "ok" ? r.status : 503, res.body);
  if (expect !== "ok") assert.is(json(res).error.code, "UNAVAILABLE");
}

for (const [name, write] of Object.entries(WRITES)) {
  for (const protocol of ["rest", "connect"] as const) {
    Writes(`${name} over ${protocol}: entry not written -> fails, nothing changes; change fails -> fails, entry pending; confirmation fails -> succeeds, entry pending`, async () => {
      // 1. The entry cannot be written: the change is not attempted.
      {
        const { w, ids } = await seeded();
        try {
          const before = await resources(w);
          const trail = (await w.store.audit.query({ limit: 100 })).items;
          w.store.audit.append = async () => {
            throw unavailable();
          };
          await call(w, ids, write, protocol, "unavailable");
          assert.equal(await resources(w), before, "nothing changed");
          assert.equal((await w.store.audit.query({ limit: 100 })).items, trail, "no entry");
        } finally {
          await w.close();
        }
      }
      // 2. The change's own write fails (the store went away): the call fails, the entry stays pending.
      {
        const { w, ids } = await seeded();
        try {
          const [aggregate, method] = write.store;
          (w.store[aggregate] as unknown as Record<string, unknown>)[method] = async () => {
            throw unavailable();
          };
          const seen = (await w.store.audit.query({ limit: 100 })).items.length;
          await call(w, ids, write, protocol, "unavailable");
          const trail = (await w.store.audit.query({ limit: 100 })).items;
          assert.is(trail.length, seen + 1, "the entry stays");
          assert.is(trail[0]!.state, "pending");
        } finally {
          await w.close();
        }
      }
      // 3. The entry cannot be confirmed: the change stands, and so does its (pending) entry.
      {
        const { w, ids } = await seeded();
        try {
          w.store.audit.markApplied = async () => {
            throw unavailable();
          };
          const before = await resources(w);
          const seen = (await w.store.audit.query({ limit: 100 })).items.length;
          await call(w, ids, write, protocol, "ok");
          assert.not.equal(await resources(w), before, "the change was made");
          const trail = (await w.store.audit.query({ limit: 100 })).items;
          assert.is(trail.length, seen + 1);
          assert.is(trail[0]!.state, "pending");
          assert.is(w.errors.length, 1, "the failed confirmation is reported");
          (w.errors as unknown[]).length = 0;
        } finally {
          await w.close();
        }
      }
    });
  }
}

Writes.run();
