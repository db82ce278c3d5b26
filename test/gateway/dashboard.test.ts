/**
 * The dashboard's routes (src/gateway/dashboard.ts) through `app.inject()`:
 * the redirect, the page and its hashed assets with their cache headers,
 * client-side routes served the page, asset-looking paths a 404 in the
 * envelope, and the strict security headers on every answer.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { json } from "../../test-support/http.js";
import { worldTests } from "../../test-support/rpc.js";
import { DASHBOARD_CSP } from "../../src/gateway/dashboard.js";

const test = suite("dashboard routes");
const it = worldTests(test);

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function assertSecurityHeaders(res: { headers: Record<string, unknown> }) {
  assert.is(res.headers["content-security-policy"], CSP);
  assert.is(res.headers["x-content-type-options"], "nosniff");
  assert.is(res.headers["referrer-policy"], "no-referrer");
}

test("the CSP constant is the issue's policy", () => {
  assert.is(DASHBOARD_CSP, CSP);
});

it("/dashboard redirects to /dashboard/ (keeping the query)", async (w) => {
  const res = await w.app.inject({ method: "GET", url: "/dashboard" });
  assert.is(res.statusCode, 308);
  assert.is(res.headers.location, "/dashboard/");
  assertSecurityHeaders(res);
  const q = await w.app.inject({ method: "GET", url: "/dashboard?x=1" });
  assert.is(q.headers.location, "/dashboard/?x=1");
});

it("the page is no-store HTML loading only hashed same-origin assets, with no inline script or style", async (w) => {
  const res = await w.app.inject({ method: "GET", url: "/dashboard/" });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["content-type"], "text/html; charset=utf-8");
  assert.is(res.headers["cache-control"], "no-store");
  assertSecurityHeaders(res);
  const scripts = [...res.body.matchAll(/<script([^>]*)>([^<]*)<\/script>/g)];
  assert.is(scripts.length, 1);
  assert.match(scripts[0]![1]!, /^ type="module" src="\/dashboard\/assets\/app-[A-Z0-9]{8}\.js"$/);
  assert.is(scripts[0]![2], "", "no inline script");
  assert.not.match(res.body, /<style|\sstyle=|\son[a-z]+=/i);
  assert.match(res.body, /<link rel="stylesheet" href="\/dashboard\/assets\/app-[A-Z0-9]{8}\.css">/);
});

it("assets are served with a year's immutable cache and their types", async (w) => {
  const page = (await w.app.inject({ method: "GET", url: "/dashboard/" })).body;
  const js = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(page)![1]!;
  const css = /href="(\/dashboard\/assets\/[^"]+\.css)"/.exec(page)![1]!;
  const script = await w.app.inject({ method: "GET", url: js });
  assert.is(script.statusCode, 200);
  assert.is(script.headers["content-type"], "text/javascript; charset=utf-8");
  assert.is(script.headers["cache-control"], "public, max-age=31536000, immutable");
  assertSecurityHeaders(script);
  assert.ok(script.body.length > 1000, "the bundled app");
  assert.ok(script.body.includes("/admin/sessions?cookie=true"), "the app signs in through /admin");
  const style = await w.app.inject({ method: "GET", url: css });
  assert.is(style.statusCode, 200);
  assert.is(style.headers["content-type"], "text/css; charset=utf-8");
  assert.is(style.headers["cache-control"], "public, max-age=31536000, immutable");
});

it("client-side routes serve the page; asset-looking and unknown asset paths are a 404 in the envelope", async (w) => {
  const page = await w.app.inject({ method: "GET", url: "/dashboard/" });
  for (const url of ["/dashboard/systems", "/dashboard/api-keys/key_1", "/dashboard/logs?api_key_id=x"]) {
    const res = await w.app.inject({ method: "GET", url });
    assert.is(res.statusCode, 200, url);
    assert.is(res.body, page.body, url);
    assert.is(res.headers["cache-control"], "no-store", url);
    assertSecurityHeaders(res);
  }
  for (const [url, message] of [
    ["/dashboard/favicon.ico", "no route for GET /dashboard/favicon.ico"],
    ["/dashboard/systems/app.js", "no route for GET /dashboard/systems/app.js"],
    ["/dashboard/assets/app-AAAAAAAA.js", 'no dashboard asset "app-AAAAAAAA.js"'],
    ["/dashboard/assets/", 'no dashboard asset ""'],
  ] as const) {
    const res = await w.app.inject({ method: "GET", url });
    assert.is(res.statusCode, 404, url);
    assert.equal(json(res), { error: { code: "NOT_FOUND", message, requestId: res.headers["x-request-id"] } }, url);
    assertSecurityHeaders(res);
  }
});

it("the dashboard answers no method but GET and HEAD", async (w) => {
  const res = await w.app.inject({ method: "POST", url: "/dashboard/", payload: {} });
  assert.is(res.statusCode, 404);
  const head = await w.app.inject({ method: "HEAD", url: "/dashboard/" });
  assert.is(head.statusCode, 200);
  assert.is(head.headers["cache-control"], "no-store");
});

test.run();
