/**
 * The request log over the REST facade through `app.inject()`: exactly one
 * entry per `/admin` request with the right fields (successes, errors,
 * refused credentials), none for other paths, and GET /admin/logs (every
 * filter, paging, bad values) and GET /admin/logs/{id}. Entries reach the
 * store only when the writer flushes.
 */
import type { LightMyRequestResponse } from "fastify";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import type { RequestLogRecord } from "../../src/store/index.js";
import { json, post, REQ_ID } from "../../test-support/http.js";
import { logRecord } from "../../test-support/log-entries.js";
import type { TestWorld } from "../../test-support/rpc.js";
import { AUTH, createWorld } from "../../test-support/world.js";

type World = TestWorld;

const test = suite("request log over REST");

/** A test in a fresh world that fails on any masked internal error. */
function it(name: string, fn: (w: World) => Promise<void>, options: Parameters<typeof createWorld>[0] = {}): void {
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

const LOG_ID = /^log_[0-9A-HJKMNP-TV-Z]{26}$/;
const RETENTION_MS = 30 * 86_400_000;

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

function get(w: World, url: string, headers: Record<string, string> = AUTH, remoteAddress?: string) {
  return w.app.inject({ method: "GET", url, headers, ...(remoteAddress ? { remoteAddress } : {}) });
}

/** Flushes the writer and returns every stored entry, newest first. */
async function flushed(w: World): Promise<RequestLogRecord[]> {
  await w.layer.logWriter.flush();
  const page = await w.store.logs.query({ limit: 1000 });
  assert.is(page.more, false);
  return page.items;
}

/** The one stored entry of a response (by its x-request-id); fails unless there is exactly one. */
function entryOf(entries: readonly RequestLogRecord[], res: LightMyRequestResponse): RequestLogRecord {
  const rid = res.headers["x-request-id"] as string;
  const mine = entries.filter((e) => e.requestId === rid);
  assert.is(mine.length, 1, `entries of ${rid}: ${JSON.stringify(mine)}`);
  return mine[0]!;
}

/** The fields of an entry that the gateway sets from the request. */
function core(e: RequestLogRecord) {
  return { apiKeyId: e.apiKeyId, method: e.method, path: e.path, status: e.status, errorCode: e.errorCode };
}

/** The fields the gateway never sets for an /admin request. */
const ADMIN_DEFAULTS = {
  instance: "",
  service: "",
  accesses: [],
  denialStep: "",
  upstreamStatus: 0,
  upstreamDurationMs: 0,
  // Nothing is forwarded for an /admin request.
  upstreamMethod: "",
  upstreamUrl: "",
};

async function createKey(w: World, body: object): Promise<{ id: string; key: string }> {
  const res = await post(w.app, "/admin/api-keys", body);
  assert.is(res.statusCode, 201, res.body);
  return json(res).data;
}

// --- one entry per /admin request ------------------------------------------

it("an admin GET produces exactly one entry, only after a flush, with every field right", async (w) => {
  const before = Date.now();
  const res = await get(
    w,
    "/admin/systems?page_size=5",
    { ...AUTH, "x-request-id": "trace.abc-1", "user-agent": "erplink-test/1.0 (+https://example.com)" },
    "203.0.113.7",
  );
  const after = Date.now();
  assert.is(res.statusCode, 200, res.body);
  assert.is(res.headers["x-request-id"], "trace.abc-1");
  assert.equal((await w.store.logs.query({ limit: 10 })).items, [], "nothing written before the flush");
  assert.equal(w.layer.logWriter.stats(), { queued: 1, written: 0, dropped: 0, evicted: 0, entries: null });

  const entries = await flushed(w);
  assert.is(entries.length, 1, JSON.stringify(entries));
  const e = entries[0]!;
  assert.match(e.id, LOG_ID);
  assert.ok(e.timestamp.getTime() >= before - 1 && e.timestamp.getTime() <= after, `timestamp ${e.timestamp.toISOString()}`);
  assert.ok(e.durationMs >= 0 && e.durationMs <= after - before + 1, `durationMs ${e.durationMs}`);
  assert.equal(e, {
    id: e.id,
    requestId: "trace.abc-1",
    timestamp: e.timestamp,
    apiKeyId: "master",
    sessionId: "",
    method: "GET",
    path: "/admin/systems?page_size=5",
    status: 200,
    durationMs: e.durationMs,
    ...ADMIN_DEFAULTS,
    errorCode: "",
    errorMessage: "",
    clientIp: "203.0.113.7",
    userAgent: "erplink-test/1.0 (+https://example.com)",
    // The whole answer, as sent.
    responseBytes: Buffer.byteLength(res.body),
    expiresAt: new Date(e.timestamp.getTime() + RETENTION_MS),
  });
  assert.equal(w.layer.logWriter.stats(), { queued: 0, written: 1, dropped: 0, evicted: 0, entries: null });
});

it("the entry's request id is the generated x-request-id when the client sends none", async (w) => {
  const res = await w.app.inject({ method: "GET", url: "/admin/systems", headers: { ...AUTH } });
  assert.is(res.statusCode, 200);
  const rid = res.headers["x-request-id"] as string;
  assert.match(rid, REQ_ID);
  const entries = await flushed(w);
  assert.is(entries.length, 1);
  assert.is(entries[0]!.requestId, rid);
  assert.is(entries[0]!.clientIp, "127.0.0.1");
});

it("a request made with an admin key is logged with that key's id", async (w) => {
  const admin = await createKey(w, { name: "ops", type: "admin" });
  const res = await get(w, "/admin/systems", bearer(admin.key));
  assert.is(res.statusCode, 200, res.body);
  const entries = await flushed(w);
  assert.is(entries.length, 2, "the key's creation and the GET");
  assert.equal(core(entryOf(entries, res)), { apiKeyId: admin.id, method: "GET", path: "/admin/systems", status: 200, errorCode: "" });
});

it("error answers are logged once each with their status and envelope code: 404, 400, 409 (and successes with none)", async (w) => {
  const created = await post(w.app, "/admin/systems", { name: "ECC" });
  assert.is(created.statusCode, 201);
  const notFound = await get(w, "/admin/systems/sys_00000000000000000000000000");
  assert.is(notFound.statusCode, 404);
  const invalid = await post(w.app, "/admin/systems", { name: 42 });
  assert.is(invalid.statusCode, 400);
  const conflict = await post(w.app, "/admin/systems", { name: "ECC" });
  assert.is(conflict.statusCode, 409);
  const noRoute = await get(w, "/admin/nothing-here");
  assert.is(noRoute.statusCode, 404);
  const notAllowed = await w.app.inject({ method: "PUT", url: "/admin/systems", headers: AUTH });
  assert.is(notAllowed.statusCode, 405);

  const entries = await flushed(w);
  assert.is(entries.length, 6, JSON.stringify(entries.map(core)));
  const actual = [created, notFound, invalid, conflict].map((r) => core(entryOf(entries, r)));
  assert.equal(actual, [
    { apiKeyId: "master", method: "POST", path: "/admin/systems", status: 201, errorCode: "" },
    { apiKeyId: "master", method: "GET", path: "/admin/systems/sys_00000000000000000000000000", status: 404, errorCode: "NOT_FOUND" },
    { apiKeyId: "master", method: "POST", path: "/admin/systems", status: 400, errorCode: "VALIDATION_ERROR" },
    { apiKeyId: "master", method: "POST", path: "/admin/systems", status: 409, errorCode: "CONFLICT" },
  ]);
  // Unrouted answers are logged too, with their code.
  const e404 = entryOf(entries, noRoute);
  assert.equal([e404.path, e404.status, e404.errorCode], ["/admin/nothing-here", 404, "NOT_FOUND"]);
  const e405 = entryOf(entries, notAllowed);
  assert.equal([e405.method, e405.status, e405.errorCode], ["PUT", 405, "METHOD_NOT_ALLOWED"]);
});

it("a 401 (no token, a wrong token) is logged once each with api_key_id \"\" and error_code UNAUTHORIZED", async (w) => {
  const none = await get(w, "/admin/systems", { "user-agent": "probe" });
  assert.is(none.statusCode, 401);
  const wrong = await get(w, "/admin/api-keys?page_size=1", bearer("erpl_wrong_token_0123456789abcdefghijklmnop"));
  assert.is(wrong.statusCode, 401);
  const entries = await flushed(w);
  assert.is(entries.length, 2);
  assert.equal(
    [none, wrong].map((r) => core(entryOf(entries, r))),
    [
      { apiKeyId: "", method: "GET", path: "/admin/systems", status: 401, errorCode: "UNAUTHORIZED" },
      { apiKeyId: "", method: "GET", path: "/admin/api-keys?page_size=1", status: 401, errorCode: "UNAUTHORIZED" },
    ],
  );
  assert.is(entryOf(entries, none).userAgent, "probe");
});

it("a data key refused on /admin (403) is logged with the data key's id: the credential was recognised", async (w) => {
  const data = await createKey(w, { name: "data", permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } } });
  const res = await get(w, "/admin/systems", bearer(data.key));
  assert.is(res.statusCode, 403, res.body);
  const entries = await flushed(w);
  assert.equal(core(entryOf(entries, res)), { apiKeyId: data.id, method: "GET", path: "/admin/systems", status: 403, errorCode: "FORBIDDEN" });
  assert.is(entryOf(entries, res).errorMessage, JSON.parse(res.body).error.message);
});

it(
  "a rate-limited admin request (429) is logged with the admin's id (master) and RATE_LIMITED",
  async (w) => {
    const ok = await get(w, "/admin/systems");
    assert.is(ok.statusCode, 200);
    const limited = await get(w, "/admin/systems");
    assert.is(limited.statusCode, 429, limited.body);
    const entries = await flushed(w);
    assert.is(entries.length, 2);
    assert.equal(core(entryOf(entries, limited)), { apiKeyId: "master", method: "GET", path: "/admin/systems", status: 429, errorCode: "RATE_LIMITED" });
  },
  { adminLimits: { perMinute: 1, perDay: 100 } },
);

it("requests outside /admin (health, readiness, OpenAPI, look-alike paths) produce no entry", async (w) => {
  for (const url of ["/healthz", "/readyz", "/api-reference/openapi.json", "/adminx", "/administrator/systems"]) {
    await get(w, url);
  }
  assert.equal(await flushed(w), []);
  assert.equal(w.layer.logWriter.stats(), { queued: 0, written: 0, dropped: 0, evicted: 0, entries: null });
});

it("querying /admin/logs is itself logged: the first query's entry appears in the second", async (w) => {
  const first = await get(w, "/admin/logs");
  assert.is(first.statusCode, 200);
  assert.equal(json(first), { data: [], meta: { requestId: first.headers["x-request-id"] } });
  await w.layer.logWriter.flush();
  const second = await get(w, "/admin/logs?method=GET");
  const data = json(second).data as { request_id: string; path: string; status: number }[];
  assert.equal(
    data.map((d) => [d.request_id, d.path, d.status]),
    [[first.headers["x-request-id"], "/admin/logs", 200]],
  );
  const entries = await flushed(w);
  assert.equal(entries.map((e) => [e.requestId, e.path]), [
    [second.headers["x-request-id"], "/admin/logs?method=GET"],
    [first.headers["x-request-id"], "/admin/logs"],
  ]);
});

// --- GET /admin/logs --------------------------------------------------------

const T0 = Date.parse("2025-06-01T10:00:00.000Z");
const MINUTE = 60_000;
const KEY_A = "key_01KA0000000000000000000000";
const IDS = (() => {
  const newId = createIdGenerator(() => new Date(T0));
  return Array.from({ length: 6 }, () => newId("log"));
})();

/** Seed entry `i`, one minute after entry `i - 1`; the fields the tests read or filter by are set here, the others are empty. */
function rec(i: number, fields: Partial<RequestLogRecord> = {}): RequestLogRecord {
  return logRecord({
    id: IDS[i]!,
    requestId: `seed-${i}`,
    timestamp: new Date(T0 + i * MINUTE),
    apiKeyId: "master",
    method: "GET",
    path: `/odata/x/${i}`,
    status: 200,
    durationMs: 3.5,
    clientIp: "10.1.2.3",
    userAgent: "seed",
    expiresAt: new Date(T0 + i * MINUTE + RETENTION_MS),
    ...fields,
  });
}

/** What seed entry 1 sent to the back end. */
const UPSTREAM_URL = "https://s4.example.com/sap/opu/odata/sap/API_BP/A_BusinessPartner?$expand=to_BusinessPartnerAddress&sap-client=100";

const SEED: RequestLogRecord[] = [
  rec(0),
  rec(1, {
    apiKeyId: KEY_A,
    instance: "prod",
    service: "API_BP",
    accesses: [
      { entity: "A_BusinessPartner", operation: "list" },
      { entity: "A_BusinessPartnerAddress", operation: "get" },
    ],
    upstreamStatus: 200,
    upstreamDurationMs: 12.5,
    upstreamMethod: "GET",
    upstreamUrl: UPSTREAM_URL,
    responseBytes: 70_000,
  }),
  rec(2, { apiKeyId: KEY_A, method: "DELETE", status: 403, instance: "prod", service: "API_SO", accesses: [{ entity: "A_SalesOrder", operation: "delete" }], denialStep: "OPERATION", errorCode: "FORBIDDEN" }),
  rec(3, { apiKeyId: "", status: 401, errorCode: "UNAUTHORIZED", errorMessage: "invalid API key" }),
  rec(4, { apiKeyId: KEY_A, method: "PATCH", status: 502, instance: "dev", service: "API_BP", accesses: [{ entity: "A_BusinessPartner", operation: "update" }], errorCode: "BAD_GATEWAY" }),
  rec(5, { requestId: "seed-1", status: 404, errorCode: "NOT_FOUND" }),
];

/** GET /admin/logs?<query> -> the seed indexes of `data`, asserting a 200. */
async function seedIndexes(w: World, query: string): Promise<number[]> {
  const res = await get(w, `/admin/logs${query}`);
  assert.is(res.statusCode, 200, `${query}: ${res.body}`);
  return (json(res).data as { id: string }[]).map((d) => IDS.indexOf(d.id));
}

it("GET /admin/logs: each filter (and combinations) as a query parameter", async (w) => {
  await w.store.logs.append(SEED);
  const cases: [string, number[]][] = [
    ["", [5, 4, 3, 2, 1, 0]],
    ["?api_key_id=" + KEY_A, [4, 2, 1]],
    ["?api_key_id=master", [5, 0]],
    ["?instance=prod", [2, 1]],
    ["?service=API_BP", [4, 1]],
    ["?entity=A_BusinessPartnerAddress", [1]],
    ["?entity=A_BusinessPartner", [4, 1]],
    ["?operation=delete", [2]],
    ["?operation=get", [1]],
    ["?method=PATCH", [4]],
    ["?status=404", [5]],
    ["?status=4xx", [5, 3, 2]],
    ["?status=5xx", [4]],
    ["?request_id=seed-1", [5, 1]],
    ["?from=2025-06-01T10:02:00Z", [5, 4, 3, 2]],
    ["?to=2025-06-01T10:02:00Z", [1, 0]],
    ["?from=2025-06-01T10:01:00Z&to=2025-06-01T10:04:00Z", [3, 2, 1]],
    ["?from=2025-06-01T12:01:00%2B02:00&to=2025-06-01T10:03:00.000Z", [2, 1]],
    ["?api_key_id=" + KEY_A + "&status=4xx", [2]],
    ["?entity=A_BusinessPartner&operation=update&instance=dev", [4]],
    ["?method=GET&status=2xx&from=2025-06-01T10:00:30Z", [1]],
    ["?instance=qa", []],
  ];
  const actual = [];
  for (const [query] of cases) actual.push([query, await seedIndexes(w, query)]);
  assert.equal(actual, cases);
});

it("GET /admin/logs: the REST shape of an entry (snake_case, every field, RFC 3339 timestamp, upstream_method and upstream_url as sent)", async (w) => {
  await w.store.logs.append(SEED);
  const res = await get(w, "/admin/logs?request_id=seed-1&instance=prod");
  assert.is(res.statusCode, 200);
  assert.equal(json(res), {
    data: [
      {
        id: IDS[1],
        request_id: "seed-1",
        timestamp: "2025-06-01T10:01:00Z",
        api_key_id: KEY_A,
        method: "GET",
        path: "/odata/x/1",
        status: 200,
        duration_ms: 3.5,
        instance: "prod",
        service: "API_BP",
        accesses: [
          { entity: "A_BusinessPartner", operation: "list" },
          { entity: "A_BusinessPartnerAddress", operation: "get" },
        ],
        denial_step: "",
        error_code: "",
        upstream_status: 200,
        upstream_duration_ms: 12.5,
        client_ip: "10.1.2.3",
        user_agent: "seed",
        upstream_method: "GET",
        upstream_url: UPSTREAM_URL,
        session_id: "",
        error_message: "",
        // int64: a string in JSON.
        response_bytes: "70000",
      },
    ],
    meta: { requestId: res.headers["x-request-id"] },
  });
});

it("GET /admin/logs paging: page_size=2 over 6 entries, meta.nextPageToken chains, the last page has none", async (w) => {
  await w.store.logs.append(SEED);
  const pages: number[][] = [];
  const metas: string[][] = [];
  let url = "/admin/logs?page_size=2";
  for (let i = 0; i < 5; i++) {
    const res = await get(w, url);
    assert.is(res.statusCode, 200, res.body);
    const body = json(res);
    pages.push((body.data as { id: string }[]).map((d) => IDS.indexOf(d.id)));
    metas.push(Object.keys(body.meta).sort());
    if (body.meta.nextPageToken === undefined) break;
    url = `/admin/logs?page_size=2&page_token=${encodeURIComponent(body.meta.nextPageToken)}`;
  }
  assert.equal(pages, [[5, 4], [3, 2], [1, 0]]);
  assert.equal(metas, [["nextPageToken", "requestId"], ["nextPageToken", "requestId"], ["requestId"]]);
  // With a filter the token keeps paging within it.
  const first = json(await get(w, `/admin/logs?api_key_id=${KEY_A}&page_size=2`));
  assert.equal((first.data as { id: string }[]).map((d) => IDS.indexOf(d.id)), [4, 2]);
  const second = json(await get(w, `/admin/logs?api_key_id=${KEY_A}&page_size=2&page_token=${first.meta.nextPageToken}`));
  assert.equal((second.data as { id: string }[]).map((d) => IDS.indexOf(d.id)), [1]);
  assert.is(second.meta.nextPageToken, undefined);
});

it("GET /admin/logs page_size: 1000 is allowed, 1001 is 400 naming page_size", async (w) => {
  await w.store.logs.append(SEED);
  assert.equal(await seedIndexes(w, "?page_size=1000"), [5, 4, 3, 2, 1, 0]);
  const res = await get(w, "/admin/logs?page_size=1001");
  assert.is(res.statusCode, 400);
  assert.equal(json(res), {
    error: {
      code: "VALIDATION_ERROR",
      message: "page_size: must be between 1 and 1000",
      requestId: res.headers["x-request-id"],
      details: [{ field: "page_size", message: "must be between 1 and 1000" }],
    },
  });
});

it("GET /admin/logs: from=yesterday is 400 VALIDATION_ERROR naming from, in the exact envelope", async (w) => {
  const res = await get(w, "/admin/logs?from=yesterday");
  assert.is(res.statusCode, 400);
  const message = "must be an RFC 3339 date-time between 0001 and 9999, such as 2026-01-02T03:04:05Z";
  assert.equal(json(res), {
    error: {
      code: "VALIDATION_ERROR",
      message: `from: ${message}`,
      requestId: res.headers["x-request-id"],
      details: [{ field: "from", message }],
    },
  });
});

it("GET /admin/logs: each bad value is 400 VALIDATION_ERROR naming its parameter", async (w) => {
  const cases: [string, string[]][] = [
    ["from=yesterday", ["from"]],
    ["to=2026-13-45T00:00:00Z", ["to"]],
    ["from=2026-01-02", ["from"]],
    ["status=4x", ["status"]],
    ["status=600", ["status"]],
    ["status=abc", ["status"]],
    ["status=404&status=500", ["status"]],
    ["operation=read", ["operation"]],
    ["method=get", ["method"]],
    ["api_key_id=nope", ["api_key_id"]],
    ["instance=a%2Fb", ["instance"]],
    ["entity=A..B", ["entity"]],
    ["request_id=a%20b", ["request_id"]],
    ["page_size=abc", ["page_size"]],
    ["page_size=-1", ["page_size"]],
    ["page_size=1001", ["page_size"]],
    ["page_token=garbage", ["page_token"]],
  ];
  const actual = [];
  for (const [query] of cases) {
    const res = await get(w, `/admin/logs?${query}`);
    const body = json(res);
    actual.push([query, res.statusCode === 400 && body.error.code === "VALIDATION_ERROR" ? (body.error.details as { field: string }[]).map((d) => d.field) : [`${res.statusCode}`]]);
  }
  assert.equal(actual, cases);
});

it("GET /admin/logs: a range whose `to` is not after its `from` is 200 with no entries", async (w) => {
  await w.store.logs.append(SEED);
  for (const query of ["from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from=2025-06-01T10:03:00Z&to=2025-06-01T10:03:00Z"]) {
    const res = await get(w, `/admin/logs?${query}`);
    assert.equal([res.statusCode, json(res).data, json(res).meta.nextPageToken], [200, [], undefined], query);
  }
  const around = json(await get(w, "/admin/logs?from=2025-06-01T10:03:00Z&to=2025-06-01T10:03:01Z")).data;
  assert.equal(around.map((e: { id: string }) => e.id), [IDS[3]], "the entry at the edge is in a range around it");
});

it("GET /admin/logs: impossible calendar dates, and offsets that move a time outside 0001..9999, are 400 naming the parameter", async (w) => {
  const cases: [string, string[]][] = [
    ["from=2026-02-30T00:00:00Z", ["from"]],
    ["to=2026-04-31T00:00:00Z", ["to"]],
    ["from=9999-12-31T23:59:59-01:00", ["from"]],
    ["to=0001-01-01T00:00:00%2B01:00", ["to"]],
  ];
  const actual = [];
  for (const [query] of cases) {
    const res = await get(w, `/admin/logs?${query}`);
    const body = json(res);
    actual.push([query, res.statusCode === 400 && body.error.code === "VALIDATION_ERROR" ? ((body.error.details ?? []) as { field: string }[]).map((d) => d.field) : [`${res.statusCode}`]]);
  }
  assert.equal(actual, cases);
});

// --- GET /admin/logs/{id} ---------------------------------------------------

it("GET /admin/logs/{id}: 200 with the entry; 404 NOT_FOUND naming the id for an unknown or malformed one", async (w) => {
  await w.store.logs.append(SEED);
  const res = await get(w, `/admin/logs/${IDS[3]}`);
  assert.is(res.statusCode, 200, res.body);
  assert.equal(json(res), {
    data: {
      id: IDS[3],
      request_id: "seed-3",
      timestamp: "2025-06-01T10:03:00Z",
      api_key_id: "",
      method: "GET",
      path: "/odata/x/3",
      status: 401,
      duration_ms: 3.5,
      instance: "",
      service: "",
      accesses: [],
      denial_step: "",
      error_code: "UNAUTHORIZED",
      upstream_status: 0,
      upstream_duration_ms: 0,
      client_ip: "10.1.2.3",
      user_agent: "seed",
      upstream_method: "",
      upstream_url: "",
      session_id: "",
      error_message: "invalid API key",
      response_bytes: "0",
    },
    meta: { requestId: res.headers["x-request-id"] },
  });

  const unknown = "log_00000000000000000000000000";
  const missing = await get(w, `/admin/logs/${unknown}`);
  assert.is(missing.statusCode, 404);
  assert.equal(json(missing), {
    error: { code: "NOT_FOUND", message: `log entry "${unknown}" not found`, requestId: missing.headers["x-request-id"] },
  });

  for (const id of ["sys_00000000000000000000000000", "log_x"]) {
    const bad = await get(w, `/admin/logs/${id}`);
    assert.equal(json(bad), { error: { code: "NOT_FOUND", message: `log entry "${id}" not found`, requestId: bad.headers["x-request-id"] } });
    assert.is(bad.statusCode, 404);
  }
});

it("GET /admin/logs/{id} finds the entry of a real request by the id /admin/logs returned", async (w) => {
  const made = await post(w.app, "/admin/systems", { name: "S4" }, { "user-agent": "maker" });
  assert.is(made.statusCode, 201);
  await w.layer.logWriter.flush();
  const list = json(await get(w, `/admin/logs?request_id=${made.headers["x-request-id"]}`));
  assert.is(list.data.length, 1);
  const res = await get(w, `/admin/logs/${list.data[0].id}`);
  assert.is(res.statusCode, 200);
  assert.equal(json(res).data, list.data[0]);
  assert.equal(
    [list.data[0].method, list.data[0].path, list.data[0].status, list.data[0].api_key_id, list.data[0].user_agent],
    ["POST", "/admin/systems", 201, "master", "maker"],
  );
});

it("without a token GET /admin/logs and /admin/logs/{id} are 401", async (w) => {
  await w.store.logs.append(SEED);
  assert.is((await get(w, "/admin/logs", {})).statusCode, 401);
  assert.is((await get(w, `/admin/logs/${IDS[0]}`, {})).statusCode, 401);
});

test.run();
