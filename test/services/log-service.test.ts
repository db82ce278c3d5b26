/**
 * LogService through a typed Connect client over the in-process router
 * transport, on entries seeded straight into the store: every QueryLogs
 * filter, paging (tokens, default and maximum page sizes), validation of
 * each filter, and GetLog.
 */
import { toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  LogService,
  QueryLogsRequestSchema,
  RequestLogSchema,
  type RequestLog,
} from "../../src/gen/erplink/admin/v1/request_log_pb.js";
import { createIdGenerator } from "../../src/services/ids.js";
import type { RequestLogRecord } from "../../src/store/index.js";
import { logRecord } from "../../test-support/log-entries.js";
import { rejects, violations, worldTests, type TestWorld } from "../../test-support/rpc.js";

type World = TestWorld;
/** A QueryLogs request as a client call takes it. */
type Req = MessageInitShape<typeof QueryLogsRequestSchema>;

const test = suite("LogService");
const it = worldTests(test);

const T0 = Date.parse("2026-01-02T03:04:05.678Z");
const MINUTE = 60_000;
const KEY_A = "key_01KA0000000000000000000000";
const KEY_B = "key_01KB0000000000000000000000";

/** Log ids in ascending (time) order. */
function logIds(n: number): string[] {
  const newId = createIdGenerator(() => new Date(T0));
  return Array.from({ length: n }, () => newId("log"));
}

/** Entry `i`, one minute after entry `i - 1`; the fields the tests read or filter by are set here, the others are empty. */
function record(id: string, i: number, fields: Partial<RequestLogRecord> = {}): RequestLogRecord {
  return logRecord({
    id,
    requestId: `req-${i}`,
    timestamp: new Date(T0 + i * MINUTE),
    apiKeyId: "master",
    method: "GET",
    path: `/admin/systems?i=${i}`,
    status: 200,
    durationMs: 2.5,
    clientIp: "10.0.0.1",
    userAgent: "test-agent",
    expiresAt: new Date(T0 + i * MINUTE + 30 * 86_400_000),
    ...fields,
  });
}

const IDS = logIds(8);
/** What entry 1 sent upstream. */
const UPSTREAM_URL = "https://s4.example.com/sap/opu/odata/sap/API_BP/A_BusinessPartner?$expand=to_BusinessPartnerAddress&sap-client=100";
/** Eight entries, oldest (0) to newest (7), one minute apart. */
const FIXTURE: RequestLogRecord[] = [
  record(IDS[0]!, 0, { apiKeyId: "master", status: 200 }),
  record(IDS[1]!, 1, {
    apiKeyId: KEY_A,
    instance: "prod",
    service: "API_BP",
    accesses: [
      { entity: "A_BusinessPartner", operation: "list" },
      { entity: "A_BusinessPartnerAddress", operation: "get" },
    ],
    upstreamMethod: "GET",
    upstreamUrl: UPSTREAM_URL,
  }),
  record(IDS[2]!, 2, { apiKeyId: KEY_B, status: 404, instance: "dev", service: "API_BP", accesses: [{ entity: "A_SalesOrder", operation: "get" }] }),
  record(IDS[3]!, 3, {
    apiKeyId: KEY_A,
    method: "DELETE",
    status: 403,
    instance: "prod",
    service: "API_SO",
    accesses: [{ entity: "A_SalesOrder", operation: "delete" }],
    denialStep: "OPERATION",
    errorCode: "FORBIDDEN",
  }),
  record(IDS[4]!, 4, { apiKeyId: "", status: 401, errorCode: "UNAUTHORIZED" }),
  record(IDS[5]!, 5, { apiKeyId: KEY_A, method: "PATCH", status: 500, instance: "prod", service: "API_BP", accesses: [{ entity: "A_BusinessPartner", operation: "update" }] }),
  record(IDS[6]!, 6, { apiKeyId: "master", method: "POST", status: 499, errorCode: "VALIDATION_ERROR" }),
  record(IDS[7]!, 7, { apiKeyId: KEY_B, status: 503, requestId: "req-2", errorCode: "UNAVAILABLE" }),
];

async function seed(w: World): Promise<void> {
  await w.store.logs.append(FIXTURE);
}

/** The fixture indexes of a page's entries, in the order returned. */
function idx(logs: readonly RequestLog[]): number[] {
  return logs.map((l) => IDS.indexOf(l.id));
}

const at = (i: number) => timestampFromDate(new Date(T0 + i * MINUTE));

it("QueryLogs without filters: every entry newest first, no next page; each message maps every field", async (w) => {
  await seed(w);
  const res = await w.client(LogService).queryLogs({});
  assert.equal(idx(res.logs), [7, 6, 5, 4, 3, 2, 1, 0]);
  assert.is(res.nextPageToken, "");
  assert.equal(toJson(RequestLogSchema, res.logs[4]!), {
    id: IDS[3],
    requestId: "req-3",
    timestamp: "2026-01-02T03:07:05.678Z",
    apiKeyId: KEY_A,
    method: "DELETE",
    path: "/admin/systems?i=3",
    status: 403,
    durationMs: 2.5,
    instance: "prod",
    service: "API_SO",
    accesses: [{ entity: "A_SalesOrder", operation: "delete" }],
    denialStep: "OPERATION",
    errorCode: "FORBIDDEN",
    clientIp: "10.0.0.1",
    userAgent: "test-agent",
  });
});

it("QueryLogs: each filter alone", async (w) => {
  await seed(w);
  const cases: [string, Req, number[]][] = [
    ["api_key_id key", { apiKeyId: KEY_A }, [5, 3, 1]],
    ["api_key_id master", { apiKeyId: "master" }, [6, 0]],
    ["instance", { instance: "prod" }, [5, 3, 1]],
    ["service", { service: "API_SO" }, [3]],
    ["entity (any element of accesses)", { entity: "A_BusinessPartnerAddress" }, [1]],
    ["entity A_BusinessPartner", { entity: "A_BusinessPartner" }, [5, 1]],
    ["operation (any element of accesses)", { operation: "get" }, [2, 1]],
    ["operation delete", { operation: "delete" }, [3]],
    ["method", { method: "DELETE" }, [3]],
    ["status exact", { status: "404" }, [2]],
    ["status exact (the next status is not included)", { status: "403" }, [3]],
    ["status class 4xx (499 in, 500 out)", { status: "4xx" }, [6, 4, 3, 2]],
    ["status class 5xx", { status: "5xx" }, [7, 5]],
    ["status class 2xx", { status: "2xx" }, [1, 0]],
    ["request_id", { requestId: "req-2" }, [7, 2]],
    ["from (inclusive)", { from: at(6) }, [7, 6]],
    ["to (exclusive)", { to: at(2) }, [1, 0]],
    ["from and to", { from: at(2), to: at(5) }, [4, 3, 2]],
    ["no match", { instance: "qa" }, []],
  ];
  const client = w.client(LogService);
  const actual = [];
  for (const [name, req] of cases) actual.push([name, req, idx((await client.queryLogs(req)).logs)]);
  assert.equal(actual, cases);
});

it("QueryLogs: filters combine (all must match)", async (w) => {
  await seed(w);
  const cases: [string, Req, number[]][] = [
    ["key + instance + status class", { apiKeyId: KEY_A, instance: "prod", status: "4xx" }, [3]],
    ["entity + operation", { entity: "A_BusinessPartner", operation: "update" }, [5]],
    ["service + entity", { service: "API_BP", entity: "A_SalesOrder" }, [2]],
    ["time window + key", { from: at(2), to: at(8), apiKeyId: KEY_B }, [7, 2]],
    ["method + status", { method: "GET", status: "5xx" }, [7]],
    ["request_id + status", { requestId: "req-2", status: "404" }, [2]],
    ["contradictory", { apiKeyId: "master", status: "4xx", method: "GET" }, []],
  ];
  const client = w.client(LogService);
  const actual = [];
  for (const [name, req] of cases) actual.push([name, req, idx((await client.queryLogs(req)).logs)]);
  assert.equal(actual, cases);
});

it("QueryLogs paging: page_size 2 over 5 entries gives 2+2+1, newest first, tokens chain, no duplicates", async (w) => {
  await w.store.logs.append(FIXTURE.slice(0, 5));
  const client = w.client(LogService);
  const pages: number[][] = [];
  const tokens: string[] = [];
  let pageToken = "";
  for (let i = 0; i < 5; i++) {
    const res = await client.queryLogs({ pageSize: 2, pageToken });
    pages.push(idx(res.logs));
    tokens.push(res.nextPageToken);
    if (res.nextPageToken === "") break;
    pageToken = res.nextPageToken;
  }
  assert.equal(pages, [[4, 3], [2, 1], [0]]);
  assert.is(tokens.length, 3);
  assert.ok(tokens[0] !== "" && tokens[1] !== "" && tokens[0] !== tokens[1], `tokens ${tokens.join(", ")}`);
  assert.is(tokens[2], "", "the last page has no token");
});

it("QueryLogs paging keeps the filters: page_size 1 through the 4xx entries", async (w) => {
  await seed(w);
  const client = w.client(LogService);
  const seen: number[] = [];
  let pageToken = "";
  for (let i = 0; i < 10; i++) {
    const res = await client.queryLogs({ status: "4xx", pageSize: 1, pageToken });
    seen.push(...idx(res.logs));
    if (res.nextPageToken === "") break;
    pageToken = res.nextPageToken;
  }
  assert.equal(seen, [6, 4, 3, 2]);
});

it("QueryLogs page_size: 0 means 100, 1000 is allowed, 1001 is InvalidArgument on page_size", async (w) => {
  const ids = logIds(1001);
  await w.store.logs.append(ids.map((id, i) => record(id, i)));
  const client = w.client(LogService);

  const byDefault = await client.queryLogs({});
  assert.is(byDefault.logs.length, 100);
  assert.is(byDefault.logs[0]!.id, ids[1000], "newest first");
  assert.is(byDefault.logs[99]!.id, ids[901]);
  assert.ok(byDefault.nextPageToken !== "");

  const max = await client.queryLogs({ pageSize: 1000 });
  assert.is(max.logs.length, 1000);
  assert.is(max.logs[999]!.id, ids[1]);
  const rest = await client.queryLogs({ pageSize: 1000, pageToken: max.nextPageToken });
  assert.equal(rest.logs.map((l) => l.id), [ids[0]]);
  assert.is(rest.nextPageToken, "");

  const err = await rejects(client.queryLogs({ pageSize: 1001 }), Code.InvalidArgument, "page_size: must be between 1 and 1000");
  assert.equal(violations(err), [{ field: "page_size", description: "must be between 1 and 1000" }]);
  const negative = await rejects(client.queryLogs({ pageSize: -1 }), Code.InvalidArgument);
  assert.equal(violations(negative).map((v) => v.field), ["page_size"]);
});

it("QueryLogs page_token: garbage or a token of another resource is InvalidArgument on page_token", async (w) => {
  const client = w.client(LogService);
  const otherKind = Buffer.from("v1:sys_01KA0000000000000000000000", "utf8").toString("hex");
  for (const pageToken of ["garbage", otherKind]) {
    const err = await rejects(client.queryLogs({ pageToken }), Code.InvalidArgument);
    assert.equal(violations(err), [{ field: "page_token", description: "is not a token this list returned" }], pageToken);
  }
});

it("QueryLogs: each bad filter value is InvalidArgument naming the parameter", async (w) => {
  await seed(w);
  const client = w.client(LogService);
  const beyond9999 = { seconds: 253_402_300_800n, nanos: 0 }; // 10000-01-01T00:00:00Z
  const cases: [string, Req, string][] = [
    ["status 4x", { status: "4x" }, "status"],
    ["status 600", { status: "600" }, "status"],
    ["status 6xx", { status: "6xx" }, "status"],
    ["status abc", { status: "abc" }, "status"],
    ["status 40", { status: "40" }, "status"],
    ["status 4040", { status: "4040" }, "status"],
    ["operation read", { operation: "read" }, "operation"],
    ["operation LIST (case matters)", { operation: "LIST" }, "operation"],
    ["method get", { method: "get" }, "method"],
    ["method with a space", { method: "GET " }, "method"],
    ["api_key_id nope", { apiKeyId: "nope" }, "api_key_id"],
    ["api_key_id operator-like", { apiKeyId: '{"$ne":""}' }, "api_key_id"],
    ["instance with a slash", { instance: "prod/x" }, "instance"],
    ["service with a space", { service: "API BP" }, "service"],
    ["entity with an empty name part", { entity: "A..B" }, "entity"],
    ["request_id with a space", { requestId: "a b" }, "request_id"],
    ["from beyond 9999", { from: beyond9999 }, "from"],
    ["to beyond 9999", { to: beyond9999 }, "to"],
    ["from before year 1", { from: { seconds: -62_135_596_801n, nanos: 0 } }, "from"],
    ["to with negative nanos", { to: { seconds: 0n, nanos: -1 } }, "to"],
  ];
  const actual = [];
  for (const [name, req] of cases) {
    let fields: string[];
    try {
      await client.queryLogs(req);
      fields = ["(accepted)"];
    } catch (e) {
      const err = await rejects(Promise.reject(e), Code.InvalidArgument);
      fields = violations(err).map((v) => v.field);
    }
    actual.push([name, fields]);
  }
  assert.equal(actual, cases.map(([name, , field]) => [name, [field]]));
});

it("QueryLogs: a range whose `to` is not after its `from` is empty, not an error", async (w) => {
  await seed(w);
  const client = w.client(LogService);
  for (const [from, to] of [[5, 2], [2, 2]] as const) {
    const res = await client.queryLogs({ from: at(from), to: at(to) });
    assert.equal([res.logs.length, res.nextPageToken], [0, ""], `${from}..${to}`);
  }
  assert.ok((await client.queryLogs({ from: at(2), to: at(3) })).logs.length > 0, "entries lie in that part of the log");
});

it("QueryLogs: violation messages say what is expected; several bad filters are all listed", async (w) => {
  const client = w.client(LogService);
  const status = await rejects(client.queryLogs({ status: "4x" }), Code.InvalidArgument, "status: must be a status such as 404 or a class such as 4xx");
  assert.equal(violations(status), [{ field: "status", description: "must be a status such as 404 or a class such as 4xx" }]);
  await rejects(client.queryLogs({ operation: "read" }), Code.InvalidArgument, "operation: must be one of list, get, create, update, delete, invoke");
  await rejects(client.queryLogs({ method: "get" }), Code.InvalidArgument, "method: must be an HTTP method in capitals, such as GET");
  await rejects(client.queryLogs({ apiKeyId: "nope" }), Code.InvalidArgument, "api_key_id: must be an API key id (key_…) or master");
  await rejects(
    client.queryLogs({ from: timestampFromMs(253_402_300_800_000) }),
    Code.InvalidArgument,
    "from: must be between 0001-01-01 and 9999-12-31",
  );
  const many = await rejects(client.queryLogs({ status: "abc", operation: "read", method: "get", apiKeyId: "nope" }), Code.InvalidArgument, "4 fields are invalid");
  assert.equal(violations(many).map((v) => v.field).sort(), ["api_key_id", "method", "operation", "status"]);
});

it("GetLog: found (every field, the upstream method and URL as sent included), NotFound for an unknown or malformed id, InvalidArgument for none", async (w) => {
  await seed(w);
  const client = w.client(LogService);
  const res = await client.getLog({ id: IDS[1]! });
  assert.ok(res.log);
  assert.equal(toJson(RequestLogSchema, res.log), {
    id: IDS[1],
    requestId: "req-1",
    timestamp: "2026-01-02T03:05:05.678Z",
    apiKeyId: KEY_A,
    method: "GET",
    path: "/admin/systems?i=1",
    status: 200,
    durationMs: 2.5,
    instance: "prod",
    service: "API_BP",
    accesses: [
      { entity: "A_BusinessPartner", operation: "list" },
      { entity: "A_BusinessPartnerAddress", operation: "get" },
    ],
    clientIp: "10.0.0.1",
    userAgent: "test-agent",
    upstreamMethod: "GET",
    upstreamUrl: UPSTREAM_URL,
  });
  const unknown = logIds(9)[8]!;
  await rejects(client.getLog({ id: unknown }), Code.NotFound, `log entry "${unknown}" not found`);
  for (const id of ["nope", "sys_01KA0000000000000000000000", "log_short"]) {
    await rejects(client.getLog({ id }), Code.NotFound, `log entry "${id}" not found`);
  }
  const err = await rejects(client.getLog({ id: "" }), Code.InvalidArgument, "id: is required");
  assert.equal(violations(err).map((v) => v.field), ["id"]);
});

it("LogService needs an administrator: no token is Unauthenticated", async (w) => {
  await seed(w);
  const anonymous = createClient(LogService, w.transport);
  await rejects(anonymous.queryLogs({}), Code.Unauthenticated);
  await rejects(anonymous.getLog({ id: IDS[0]! }), Code.Unauthenticated);
});

test.run();
