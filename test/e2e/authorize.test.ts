/**
 * AuthorizationService.Authorize end to end, over a real listening port of
 * 127.0.0.1, as an internal service calls it: gRPC over h2c with
 * @grpc/grpc-js and with connect-node's gRPC transport, no credential of its
 * own. Every denial step with its message, allowed requests (also through
 * both wildcards), validation errors, the configured default data limits,
 * and exact rate limiting under concurrent calls.
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeySchema, ApiKeyService, ApiKeyType, CreateApiKeyRequestSchema, RateLimitsSchema } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import {
  AuthorizationService,
  AuthorizeRequestSchema,
  DenialStep,
  Operation,
  type AuthorizeRequest,
  type AuthorizeResponse,
} from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { BadRequestSchema } from "../../src/gen/erplink/errors/v1/bad_request_pb.js";
import {
  createGrpcJsClient,
  grpcError,
  startErplink,
  within,
  type GrpcJsClient,
  type RunningErplink,
} from "../../test-support/e2e.js";

type Extra = Partial<Omit<AuthorizeRequest, "$typeName" | "$unknown">>;
type Permissions = Record<string, Record<string, Record<string, string[]>>>;

const KEY_ID = /^key_[0-9A-HJKMNP-TV-Z]{26}$/;
/** The default data limits this server is configured with. */
const DATA_PER_MINUTE = 1234;
const DATA_PER_DAY = 56789;

const PERMISSIONS: Permissions = {
  prod: { API_BP: { A_BusinessPartner: ["list", "get"], A_Address: ["create"] } },
  qa: { "*": { A_Product: ["get"] } },
  stage: { API_BP: { "*": ["update"] } },
  sandbox: { "*": { "*": ["delete"] } },
};

interface Ctx {
  server: RunningErplink;
  admin: GrpcJsClient<typeof ApiKeyService>;
  grpcJs: GrpcJsClient<typeof AuthorizationService>;
  sessions: Http2SessionManager;
  connect: Client<typeof AuthorizationService>;
  key: { id: string; secret: string };
}

const test = suite<Ctx>("e2e: Authorize over gRPC");

/** Creates a key over grpc-js as the master key. */
async function createKey(
  ctx: Ctx,
  options: { permissions?: Permissions; perMinute?: number; type?: ApiKeyType } = {},
): Promise<{ id: string; secret: string }> {
  const type = options.type ?? ApiKeyType.DATA;
  const res = await ctx.admin.call.createApiKey(
    create(CreateApiKeyRequestSchema, {
      apiKey: create(ApiKeySchema, {
        name: `e2e-${Math.random().toString(36).slice(2)}`,
        type,
        permissions: type === ApiKeyType.DATA ? (options.permissions ?? PERMISSIONS) : undefined,
        rateLimits: options.perMinute === undefined ? undefined : create(RateLimitsSchema, { perMinute: options.perMinute }),
      }),
    }),
    { authorization: ctx.server.authorization },
  );
  assert.match(res.apiKey!.id, KEY_ID);
  return { id: res.apiKey!.id, secret: res.key };
}

function request(apiKey: string, extra: Extra = {}) {
  return create(AuthorizeRequestSchema, {
    apiKey,
    instance: "prod",
    service: "API_BP",
    entity: "A_BusinessPartner",
    operation: Operation.GET,
    requestId: "e2e-req",
    ...extra,
  });
}

function outcome(res: AuthorizeResponse) {
  return { allowed: res.allowed, step: DenialStep[res.denialStep], code: res.code, message: res.message, keyId: res.keyId };
}

const DENIALS: [string, Extra, DenialStep, string][] = [
  ["instance", { instance: "dev" }, DenialStep.INSTANCE, "API key has no access to instance 'dev'"],
  ["service", { service: "API_SALES" }, DenialStep.SERVICE, "API key has no access to service 'API_SALES'"],
  ["entity", { entity: "A_Supplier" }, DenialStep.ENTITY, "API key has no access to entity 'A_Supplier'"],
  ["operation", { operation: Operation.DELETE }, DenialStep.OPERATION, "API key lacks permission 'delete' for entity 'A_BusinessPartner'"],
];

const ALLOWED: [string, Extra][] = [
  ["named service and entity, get", {}],
  ["named service and entity, list", { operation: Operation.LIST }],
  ["named service and entity, create", { entity: "A_Address", operation: Operation.CREATE }],
  ["service '*'", { instance: "qa", service: "API_PRODUCT_SRV", entity: "A_Product" }],
  ["entity '*'", { instance: "stage", entity: "A_AnyEntity", operation: Operation.UPDATE }],
  ["service '*' and entity '*'", { instance: "sandbox", service: "ANY_SRV", entity: "AnyEntity", operation: Operation.DELETE }],
];

test.before(async (ctx) => {
  ctx.server = await startErplink({
    ERPLINK_DATA_RATE_PER_MINUTE: String(DATA_PER_MINUTE),
    ERPLINK_DATA_RATE_PER_DAY: String(DATA_PER_DAY),
  });
  ctx.admin = createGrpcJsClient(ApiKeyService, ctx.server.address);
  ctx.grpcJs = createGrpcJsClient(AuthorizationService, ctx.server.address);
  ctx.sessions = new Http2SessionManager(ctx.server.baseUrl);
  ctx.connect = createClient(AuthorizationService, createGrpcTransport({ baseUrl: ctx.server.baseUrl, sessionManager: ctx.sessions }));
  ctx.key = await createKey(ctx);
});

test.after(async (ctx) => {
  ctx.admin?.close();
  ctx.grpcJs?.close();
  ctx.sessions?.abort();
  await ctx.server?.close();
});

// --- grpc-js ------------------------------------------------------------------

test("grpc-js, no metadata: each permission step denies with its step, FORBIDDEN and exact message", async (ctx) => {
  for (const [what, extra, step, message] of DENIALS) {
    const res = await ctx.grpcJs.call.authorize(request(ctx.key.secret, extra));
    assert.equal(outcome(res), { allowed: false, step: DenialStep[step], code: "FORBIDDEN", message, keyId: ctx.key.id }, what);
    assert.is(res.rateLimit, undefined, what);
  }
});

test("grpc-js: allowed requests, also through service '*' and entity '*', with the key id and its rate-limit state", async (ctx) => {
  for (const [what, extra] of ALLOWED) {
    const res = await ctx.grpcJs.call.authorize(request(ctx.key.secret, extra));
    assert.equal(outcome(res), { allowed: true, step: "UNSPECIFIED", code: "", message: "", keyId: ctx.key.id }, what);
    assert.ok(res.rateLimit, what);
  }
});

test("grpc-js: unknown, malformed and admin keys are KEY_INVALID; an authorization header is not needed nor used", async (ctx) => {
  const adminKey = await createKey(ctx, { type: ApiKeyType.ADMIN });
  const bad = await ctx.grpcJs.call.authorize(request("erpl_not_a_key"));
  assert.equal(outcome(bad), { allowed: false, step: "KEY_INVALID", code: "UNAUTHORIZED", message: "invalid API key", keyId: "" });
  const admin = await ctx.grpcJs.call.authorize(request(adminKey.secret));
  assert.equal(outcome(admin), {
    allowed: false,
    step: "KEY_INVALID",
    code: "FORBIDDEN",
    message: "API key is not a data key: data access needs a data key",
    keyId: adminKey.id,
  });
  // A wrong admin bearer token on a public service changes nothing.
  const res = await ctx.grpcJs.call.authorize(request(ctx.key.secret), { authorization: "Bearer wrong" });
  assert.is(res.allowed, true);
  assert.is(res.keyId, ctx.key.id);
});

test("grpc-js: a key without rate_limits gets the configured ERPLINK_DATA_RATE_PER_MINUTE/_PER_DAY windows, UTC-aligned", async (ctx) => {
  const key = await createKey(ctx);
  const before = Date.now();
  const res = await ctx.grpcJs.call.authorize(request(key.secret));
  const after = Date.now();
  assert.is(res.allowed, true);
  const windows = res.rateLimit!.windows.map((w) => ({ name: w.name, limit: Number(w.limit), remaining: Number(w.remaining) }));
  assert.equal(windows, [
    { name: "minute", limit: DATA_PER_MINUTE, remaining: DATA_PER_MINUTE - 1 },
    { name: "day", limit: DATA_PER_DAY, remaining: DATA_PER_DAY - 1 },
  ]);
  const [minute, day] = res.rateLimit!.windows.map((w) => timestampDate(w.resetTime!).getTime());
  const nextMinute = (t: number) => Math.floor(t / 60_000) * 60_000 + 60_000;
  const nextDay = (t: number) => Math.floor(t / 86_400_000) * 86_400_000 + 86_400_000;
  assert.ok(minute === nextMinute(before) || minute === nextMinute(after), `minute reset ${new Date(minute!).toISOString()}`);
  assert.ok(day === nextDay(before) || day === nextDay(after), `day reset ${new Date(day!).toISOString()}`);
  // The tightest window is the minute one.
  assert.is(Number(res.rateLimit!.limit), DATA_PER_MINUTE);
});

test("grpc-js: a malformed request is INVALID_ARGUMENT (3) with the message", async (ctx) => {
  const all = await grpcError(ctx.grpcJs.call.authorize(create(AuthorizeRequestSchema, {})));
  assert.is(all.code, grpc.status.INVALID_ARGUMENT);
  assert.is(all.details, "5 fields are invalid");
  const one = await grpcError(ctx.grpcJs.call.authorize(request(ctx.key.secret, { entity: "*" })));
  assert.is(one.code, grpc.status.INVALID_ARGUMENT);
  assert.is(decodeURIComponent(one.details), "entity: must name one item, not '*'");
});

// --- connect-node --------------------------------------------------------------

test("connect-node gRPC transport: the four denial steps and the allowed requests", async (ctx) => {
  for (const [what, extra, step, message] of DENIALS) {
    const res = await ctx.connect.authorize(request(ctx.key.secret, extra));
    assert.equal(outcome(res), { allowed: false, step: DenialStep[step], code: "FORBIDDEN", message, keyId: ctx.key.id }, what);
  }
  for (const [what, extra] of ALLOWED) {
    const res = await ctx.connect.authorize(request(ctx.key.secret, extra));
    assert.equal(outcome(res), { allowed: true, step: "UNSPECIFIED", code: "", message: "", keyId: ctx.key.id }, what);
  }
});

test("connect-node gRPC transport: a malformed request is InvalidArgument with BadRequest details", async (ctx) => {
  let caught: unknown;
  try {
    await ctx.connect.authorize({ apiKey: ctx.key.secret, instance: "*", service: "", entity: "E", operation: Operation.UNSPECIFIED });
  } catch (err) {
    caught = err;
  }
  assert.instance(caught, ConnectError);
  const err = caught as ConnectError;
  assert.is(err.code, Code.InvalidArgument);
  assert.is(err.rawMessage, "3 fields are invalid");
  assert.equal(
    err.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => [v.field, v.description])),
    [
      ["instance", "must name one item, not '*'"],
      ["service", "is required"],
      ["operation", "must be LIST, GET, CREATE, UPDATE or DELETE"],
    ],
  );
});

// --- concurrency ---------------------------------------------------------------

/** Waits, if needed, until at least `ms` remain in the current UTC minute. */
async function awayFromMinuteEnd(ms: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((r) => setTimeout(r, left + 50));
}

test("grpc-js: 20 concurrent Authorize calls on a key with per_minute 5 let exactly 5 through; 15 are RATE_LIMITED", async (ctx) => {
  const key = await createKey(ctx, { perMinute: 5 });
  // A UTC minute boundary inside the burst would split it over two windows.
  await awayFromMinuteEnd(3000);
  const results = await within(
    5000,
    "20 concurrent Authorize calls",
    Promise.all(Array.from({ length: 20 }, (_, i) => ctx.grpcJs.call.authorize(request(key.secret, { requestId: `burst-${i}` })))),
  );
  const allowed = results.filter((r) => r.allowed);
  const limited = results.filter((r) => !r.allowed);
  assert.is(allowed.length, 5, "exactly per_minute pass");
  assert.is(limited.length, 15);
  // Each allowed call saw a distinct count.
  assert.equal(allowed.map((r) => Number(r.rateLimit!.remaining)).sort(), [0, 1, 2, 3, 4]);
  for (const r of limited) {
    assert.equal(outcome(r), {
      allowed: false,
      step: "RATE_LIMITED",
      code: "RATE_LIMITED",
      message: "rate limit exceeded: 5 requests per minute",
      keyId: key.id,
    });
    assert.is(Number(r.rateLimit!.remaining), 0);
    const retry = Number(r.rateLimit!.retryAfter!.seconds);
    assert.ok(retry >= 1 && retry <= 60, `retry_after ${retry}`);
  }
  // A dry run agrees the window is used up; other keys are untouched.
  const dry = await ctx.grpcJs.call.authorize(request(key.secret, { dryRun: true }));
  assert.is(dry.code, "RATE_LIMITED");
  assert.is((await ctx.grpcJs.call.authorize(request(ctx.key.secret))).allowed, true);
});

test.run();
