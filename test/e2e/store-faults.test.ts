/**
 * Store faults end to end: one erplink process (`src/main.ts`) on a private
 * FerretDB process, ERPLINK_MONGODB_TIMEOUT_MS=1000. The database goes away
 * (SIGTERM) and comes back on the same port and data: erplink answers every
 * request promptly with 503 UNAVAILABLE (never a hang, a 500 or a driver
 * message), writes nothing, stays alive, and recovers by itself.
 * Runs only in the MongoDB pass (ERPLINK_TEST_MONGODB_URL), though it uses
 * its own FerretDB rather than that server.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ListSystemsRequestSchema, SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import {
  AuthorizationService,
  AuthorizeRequestSchema,
  DenialStep,
  Operation,
} from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { createGrpcJsClient, freePort, grpcError, within, type GrpcJsClient } from "../../test-support/e2e.js";
import {
  ensureFerretDbBinary,
  pollUntil,
  rest,
  sleep,
  startErplinkProcess,
  startFerretDb,
  type ErplinkProcess,
  type FerretDbProcess,
} from "../../test-support/processes.js";
import { testMongoUrl } from "../../test-support/world.js";

const MASTER = "erpl_store_faults_master_key_0123456789abcdefg";
/** Most time one request may take while the database is down (ms). */
const ANSWER_BOUND_MS = 3000;
/** What must never reach a client: driver names, socket errors, stack frames. */
const LEAK = /Mongo|ECONNREFUSED|at \w+ \(/;
const UNAVAILABLE_MESSAGE = "the store is unavailable; try again later";

interface Ctx {
  bin: string;
  port: number;
  dir: string;
  ferret?: FerretDbProcess;
  erplink?: ErplinkProcess;
  authz?: GrpcJsClient<typeof AuthorizationService>;
  systems?: GrpcJsClient<typeof SystemService>;
  system: { id: string; name: string };
  key: { id: string; secret: string };
  setupError?: unknown;
}

function authorize(secret: string) {
  return create(AuthorizeRequestSchema, {
    apiKey: secret,
    instance: "prod",
    service: "API_BP",
    entity: "A_BusinessPartner",
    operation: Operation.GET,
  });
}

/** Fails the test at once if setup failed. */
function ready(ctx: Ctx): { erplink: ErplinkProcess; ferret: FerretDbProcess; authz: GrpcJsClient<typeof AuthorizationService> } {
  if (ctx.setupError !== undefined) throw ctx.setupError;
  return { erplink: ctx.erplink!, ferret: ctx.ferret!, authz: ctx.authz! };
}

/** Asserts an answer is the 503 UNAVAILABLE envelope, promptly, with nothing of the driver in it. */
function assertUnavailable(res: { status: number; text: string; body: unknown; ms: number }, what: string): void {
  assert.is(res.status, 503, `${what}: ${res.text}`);
  assert.ok(res.ms <= ANSWER_BOUND_MS, `${what} took ${res.ms} ms`);
  assert.not.match(res.text, LEAK, `${what} leaks details: ${res.text}`);
  const error = (res.body as { error: Record<string, unknown> }).error;
  assert.equal(Object.keys(error).sort(), ["code", "message", "requestId"]);
  assert.is(error.code, "UNAVAILABLE");
}

const base = testMongoUrl();

if (base !== undefined) {
  const test = suite<Ctx>("e2e: the database goes away and comes back (private FerretDB)");

  test.before(async (ctx) => {
    try {
      ctx.bin = await ensureFerretDbBinary();
      ctx.port = await freePort();
      ctx.dir = await mkdtemp(join(tmpdir(), "erplink-faults-"));
      ctx.ferret = await startFerretDb(ctx.bin, ctx.port, ctx.dir);
      ctx.erplink = await startErplinkProcess({
        MONGODB_URL: `${ctx.ferret.url}erplink_faults`,
        ERPLINK_MASTER_KEY: MASTER,
        ERPLINK_ENCRYPTION_KEY: "ab".repeat(32),
        ERPLINK_MONGODB_TIMEOUT_MS: "1000",
        LOG_LEVEL: "warn",
      });
      ctx.authz = createGrpcJsClient(AuthorizationService, ctx.erplink.address);
      ctx.systems = createGrpcJsClient(SystemService, ctx.erplink.address);
    } catch (err) {
      // uvu swallows an error thrown by a before hook: report it from every test instead.
      ctx.setupError = err;
    }
  });

  test.after(async (ctx) => {
    ctx.authz?.close();
    ctx.systems?.close();
    await ctx.erplink?.kill();
    await ctx.ferret?.kill();
    if (ctx.dir) await rm(ctx.dir, { recursive: true, force: true });
  });

  test("database up: a system and a data key are created, /readyz is 200, Authorize allows (the key is now warm)", async (ctx) => {
    const { erplink, authz } = ready(ctx);
    const sys = await rest(erplink.baseUrl, "POST", "/admin/systems", { auth: MASTER, body: { name: "before-the-outage" } });
    assert.is(sys.status, 201, sys.text);
    ctx.system = { id: sys.body.data.id, name: "before-the-outage" };
    const key = await rest(erplink.baseUrl, "POST", "/admin/api-keys", {
      auth: MASTER,
      body: { name: "warm data key", permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } } },
    });
    assert.is(key.status, 201, key.text);
    ctx.key = { id: key.body.data.id, secret: key.body.data.key };
    const readyz = await rest(erplink.baseUrl, "GET", "/readyz");
    assert.is(readyz.status, 200, readyz.text);
    assert.equal(readyz.body.data, { status: "ready" });
    const res = await authz.call.authorize(authorize(ctx.key.secret));
    assert.ok(res.allowed, `Authorize: ${DenialStep[res.denialStep]} ${res.message}`);
  });

  test(`database frozen (SIGSTOP: connections open, nothing answered): reads, /readyz and Authorize are answered 503 UNAVAILABLE within ${ANSWER_BOUND_MS} ms; thawed, they succeed again`, async (ctx) => {
    const { erplink, ferret, authz } = ready(ctx);
    ferret.child.kill("SIGSTOP");
    try {
      const timeoutMs = ANSWER_BOUND_MS + 10_000;
      assertUnavailable(await rest(erplink.baseUrl, "GET", "/admin/systems?while=frozen", { auth: MASTER, timeoutMs }), "GET /admin/systems (frozen)");
      // (A write sent now would reach the database when it thaws: answered 503, it may still be applied, as after any timeout.)
      assertUnavailable(await rest(erplink.baseUrl, "GET", "/readyz", { timeoutMs }), "GET /readyz (frozen)");
      const started = Date.now();
      const err = await grpcError(authz.call.authorize(authorize(ctx.key.secret)));
      assert.ok(Date.now() - started <= ANSWER_BOUND_MS, `Authorize took ${Date.now() - started} ms`);
      assert.is(grpc.status[err.code], "UNAVAILABLE", `details: ${err.details}`);
    } finally {
      ferret.child.kill("SIGCONT");
    }
    await pollUntil(
      "/readyz is 200 after the thaw",
      async () => ((await rest(erplink.baseUrl, "GET", "/readyz", { timeoutMs: 5000 })).status === 200 ? true : undefined),
      { intervalMs: 250, timeoutMs: 15_000 },
    );
    const res = await authz.call.authorize(authorize(ctx.key.secret));
    assert.ok(res.allowed, `Authorize: ${DenialStep[res.denialStep]} ${res.message}`);
  });

  test(`database stopped (SIGTERM): /readyz turns 503 UNAVAILABLE, each request answered within ${ANSWER_BOUND_MS} ms`, async (ctx) => {
    const { erplink, ferret } = ready(ctx);
    const code = await ferret.stop();
    assert.is(code, 0, `FerretDB exit: ${ferret.stderr().slice(-2000)}`);
    const started = Date.now();
    const res = await pollUntil(
      "/readyz turns 503",
      async () => {
        const r = await rest(erplink.baseUrl, "GET", "/readyz", { timeoutMs: ANSWER_BOUND_MS + 2000 });
        assert.ok(r.ms <= ANSWER_BOUND_MS, `/readyz took ${r.ms} ms`);
        return r.status === 200 ? undefined : r;
      },
      { intervalMs: 100, timeoutMs: 5000 },
    );
    assertUnavailable(res, "GET /readyz");
    assert.is(res.body.error.message, "the store is unavailable");
    assert.ok(Date.now() - started <= 5000);
    // And it stays 503 while the database is down.
    assertUnavailable(await rest(erplink.baseUrl, "GET", "/readyz", { timeoutMs: ANSWER_BOUND_MS + 2000 }), "GET /readyz (again)");
  });

  test("database down: GET /admin/systems is 503 UNAVAILABLE in the envelope (not 500), without driver details", async (ctx) => {
    const { erplink } = ready(ctx);
    const res = await rest(erplink.baseUrl, "GET", "/admin/systems", { auth: MASTER, timeoutMs: ANSWER_BOUND_MS + 2000 });
    assertUnavailable(res, "GET /admin/systems");
    assert.is(res.body.error.message, UNAVAILABLE_MESSAGE);
  });

  test("database down: POST /admin/systems is 503 UNAVAILABLE (and writes nothing: checked after recovery)", async (ctx) => {
    const { erplink } = ready(ctx);
    const res = await rest(erplink.baseUrl, "POST", "/admin/systems", {
      auth: MASTER,
      body: { name: "written-while-down" },
      timeoutMs: ANSWER_BOUND_MS + 2000,
    });
    assertUnavailable(res, "POST /admin/systems");
  });

  test("database down: gRPC ListSystems (grpc-js, master key) is UNAVAILABLE", async (ctx) => {
    ready(ctx);
    const started = Date.now();
    const err = await grpcError(
      ctx.systems!.call.listSystems(create(ListSystemsRequestSchema, {}), { authorization: `Bearer ${MASTER}` }),
    );
    assert.ok(Date.now() - started <= ANSWER_BOUND_MS, `took ${Date.now() - started} ms`);
    assert.is(grpc.status[err.code], "UNAVAILABLE", `details: ${err.details}`);
    assert.is(decodeURIComponent(err.details), UNAVAILABLE_MESSAGE);
  });

  test("database down: Authorize on the warm key fails with the gRPC status UNAVAILABLE (the rate-limit windows live in the store)", async (ctx) => {
    const { authz } = ready(ctx);
    const started = Date.now();
    const err = await grpcError(authz.call.authorize(authorize(ctx.key.secret)));
    const took = Date.now() - started;
    assert.ok(took <= ANSWER_BOUND_MS, `Authorize took ${took} ms`);
    assert.is(grpc.status[err.code], "UNAVAILABLE", `details: ${err.details}`);
    assert.is(decodeURIComponent(err.details), UNAVAILABLE_MESSAGE);
    assert.not.match(err.details, LEAK);
  });

  test("database down: the process stays alive and /healthz is 200", async (ctx) => {
    const { erplink } = ready(ctx);
    const res = await rest(erplink.baseUrl, "GET", "/healthz", { timeoutMs: ANSWER_BOUND_MS });
    assert.is(res.status, 200, res.text);
    assert.is((res.body.data as { status: string }).status, "ok");
    assert.ok(erplink.alive(), erplink.output());
  });

  test("database back on the same port and data: erplink recovers by itself within 10 s (readyz, reads, writes, Authorize); nothing was written while down", async (ctx) => {
    const { erplink } = ready(ctx);
    ctx.ferret = await startFerretDb(ctx.bin, ctx.port, ctx.dir);
    const restartedAt = Date.now();
    await pollUntil(
      "/readyz is 200 again",
      async () => ((await rest(erplink.baseUrl, "GET", "/readyz", { timeoutMs: 5000 })).status === 200 ? true : undefined),
      { intervalMs: 250, timeoutMs: 10_000 },
    );
    const recoveredIn = Date.now() - restartedAt;
    assert.ok(recoveredIn <= 10_000, `recovered after ${recoveredIn} ms`);

    const list = await rest(erplink.baseUrl, "GET", "/admin/systems?page_size=500", { auth: MASTER });
    assert.is(list.status, 200, list.text);
    assert.equal(
      (list.body.data as { id: string; name: string }[]).map((s) => ({ id: s.id, name: s.name })),
      [ctx.system],
      "only the system created before the outage",
    );
    const made = await rest(erplink.baseUrl, "POST", "/admin/systems", { auth: MASTER, body: { name: "after-the-outage" } });
    assert.is(made.status, 201, made.text);
    const got = await rest(erplink.baseUrl, "GET", `/admin/systems/${made.body.data.id}`, { auth: MASTER });
    assert.is(got.status, 200, got.text);
    const res = await ready(ctx).authz.call.authorize(authorize(ctx.key.secret));
    assert.ok(res.allowed, `Authorize: ${DenialStep[res.denialStep]} ${res.message}`);
    assert.ok(erplink.alive(), erplink.output());
  });

  // ------------------------------------------------------------ request log

  /** The environment of an erplink process on this suite's database. */
  const erplinkEnv = (ctx: Ctx): Record<string, string> => ({
    MONGODB_URL: `${ctx.ferret!.url}erplink_faults`,
    ERPLINK_MASTER_KEY: MASTER,
    ERPLINK_ENCRYPTION_KEY: "ab".repeat(32),
    ERPLINK_MONGODB_TIMEOUT_MS: "1000",
    LOG_LEVEL: "warn",
  });

  interface LoggedEntry {
    request_id: string;
    api_key_id: string;
    method: string;
    path: string;
    status: number;
    error_code: string;
  }

  /** The stored request-log entries (newest first) whose request ids are in `rids`. */
  async function loggedEntries(baseUrl: string, rids: readonly string[]): Promise<LoggedEntry[] | undefined> {
    const res = await rest(baseUrl, "GET", "/admin/logs?page_size=1000", { auth: MASTER, timeoutMs: 5000 });
    if (res.status !== 200) return undefined;
    return (res.body.data as LoggedEntry[]).filter((e) => rids.includes(e.request_id));
  }

  test("request log: entries of requests answered while the database is down are kept and written after it comes back (found by request id, once each)", async (ctx) => {
    const { erplink, ferret } = ready(ctx);
    assert.is(await ferret.stop(), 0, `FerretDB exit: ${ferret.stderr().slice(-2000)}`);
    await pollUntil(
      "/readyz turns 503",
      async () => ((await rest(erplink.baseUrl, "GET", "/readyz", { timeoutMs: ANSWER_BOUND_MS + 2000 })).status === 503 ? true : undefined),
      { intervalMs: 100, timeoutMs: 5000 },
    );
    const timeoutMs = ANSWER_BOUND_MS + 2000;
    const down = [
      await rest(erplink.baseUrl, "GET", "/admin/systems?during=outage", { auth: MASTER, timeoutMs }),
      await rest(erplink.baseUrl, "POST", "/admin/systems", { auth: MASTER, body: { name: "logged-while-down" }, timeoutMs }),
      await rest(erplink.baseUrl, "GET", "/admin/api-keys?during=outage", { timeoutMs }),
    ];
    assert.equal(down.map((r) => r.status), [503, 503, 401], down.map((r) => r.text).join("\n"));
    const rids = down.map((r) => r.headers.get("x-request-id") ?? "");
    assert.ok(rids.every((r) => r !== ""), "every answer has an x-request-id");
    // Several timer flushes (every 1 s) fail while the database stays down.
    await sleep(3000);
    const health = await rest(erplink.baseUrl, "GET", "/healthz", { timeoutMs: ANSWER_BOUND_MS });
    assert.is(health.status, 200, health.text);
    assert.is(health.body.data.request_log.dropped, 0, health.text);

    ctx.ferret = await startFerretDb(ctx.bin, ctx.port, ctx.dir);
    const found = await pollUntil(
      "the outage's entries are written after the database is back",
      async () => {
        const mine = await loggedEntries(erplink.baseUrl, rids);
        return mine !== undefined && mine.length >= rids.length ? mine : undefined;
      },
      { intervalMs: 250, timeoutMs: 15_000 },
    );
    assert.equal(
      found.map((e) => [e.request_id, e.method, e.path, e.status, e.error_code]),
      [
        [rids[2], "GET", "/admin/api-keys?during=outage", 401, "UNAUTHORIZED"],
        [rids[1], "POST", "/admin/systems", 503, "UNAVAILABLE"],
        [rids[0], "GET", "/admin/systems?during=outage", 503, "UNAVAILABLE"],
      ],
      "each entry once, newest first",
    );
    assert.is(found[0]!.api_key_id, "", "no credential on the 401");
    // A little later still exactly once (a retried batch is not written twice).
    await sleep(1500);
    assert.equal((await loggedEntries(erplink.baseUrl, rids))?.length, rids.length);
    assert.ok(erplink.alive(), erplink.output());
  });

  test("request log: a graceful stop (SIGTERM) right after N requests loses no entry: a new process on the same database finds all N", async (ctx) => {
    const { erplink } = ready(ctx);
    const N = 30;
    // Concurrent, so the last answers come just before the signal.
    const answers = await Promise.all(
      Array.from({ length: N }, (_, i) => rest(erplink.baseUrl, "GET", `/admin/systems?sigterm=${i}`, { auth: MASTER })),
    );
    assert.equal(answers.map((r) => r.status), Array(N).fill(200));
    const expected = answers.map((r, i) => [r.headers.get("x-request-id"), "GET", `/admin/systems?sigterm=${i}`, 200, "master"]);
    erplink.main.child.kill("SIGTERM");
    const code = await within(20_000, "erplink exits after SIGTERM", erplink.main.exited);
    assert.is(code, 0, `exit ${code}:\n${erplink.output()}`);

    ctx.erplink = await startErplinkProcess(erplinkEnv(ctx));
    const rids = expected.map((e) => e[0] as string);
    const found = await loggedEntries(ctx.erplink.baseUrl, rids);
    assert.ok(found, "GET /admin/logs answers");
    const byRid = new Map(found.map((e) => [e.request_id, e]));
    assert.is(found.length, N, `found ${found.length} of ${N} entries (duplicates or losses)`);
    assert.equal(
      rids.map((rid) => {
        const e = byRid.get(rid);
        return e ? [e.request_id, e.method, e.path, e.status, e.api_key_id] : [rid, "(missing)"];
      }),
      expected,
    );
  });

  test.run();
}
