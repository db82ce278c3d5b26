/**
 * End to end over a real port of 127.0.0.1: REST over HTTP/1.1, gRPC over
 * h2c (@grpc/grpc-js and connect-node), Connect and gRPC-Web over HTTP/1.1,
 * all on the one port; graceful shutdown; and `src/main.ts` as a process.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { Duplex } from "node:stream";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import {
  Http2SessionManager,
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { BadRequestSchema } from "../../src/gen/erplink/errors/v1/bad_request_pb.js";
import {
  CreateSystemRequestSchema,
  GetSystemRequestSchema,
  ListSystemsRequestSchema,
  SystemSchema,
  SystemService,
} from "../../src/gen/erplink/admin/v1/system_pb.js";
import { createDualProtocolServer } from "../../src/gateway/server.js";
import {
  createGrpcJsClient,
  freePort,
  grpcError,
  httpRequest,
  spawnMain,
  startErplink,
  tryConnect,
  within,
  type GrpcJsClient,
  type MainProcess,
  type RunningErplink,
} from "../../test-support/e2e.js";

const REQ_ID = /^req_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const SYSTEM_ID = /^sys_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN_SYSTEM_ID = "sys_00000000000000000000000000";

/** Awaits a Connect call that must fail, and returns its ConnectError. */
async function connectError(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (err) {
    assert.instance(err, ConnectError);
    return err as ConnectError;
  }
  throw new Error("expected the Connect call to fail");
}

// ------------------------------------------------------------------ one port

interface OnePort {
  server: RunningErplink;
  grpcJs: GrpcJsClient<typeof SystemService>;
  sessions: Http2SessionManager;
  connect: Client<typeof SystemService>;
  /** The system created over REST in the first test. */
  created: { id: string; name: string; created_at: string };
}

const onePort = suite<OnePort>("e2e: one port for REST, gRPC, Connect");

onePort.before(async (ctx) => {
  ctx.server = await startErplink();
  ctx.grpcJs = createGrpcJsClient(SystemService, ctx.server.address);
  ctx.sessions = new Http2SessionManager(ctx.server.baseUrl);
  ctx.connect = createClient(
    SystemService,
    createGrpcTransport({ baseUrl: ctx.server.baseUrl, sessionManager: ctx.sessions }),
  );
});

onePort.after(async (ctx) => {
  ctx.grpcJs?.close();
  ctx.sessions?.abort();
  await ctx.server?.close();
});

onePort("REST over HTTP/1.1: POST /admin/systems with the master key is 201 in the envelope, x-request-id = meta.requestId", async (ctx) => {
  const res = await fetch(`${ctx.server.baseUrl}/admin/systems`, {
    method: "POST",
    headers: { authorization: ctx.server.authorization, "content-type": "application/json" },
    body: JSON.stringify({ name: "S4 production", description: "the big one", labels: { owner: "finance" } }),
  });
  assert.is(res.status, 201);
  assert.is(res.headers.get("content-type"), "application/json; charset=utf-8");
  const body = (await res.json()) as { data: Record<string, unknown>; meta: { requestId: string } };
  assert.equal(Object.keys(body).sort(), ["data", "meta"]);
  assert.equal(Object.keys(body.meta), ["requestId"]);
  assert.match(body.meta.requestId, REQ_ID);
  assert.is(res.headers.get("x-request-id"), body.meta.requestId);

  const data = body.data;
  assert.equal(Object.keys(data).sort(), ["created_at", "description", "etag", "id", "labels", "name", "updated_at"]);
  assert.is(data.etag, '"1"');
  assert.is(res.headers.get("etag"), '"1"');
  assert.match(data.id as string, SYSTEM_ID);
  assert.is(data.name, "S4 production");
  assert.is(data.description, "the big one");
  assert.equal(data.labels, { owner: "finance" });
  assert.match(data.created_at as string, RFC3339);
  assert.is(data.updated_at, data.created_at);
  assert.ok(Math.abs(Date.parse(data.created_at as string) - Date.now()) < 60_000);
  ctx.created = { id: data.id as string, name: "S4 production", created_at: data.created_at as string };
});

onePort("REST over HTTP/1.1: a well-formed incoming X-Request-Id is echoed in the header and meta; a malformed one is replaced", async (ctx) => {
  const res = await fetch(`${ctx.server.baseUrl}/admin/systems`, {
    headers: { authorization: ctx.server.authorization, "x-request-id": "abc-123" },
  });
  assert.is(res.status, 200);
  assert.is(res.headers.get("x-request-id"), "abc-123");
  const body = (await res.json()) as { data: Array<{ id: string }>; meta: Record<string, string> };
  assert.equal(body.meta, { requestId: "abc-123" });
  assert.equal(body.data.map((s) => s.id), [ctx.created.id]);

  const bad = await fetch(`${ctx.server.baseUrl}/healthz`, { headers: { "x-request-id": "abc 123" } });
  assert.is(bad.status, 200);
  const badBody = (await bad.json()) as { meta: { requestId: string } };
  assert.match(badBody.meta.requestId, REQ_ID);
  assert.is(bad.headers.get("x-request-id"), badBody.meta.requestId);
});

onePort("REST over HTTP/1.1: no token is 401 UNAUTHORIZED with WWW-Authenticate: Bearer", async (ctx) => {
  const res = await fetch(`${ctx.server.baseUrl}/admin/systems`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": "no-token-1" },
    body: JSON.stringify({ name: "never" }),
  });
  assert.is(res.status, 401);
  assert.is(res.headers.get("www-authenticate"), "Bearer");
  assert.is(res.headers.get("x-request-id"), "no-token-1");
  assert.equal(await res.json(), {
    error: {
      code: "UNAUTHORIZED",
      message: "missing bearer token: send Authorization: Bearer <token>",
      requestId: "no-token-1",
    },
  });
});

onePort("grpc-js over h2c on the same port: ListSystems with the master key returns the system created over REST", async (ctx) => {
  const res = await ctx.grpcJs.call.listSystems(create(ListSystemsRequestSchema, {}), {
    authorization: ctx.server.authorization,
  });
  assert.is(res.systems.length, 1);
  const [system] = res.systems;
  assert.is(system!.id, ctx.created.id);
  assert.is(system!.name, ctx.created.name);
  assert.is(system!.description, "the big one");
  assert.equal(system!.labels, { owner: "finance" });
  assert.is(new Date(Number(system!.createdAt!.seconds) * 1000 + system!.createdAt!.nanos / 1e6).toISOString(), new Date(ctx.created.created_at).toISOString());
  assert.is(res.nextPageToken, "");
});

onePort("grpc-js: no authorization metadata is UNAUTHENTICATED (16) with the message", async (ctx) => {
  const err = await grpcError(ctx.grpcJs.call.listSystems(create(ListSystemsRequestSchema, {})));
  assert.is(err.code, grpc.status.UNAUTHENTICATED);
  assert.is(err.code, 16);
  // connect-es percent-encodes grpc-message with encodeURIComponent (":" -> "%3A", valid per the
  // gRPC spec); grpc-js decodes it with decodeURI, which leaves reserved characters encoded.
  assert.is(decodeURIComponent(err.details), "missing bearer token: send Authorization: Bearer <token>");
});

onePort("grpc-js: a wrong bearer token is UNAUTHENTICATED", async (ctx) => {
  const err = await grpcError(
    ctx.grpcJs.call.listSystems(create(ListSystemsRequestSchema, {}), {
      authorization: "Bearer erpl_wrong_key_0123456789abcdefghijklmnopqrstu",
    }),
  );
  assert.is(err.code, grpc.status.UNAUTHENTICATED);
  assert.is(err.details, "invalid bearer token");
});

onePort("grpc-js: CreateSystem then GetSystem round-trip, visible over REST", async (ctx) => {
  const md = { authorization: ctx.server.authorization };
  const made = await ctx.grpcJs.call.createSystem(
    create(CreateSystemRequestSchema, { system: create(SystemSchema, { name: "via grpc-js" }) }),
    md,
  );
  assert.match(made.system!.id, SYSTEM_ID);
  const got = await ctx.grpcJs.call.getSystem(create(GetSystemRequestSchema, { id: made.system!.id }), md);
  assert.is(got.system!.name, "via grpc-js");
  const rest = await fetch(`${ctx.server.baseUrl}/admin/systems/${made.system!.id}`, {
    headers: { authorization: ctx.server.authorization },
  });
  assert.is(rest.status, 200);
  const body = (await rest.json()) as { data: { id: string; name: string } };
  assert.is(body.data.id, made.system!.id);
  assert.is(body.data.name, "via grpc-js");
  const del = await fetch(`${ctx.server.baseUrl}/admin/systems/${made.system!.id}`, {
    method: "DELETE",
    headers: { authorization: ctx.server.authorization },
  });
  assert.is(del.status, 200);
});

onePort("connect-node gRPC transport: listSystems with the authorization header", async (ctx) => {
  const res = await ctx.connect.listSystems({}, { headers: { authorization: ctx.server.authorization } });
  assert.equal(res.systems.map((s) => [s.id, s.name]), [[ctx.created.id, ctx.created.name]]);
});

onePort("connect-node gRPC transport: createSystem with a duplicate name is AlreadyExists naming the field", async (ctx) => {
  const err = await connectError(
    ctx.connect.createSystem(
      { system: { name: ctx.created.name } },
      { headers: { authorization: ctx.server.authorization } },
    ),
  );
  assert.is(err.code, Code.AlreadyExists);
  assert.is(err.rawMessage, "another system already has this name");
  const [detail] = err.findDetails(BadRequestSchema);
  assert.equal(
    detail?.fieldViolations.map((v) => ({ field: v.field, description: v.description })),
    [{ field: "name", description: "already in use" }],
  );
});

onePort("connect-node gRPC transport: getSystem of a well-formed unknown id is NotFound naming it", async (ctx) => {
  const err = await connectError(
    ctx.connect.getSystem({ id: UNKNOWN_SYSTEM_ID }, { headers: { authorization: ctx.server.authorization } }),
  );
  assert.is(err.code, Code.NotFound);
  assert.is(err.rawMessage, `system "${UNKNOWN_SYSTEM_ID}" not found`);
});

onePort("connect-node gRPC transport: getSystem of the malformed id \"nope\" is NotFound naming it, as over REST", async (ctx) => {
  const err = await connectError(
    ctx.connect.getSystem({ id: "nope" }, { headers: { authorization: ctx.server.authorization } }),
  );
  assert.is(err.code, Code.NotFound);
  assert.is(err.rawMessage, 'system "nope" not found');
  assert.equal(err.findDetails(BadRequestSchema), []);
});

onePort("connect-node gRPC transport: no token is Unauthenticated", async (ctx) => {
  const err = await connectError(ctx.connect.listSystems({}));
  assert.is(err.code, Code.Unauthenticated);
  assert.is(err.rawMessage, "missing bearer token: send Authorization: Bearer <token>");
});

onePort("Connect protocol and gRPC-Web over HTTP/1.1 on the same port", async (ctx) => {
  const headers = { authorization: ctx.server.authorization };
  for (const transport of [
    createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }),
    createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    createGrpcWebTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }),
  ]) {
    const client = createClient(SystemService, transport);
    const res = await client.listSystems({}, { headers });
    assert.equal(res.systems.map((s) => s.id), [ctx.created.id]);
    const notFound = await connectError(client.getSystem({ id: UNKNOWN_SYSTEM_ID }, { headers }));
    assert.is(notFound.code, Code.NotFound);
    const unauth = await connectError(client.listSystems({}, { headers: { authorization: "Bearer nope" } }));
    assert.is(unauth.code, Code.Unauthenticated);
    assert.is(unauth.rawMessage, "invalid bearer token");
  }
  // Plain curl-style Connect JSON over HTTP/1.1.
  const res = await httpRequest(`${ctx.server.baseUrl}/erplink.admin.v1.SystemService/GetSystem`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ id: ctx.created.id }),
  });
  assert.is(res.status, 200);
  assert.is((res.json() as { system: { name: string } }).system.name, ctx.created.name);
});

onePort("mixed: 20 REST and 20 gRPC (grpc-js and connect) creates interleaved concurrently all succeed and all land", async (ctx) => {
  const auth = ctx.server.authorization;
  const rest = Array.from({ length: 20 }, (_, i) =>
    fetch(`${ctx.server.baseUrl}/admin/systems`, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ name: `rest-${i}` }),
    }).then(async (res) => {
      assert.is(res.status, 201, `rest-${i}`);
      const body = (await res.json()) as { data: { id: string; name: string }; meta: { requestId: string } };
      assert.is(res.headers.get("x-request-id"), body.meta.requestId);
      assert.is(body.data.name, `rest-${i}`);
      return body.data.id;
    }),
  );
  const grpcs = Array.from({ length: 20 }, (_, i) => {
    const name = `grpc-${i}`;
    const call =
      i % 2 === 0
        ? ctx.grpcJs.call.createSystem(create(CreateSystemRequestSchema, { system: create(SystemSchema, { name }) }), {
            authorization: auth,
          })
        : ctx.connect.createSystem({ system: { name } }, { headers: { authorization: auth } });
    return call.then((res) => {
      assert.is(res.system!.name, name);
      return res.system!.id;
    });
  });
  // Interleave the starts, then wait for all.
  const all = await Promise.all(rest.flatMap((r, i) => [r, grpcs[i]!]));
  assert.is(new Set(all).size, 40);
  for (const id of all) assert.match(id, SYSTEM_ID);

  const list = await fetch(`${ctx.server.baseUrl}/admin/systems?page_size=500`, { headers: { authorization: auth } });
  assert.is(list.status, 200);
  const body = (await list.json()) as { data: Array<{ id: string; name: string }>; meta: Record<string, string> };
  assert.equal(Object.keys(body.meta), ["requestId"]);
  const names = body.data.map((s) => s.name).sort();
  const expected = [
    ctx.created.name,
    ...Array.from({ length: 20 }, (_, i) => `rest-${i}`),
    ...Array.from({ length: 20 }, (_, i) => `grpc-${i}`),
  ].sort();
  assert.equal(names, expected);
});

onePort.run();

// ------------------------------------------------------------------ shutdown

const shutdown = suite("e2e: graceful shutdown");

shutdown("close() resolves within 5 s with an open grpc-js channel, a connect-node HTTP/2 session and a keep-alive HTTP/1.1 connection; then connections are refused", async () => {
  const server = await startErplink();
  const grpcJs = createGrpcJsClient(SystemService, server.address);
  const sessions = new Http2SessionManager(server.baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const auth = { authorization: server.authorization };
    await grpcJs.call.listSystems(create(ListSystemsRequestSchema, {}), auth);
    await createClient(SystemService, createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: sessions })).listSystems(
      {},
      { headers: auth },
    );
    const first = await httpRequest(`${server.baseUrl}/healthz`, { agent });
    assert.is(first.status, 200);
    assert.is(first.headers.connection, "keep-alive");
    const second = await httpRequest(`${server.baseUrl}/healthz`, { agent });
    assert.is(second.socket, first.socket, "the HTTP/1.1 connection is kept alive and reused");
    const keptAlive = first.socket;
    const keptAliveClosed = new Promise<void>((resolve) =>
      keptAlive.destroyed ? resolve() : keptAlive.once("close", () => resolve()),
    );
    assert.is(grpcJs.raw.getChannel().getConnectivityState(false), grpc.connectivityState.READY);

    const started = Date.now();
    await within(5000, "erplink.close()", server.close());
    const took = Date.now() - started;
    assert.ok(took < 5000, `close took ${took} ms`);

    await within(1000, "server closes the idle keep-alive connection", keptAliveClosed);
    assert.is(await tryConnect(server.port), "ECONNREFUSED");
    const err = await grpcError(grpcJs.call.listSystems(create(ListSystemsRequestSchema, {}), auth));
    assert.is(err.code, grpc.status.UNAVAILABLE);
  } finally {
    grpcJs.close();
    sessions.abort();
    agent.destroy();
    await server.close();
  }
});

shutdown("close() lets an in-flight HTTP/1.1 request finish, then resolves promptly: the request's connection must not hold it until the shutdown timeout", async () => {
  // A short shutdown timeout bounds this test if the connection is held open.
  const server = await startErplink({ ERPLINK_SHUTDOWN_TIMEOUT_MS: "3000" });
  const socket = net.connect({ port: server.port, host: "127.0.0.1" });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const body = JSON.stringify({ name: "in flight" });
    let response = "";
    socket.setEncoding("latin1");
    const answered = new Promise<void>((resolve) =>
      socket.on("data", (s: string) => {
        response += s;
        if (/\r\n\r\n\{.*\}$/s.test(response)) resolve();
      }),
    );
    const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.write(
      "POST /admin/systems HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Authorization: ${server.authorization}\r\nContent-Length: ${body.length}\r\n\r\n` +
        body.slice(0, 5),
    );
    await new Promise((r) => setTimeout(r, 100));
    let closedAt = 0;
    const closing = server.close().then(() => void (closedAt = Date.now()));
    await new Promise((r) => setTimeout(r, 100));
    assert.is(await tryConnect(server.port), "ECONNREFUSED", "no new connections while closing");
    socket.write(body.slice(5));

    await within(2000, "the in-flight request's response", answered);
    const answeredAt = Date.now();
    assert.match(response, /^HTTP\/1\.1 201 Created\r\n/);
    const json = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4)) as { data: { name: string } };
    assert.is(json.data.name, "in flight");

    // Nothing else is in flight: the server closes that connection and close() resolves
    // right away, not when the shutdown timeout (3 s here, 10 s by default) forces it.
    await within(1500, "erplink.close() once the in-flight request is answered", closing);
    await within(500, "the in-flight request's connection is closed", ended);
    assert.ok(closedAt - answeredAt < 1500, `close() resolved ${closedAt - answeredAt} ms after the response`);
  } finally {
    socket.destroy();
    await server.close();
  }
});

shutdown.run();

// ------------------------------------------------------------------ connection handling

const connections = suite("e2e: connection sniffing (dual-protocol server)");

/**
 * A Duplex over a TCP connection that sends the first `split` bytes one
 * `step` at a time, pausing between, so the HTTP/2 preface arrives in
 * separate packets.
 */
function slowStartSocket(port: number, split: number, step: number): Duplex {
  const tcp = net.connect({ port, host: "127.0.0.1", noDelay: true });
  let sent = 0;
  const duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      void (async () => {
        let rest = chunk;
        while (sent < split && rest.length > 0) {
          const n = Math.min(step, split - sent, rest.length);
          tcp.write(rest.subarray(0, n));
          sent += n;
          rest = rest.subarray(n);
          await new Promise((r) => setTimeout(r, 30));
        }
        if (rest.length > 0) tcp.write(rest);
        cb();
      })();
    },
    final(cb) {
      tcp.end();
      cb();
    },
    destroy(err, cb) {
      tcp.destroy();
      cb(err);
    },
  });
  tcp.on("data", (d: Buffer) => duplex.push(d));
  tcp.on("end", () => duplex.push(null));
  tcp.on("error", (e) => duplex.destroy(e));
  return duplex;
}

connections("an HTTP/2 preface split across packets is still recognized (h2c GET /healthz)", async () => {
  const server = await startErplink();
  let session: http2.ClientHttp2Session | undefined;
  try {
    session = http2.connect(server.baseUrl, { createConnection: () => slowStartSocket(server.port, 24, 7) as never });
    session.on("error", () => {});
    const { status, body } = await within(
      5000,
      "h2c request with a split preface",
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = session!.request({ ":path": "/healthz", "x-request-id": "split-1" });
        let status = 0;
        let body = "";
        req.setEncoding("utf8");
        req.on("response", (h) => (status = Number(h[":status"])));
        req.on("data", (s: string) => (body += s));
        req.on("end", () => resolve({ status, body }));
        req.on("error", reject);
        req.end();
      }),
    );
    assert.is(status, 200);
    const parsed = JSON.parse(body);
    assert.equal(parsed.meta, { requestId: "split-1" });
    assert.is(parsed.data.status, "ok");
    assert.equal(Object.keys(parsed.data.request_log).sort(), ["dropped", "entries", "evicted", "queued", "written"]);
    assert.is(parsed.data.request_log.dropped, 0);
  } finally {
    session?.destroy();
    await server.close();
  }
});

connections("a connection that sends nothing, or only part of the preface, is dropped after firstByteTimeoutMs", async () => {
  // erplink's own timeout is 10 s (not configurable): build the same server with a short one.
  const server = createDualProtocolServer((_req, res) => res.end("ok"), {
    firstByteTimeoutMs: 200,
    keepAliveTimeoutMs: 5000,
    http2SessionTimeoutMs: 5000,
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const sockets: net.Socket[] = [];
  try {
    const open = (data?: string) =>
      new Promise<number>((resolve, reject) => {
        const s = net.connect({ port, host: "127.0.0.1" });
        sockets.push(s);
        let opened = 0;
        s.on("error", () => {});
        s.once("connect", () => {
          opened = Date.now();
          if (data) s.write(data);
        });
        s.once("close", () => (opened ? resolve(Date.now() - opened) : reject(new Error("not connected"))));
      });
    const [silent, partial] = await within(3000, "silent connections dropped", Promise.all([open(), open("PRI * HTTP/2.0\r\n")]));
    assert.ok(silent >= 150 && silent < 2000, `silent connection closed after ${silent} ms`);
    assert.ok(partial >= 150 && partial < 2000, `partial-preface connection closed after ${partial} ms`);

    // An HTTP/1.1 request that starts at once is served and not cut by the first-byte timer.
    const agent = new http.Agent({ keepAlive: true });
    try {
      const res = await httpRequest(`http://127.0.0.1:${port}/`, { agent });
      assert.is(res.status, 200);
      await new Promise((r) => setTimeout(r, 400));
      assert.not.ok(res.socket.destroyed, "a served keep-alive connection outlives the first-byte timeout");
    } finally {
      agent.destroy();
    }
  } finally {
    for (const s of sockets) s.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

connections.run();

// ------------------------------------------------------------------ process

const proc = suite("e2e: src/main.ts as a process");

const KEY_PATTERN = /erpl_master_[A-Za-z0-9_-]{43}/g;

proc("no ERPLINK_MASTER_KEY: the generated key is printed once on stderr, never logged, works as a bearer token; the dashboard's URL is printed; SIGTERM exits 0", async () => {
  const port = await freePort();
  let main: MainProcess | undefined;
  let grpcJs: GrpcJsClient<typeof SystemService> | undefined;
  try {
    main = spawnMain({ PORT: String(port), HOST: "127.0.0.1", ERPLINK_DATA_DIR: ":memory:" });
    await main.waitFor(/erplink listening/, 10_000);
    const keys = main.stderr().match(KEY_PATTERN) ?? [];
    assert.is(keys.length, 1, `stderr: ${main.stderr()}`);
    const key = keys[0]!;
    assert.ok(main.stderr().includes(`\n    ${key}\n`), "the key stands on its own line");
    const base = `http://127.0.0.1:${port}`;
    assert.ok(main.stderr().includes(`\n  Dashboard: ${base}/dashboard/  (sign in with the master key)\n`), `stderr: ${main.stderr()}`);
    const page = await fetch(`${base}/dashboard/`);
    assert.is(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    await page.arrayBuffer();

    const health = await fetch(`${base}/healthz`);
    assert.is(health.status, 200);
    const healthBody = (await health.json()) as {
      data: { status: string; request_log: { queued: number; written: number; dropped: number } };
      meta: { requestId: string };
    };
    assert.match(healthBody.meta.requestId, REQ_ID);
    assert.is(healthBody.data.status, "ok");
    assert.is(healthBody.data.request_log.dropped, 0);
    assert.is(typeof healthBody.data.request_log.written, "number");
    assert.is(health.headers.get("x-request-id"), healthBody.meta.requestId);

    const ready = await fetch(`${base}/readyz`, { headers: { "x-request-id": "ready-1" } });
    assert.is(ready.status, 200);
    assert.equal(await ready.json(), { data: { status: "ready" }, meta: { requestId: "ready-1" } });

    const list = await fetch(`${base}/admin/systems`, { headers: { authorization: `Bearer ${key}`, "x-request-id": "list-1" } });
    assert.is(list.status, 200);
    assert.equal(await list.json(), { data: [], meta: { requestId: "list-1" } });
    const noKey = await fetch(`${base}/admin/systems`);
    assert.is(noKey.status, 401);
    await noKey.arrayBuffer();

    grpcJs = createGrpcJsClient(SystemService, `127.0.0.1:${port}`);
    const res = await grpcJs.call.listSystems(create(ListSystemsRequestSchema, {}), { authorization: `Bearer ${key}` });
    assert.is(res.systems.length, 0);
    grpcJs.close();
    grpcJs = undefined;

    const started = Date.now();
    assert.ok(main.child.kill("SIGTERM"));
    const code = await within(10_000, "exit after SIGTERM", main.exited);
    assert.is(code, 0, `stderr: ${main.stderr()}`);
    assert.ok(Date.now() - started < 10_000);

    const stdout = main.stdout();
    assert.not.ok(stdout.includes(key), "the generated key never appears in the logs");
    assert.not.ok(stdout.includes("erpl_master_"), "no part of the key appears in the logs");
    const lines = stdout.split("\n").filter((l) => l !== "");
    const logs = lines.map((l) => JSON.parse(l) as { msg: string; signal?: string; level: number });
    assert.ok(logs.some((l) => l.msg.startsWith("ERPLINK_MASTER_KEY is not set")));
    assert.ok(logs.some((l) => l.msg === "shutting down" && l.signal === "SIGTERM"));
    assert.is((main.stderr().match(KEY_PATTERN) ?? []).length, 1, "printed exactly once");
  } finally {
    grpcJs?.close();
    await main?.kill();
  }
});

proc("invalid environment (PORT=abc): exit code 2, stderr names PORT", async () => {
  const main = spawnMain({ PORT: "abc", HOST: "127.0.0.1", ERPLINK_DATA_DIR: ":memory:" });
  try {
    const code = await within(10_000, "exit on invalid config", main.exited);
    assert.is(code, 2);
    assert.is(main.stderr(), 'erplink: invalid configuration:\n  - PORT must be an integer from 0 to 65535 (got "abc")\n');
    assert.is(main.stdout(), "");
  } finally {
    await main.kill();
  }
});

proc.run();
