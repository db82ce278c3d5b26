/**
 * AuthorizationService through a typed Connect client over the in-process
 * router transport, with no admin credential (the service is public): request
 * validation, the key checks, the four permission steps with their exact
 * messages, wildcards and additive grants, and the rate limits (per-key and
 * default, dry runs, UTC-aligned windows), driven by the world's clock.
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { Code, createClient, type Client } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeyService, ApiKeyType } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import {
  AuthorizationService,
  DenialStep,
  Operation,
  type AuthorizeRequest,
  type AuthorizeResponse,
} from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { generateApiKeySecret } from "../../src/services/api-key-secret.js";
import type { Limits } from "../../src/services/rate-limiter.js";
import { ms, rejects, tick, violations, type TestWorld } from "../../test-support/rpc.js";
import { MASTER_KEY, createWorld } from "../../test-support/world.js";

type World = TestWorld;
/** Fields of an AuthorizeRequest, to override. */
type Extra = Partial<Omit<AuthorizeRequest, "$typeName" | "$unknown">>;
type Permissions = Record<string, Record<string, Record<string, string[]>>>;

const test = suite("AuthorizationService");

/** A test in a fresh world (with `dataLimits`, if given) that fails on any masked internal error. */
function it(name: string, fn: (w: World) => Promise<void>, options: { dataLimits?: Limits } = {}): void {
  test(name, async () => {
    const w = await createWorld(options);
    try {
      await fn(w);
      assert.equal(w.errors, [], "no masked internal errors");
    } finally {
      await w.close();
    }
  });
}

const KEY_ID = /^key_[0-9A-HJKMNP-TV-Z]{26}$/;

/** The AuthorizationService client: no authorization header at all. */
function authz(w: World): Client<typeof AuthorizationService> {
  return createClient(AuthorizationService, w.transport);
}

interface KeyOptions {
  permissions?: Permissions;
  rateLimits?: { perMinute?: number; perDay?: number };
  expiresAt?: Date;
  type?: ApiKeyType;
}

/** Creates a key through ApiKeyService (as the master key) and returns its id and secret. */
async function createKey(w: World, options: KeyOptions = {}): Promise<{ id: string; secret: string }> {
  const type = options.type ?? ApiKeyType.DATA;
  const res = await w.client(ApiKeyService).createApiKey({
    apiKey: {
      name: `key-${Math.random().toString(36).slice(2)}`,
      type,
      permissions: type === ApiKeyType.ADMIN ? undefined : (options.permissions ?? PROD_BP),
      rateLimits: options.rateLimits,
      expiresAt: options.expiresAt ? timestampFromDate(options.expiresAt) : undefined,
    },
  });
  assert.ok(res.apiKey);
  assert.match(res.apiKey.id, KEY_ID);
  assert.match(res.key, /^erpl_/);
  return { id: res.apiKey.id, secret: res.key };
}

const PROD_BP: Permissions = { prod: { API_BP: { A_BusinessPartner: ["list", "get"] } } };

/** A request for PROD_BP's grant, with overrides. */
function req(apiKey: string, extra: Extra = {}): Extra {
  return {
    apiKey,
    instance: "prod",
    service: "API_BP",
    entity: "A_BusinessPartner",
    operation: Operation.GET,
    requestId: "req-1",
    ...extra,
  };
}

/** The denial fields of a response, for exact comparison. */
function denial(res: AuthorizeResponse): { allowed: boolean; step: string; code: string; message: string; keyId: string } {
  return {
    allowed: res.allowed,
    step: DenialStep[res.denialStep]!,
    code: res.code,
    message: res.message,
    keyId: res.keyId,
  };
}

function denied(step: DenialStep, code: string, message: string, keyId = "") {
  return { allowed: false, step: DenialStep[step]!, code, message, keyId };
}

function assertAllowed(res: AuthorizeResponse, keyId: string, what = "allowed"): void {
  assert.equal(denial(res), { allowed: true, step: "UNSPECIFIED", code: "", message: "", keyId }, what);
}

function seconds(d: Duration | undefined): number {
  assert.ok(d, "duration is set");
  return Number(d.seconds) + d.nanos / 1e9;
}

/** The windows of a response as plain data. */
function windows(res: AuthorizeResponse): { name: string; limit: number; remaining: number; reset: string }[] {
  assert.ok(res.rateLimit, "rate_limit is set");
  return res.rateLimit.windows.map((w) => ({
    name: w.name,
    limit: Number(w.limit),
    remaining: Number(w.remaining),
    reset: new Date(ms(w.resetTime)).toISOString(),
  }));
}

// The world's clock starts at 2026-01-02T03:04:05.000Z.
const MINUTE_END = "2026-01-02T03:05:00.000Z";
const DAY_END = "2026-01-03T00:00:00.000Z";

// --- malformed requests ---------------------------------------------------

it("an empty request is InvalidArgument listing every field, in order, with BadRequest details", async (w) => {
  const err = await rejects(authz(w).authorize({}), Code.InvalidArgument, "5 fields are invalid");
  assert.equal(violations(err), [
    { field: "api_key", description: "is required" },
    { field: "instance", description: "is required" },
    { field: "service", description: "is required" },
    { field: "entity", description: "is required" },
    { field: "operation", description: "must be LIST, GET, CREATE, UPDATE or DELETE" },
  ]);
});

it("each required field alone: empty api_key, instance, service, entity -> InvalidArgument naming it", async (w) => {
  const { secret } = await createKey(w);
  for (const field of ["apiKey", "instance", "service", "entity"] as const) {
    const name = field === "apiKey" ? "api_key" : field;
    const err = await rejects(authz(w).authorize(req(secret, { [field]: "" })), Code.InvalidArgument, `${name}: is required`);
    assert.equal(violations(err), [{ field: name, description: "is required" }], name);
  }
});

it("'*' as instance, service or entity -> InvalidArgument 'must name one item, not '*''", async (w) => {
  const { secret } = await createKey(w, { permissions: { prod: { "*": { "*": ["get"] } } } });
  for (const field of ["instance", "service", "entity"] as const) {
    const err = await rejects(
      authz(w).authorize(req(secret, { [field]: "*" })),
      Code.InvalidArgument,
      `${field}: must name one item, not '*'`,
    );
    assert.equal(violations(err), [{ field, description: "must name one item, not '*'" }], field);
  }
  const all = await rejects(
    authz(w).authorize(req(secret, { instance: "*", service: "*", entity: "*" })),
    Code.InvalidArgument,
    "3 fields are invalid",
  );
  assert.equal(violations(all).map((v) => v.field), ["instance", "service", "entity"]);
});

it("OPERATION_UNSPECIFIED or an unknown enum value -> InvalidArgument on operation", async (w) => {
  const { secret } = await createKey(w);
  for (const operation of [Operation.UNSPECIFIED, 99 as Operation]) {
    const err = await rejects(
      authz(w).authorize(req(secret, { operation })),
      Code.InvalidArgument,
      "operation: must be LIST, GET, CREATE, UPDATE or DELETE",
    );
    assert.equal(violations(err), [{ field: "operation", description: "must be LIST, GET, CREATE, UPDATE or DELETE" }]);
  }
});

it("names longer than 256 characters are InvalidArgument; 256 is fine (denied, not invalid)", async (w) => {
  const { secret, id } = await createKey(w);
  const err = await rejects(
    authz(w).authorize(req(secret, { service: "S".repeat(257), entity: "E".repeat(257) })),
    Code.InvalidArgument,
    "2 fields are invalid",
  );
  assert.equal(violations(err), [
    { field: "service", description: "must be at most 256 characters" },
    { field: "entity", description: "must be at most 256 characters" },
  ]);
  const res = await authz(w).authorize(req(secret, { service: "S".repeat(256) }));
  assert.equal(denial(res), denied(DenialStep.SERVICE, "FORBIDDEN", `API key has no access to service '${"S".repeat(256)}'`, id));
});

it("a malformed request consumes no rate-limit budget", async (w) => {
  const { secret, id } = await createKey(w, { rateLimits: { perMinute: 2 } });
  for (let i = 0; i < 5; i++) {
    await rejects(authz(w).authorize(req(secret, { operation: Operation.UNSPECIFIED })), Code.InvalidArgument);
  }
  const res = await authz(w).authorize(req(secret));
  assertAllowed(res, id);
  assert.is(res.rateLimit?.remaining, 1n);
});

// --- the key ---------------------------------------------------------------

it("a malformed token (bad format, bad checksum) -> KEY_INVALID, UNAUTHORIZED, 'invalid API key', no key id, no rate limit", async (w) => {
  const { secret } = await createKey(w);
  // Same format, last checksum character changed.
  const last = secret.at(-1) === "A" ? "B" : "A";
  // Longer than any key (not hashed): a key's secret with more after it.
  const long = `${secret}${"x".repeat(100_000)}`;
  for (const token of ["nope", "erpl_short", `${secret}x`, secret.slice(0, -1) + last, secret.toUpperCase(), long]) {
    const res = await authz(w).authorize(req(token));
    assert.equal(denial(res), denied(DenialStep.KEY_INVALID, "UNAUTHORIZED", "invalid API key"), token.slice(0, 80));
    assert.is(res.rateLimit, undefined, token);
  }
});

it("an unknown well-formed token -> KEY_INVALID, UNAUTHORIZED, 'invalid API key', no key id", async (w) => {
  await createKey(w);
  const token = generateApiKeySecret();
  for (let i = 0; i < 2; i++) {
    // Twice: the second answer comes from the registry's negative cache.
    const res = await authz(w).authorize(req(token));
    assert.equal(denial(res), denied(DenialStep.KEY_INVALID, "UNAUTHORIZED", "invalid API key"));
    assert.is(res.rateLimit, undefined);
  }
});

it("a revoked key is allowed before DeleteApiKey and KEY_INVALID 'invalid API key' (no key id) right after", async (w) => {
  const { secret, id } = await createKey(w);
  assertAllowed(await authz(w).authorize(req(secret)), id);
  await w.client(ApiKeyService).deleteApiKey({ id });
  const res = await authz(w).authorize(req(secret));
  assert.equal(denial(res), denied(DenialStep.KEY_INVALID, "UNAUTHORIZED", "invalid API key"));
  assert.is(res.rateLimit, undefined);
});

it("an expired key: allowed 1 ms before expires_at, KEY_EXPIRED 'API key expired' with its key id at and after it", async (w) => {
  const expiresAt = new Date(w.now.getTime() + 3_600_000);
  const { secret, id } = await createKey(w, { expiresAt, rateLimits: { perMinute: 100 } });
  w.now = new Date(expiresAt.getTime() - 1);
  assertAllowed(await authz(w).authorize(req(secret)), id);
  for (const at of [expiresAt.getTime(), expiresAt.getTime() + 86_400_000]) {
    w.now = new Date(at);
    const res = await authz(w).authorize(req(secret));
    assert.equal(denial(res), denied(DenialStep.KEY_EXPIRED, "UNAUTHORIZED", "API key expired", id));
    assert.is(res.rateLimit, undefined);
  }
});

it("an admin key -> KEY_INVALID, FORBIDDEN, 'API key is not a data key: data access needs a data key', with its key id", async (w) => {
  const { secret, id } = await createKey(w, { type: ApiKeyType.ADMIN });
  const res = await authz(w).authorize(req(secret));
  assert.equal(
    denial(res),
    denied(DenialStep.KEY_INVALID, "FORBIDDEN", "API key is not a data key: data access needs a data key", id),
  );
  assert.is(res.rateLimit, undefined);
});

it("the master key is no API key: KEY_INVALID 'invalid API key'", async (w) => {
  const res = await authz(w).authorize(req(MASTER_KEY));
  assert.equal(denial(res), denied(DenialStep.KEY_INVALID, "UNAUTHORIZED", "invalid API key"));
});

// --- permissions -------------------------------------------------------------

it("the four permission steps, coarse to fine, with their exact messages and FORBIDDEN", async (w) => {
  const { secret, id } = await createKey(w);
  const cases: [Extra, DenialStep, string][] = [
    [{ instance: "dev" }, DenialStep.INSTANCE, "API key has no access to instance 'dev'"],
    // The coarsest failing check wins even when finer ones would fail too.
    [{ instance: "dev", service: "X", entity: "Y", operation: Operation.DELETE }, DenialStep.INSTANCE, "API key has no access to instance 'dev'"],
    [{ service: "API_SALES" }, DenialStep.SERVICE, "API key has no access to service 'API_SALES'"],
    [{ service: "API_SALES", entity: "Y" }, DenialStep.SERVICE, "API key has no access to service 'API_SALES'"],
    [{ entity: "A_Supplier" }, DenialStep.ENTITY, "API key has no access to entity 'A_Supplier'"],
    [{ entity: "A_Supplier", operation: Operation.DELETE }, DenialStep.ENTITY, "API key has no access to entity 'A_Supplier'"],
    [{ operation: Operation.CREATE }, DenialStep.OPERATION, "API key lacks permission 'create' for entity 'A_BusinessPartner'"],
    [{ operation: Operation.UPDATE }, DenialStep.OPERATION, "API key lacks permission 'update' for entity 'A_BusinessPartner'"],
    [{ operation: Operation.DELETE }, DenialStep.OPERATION, "API key lacks permission 'delete' for entity 'A_BusinessPartner'"],
    // Names are exact: case matters.
    [{ instance: "PROD" }, DenialStep.INSTANCE, "API key has no access to instance 'PROD'"],
    [{ entity: "a_businesspartner" }, DenialStep.ENTITY, "API key has no access to entity 'a_businesspartner'"],
    [{ service: "__proto__" }, DenialStep.SERVICE, "API key has no access to service '__proto__'"],
    [{ instance: "toString" }, DenialStep.INSTANCE, "API key has no access to instance 'toString'"],
  ];
  for (const [extra, step, message] of cases) {
    const res = await authz(w).authorize(req(secret, extra));
    assert.equal(denial(res), denied(step, "FORBIDDEN", message, id), message);
    assert.is(res.rateLimit, undefined, message);
  }
  assertAllowed(await authz(w).authorize(req(secret, { operation: Operation.LIST })), id);
  assertAllowed(await authz(w).authorize(req(secret, { operation: Operation.GET })), id);
});

it("allowed through service '*', entity '*', and both; a wildcard grants nothing outside its instance", async (w) => {
  const { secret, id } = await createKey(w, {
    permissions: {
      prod: { "*": { A_BusinessPartner: ["get"] } },
      qa: { API_BP: { "*": ["list"] } },
      dev: { "*": { "*": ["delete"] } },
    },
  });
  const ok: Extra[] = [
    { instance: "prod", service: "ANY_SERVICE", entity: "A_BusinessPartner", operation: Operation.GET },
    { instance: "qa", service: "API_BP", entity: "AnyEntity", operation: Operation.LIST },
    { instance: "dev", service: "S1", entity: "E1", operation: Operation.DELETE },
  ];
  for (const extra of ok) assertAllowed(await authz(w).authorize(req(secret, extra)), id, JSON.stringify(extra));
  const no: [Extra, DenialStep, string][] = [
    [{ instance: "prod", service: "S", entity: "Other" }, DenialStep.ENTITY, "API key has no access to entity 'Other'"],
    [{ instance: "prod", service: "S", operation: Operation.LIST }, DenialStep.OPERATION, "API key lacks permission 'list' for entity 'A_BusinessPartner'"],
    [{ instance: "qa", service: "OTHER", entity: "E" }, DenialStep.SERVICE, "API key has no access to service 'OTHER'"],
    [{ instance: "qa", entity: "E", operation: Operation.GET }, DenialStep.OPERATION, "API key lacks permission 'get' for entity 'E'"],
    [{ instance: "dev", operation: Operation.GET }, DenialStep.OPERATION, "API key lacks permission 'get' for entity 'A_BusinessPartner'"],
    [{ instance: "test" }, DenialStep.INSTANCE, "API key has no access to instance 'test'"],
  ];
  for (const [extra, step, message] of no) {
    assert.equal(denial(await authz(w).authorize(req(secret, extra))), denied(step, "FORBIDDEN", message, id), message);
  }
});

it("grants are additive: named and '*' entries at the service and entity levels all apply", async (w) => {
  const { secret, id } = await createKey(w, {
    permissions: {
      prod: {
        API_BP: { A_BusinessPartner: ["get"], "*": ["list"] },
        "*": { A_BusinessPartner: ["create"], "*": ["update"] },
      },
    },
  });
  // On API_BP/A_BusinessPartner all four entries apply.
  for (const operation of [Operation.GET, Operation.LIST, Operation.CREATE, Operation.UPDATE]) {
    assertAllowed(await authz(w).authorize(req(secret, { operation })), id, Operation[operation]);
  }
  assert.equal(
    denial(await authz(w).authorize(req(secret, { operation: Operation.DELETE }))),
    denied(DenialStep.OPERATION, "FORBIDDEN", "API key lacks permission 'delete' for entity 'A_BusinessPartner'", id),
  );
  // API_BP/Other: API_BP/* (list) and */* (update).
  for (const operation of [Operation.LIST, Operation.UPDATE]) {
    assertAllowed(await authz(w).authorize(req(secret, { entity: "Other", operation })), id, `Other ${Operation[operation]}`);
  }
  for (const operation of [Operation.GET, Operation.CREATE]) {
    assert.equal(
      denial(await authz(w).authorize(req(secret, { entity: "Other", operation }))),
      denied(DenialStep.OPERATION, "FORBIDDEN", `API key lacks permission '${Operation[operation]!.toLowerCase()}' for entity 'Other'`, id),
    );
  }
  // OTHER_SVC/A_BusinessPartner: */A_BusinessPartner (create) and */* (update) only.
  for (const operation of [Operation.CREATE, Operation.UPDATE]) {
    assertAllowed(await authz(w).authorize(req(secret, { service: "OTHER_SVC", operation })), id);
  }
  for (const operation of [Operation.GET, Operation.LIST]) {
    assert.is(DenialStep[(await authz(w).authorize(req(secret, { service: "OTHER_SVC", operation }))).denialStep], "OPERATION");
  }
});

it("a permission change through UpdateApiKey applies to the next Authorize", async (w) => {
  const { secret, id } = await createKey(w);
  assert.is((await authz(w).authorize(req(secret, { operation: Operation.DELETE }))).allowed, false);
  await w.client(ApiKeyService).updateApiKey({
    apiKey: { id, permissions: { prod: { API_BP: { A_BusinessPartner: ["delete"] } } } },
    updateMask: { paths: ["permissions"] },
  });
  assertAllowed(await authz(w).authorize(req(secret, { operation: Operation.DELETE })), id);
  assert.equal(
    denial(await authz(w).authorize(req(secret, { operation: Operation.GET }))),
    denied(DenialStep.OPERATION, "FORBIDDEN", "API key lacks permission 'get' for entity 'A_BusinessPartner'", id),
  );
});

// --- rate limits --------------------------------------------------------------

it("per_minute 3: three allowed (remaining 2, 1, 0), then RATE_LIMITED with retry_after; the next UTC minute allows again", async (w) => {
  const { secret, id } = await createKey(w, { rateLimits: { perMinute: 3 } });
  for (const remaining of [2, 1, 0]) {
    const res = await authz(w).authorize(req(secret));
    assertAllowed(res, id, `remaining ${remaining}`);
    assert.is(res.rateLimit?.limit, 3n);
    assert.is(res.rateLimit?.remaining, BigInt(remaining));
    assert.is(new Date(ms(res.rateLimit?.resetTime)).toISOString(), MINUTE_END);
    assert.is(res.rateLimit?.retryAfter, undefined, "no retry_after when allowed");
    tick(w, 1000);
  }
  // Now 03:04:08: 52 s to the end of the minute.
  for (let i = 0; i < 2; i++) {
    const res = await authz(w).authorize(req(secret));
    assert.equal(denial(res), denied(DenialStep.RATE_LIMITED, "RATE_LIMITED", "rate limit exceeded: 3 requests per minute", id));
    assert.is(res.rateLimit?.limit, 3n);
    assert.is(res.rateLimit?.remaining, 0n);
    assert.is(new Date(ms(res.rateLimit?.resetTime)).toISOString(), MINUTE_END);
    assert.is(seconds(res.rateLimit?.retryAfter), 52);
  }
  // Still the same minute at 03:04:59.999.
  w.now = new Date("2026-01-02T03:04:59.999Z");
  const last = await authz(w).authorize(req(secret));
  assert.is(DenialStep[last.denialStep], "RATE_LIMITED");
  assert.is(seconds(last.rateLimit?.retryAfter), 1);
  // A new UTC minute.
  w.now = new Date(MINUTE_END);
  const next = await authz(w).authorize(req(secret));
  assertAllowed(next, id, "new minute");
  assert.is(next.rateLimit?.remaining, 2n);
  assert.is(new Date(ms(next.rateLimit?.resetTime)).toISOString(), "2026-01-02T03:06:00.000Z");
});

it("rate_limit.windows lists minute and day with their limits, remaining and reset at the end of the UTC minute and day", async (w) => {
  const { secret } = await createKey(w, { rateLimits: { perMinute: 3, perDay: 10 } });
  const res = await authz(w).authorize(req(secret));
  assert.equal(windows(res), [
    { name: "minute", limit: 3, remaining: 2, reset: MINUTE_END },
    { name: "day", limit: 10, remaining: 9, reset: DAY_END },
  ]);
  // The tightest window is the one reported on top.
  assert.is(res.rateLimit?.limit, 3n);
  assert.is(res.rateLimit?.remaining, 2n);
});

it("per_day 4 exhausted across minutes: RATE_LIMITED 'per day', retry_after to UTC midnight, the minute budget given back", async (w) => {
  const { secret, id } = await createKey(w, { rateLimits: { perMinute: 3, perDay: 4 } });
  for (let i = 0; i < 3; i++) assert.ok((await authz(w).authorize(req(secret))).allowed);
  w.now = new Date("2026-01-02T23:59:00.000Z");
  const fourth = await authz(w).authorize(req(secret));
  assertAllowed(fourth, id);
  assert.equal(windows(fourth), [
    { name: "minute", limit: 3, remaining: 2, reset: "2026-01-03T00:00:00.000Z" },
    { name: "day", limit: 4, remaining: 0, reset: DAY_END },
  ]);
  w.now = new Date("2026-01-02T23:59:30.000Z");
  const fifth = await authz(w).authorize(req(secret));
  assert.equal(denial(fifth), denied(DenialStep.RATE_LIMITED, "RATE_LIMITED", "rate limit exceeded: 4 requests per day", id));
  assert.equal(windows(fifth), [
    { name: "minute", limit: 3, remaining: 2, reset: "2026-01-03T00:00:00.000Z" },
    { name: "day", limit: 4, remaining: 0, reset: DAY_END },
  ]);
  assert.is(seconds(fifth.rateLimit?.retryAfter), 30);
  w.now = new Date(DAY_END);
  const nextDay = await authz(w).authorize(req(secret));
  assertAllowed(nextDay, id);
  assert.equal(windows(nextDay), [
    { name: "minute", limit: 3, remaining: 2, reset: "2026-01-03T00:01:00.000Z" },
    { name: "day", limit: 4, remaining: 3, reset: "2026-01-04T00:00:00.000Z" },
  ]);
});

it("dry_run consumes nothing: 10 dry runs, then 3 real requests pass and the 4th is limited; dry runs report the state", async (w) => {
  const { secret, id } = await createKey(w, { rateLimits: { perMinute: 3 } });
  for (let i = 0; i < 10; i++) {
    const res = await authz(w).authorize(req(secret, { dryRun: true }));
    assertAllowed(res, id, `dry run ${i}`);
    assert.is(res.rateLimit?.limit, 3n);
    assert.is(res.rateLimit?.remaining, 3n, "a dry run reports the remaining budget, untouched");
  }
  for (const remaining of [2, 1, 0]) {
    const res = await authz(w).authorize(req(secret));
    assertAllowed(res, id);
    assert.is(res.rateLimit?.remaining, BigInt(remaining));
    const dry = await authz(w).authorize(req(secret, { dryRun: true }));
    assert.is(dry.rateLimit?.remaining, BigInt(remaining), "a dry run after a real one sees its count");
    assert.is(dry.allowed, remaining > 0, "a dry run says whether the next real request would pass");
  }
  const dry = await authz(w).authorize(req(secret, { dryRun: true }));
  assert.equal(denial(dry), denied(DenialStep.RATE_LIMITED, "RATE_LIMITED", "rate limit exceeded: 3 requests per minute", id));
  assert.is(seconds(dry.rateLimit?.retryAfter), 55);
  const real = await authz(w).authorize(req(secret));
  assert.is(DenialStep[real.denialStep], "RATE_LIMITED");
});

it("a dry run is still checked: permission and key denials apply to it", async (w) => {
  const { secret, id } = await createKey(w);
  assert.equal(
    denial(await authz(w).authorize(req(secret, { dryRun: true, instance: "dev" }))),
    denied(DenialStep.INSTANCE, "FORBIDDEN", "API key has no access to instance 'dev'", id),
  );
  assert.equal(
    denial(await authz(w).authorize(req(generateApiKeySecret(), { dryRun: true }))),
    denied(DenialStep.KEY_INVALID, "UNAUTHORIZED", "invalid API key"),
  );
});

it("denials before the rate limit consume nothing: 20 permission denials, then 3 allowed requests still pass", async (w) => {
  const { secret, id } = await createKey(w, { rateLimits: { perMinute: 3 } });
  for (let i = 0; i < 5; i++) {
    for (const extra of [
      { instance: "dev" },
      { service: "OTHER" },
      { entity: "Other" },
      { operation: Operation.DELETE },
    ] as Extra[]) {
      assert.is((await authz(w).authorize(req(secret, extra))).code, "FORBIDDEN");
    }
  }
  for (const remaining of [2, 1, 0]) {
    const res = await authz(w).authorize(req(secret));
    assertAllowed(res, id);
    assert.is(res.rateLimit?.remaining, BigInt(remaining));
  }
  assert.is((await authz(w).authorize(req(secret))).code, "RATE_LIMITED");
});

it("a key without rate_limits uses the world's data limits (4 per minute, 6 per day)", async (w) => {
  const { secret, id } = await createKey(w);
  const first = await authz(w).authorize(req(secret));
  assertAllowed(first, id);
  assert.equal(windows(first), [
    { name: "minute", limit: 4, remaining: 3, reset: MINUTE_END },
    { name: "day", limit: 6, remaining: 5, reset: DAY_END },
  ]);
  for (let i = 0; i < 3; i++) assert.ok((await authz(w).authorize(req(secret))).allowed);
  const fifth = await authz(w).authorize(req(secret));
  assert.equal(denial(fifth), denied(DenialStep.RATE_LIMITED, "RATE_LIMITED", "rate limit exceeded: 4 requests per minute", id));
  // A key that sets only per_minute keeps the default per_day.
  const own = await createKey(w, { rateLimits: { perMinute: 100 } });
  assert.equal(windows(await authz(w).authorize(req(own.secret))), [
    { name: "minute", limit: 100, remaining: 99, reset: MINUTE_END },
    { name: "day", limit: 6, remaining: 5, reset: DAY_END },
  ]);
}, { dataLimits: { perMinute: 4, perDay: 6 } });

it("rate limits are per key: one key's exhausted window does not limit another", async (w) => {
  const a = await createKey(w, { rateLimits: { perMinute: 1 } });
  const b = await createKey(w, { rateLimits: { perMinute: 1 } });
  assertAllowed(await authz(w).authorize(req(a.secret)), a.id);
  assert.is((await authz(w).authorize(req(a.secret))).code, "RATE_LIMITED");
  assertAllowed(await authz(w).authorize(req(b.secret)), b.id);
});

it("concurrent requests on one key: exactly per_minute of 12 pass", async (w) => {
  const { secret } = await createKey(w, { rateLimits: { perMinute: 4 } });
  const results = await Promise.all(Array.from({ length: 12 }, () => authz(w).authorize(req(secret))));
  assert.is(results.filter((r) => r.allowed).length, 4);
  assert.is(results.filter((r) => r.code === "RATE_LIMITED").length, 8);
  assert.equal(
    results.filter((r) => r.allowed).map((r) => Number(r.rateLimit?.remaining)).sort(),
    [0, 1, 2, 3],
  );
});

test.run();
