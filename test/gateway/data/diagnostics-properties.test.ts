/**
 * The diagnostics under attack, property-based (fast-check, bounded), through
 * the REST facade:
 *
 * - a hostile back end, scripted per run, that echoes what erplink sent it
 *   (the Basic credentials, the bearer and OAuth tokens) and what it gave
 *   erplink (its access token, CSRF token and session cookie) into every
 *   place an answer could carry them: status lines, `Location` (as userinfo
 *   and query, on another host), `WWW-Authenticate`, version headers, the
 *   token endpoint's error, and `$metadata` documents (attribute values, tag
 *   names, text). The catalog, the connection test and explain must never
 *   show any of it, never follow a redirect to the other host, and never
 *   answer 500;
 * - hostile explain bodies (URLs with control characters, absolute URLs to
 *   other hosts, another instance, binary-looking and long bodies, odd
 *   methods and headers): 200 with a decision, or 400/404/413 naming the
 *   problem; never a 500, never a request to another host, never a secret;
 * - hostile service names for the catalog and the connection test: 400 or an
 *   answer, never a 500, and never a fetch outside the instance's base URL;
 * - a `$metadata` document larger than erplink reads, and one that trickles:
 *   bounded in size and time, for the catalog, the connection test and the
 *   data path alike.
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_DIAG_RUNS (60).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MAX_METADATA_BYTES } from "../../../src/gateway/data/metadata-cache.js";
import { envInt, fuzzSeed } from "../../../test-support/fuzz/harness.js";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { json, post } from "../../../test-support/http.js";
import { AUTH, createWorld, type World } from "../../../test-support/world.js";

const PASSWORD = "pw-S3CRET-basic";
const BEARER = "bearer-S3CRET-token";
const CLIENT_SECRET = "client-S3CRET-secret";
const ACCESS_TOKEN = "access-S3CRET-token";
const CSRF = "csrf-S3CRET-token";
const COOKIE = "ck-S3CRET-cookie";
const BASIC = Buffer.from(`erp-user:${PASSWORD}`).toString("base64");
const CLIENT_BASIC = Buffer.from(`client-1:${CLIENT_SECRET}`).toString("base64");
/** Every secret erplink holds or obtains for these back ends, in every form it is sent. */
const SECRETS = [PASSWORD, BEARER, CLIENT_SECRET, ACCESS_TOKEN, CSRF, COOKIE, BASIC, CLIENT_BASIC, "S3CRET"];

/** How the hostile back end answers a request (drawn per run). */
interface Script {
  /** Status of the answer to `$metadata` and to the base URL. */
  readonly status: number;
  /** Where the echo goes. */
  readonly echo: "location" | "www-authenticate" | "odata-version" | "body-version" | "body-tag" | "body-text" | "csrf" | "none";
  /** What the token endpoint does: answer, refuse echoing, or redirect. */
  readonly token: "ok" | "refuse" | "redirect";
}

interface Ctx {
  world: World & { readonly errors: unknown[] };
  upstream: http.Server;
  /** Another host: nothing may ever reach it. */
  evil: http.Server;
  evilHits: string[];
  origin: string;
  evilOrigin: string;
  script: Script;
  /** Instance name -> id. */
  instances: Record<string, string>;
  keyId: string;
  /** Bytes of `$metadata` sent by the oversized back end, and whether it could send them all. */
  hugeSent: number;
  hugeDone: boolean;
}

const Diag = suite<Ctx>("diagnostics: hostile back ends and inputs (property-based)");

/** What the back end heard (the credentials and session erplink sent), as it may echo it. */
function echoOf(req: http.IncomingMessage): string {
  return [req.headers.authorization, req.headers.cookie, req.headers["x-csrf-token"]].filter((v) => v !== undefined).join(" ");
}

/** An XML name made of what was heard (letters, digits, '-', '_', '.'). */
function xmlName(s: string): string {
  return `x${s.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
}

Diag.before(async (ctx) => {
  ctx.evilHits = [];
  ctx.evil = http.createServer((req, res) => {
    ctx.evilHits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
    res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
  });
  await new Promise<void>((r) => ctx.evil.listen(0, "127.0.0.1", r));
  ctx.evilOrigin = `http://127.0.0.1:${(ctx.evil.address() as AddressInfo).port}`;
  ctx.script = { status: 200, echo: "none", token: "ok" };
  ctx.hugeSent = 0;
  ctx.hugeDone = false;
  ctx.upstream = http.createServer(async (req, res) => {
    for await (const _ of req);
    const url = req.url ?? "";
    const heard = echoOf(req);
    const s = ctx.script;
    if (url.startsWith("/oauth/token")) {
      if (s.token === "redirect") return void res.writeHead(307, { location: `${ctx.evilOrigin}/token?secret=${encodeURIComponent(heard)}` }).end();
      if (s.token === "refuse") return void res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: CLIENT_SECRET, error_description: heard }));
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: ACCESS_TOKEN, token_type: "Bearer", expires_in: 3600 }));
    }
    if (url.startsWith("/huge/")) {
      // A $metadata document without end, as fast as the socket takes it.
      res.writeHead(200, { "content-type": "application/xml" });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      res.write('<?xml version="1.0"?><edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0"><!--');
      const pump = () => {
        while (!res.destroyed && sent < MAX_METADATA_BYTES + 16 * 1024 * 1024) {
          sent += chunk.length;
          ctx.hugeSent = sent;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        if (!res.destroyed) ctx.hugeDone = true;
        res.end();
      };
      pump();
      return;
    }
    if (url.startsWith("/slow/")) {
      // One byte a while: never done within the upstream timeout.
      res.writeHead(200, { "content-type": "application/xml" });
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(" ")), 50);
      res.on("close", () => clearInterval(timer));
      return;
    }
    const headers: Record<string, string> = { "content-type": "application/xml" };
    if (s.echo === "location") headers.location = `http://${encodeURIComponent(heard)}:${encodeURIComponent(heard)}@${ctx.evilOrigin.slice(7)}/login?t=${encodeURIComponent(heard)}#${encodeURIComponent(heard)}`;
    if (s.echo === "www-authenticate") headers["www-authenticate"] = `${xmlName(heard)} realm="${heard.replace(/"/g, "")}"`;
    if (s.echo === "odata-version") headers["odata-version"] = heard.replace(/[^\x20-\x7e]/g, "");
    if (s.echo === "csrf" || req.headers["x-csrf-token"] === "Fetch") {
      headers["x-csrf-token"] = s.echo === "csrf" ? heard.replace(/[^\x20-\x7e]/g, "") : CSRF;
      headers["set-cookie"] = `SAP_SESSIONID=${COOKIE}; path=/`;
    }
    let body = V4_METADATA;
    if (s.echo === "body-version") body = `<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="${heard.replace(/"/g, "")}"/>`;
    if (s.echo === "body-tag") body = `<${xmlName(heard)}>`;
    if (s.echo === "body-text") body = `<html>${heard}</html>`;
    res.writeHead(s.status, headers).end(body);
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  ctx.origin = `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}`;
  ctx.world = await createWorld({ upstreamTimeoutMs: 1_000, adminLimits: { perMinute: 1_000_000, perDay: 10_000_000 } });
  const app = ctx.world.app;
  const sys = json(await post(app, "/admin/systems", { name: "S4" })).data.id;
  ctx.instances = {};
  const instance = async (name: string, base: string, auth: Record<string, string>) => {
    const res = await post(app, `/admin/systems/${sys}/instances`, { name, base_url: `${ctx.origin}${base}`, sap_client: "100", auth });
    assert.is(res.statusCode, 201, res.body);
    ctx.instances[name] = json(res).data.id;
  };
  await instance("basic", "/b/", { type: "basic", username: "erp-user", password: PASSWORD });
  await instance("bearer", "/t/", { type: "bearer", token: BEARER });
  await instance("oauth", "/o/", { type: "oauth2_client_credentials", token_url: `${ctx.origin}/oauth/token?x=1`, client_id: "client-1", client_secret: CLIENT_SECRET });
  await instance("huge", "/huge/", { type: "basic", username: "erp-user", password: PASSWORD });
  await instance("slow", "/slow/", { type: "basic", username: "erp-user", password: PASSWORD });
  const key = await post(app, "/admin/api-keys", {
    name: "k",
    permissions: Object.fromEntries(["basic", "bearer", "oauth", "huge", "slow", "other"].map((i) => [i, { "*": { "*": ["list", "get", "create", "update", "delete"] } }])),
  });
  ctx.keyId = json(key).data.id;
});

Diag.after(async (ctx) => {
  await ctx.world?.close();
  for (const server of [ctx.upstream, ctx.evil]) {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  }
});

/** Asserts an answer in the envelope, without a secret, and not a 500. */
function clean(res: { statusCode: number; body: string; headers: Record<string, unknown> }, what: string): void {
  assert.ok(res.statusCode < 500 || res.statusCode === 502 || res.statusCode === 504, `${what}: ${res.statusCode} ${res.body}`);
  const body = json(res as never);
  assert.ok(body.data !== undefined || typeof body.error?.code === "string", `${what}: envelope: ${res.body}`);
  for (const secret of SECRETS) assert.not.ok(res.body.includes(secret), `${what}: ${secret} in ${res.body}`);
  for (const secret of SECRETS) assert.not.ok(JSON.stringify(res.headers).includes(secret), `${what}: ${secret} in the headers`);
}

let serviceCounter = 0;

Diag("a hostile back end cannot make the catalog, the connection test or explain show a secret, follow it to another host, or fail", async (ctx) => {
  const app = ctx.world.app;
  const script = fc.record({
    status: fc.constantFrom(200, 200, 301, 302, 307, 401, 403, 404, 500, 503),
    echo: fc.constantFrom("location", "www-authenticate", "odata-version", "body-version", "body-tag", "body-text", "csrf", "none"),
    token: fc.constantFrom("ok", "ok", "refuse", "redirect"),
  });
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(script, fc.constantFrom("basic", "bearer", "oauth"), fc.boolean(), async (s, name, withService) => {
      runs++;
      ctx.script = s as Script;
      // A fresh service each time: the $metadata cache would otherwise answer for the back end.
      const service = `SVC${++serviceCounter}`;
      const id = ctx.instances[name]!;
      const catalog = await app.inject({ method: "GET", url: `/admin/instances/${id}/services/${service}/catalog`, headers: AUTH });
      clean(catalog, `catalog ${JSON.stringify(s)} ${name}`);
      const test = await post(app, `/admin/instances/${id}/test`, withService ? { service } : {});
      clean(test, `connection test ${JSON.stringify(s)} ${name}`);
      assert.is(test.statusCode, 200, test.body);
      const explained = await post(app, `/admin/api-keys/${ctx.keyId}/explain`, {
        instance: name,
        method: "POST",
        url: `/odata/${name}/${service}X/Things`,
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      clean(explained, `explain ${JSON.stringify(s)} ${name}`);
      assert.is(explained.statusCode, 200, explained.body);
      assert.equal(ctx.evilHits, [], "nothing reached the other host");
    }),
    { seed: fuzzSeed(), includeErrorInReport: true, numRuns: envInt("ERPLINK_DIAG_RUNS", 60) },
  );
  assert.ok(runs > 0);
  assert.equal(ctx.world.errors, [], "no masked internal errors");
});

Diag("hostile explain bodies are decided or refused in the envelope (200, 400, 404, 413), never a 500, another host or a secret", async (ctx) => {
  const app = ctx.world.app;
  ctx.script = { status: 200, echo: "none", token: "ok" };
  const hostileText = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.constantFrom("\u0000", "\r\n", "\n", "\t", " ", "#", "?", "%", "%00", "%0D%0A", "\ud800", "\udfff", "\ufeff", "..", "//", "\\"),
  );
  const url = fc.oneof(
    fc.tuple(fc.constantFrom("basic", "bearer", "oauth", "other", "../basic", "%62asic", ""), fc.constantFrom("SVC", "$metadata", "", "S/../T", "S%2F..%2FT"), hostileText).map(
      ([i, s, rest]) => `/odata/${i}/${s}/${rest}`,
    ),
    hostileText.map((t) => `${ctx.evilOrigin}/odata/basic/SVC/${t}`),
    hostileText.map((t) => `//127.0.0.1:1/odata/basic/SVC/${t}`),
    hostileText.map((t) => `http://user:${PASSWORD}@evil.example/odata/basic/SVC/${t}`),
    hostileText,
  );
  const body = fc.oneof(fc.constant(undefined), hostileText, fc.string({ unit: "binary", maxLength: 2000 }), fc.constant("x".repeat(200_000)));
  const headers = fc.dictionary(fc.oneof(fc.constantFrom("authorization", "cookie", "x-csrf-token", "content-type", "Content-Type", "host", "x-http-method", "if-match"), fc.string({ maxLength: 8 })), hostileText, { maxKeys: 4 });
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        instance: fc.constantFrom("basic", "other", "", "ba\u0000sic"),
        method: fc.constantFrom("GET", "get", "POST", "MERGE", "OPTIONS", "CONNECT", "G\u0000T", ""),
        url,
        headers,
        body,
        service: fc.constantFrom(undefined, "", "SVC", "S/T", "..", "\u0000"),
      }),
      async (r) => {
        const payload = JSON.stringify({ ...r, ...(r.body === undefined ? {} : { body: r.body }) });
        const res = await app.inject({ method: "POST", url: `/admin/api-keys/${ctx.keyId}/explain`, headers: { ...AUTH, "content-type": "application/json" }, payload });
        assert.ok([200, 400, 404, 413].includes(res.statusCode), `${payload.slice(0, 300)} -> ${res.statusCode} ${res.body}`);
        clean(res, `explain ${payload.slice(0, 300)}`);
        assert.equal(ctx.evilHits, [], "nothing reached the other host");
      },
    ),
    { seed: fuzzSeed(), includeErrorInReport: true, numRuns: envInt("ERPLINK_DIAG_RUNS", 60) * 3 },
  );
  // A body over the body limit is a 413 of the call, in the envelope.
  const big = await post(app, `/admin/api-keys/${ctx.keyId}/explain`, { instance: "basic", method: "POST", url: "/odata/basic/SVC/X", body: "x".repeat(1_100_000) });
  assert.is(big.statusCode, 413, big.body);
  assert.equal(ctx.world.errors, [], "no masked internal errors");
});

Diag("hostile service names for the catalog and the connection test: 400 or an answer, never a 500, never outside the base URL", async (ctx) => {
  const app = ctx.world.app;
  ctx.script = { status: 200, echo: "none", token: "ok" };
  const seen: string[] = [];
  const listener = (req: http.IncomingMessage) => seen.push(req.url ?? "");
  ctx.upstream.on("request", listener);
  try {
    const names = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom("..", ".", "%2e%2e", "a/b", "a%2Fb", "?x", "#", "a b", "\u0000", "@evil.example", ":80", "\\..\\x", "a;b=c", "é", "$metadata", "x".repeat(300)),
    );
    await fc.assert(
      fc.asyncProperty(names, async (name) => {
        const catalog = await app.inject({ method: "GET", url: `/admin/instances/${ctx.instances.basic}/services/${encodeURIComponent(name)}/catalog`, headers: AUTH });
        // 414: a name longer than the router reads in a path parameter.
        assert.ok([200, 400, 404, 414, 502, 504].includes(catalog.statusCode), `${JSON.stringify(name)} -> ${catalog.statusCode} ${catalog.body}`);
        clean(catalog, `catalog ${JSON.stringify(name)}`);
        const test = await post(app, `/admin/instances/${ctx.instances.basic}/test`, { service: name });
        assert.ok([200, 400].includes(test.statusCode), `${JSON.stringify(name)} -> ${test.statusCode} ${test.body}`);
        clean(test, `test ${JSON.stringify(name)}`);
      }),
      { seed: fuzzSeed(), includeErrorInReport: true, numRuns: envInt("ERPLINK_DIAG_RUNS", 60) * 2 },
    );
  } finally {
    ctx.upstream.off("request", listener);
  }
  for (const url of seen) assert.ok(url.startsWith("/b/"), `a fetch outside the base URL: ${url}`);
  assert.equal(ctx.evilHits, []);
  assert.equal(ctx.world.errors, [], "no masked internal errors");
});

Diag("a $metadata document larger than erplink reads is refused after that many bytes (catalog, connection test, data path), not held in memory", async (ctx) => {
  // A world of its own with a generous upstream timeout: 32 MiB through
  // loopback on a loaded machine can take longer than the suite's 1 s, and
  // the limit, not the timeout, is what is tested here.
  const world = await createWorld({ upstreamTimeoutMs: 60_000, adminLimits: { perMinute: 1_000_000, perDay: 10_000_000 } });
  try {
    const sys = json(await post(world.app, "/admin/systems", { name: "S4" })).data.id;
    const created = await post(world.app, `/admin/systems/${sys}/instances`, {
      name: "huge",
      base_url: `${ctx.origin}/huge/`,
      auth: { type: "basic", username: "erp-user", password: PASSWORD },
    });
    assert.is(created.statusCode, 201, created.body);
    await hugeMetadataIsRefused(ctx, world.app, json(created).data.id);
  } finally {
    await world.close();
  }
});

async function hugeMetadataIsRefused(ctx: Ctx, app: World["app"], hugeId: string): Promise<void> {
  ctx.hugeDone = false;
  const catalog = await app.inject({ method: "GET", url: `/admin/instances/${hugeId}/services/BIG/catalog`, headers: AUTH });
  assert.is(catalog.statusCode, 502, catalog.body);
  assert.is(json(catalog).error.message, `cannot read the service's catalog: the service's $metadata is larger than ${MAX_METADATA_BYTES / 1024 / 1024} MiB`);
  assert.not.ok(ctx.hugeDone, `the back end could send all of ${ctx.hugeSent} bytes`);
  ctx.hugeDone = false;
  const test = json(await post(app, `/admin/instances/${hugeId}/test`, { service: "BIG2" })).data;
  assert.equal(
    [test.ok, test.error],
    [false, `http: the service's $metadata is larger than ${MAX_METADATA_BYTES / 1024 / 1024} MiB (HTTP 200 from GET ${ctx.origin}/huge/BIG2/$metadata)`],
  );
  assert.not.ok(ctx.hugeDone, `the back end could send all of ${ctx.hugeSent} bytes`);
  // The data path reads the same way (it shares the cache's reader).
  ctx.hugeDone = false;
  const key = json(await post(app, "/admin/api-keys", { name: "huge reader", permissions: { huge: { BIG3: { Things: ["list"] } } } })).data;
  const data = await app.inject({ method: "GET", url: "/odata/huge/BIG3/Things", headers: { authorization: `Bearer ${key.key}` } });
  assert.is(data.statusCode, 502, data.body);
  assert.is(json(data).error.message, `cannot authorize the request: the service's $metadata is larger than ${MAX_METADATA_BYTES / 1024 / 1024} MiB`);
  assert.not.ok(ctx.hugeDone, `the back end could send all of ${ctx.hugeSent} bytes`);
}

Diag("a $metadata document that trickles is given up at the upstream timeout: 504 for the catalog, a failed step for the connection test", async (ctx) => {
  const app = ctx.world.app;
  const t0 = Date.now();
  const catalog = await app.inject({ method: "GET", url: `/admin/instances/${ctx.instances.slow}/services/SLOW/catalog`, headers: AUTH });
  assert.is(catalog.statusCode, 504, catalog.body);
  assert.is(json(catalog).error.message, "cannot read the service's catalog: the back end did not send the service's $metadata in time");
  const test = json(await post(app, `/admin/instances/${ctx.instances.slow}/test`, { service: "SLOW2" })).data;
  assert.equal([test.ok, test.error], [false, "http: the http step did not finish within the upstream timeout"]);
  assert.ok(Date.now() - t0 < 4_000, `bounded by the upstream timeout (1 s each), took ${Date.now() - t0} ms`);
});

Diag.run();
