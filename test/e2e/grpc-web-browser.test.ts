/**
 * A real browser client: Chromium (playwright-core) loads a page from
 * another origin whose script is the official grpc-web client in its
 * default text mode (`application/grpc-web-text`), bundled by esbuild
 * (test-support/grpc-web-page.ts), and calls erplink. From the origin listed
 * in ERPLINK_CORS_ORIGINS the preflight passes and the calls succeed (the
 * rate-limit headers readable); from an unlisted origin (the same page under
 * `localhost` instead of `127.0.0.1`) the browser stops them.
 */
import http from "node:http";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { REPO_ROOT, freePort } from "../../test-support/e2e.js";
import type { CallResult } from "../../test-support/grpc-web-page.js";
import { json, post } from "../../test-support/http.js";
import { MASTER_KEY, createWorld, type World } from "../../test-support/world.js";

interface Ctx {
  world: World;
  site: http.Server;
  sitePort: number;
  erplink: string;
  browser: Browser;
  page: Page;
  dataKey: { id: string; key: string };
  setupError?: unknown;
}

/** Calls one of the page's functions and returns its result. */
async function run(page: Page, fn: "authorize" | "listSystems" | "check" | "unknown", ...args: string[]): Promise<CallResult> {
  return (await page.evaluate(
    ([name, rest]) => (globalThis as unknown as { erplinkGrpcWeb: Record<string, (...a: string[]) => Promise<unknown>> }).erplinkGrpcWeb[name]!(...rest),
    [fn, args] as const,
  )) as CallResult;
}

if (browserAvailable("grpc-web browser suite")) {
  const test = suite<Ctx>("e2e: the official grpc-web client in Chromium, cross-origin");

  test.before(async (ctx) => {
    try {
      const esbuild = await import("esbuild");
      const bundle = await esbuild.build({
        entryPoints: [join(REPO_ROOT, "test-support", "grpc-web-page.ts")],
        bundle: true,
        write: false,
        format: "iife",
        platform: "browser",
        target: "es2022",
        logLevel: "silent",
      });
      const script = bundle.outputFiles[0]!.text;
      ctx.sitePort = await freePort();
      ctx.site = http.createServer((req, res) => {
        if (req.url === "/app.js") {
          res.writeHead(200, { "content-type": "text/javascript" }).end(script);
        } else {
          res.writeHead(200, { "content-type": "text/html" }).end('<!doctype html><title>grpc-web page</title><script src="/app.js"></script>');
        }
      });
      await new Promise<void>((resolve) => ctx.site.listen(ctx.sitePort, "127.0.0.1", resolve));
      ctx.world = await createWorld({ dualProtocol: true, corsOrigins: [`http://127.0.0.1:${ctx.sitePort}`] });
      await ctx.world.app.listen({ port: 0, host: "127.0.0.1" });
      ctx.erplink = `http://127.0.0.1:${(ctx.world.app.server.address() as { port: number }).port}`;
      ctx.dataKey = json(await post(ctx.world.app, "/admin/api-keys", { name: "browser", permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } } })).data;
      ctx.browser = await launchBrowser();
      ctx.page = await ctx.browser.newPage();
    } catch (err) {
      // uvu swallows an error thrown by a before hook: report it from every test instead.
      ctx.setupError = err;
    }
  });

  test.after(async (ctx) => {
    await ctx.browser?.close();
    await ctx.world?.close();
    await new Promise((resolve) => (ctx.site ? ctx.site.close(resolve) : resolve(undefined)));
  });

  const ready = (ctx: Ctx) => {
    if (ctx.setupError !== undefined) throw ctx.setupError;
  };

  test("from the listed origin: Authorize over grpc-web-text is allowed", async (ctx) => {
    ready(ctx);
    await ctx.page.goto(`http://127.0.0.1:${ctx.sitePort}/`);
    const res = await run(ctx.page, "authorize", ctx.erplink, ctx.dataKey.key);
    assert.ok(res.ok, JSON.stringify(res));
    const message = (res as { message: { allowed: boolean; keyId: string } }).message;
    assert.is(message.allowed, true);
    assert.is(message.keyId, ctx.dataKey.id);
  });

  test("from the listed origin: an admin call with a bearer token, its rate-limit headers readable (exposed)", async (ctx) => {
    ready(ctx);
    const res = await run(ctx.page, "listSystems", ctx.erplink, MASTER_KEY);
    assert.ok(res.ok, JSON.stringify(res));
    const headers = (res as { headers: Record<string, string> }).headers;
    assert.match(headers["x-ratelimit-remaining"] ?? "", /^\d+$/, JSON.stringify(headers));
    assert.match(headers["x-request-id"] ?? "", /^req_/);
  });

  test("from the listed origin: health SERVING; an unknown method is UNIMPLEMENTED (12) with its message", async (ctx) => {
    ready(ctx);
    const check = await run(ctx.page, "check", ctx.erplink);
    assert.equal(check.ok && (check.message as { status: number }).status, 1);
    const unknown = await run(ctx.page, "unknown", ctx.erplink);
    assert.equal(unknown, { ok: false, code: 12, message: "unknown method Nope for service erplink.admin.v1.SystemService" });
  });

  test("from an unlisted origin (localhost instead of 127.0.0.1): the browser stops the call at the preflight", async (ctx) => {
    ready(ctx);
    await ctx.page.goto(`http://localhost:${ctx.sitePort}/`);
    const logged: string[] = [];
    ctx.page.on("console", (m) => logged.push(m.text()));
    const res = await run(ctx.page, "authorize", ctx.erplink, ctx.dataKey.key);
    // grpc-web reports a request the browser blocked as UNKNOWN with HTTP status 0: no answer reached the page.
    assert.equal(res, { ok: false, code: 2, message: "Http response at 400 or 500 level, http status code: 0" });
    assert.ok(
      logged.some((line) => line.includes("/erplink.authz.v1.AuthorizationService/Authorize") && line.includes("blocked by CORS policy") && line.includes("preflight")),
      logged.join("\n"),
    );
  });

  test.run();
}
