/**
 * Two erplink processes (`src/main.ts`) on one MongoDB database: what one
 * writes the other reads; rate-limit windows are shared exactly; a revoke
 * or a permissions change made through one is enforced by the other within
 * the key sync interval; and unique names hold when both create at once.
 * Runs only in the MongoDB pass (ERPLINK_TEST_MONGODB_URL).
 */
import { create } from "@bufbuild/protobuf";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  AuthorizationService,
  AuthorizeRequestSchema,
  DenialStep,
  Operation,
  type AuthorizeRequest,
  type AuthorizeResponse,
} from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { createGrpcJsClient, type GrpcJsClient } from "../../test-support/e2e.js";
import {
  awayFromMinuteEnd,
  pollUntil,
  rest,
  startErplinkProcess,
  type ErplinkProcess,
} from "../../test-support/processes.js";
import { dropMongoDatabase, freshMongoUrl, testMongoUrl } from "../../test-support/world.js";

const MASTER = "erpl_multi_process_master_key_0123456789abcdef";
/** Most time a change made through one process may take to reach the other (ms). */
const PROPAGATION_BOUND_MS = 5000;

type Extra = Partial<Omit<AuthorizeRequest, "$typeName" | "$unknown">>;

interface Node {
  proc: ErplinkProcess;
  authz: GrpcJsClient<typeof AuthorizationService>;
}

interface Ctx {
  url: string;
  a: Node;
  b: Node;
  setupError?: unknown;
}

function authorizeRequest(apiKey: string, extra: Extra = {}): AuthorizeRequest {
  return create(AuthorizeRequestSchema, {
    apiKey,
    instance: "prod",
    service: "API_BP",
    entity: "A_BusinessPartner",
    operation: Operation.GET,
    ...extra,
  });
}

function outcome(res: AuthorizeResponse): string {
  return res.allowed ? "allowed" : DenialStep[res.denialStep];
}

/** Fails the test at once if the processes did not start. */
function ready(ctx: Ctx): { a: Node; b: Node } {
  if (ctx.setupError !== undefined) throw ctx.setupError;
  return { a: ctx.a, b: ctx.b };
}

/** Creates an API key through a process (REST, master key); returns its id and secret. */
async function createKey(node: Node, body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const res = await rest(node.proc.baseUrl, "POST", "/admin/api-keys", {
    auth: MASTER,
    body: { name: `key-${Math.random().toString(36).slice(2)}`, ...body },
  });
  assert.is(res.status, 201, res.text);
  return { id: res.body.data.id, secret: res.body.data.key };
}

const base = testMongoUrl();

if (base !== undefined) {
  const test = suite<Ctx>("e2e: two erplink processes on one MongoDB database");

  test.before(async (ctx) => {
    ctx.url = freshMongoUrl(base);
    try {
      const env = {
        MONGODB_URL: ctx.url,
        ERPLINK_MASTER_KEY: MASTER,
        ERPLINK_ENCRYPTION_KEY: "ab".repeat(32),
        LOG_LEVEL: "warn",
        // The master key's admin budget is shared by both processes; the
        // tests below make a few hundred admin calls in one minute.
        ERPLINK_ADMIN_RATE_PER_MINUTE: "100000",
      };
      const [pa, pb] = await Promise.allSettled([startErplinkProcess(env), startErplinkProcess(env)]);
      if (pa.status === "fulfilled") ctx.a = { proc: pa.value, authz: createGrpcJsClient(AuthorizationService, pa.value.address) };
      if (pb.status === "fulfilled") ctx.b = { proc: pb.value, authz: createGrpcJsClient(AuthorizationService, pb.value.address) };
      if (pa.status === "rejected") throw pa.reason;
      if (pb.status === "rejected") throw pb.reason;
    } catch (err) {
      // uvu swallows an error thrown by a before hook: report it from every test instead.
      ctx.setupError = err;
    }
  });

  test.after(async (ctx) => {
    for (const node of [ctx.a, ctx.b]) {
      node?.authz.close();
      await node?.proc.kill();
    }
    if (ctx.url) await dropMongoDatabase(ctx.url).catch((err: unknown) => console.warn(`drop ${ctx.url}: ${String(err)}`));
  });

  test("systems, instances and API keys created through one process are read (get and list) through the other, both ways", async (ctx) => {
    const { a, b } = ready(ctx);
    const A = a.proc.baseUrl;
    const B = b.proc.baseUrl;

    // A system through A, read through B; one through B, read through A.
    const sysA = await rest(A, "POST", "/admin/systems", { auth: MASTER, body: { name: "made-on-a", labels: { by: "a" } } });
    assert.is(sysA.status, 201, sysA.text);
    const sysB = await rest(B, "POST", "/admin/systems", { auth: MASTER, body: { name: "made-on-b" } });
    assert.is(sysB.status, 201, sysB.text);
    for (const [via, made] of [[B, sysA], [A, sysB]] as const) {
      const got = await rest(via, "GET", `/admin/systems/${made.body.data.id}`, { auth: MASTER });
      assert.is(got.status, 200, got.text);
      assert.equal(got.body.data, made.body.data);
    }
    for (const via of [A, B]) {
      const list = await rest(via, "GET", "/admin/systems?page_size=500", { auth: MASTER });
      assert.is(list.status, 200, list.text);
      const names = (list.body.data as { name: string }[]).map((s) => s.name);
      assert.ok(names.includes("made-on-a") && names.includes("made-on-b"), `${via}: ${names.join(", ")}`);
    }

    // Instances: one of A's system created through B, one of B's through A.
    const insB = await rest(B, "POST", `/admin/systems/${sysA.body.data.id}/instances`, {
      auth: MASTER,
      body: { name: "inst-made-on-b", environment: "production", base_url: "https://s4.example.com/odata/" },
    });
    assert.is(insB.status, 201, insB.text);
    const insA = await rest(A, "POST", `/admin/systems/${sysB.body.data.id}/instances`, {
      auth: MASTER,
      body: { name: "inst-made-on-a", base_url: "https://s4-b.example.com/odata/" },
    });
    assert.is(insA.status, 201, insA.text);
    for (const [via, made, systemId] of [
      [A, insB, sysA.body.data.id],
      [B, insA, sysB.body.data.id],
    ] as const) {
      const got = await rest(via, "GET", `/admin/instances/${made.body.data.id}`, { auth: MASTER });
      assert.is(got.status, 200, got.text);
      assert.equal(got.body.data, made.body.data);
      const list = await rest(via, "GET", `/admin/systems/${systemId}/instances`, { auth: MASTER });
      assert.is(list.status, 200, list.text);
      assert.equal(list.body.data, [made.body.data]);
    }

    // API keys: a data key through A and an admin key through B.
    const keyA = await rest(A, "POST", "/admin/api-keys", {
      auth: MASTER,
      body: { name: "data-made-on-a", permissions: { prod: { API_BP: { "*": ["get"] } } }, rate_limits: { per_minute: 7 } },
    });
    assert.is(keyA.status, 201, keyA.text);
    const keyB = await rest(B, "POST", "/admin/api-keys", { auth: MASTER, body: { name: "admin-made-on-b", type: "admin" } });
    assert.is(keyB.status, 201, keyB.text);
    for (const [via, made] of [[B, keyA], [A, keyB]] as const) {
      const { key: secret, ...stored } = made.body.data as Record<string, unknown>;
      assert.type(secret, "string");
      const got = await rest(via, "GET", `/admin/api-keys/${stored.id}`, { auth: MASTER });
      assert.is(got.status, 200, got.text);
      assert.equal(got.body.data, stored);
      const list = await rest(via, "GET", "/admin/api-keys?page_size=500", { auth: MASTER });
      assert.is(list.status, 200, list.text);
      assert.equal(
        (list.body.data as { id: string }[]).filter((k) => k.id === stored.id),
        [stored],
      );
    }
    // And the keys work on the other process: the data key authorizes on B, the admin key administers A.
    const allowed = await b.authz.call.authorize(authorizeRequest(keyA.body.data.key, { entity: "A_Any" }));
    assert.is(outcome(allowed), "allowed");
    const asAdmin = await rest(A, "GET", `/admin/systems/${sysB.body.data.id}`, { auth: keyB.body.data.key });
    assert.is(asAdmin.status, 200, asAdmin.text);
  });

  test("shared rate window: per_minute 50, 200 concurrent Authorize calls (100 on each process) -> exactly 50 allowed, 150 RATE_LIMITED", async (ctx) => {
    const { a, b } = ready(ctx);
    const key = await createKey(a, {
      permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } },
      rate_limits: { per_minute: 50 },
    });
    // All 200 calls must land in one UTC minute.
    await awayFromMinuteEnd(5);
    const minute = Math.floor(Date.now() / 60_000);
    const calls = [...Array(100).keys()].flatMap(() => [
      a.authz.call.authorize(authorizeRequest(key.secret)),
      b.authz.call.authorize(authorizeRequest(key.secret)),
    ]);
    const results = await Promise.all(calls);
    assert.is(Math.floor(Date.now() / 60_000), minute, "the burst stayed within one UTC minute");

    const tally: Record<string, number> = {};
    for (const r of results) tally[outcome(r)] = (tally[outcome(r)] ?? 0) + 1;
    assert.equal(tally, { allowed: 50, RATE_LIMITED: 150 });
    for (const r of results.filter((r) => !r.allowed)) {
      assert.is(r.code, "RATE_LIMITED");
      assert.is(r.message, "rate limit exceeded: 50 requests per minute");
      assert.is(r.rateLimit?.remaining, 0n);
      assert.ok(r.rateLimit?.retryAfter !== undefined, "retry_after is set when limited");
    }
    // Each process reports the window as spent afterwards too.
    for (const node of [a, b]) {
      const after = await node.authz.call.authorize(authorizeRequest(key.secret));
      assert.is(outcome(after), "RATE_LIMITED");
    }
  });

  test(`revoke through A: B refuses the data key (KEY_INVALID) and the admin key (401 on /admin) within ${PROPAGATION_BOUND_MS} ms`, async (ctx) => {
    const { a, b } = ready(ctx);
    const data = await createKey(a, { permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } } });
    const admin = await createKey(a, { type: "admin" });
    // Warm both keys on B, so B answers from its cache.
    assert.is(outcome(await b.authz.call.authorize(authorizeRequest(data.secret))), "allowed");
    const warm = await rest(b.proc.baseUrl, "GET", "/admin/systems", { auth: admin.secret });
    assert.is(warm.status, 200, warm.text);

    const revoke = async (id: string) => {
      const res = await rest(a.proc.baseUrl, "DELETE", `/admin/api-keys/${id}`, { auth: MASTER });
      assert.is(res.status, 200, res.text);
      return Date.now();
    };
    const [dataLag, adminLag] = await Promise.all([
      revoke(data.id).then((revokedAt) =>
        pollUntil(
          "B refuses the revoked data key",
          async () => {
            const res = await b.authz.call.authorize(authorizeRequest(data.secret));
            if (res.allowed) return undefined;
            assert.is(outcome(res), "KEY_INVALID");
            assert.is(res.code, "UNAUTHORIZED");
            assert.is(res.message, "invalid API key");
            return Date.now() - revokedAt;
          },
          { intervalMs: 100, timeoutMs: 15_000 },
        ),
      ),
      revoke(admin.id).then((revokedAt) =>
        pollUntil(
          "B refuses the revoked admin key",
          async () => {
            const res = await rest(b.proc.baseUrl, "GET", "/admin/systems", { auth: admin.secret });
            if (res.status === 200) return undefined;
            assert.is(res.status, 401, res.text);
            assert.is(res.body.error.code, "UNAUTHORIZED");
            return Date.now() - revokedAt;
          },
          { intervalMs: 100, timeoutMs: 15_000 },
        ),
      ),
    ]);
    assert.ok(dataLag <= PROPAGATION_BOUND_MS, `data key still accepted by B ${dataLag} ms after the revoke`);
    assert.ok(adminLag <= PROPAGATION_BOUND_MS, `admin key still accepted by B ${adminLag} ms after the revoke`);
    // A refuses both at once (the process that revoked).
    assert.is(outcome(await a.authz.call.authorize(authorizeRequest(data.secret))), "KEY_INVALID");
    assert.is((await rest(a.proc.baseUrl, "GET", "/admin/systems", { auth: admin.secret })).status, 401);
  });

  test(`sessions across processes: a session made on A works on B; revoked on A (DELETE, or its admin key revoked), B refuses it within ${PROPAGATION_BOUND_MS} ms`, async (ctx) => {
    const { a, b } = ready(ctx);
    const session = async (auth: string) => {
      const res = await rest(a.proc.baseUrl, "POST", "/admin/sessions", { auth });
      assert.is(res.status, 201, res.text);
      return { id: res.body.data.id as string, token: res.body.data.token as string };
    };
    const admin = await createKey(a, { type: "admin" });
    const master = await session(MASTER);
    const keyed = await session(admin.secret);
    for (const s of [master, keyed]) {
      const warm = await rest(b.proc.baseUrl, "GET", "/admin/systems", { auth: s.token });
      assert.is(warm.status, 200, warm.text);
    }
    const refusedOnB = (token: string, since: number, message: string) =>
      pollUntil(
        "B refuses the session",
        async () => {
          const res = await rest(b.proc.baseUrl, "GET", "/admin/systems", { auth: token });
          if (res.status === 200) return undefined;
          assert.is(res.status, 401, res.text);
          assert.is(res.body.error.message, message);
          return Date.now() - since;
        },
        { intervalMs: 100, timeoutMs: 15_000 },
      );
    const del = await rest(a.proc.baseUrl, "DELETE", `/admin/sessions/${master.id}`, { auth: MASTER });
    assert.is(del.status, 200, del.text);
    const deletedAt = Date.now();
    const revokeKey = await rest(a.proc.baseUrl, "DELETE", `/admin/api-keys/${admin.id}`, { auth: MASTER });
    assert.is(revokeKey.status, 200, revokeKey.text);
    const keyRevokedAt = Date.now();
    const [sessionLag, keyLag] = await Promise.all([
      refusedOnB(master.token, deletedAt, "invalid session token: it was revoked, has expired or never existed"),
      refusedOnB(keyed.token, keyRevokedAt, "session ended: its admin key was revoked"),
    ]);
    assert.ok(sessionLag <= PROPAGATION_BOUND_MS, `B accepted the revoked session ${sessionLag} ms after the revoke`);
    assert.ok(keyLag <= PROPAGATION_BOUND_MS, `B accepted the session of a revoked key ${keyLag} ms after the revoke`);
  });

  test(`permissions changed through A are enforced by B within ${PROPAGATION_BOUND_MS} ms (key warm on B)`, async (ctx) => {
    const { a, b } = ready(ctx);
    const key = await createKey(a, { permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } } });
    const list = { operation: Operation.LIST };
    assert.is(outcome(await b.authz.call.authorize(authorizeRequest(key.secret))), "allowed");
    assert.is(outcome(await b.authz.call.authorize(authorizeRequest(key.secret, list))), "OPERATION");

    const res = await rest(a.proc.baseUrl, "PATCH", `/admin/api-keys/${key.id}`, {
      auth: MASTER,
      body: { permissions: { prod: { API_BP: { A_BusinessPartner: ["list"] } } } },
    });
    assert.is(res.status, 200, res.text);
    const changedAt = Date.now();
    const lag = await pollUntil(
      "B enforces the new permissions",
      async () => {
        const get = await b.authz.call.authorize(authorizeRequest(key.secret));
        return get.allowed ? undefined : Date.now() - changedAt;
      },
      { intervalMs: 100, timeoutMs: 15_000 },
    );
    assert.ok(lag <= PROPAGATION_BOUND_MS, `B applied the old permissions ${lag} ms after the change`);
    const get = await b.authz.call.authorize(authorizeRequest(key.secret));
    assert.is(outcome(get), "OPERATION");
    assert.is(get.message, "API key lacks permission 'get' for entity 'A_BusinessPartner'");
    assert.is(outcome(await b.authz.call.authorize(authorizeRequest(key.secret, list))), "allowed");
  });

  test("duplicate-name race: the same system name POSTed to A and B at once -> one 201, one 409 CONFLICT, one system listed (5 rounds)", async (ctx) => {
    const { a, b } = ready(ctx);
    for (let round = 1; round <= 5; round++) {
      const name = `race-${round}-${Math.random().toString(36).slice(2, 8)}`;
      const answers = await Promise.all(
        [a, b].map((node) => rest(node.proc.baseUrl, "POST", "/admin/systems", { auth: MASTER, body: { name } })),
      );
      const statuses = answers.map((r) => r.status).sort();
      assert.equal(statuses, [201, 409], `round ${round}: ${answers.map((r) => r.text).join(" | ")}`);
      const conflict = answers.find((r) => r.status === 409)!;
      assert.is(conflict.body.error.code, "CONFLICT");
      assert.is(conflict.body.error.message, "another system already has this name");
      assert.equal(conflict.body.error.details, [{ field: "name", message: "already in use" }]);
      const winner = answers.find((r) => r.status === 201)!;
      for (const node of [a, b]) {
        const list = await rest(node.proc.baseUrl, "GET", "/admin/systems?page_size=500", { auth: MASTER });
        assert.is(list.status, 200, list.text);
        const same = (list.body.data as { id: string; name: string }[]).filter((s) => s.name === name);
        assert.equal(same.map((s) => s.id), [winner.body.data.id], `round ${round}: systems named ${name}`);
      }
    }
  });

  test("both processes are still running", (ctx) => {
    const { a, b } = ready(ctx);
    assert.ok(a.proc.alive(), a.proc.output());
    assert.ok(b.proc.alive(), b.proc.output());
  });

  test.run();
}
