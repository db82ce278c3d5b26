/**
 * The connection test's steps against small back ends of our own: OAuth 2.0
 * client credentials (a token fetched, or refused), a TLS back end with an
 * untrusted certificate, a back end that never answers (bounded by the
 * timeout), a redirect to a logon page, an unreadable `$metadata`, a CSRF
 * fetch that fails. Never a secret in the outcome.
 */
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { ConnectionTest } from "../../../src/gen/erplink/admin/v1/diagnostics_pb.js";
import { testConnection } from "../../../src/gateway/data/connection-test.js";
import { ServiceRoot } from "../../../src/gateway/data/service-root.js";
import type { DiagnosedCredentials, DiagnosedInstance } from "../../../src/schema/diagnostics.js";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { SELF_SIGNED_CERT, SELF_SIGNED_KEY } from "../../../test-support/self-signed.js";

const CLIENT_SECRET = "s3cr3t-client-value";
const TOKEN = "access-token-value-42";

interface Ctx {
  server: http.Server;
  origin: string;
  /** What the next request to the OData root gets: `ok`, `redirect`, `garbage`, `silent`, `csrf-405`. */
  mode: string;
  seen: { url: string; authorization: string | undefined }[];
}

const Conn = suite<Ctx>("connection test");

Conn.before.each(async (ctx) => {
  ctx.mode = "ok";
  ctx.seen = [];
  ctx.server = http.createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += String(chunk);
    ctx.seen.push({ url: req.url ?? "", authorization: req.headers.authorization });
    if (req.url?.startsWith("/oauth/token?")) {
      const expected = `Basic ${Buffer.from(`client-1:${CLIENT_SECRET}`).toString("base64")}`;
      if (req.headers.authorization !== expected || body !== "grant_type=client_credentials") {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "invalid_client", error_description: `bad ${CLIENT_SECRET}` }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: TOKEN, token_type: "bearer", expires_in: 3600 }));
      return;
    }
    if (ctx.mode === "silent") return;
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401, { "www-authenticate": "Bearer" }).end();
      return;
    }
    if (ctx.mode === "redirect") {
      res.writeHead(302, { location: "https://login.example/saml/login?SAMLRequest=secret-ish&RelayState=x" }).end();
      return;
    }
    if (req.url?.includes("$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(ctx.mode === "garbage" ? "<html>logon</html>" : V4_METADATA);
      return;
    }
    if (ctx.mode === "csrf-405") {
      res.writeHead(405).end();
      return;
    }
    // Not SAP: no CSRF token.
    res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" }).end("{}");
  });
  await new Promise<void>((r) => ctx.server.listen(0, "127.0.0.1", r));
  ctx.origin = `http://127.0.0.1:${(ctx.server.address() as AddressInfo).port}`;
});

Conn.after.each(async (ctx) => {
  ctx.server.closeAllConnections();
  await new Promise<void>((r) => ctx.server.close(() => r()));
});

function instance(baseUrl: string, credentials: DiagnosedCredentials): DiagnosedInstance {
  return { id: "ins_test", name: "prod", baseUrl, servicePath: (s) => s, credentials };
}

const oauth = (ctx: Ctx, secret = CLIENT_SECRET): DiagnosedCredentials => ({
  type: "oauth2_client_credentials",
  tokenUrl: `${ctx.origin}/oauth/token?audience=private`,
  clientId: "client-1",
  clientSecret: secret,
});

const names = (t: ConnectionTest) => t.steps.map((s) => `${s.name}:${s.ok ? "ok" : "failed"}`);

function assertNoSecret(t: ConnectionTest): void {
  const text = JSON.stringify(t);
  for (const secret of [CLIENT_SECRET, TOKEN, "secret-ish", "audience=private"]) assert.not.ok(text.includes(secret), `no '${secret}' in ${text}`);
}

async function run(ctx: Ctx, credentials: DiagnosedCredentials, service: string | undefined, timeoutMs = 2_000): Promise<ConnectionTest> {
  const ins = instance(`${ctx.origin}/odata`, credentials);
  return testConnection(ins, service === undefined ? undefined : new ServiceRoot(ins, service), { timeoutMs });
}

Conn("OAuth 2.0: a token is fetched now (step oauth) and used for $metadata and the CSRF fetch; a back end without CSRF tokens is fine", async (ctx) => {
  const t = await run(ctx, oauth(ctx), "SALES");
  assert.equal(names(t), ["dns:ok", "tcp:ok", "oauth:ok", "http:ok", "odata_version:ok", "csrf:ok"]);
  assert.equal([t.ok, t.error, t.httpStatus, t.odataVersion, t.csrfToken], [true, "", 200, "4.0", false]);
  assert.is(t.steps[2]!.detail, `obtained an access token from ${ctx.origin}/oauth/token`);
  assert.is(t.steps[5]!.detail, "no CSRF token issued: the back end does not use them (modifying requests are sent without one)");
  assert.equal(ctx.seen.map((s) => [s.url, s.authorization === `Bearer ${TOKEN}`]), [
    ["/oauth/token?audience=private", false],
    ["/odata/SALES/$metadata", true],
    ["/odata/SALES/", true],
  ]);
  assertNoSecret(t);
  // A second test fetches a token again: the test says whether the credentials work now.
  await run(ctx, oauth(ctx), "SALES");
  assert.is(ctx.seen.filter((s) => s.url.startsWith("/oauth/")).length, 2);
});

Conn("OAuth 2.0: a refused client secret fails the oauth step with the endpoint's status and error code only", async (ctx) => {
  const t = await run(ctx, oauth(ctx, "wrong-secret"), "SALES");
  assert.equal(names(t), ["dns:ok", "tcp:ok", "oauth:failed"]);
  assert.is(t.error, "oauth: the back end's token endpoint refused the client credentials: HTTP 401 (invalid_client)");
  assert.not.ok(JSON.stringify(t).includes("wrong-secret"));
  assertNoSecret(t);
});

Conn("TLS: an untrusted certificate fails the tls step, in words", async () => {
  const server = https.createServer({ key: SELF_SIGNED_KEY, cert: SELF_SIGNED_CERT }, (_req, res) => res.end());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const ins = instance(`https://127.0.0.1:${(server.address() as AddressInfo).port}/odata`, { type: "none" });
    const t = await testConnection(ins, undefined, { timeoutMs: 2_000 });
    assert.equal(names(t), ["dns:ok", "tcp:ok", "tls:failed"]);
    assert.is(t.error, "tls: the TLS handshake with 127.0.0.1 failed: the certificate is self-signed (DEPTH_ZERO_SELF_SIGNED_CERT)");
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

Conn("a back end that accepts but never answers: the http step fails within the upstream timeout, and so does the whole test", async (ctx) => {
  ctx.mode = "silent";
  const started = performance.now();
  const t = await run(ctx, { type: "none" }, "SALES", 400);
  const took = performance.now() - started;
  assert.equal(names(t), ["dns:ok", "tcp:ok", "http:failed"]);
  assert.match(t.error, /^http: (GET http:\/\/127\.0\.0\.1:\d+\/odata\/SALES\/\$metadata was not answered|the http step did not finish) within the upstream timeout$/);
  assert.ok(took < 1_000 && t.durationMs < 1_000, `bounded (${took} ms)`);
});

Conn("a redirect (to a logon page) fails the http step naming where it leads, without its query", async (ctx) => {
  ctx.mode = "redirect";
  const t = await run(ctx, oauth(ctx), "SALES");
  assert.equal(names(t), ["dns:ok", "tcp:ok", "oauth:ok", "http:failed"]);
  assert.match(t.error, /^http: HTTP 302 from GET http:\/\/127\.0\.0\.1:\d+\/odata\/SALES\/\$metadata in \d+ ms, redirecting to https:\/\/login\.example\/saml\/login \(erplink does not follow redirects\)$/);
  assertNoSecret(t);
});

Conn("an unreadable $metadata fails odata_version; a failing CSRF fetch fails csrf", async (ctx) => {
  ctx.mode = "garbage";
  const t = await run(ctx, oauth(ctx), "SALES");
  assert.equal(names(t), ["dns:ok", "tcp:ok", "oauth:ok", "http:ok", "odata_version:failed"]);
  assert.match(t.error, /^odata_version: the service's \$metadata could not be read: /);
  ctx.mode = "csrf-405";
  const c = await run(ctx, oauth(ctx), "SALES");
  assert.equal(names(c), ["dns:ok", "tcp:ok", "oauth:ok", "http:ok", "odata_version:ok", "csrf:failed"]);
  assert.match(c.error, /^csrf: the back end answered HTTP 405 to the CSRF token fetch \(GET http:\/\/127\.0\.0\.1:\d+\/odata\/SALES\/\)$/);
});

Conn("without a service: the base URL's status and version header; no CSRF step", async (ctx) => {
  const t = await run(ctx, oauth(ctx), undefined);
  assert.equal(names(t), ["dns:ok", "tcp:ok", "oauth:ok", "http:ok", "odata_version:ok"]);
  assert.equal([t.url, t.httpStatus, t.odataVersion], [`${ctx.origin}/odata/`, 200, "4.0"]);
  assert.is(t.steps[4]!.detail, "OData 4.0 (from the answer's version header)");
});

Conn("a host name is resolved, and its addresses tried in turn", async (ctx) => {
  const ins = instance(ctx.origin.replace("127.0.0.1", "localhost") + "/odata", oauth(ctx));
  const t = await testConnection(ins, undefined, { timeoutMs: 2_000 });
  assert.equal(names(t), ["dns:ok", "tcp:ok", "oauth:ok", "http:ok", "odata_version:ok"]);
  assert.match(t.steps[0]!.detail, /^resolved localhost to (.+, )?127\.0\.0\.1/);
  assert.match(t.steps[1]!.detail, /^connected to 127\.0\.0\.1:\d+$/);
});

Conn.run();
