/**
 * The dashboard's and the API reference's security headers and the browser
 * session's defences, attacked through `app.inject()`: every answer under
 * `/dashboard` and `/api-reference` (any method, unknown and encoded paths,
 * errors) carries a strict Content-Security-Policy, `nosniff` and
 * `no-referrer`; asset names cannot reach other files; the redirect stays
 * on erplink; CORS stays off everywhere a cookie could be used; every admin
 * route refuses a cookie request that fails the CSRF, Origin or Fetch
 * Metadata checks, before doing anything; and neither signing in nor
 * signing out can be forged by another site.
 */
import { createHmac } from "node:crypto";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { API_REFERENCE_CSP } from "../../src/gateway/api-reference.js";
import { DASHBOARD_CSP } from "../../src/gateway/dashboard.js";
import { ROUTES } from "../../src/gateway/route-table.js";
import { envInt, fuzzSeed } from "../../test-support/fuzz/harness.js";
import { json } from "../../test-support/http.js";
import { rawHttp } from "../../test-support/raw-http.js";
import { AUTH, createWorld, type World } from "../../test-support/world.js";

const test = suite<{ world: World }>("dashboard and API reference security");

test.before(async (ctx) => {
  ctx.world = await createWorld();
});
test.after(async (ctx) => {
  await ctx.world.close();
});

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** The directives of a policy, by name (lower case), as their source lists. */
function directives(csp: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of csp.split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name !== undefined && name !== "" && !out.has(name.toLowerCase())) out.set(name.toLowerCase(), sources);
  }
  return out;
}

/** The sources a fetch directive falls back to (CSP 3: script-src-attr → script-src → default-src). */
function effective(csp: Map<string, string[]>, name: string): string[] | undefined {
  const chain: Record<string, string[]> = {
    "script-src-attr": ["script-src-attr", "script-src", "default-src"],
    "script-src-elem": ["script-src-elem", "script-src", "default-src"],
    "style-src-attr": ["style-src-attr", "style-src", "default-src"],
  };
  for (const d of chain[name] ?? [name, "default-src"]) if (csp.has(d)) return csp.get(d);
  return undefined;
}

/**
 * Fails unless the policy is strict: no inline or eval'd script or style
 * (a constant element allowed by its hash aside), only erplink's own files,
 * nothing framed, no plugins, base and form targets pinned.
 */
function assertStrictPolicy(csp: string, where: string): void {
  const d = directives(csp);
  assert.ok(!/unsafe-inline|unsafe-eval|unsafe-hashes|wasm-unsafe-eval|strict-dynamic/.test(csp), `${where}: ${csp}`);
  for (const name of ["script-src-elem", "script-src-attr", "style-src-elem", "style-src-attr", "object-src", "connect-src", "img-src", "font-src", "frame-src"]) {
    const sources = effective(d, name);
    assert.ok(sources !== undefined, `${where}: ${name} is unrestricted`);
    // Only erplink itself (and data: for images and fonts): no scheme-wide or wildcard sources, no other host.
    for (const s of sources!) {
      // A hash allows one constant element (never an attribute: 'unsafe-hashes' is refused above).
      const hash = /^'sha256-[A-Za-z0-9+/]{43}='$/.test(s) && /^(script|style)-src-/.test(name);
      const allowed = s === "'self'" || s === "'none'" || hash || (s === "data:" && (name === "img-src" || name === "font-src"));
      assert.ok(allowed, `${where}: ${name} allows ${s}`);
    }
  }
  assert.equal(effective(d, "object-src"), ["'none'"], `${where}: object-src`);
  assert.equal(d.get("frame-ancestors"), ["'none'"], `${where}: frame-ancestors`);
  assert.ok(d.has("base-uri") && ["'none'", "'self'"].includes(d.get("base-uri")![0]!) && d.get("base-uri")!.length === 1, `${where}: base-uri`);
  assert.ok(d.has("form-action") && ["'none'", "'self'"].includes(d.get("form-action")![0]!) && d.get("form-action")!.length === 1, `${where}: form-action`);
}

function assertHeaders(res: LightMyRequestResponse, csp: string, where: string): void {
  assert.is(res.headers["content-security-policy"], csp, `${where}: Content-Security-Policy`);
  assert.is(res.headers["x-content-type-options"], "nosniff", `${where}: X-Content-Type-Options`);
  assert.is(res.headers["referrer-policy"], "no-referrer", `${where}: Referrer-Policy`);
  for (const name of Object.keys(res.headers)) assert.not.ok(name.startsWith("access-control-"), `${where}: ${name}`);
}

test("both policies are strict (no inline or eval'd script, no framing, no plugins, base and form targets pinned)", () => {
  assertStrictPolicy(DASHBOARD_CSP, "dashboard");
  assertStrictPolicy(API_REFERENCE_CSP, "API reference");
});

const DASHBOARD_PATHS = [
  "/dashboard",
  "/dashboard/",
  "/dashboard?x=1",
  "/dashboard/logs?instance=%3Cscript%3E",
  "/dashboard/favicon.ico",
  "/dashboard/x.js",
  "/dashboard/assets/",
  "/dashboard/assets/nope.js",
  "/dashboard/assets/..%2F..%2Fpackage.json",
  "/dashboard/assets/%2e%2e%2fpackage.json",
  "/dashboard/assets/..%5Cpackage.json",
  "/dashboard/assets/app.js%00.css",
  "/dashboard//evil.example",
  "/%64ashboard/",
  "/dashboard/%3Csvg%20onload=alert(1)%3E",
  "/dashboard/api-keys/%E0%A4%A",
];

test("every answer under /dashboard, whatever the method and path (errors and 404s included), carries the dashboard's CSP, nosniff and no-referrer", async ({ world }) => {
  for (const url of DASHBOARD_PATHS) {
    for (const method of METHODS) {
      const res = await world.app.inject({ method, url, headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
      assertHeaders(res, DASHBOARD_CSP, `${method} ${url} (${res.statusCode})`);
      // Only GET and HEAD are served (a path that is not valid percent-encoding is a 400 first); nothing is a 5xx.
      if (method !== "GET" && method !== "HEAD") assert.ok([400, 404, 405].includes(res.statusCode), `${method} ${url}: ${res.statusCode}`);
      assert.ok(res.statusCode < 500, `${method} ${url}: ${res.statusCode}`);
    }
  }
});

test("asset names reach only the built assets: traversal, encoded separators and NUL are a 404 in the envelope, never cached for long", async ({ world }) => {
  const page = (await world.app.inject({ method: "GET", url: "/dashboard/" })).body;
  const js = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(page)![1]!;
  const css = /href="(\/dashboard\/assets\/[^"]+\.css)"/.exec(page)![1]!;
  const types: [string, string][] = [
    [js, "text/javascript; charset=utf-8"],
    [css, "text/css; charset=utf-8"],
  ];
  for (const [url, type] of types) {
    const res = await world.app.inject({ method: "GET", url });
    assert.is(res.statusCode, 200, url);
    assert.is(res.headers["content-type"], type, url);
    assert.is(res.headers["cache-control"], "public, max-age=31536000, immutable", url);
  }
  const name = js.slice("/dashboard/assets/".length);
  for (const url of [
    "/dashboard/assets/..%2F..%2Fpackage.json",
    "/dashboard/assets/..%2f..%2fsrc%2fmain.ts",
    "/dashboard/assets/%2E%2E%2F%2E%2E%2Fpackage.json",
    "/dashboard/assets/..%5C..%5Cpackage.json",
    `/dashboard/assets/${name}%00`,
    `/dashboard/assets/${name}%2F`,
    `/dashboard/assets/${name.toUpperCase()}`,
    `/dashboard/assets/.${name}`,
    "/dashboard/assets/main.tsx",
    "/dashboard/assets/app.js",
    "/dashboard/src/dashboard/main.tsx",
  ]) {
    const res = await world.app.inject({ method: "GET", url });
    assert.is(res.statusCode, 404, url);
    assert.is(json(res).error.code, "NOT_FOUND", url);
    assert.is(res.headers["content-type"], "application/json; charset=utf-8", url);
    assert.not.ok(String(res.headers["cache-control"] ?? "").includes("max-age"), `${url}: ${res.headers["cache-control"]}`);
    assertHeaders(res, DASHBOARD_CSP, url);
  }
});

test("/dashboard redirects only to /dashboard/ on erplink: no query makes the Location another host or scheme", async ({ world }) => {
  for (const query of ["?//evil.example", "?/\\evil.example", "?@evil.example", "?x=%0d%0aLocation:%20https://evil.example", "?https://evil.example", "?%2F%2Fevil.example"]) {
    const res = await world.app.inject({ method: "GET", url: `/dashboard${query}` });
    assert.is(res.statusCode, 308, query);
    const location = String(res.headers.location);
    assert.ok(location.startsWith("/dashboard/?"), `${query}: ${location}`);
    assert.is(new URL(location, "http://erplink.test").origin, "http://erplink.test", `${query}: ${location}`);
    assert.not.match(location, /[\r\n]/);
  }
});

/** A page's name with each character written as itself or as a percent-escape (upper or lower hex). */
function spelled(name: string): fc.Arbitrary<string> {
  return fc
    .array(fc.constantFrom("plain", "upper", "lower"), { minLength: name.length, maxLength: name.length })
    .map((how) =>
      [...name]
        .map((ch, i) => {
          const hex = ch.charCodeAt(0).toString(16);
          return how[i] === "plain" ? ch : `%${how[i] === "upper" ? hex.toUpperCase() : hex}`;
        })
        .join(""),
    );
}

/** Bytes a path or a query may hold that are not what they look like: invalid, non-UTF-8 and reserved escapes, dot segments. */
const PIECE = fc.constantFrom("x", "assets/", "static/index.html", "openapi.json", "%zz", "%", "%E0%A4", "%FF", "%2F", "%2f", "..", "%2e%2e", "%3Csvg%3E", ";a=b", "/", "%00", "%25");

test("every answer under /dashboard or /api-reference as the router reads the path (to the first '?' or '#', percent-decoded), sent as raw bytes, carries the page's headers", async ({ world }) => {
  // Raw bytes on a socket: inject() would parse the target with the WHATWG URL parser and drop a fragment first.
  await world.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (world.app.server.address() as AddressInfo).port;
  const seed = fuzzSeed();
  const numRuns = envInt("ERPLINK_FUZZ_RUNS", 150);
  // By construction, the path the router reads is the page's name, then nothing or `/` and pieces that hold no `?` or `#`.
  const target = fc.record({
    page: fc.constantFrom(["dashboard", DASHBOARD_CSP] as const, ["api-reference", API_REFERENCE_CSP] as const),
    method: fc.constantFrom("GET", "HEAD", "POST", "DELETE", "OPTIONS"),
    tail: fc.option(fc.array(PIECE, { maxLength: 4 }).map((p) => `/${p.join("")}`), { nil: "" }),
    after: fc.option(fc.tuple(fc.constantFrom("?", "#", "#?", "?#"), fc.array(PIECE, { maxLength: 3 })).map(([d, p]) => `${d}${p.join("")}`), { nil: "" }),
  }).chain((t) => spelled(t.page[0]).map((name) => ({ ...t, url: `/${name}${t.tail}${t.after}` })));
  const check = async (method: string, url: string, csp: string) => {
    const res = await rawHttp(port, `${method} ${url} HTTP/1.1\r\nHost: erplink.test`);
    const where = `${method} ${url} (${res.status})`;
    assert.ok(res.status < 500, where);
    assert.is(res.headers["content-security-policy"], csp, `${where}: Content-Security-Policy`);
    assert.is(res.headers["x-content-type-options"], "nosniff", `${where}: X-Content-Type-Options`);
    assert.is(res.headers["referrer-policy"], "no-referrer", `${where}: Referrer-Policy`);
  };
  // Cases of the property below, kept as fixed examples: every header on the dashboard's page (and Swagger UI's nosniff
  // and no-referrer) when the name is percent-encoded and an invalid escape follows a '#'; on the router's 400 for an invalid
  // escape in a percent-encoded name's path; on the redirect of a name followed by a '#'.
  for (const url of ["/%64ashboard/x#%zz", "/%64ashboard/#%zz", "/%64ashboard/%zz", "/dashboard#", "/dashboard#%zz"]) await check("GET", url, DASHBOARD_CSP);
  for (const url of ["/%61pi-reference/#%zz", "/api-reference#%zz", "/%61pi-reference/%zz"]) await check("GET", url, API_REFERENCE_CSP);
  await fc.assert(
    fc.asyncProperty(target, async ({ page, method, url }) => check(method, url, page[1])),
    { numRuns, seed },
  );
});

const API_REFERENCE_PATHS = [
  "/api-reference",
  "/api-reference/",
  "/api-reference/static/index.html",
  "/api-reference/static/swagger-ui-bundle.js",
  "/api-reference/static/swagger-ui.css",
  "/api-reference/static/oauth2-redirect.html",
  "/api-reference/static/swagger-initializer.js",
  "/api-reference/openapi.json",
  "/api-reference/json",
  "/api-reference/yaml",
  "/api-reference/nope",
  "/api-reference/static/..%2f..%2fpackage.json",
  "/api-reference/%3Csvg%20onload=alert(1)%3E",
  "/api-reference/%E0%A4%A",
];

test("every answer under /api-reference (pages, scripts, the document, errors, any method) carries its strict CSP, nosniff and no-referrer", async ({ world }) => {
  for (const url of API_REFERENCE_PATHS) {
    for (const method of METHODS) {
      const res = await world.app.inject({ method, url, headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
      assertHeaders(res, API_REFERENCE_CSP, `${method} ${url} (${res.statusCode})`);
      assert.ok(res.statusCode < 500, `${method} ${url}: ${res.statusCode}`);
    }
  }
  // The page itself still works: Swagger UI's own page and script, and the document it loads.
  const page = await world.app.inject({ method: "GET", url: "/api-reference/" });
  assert.is(page.statusCode, 200);
  assert.is(page.headers["content-type"], "text/html; charset=utf-8");
  assert.not.match(page.body, /<script(?![^>]*\ssrc=)[^>]*>/, "no inline script");
  const doc = await world.app.inject({ method: "GET", url: "/api-reference/openapi.json" });
  assert.is(doc.statusCode, 200);
  assert.is(json(doc).openapi, "3.1.0");
});

test("CORS stays off: no preflight or answer of /admin, the RPC paths, /dashboard or /api-reference allows another origin", async ({ world }) => {
  const urls = ["/admin/systems", "/admin/sessions?cookie=true", "/admin/sessions/current", "/erplink.admin.v1.SystemService/ListSystems", "/dashboard/", "/api-reference/openapi.json", "/healthz"];
  for (const url of urls) {
    const preflight = await world.app.inject({
      method: "OPTIONS",
      url,
      headers: { origin: "https://evil.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization, x-csrf-token, content-type" },
    });
    assert.ok(preflight.statusCode >= 400, `preflight ${url}: ${preflight.statusCode}`);
    for (const method of ["GET", "POST"] as const) {
      const res = await world.app.inject({ method, url, headers: { ...AUTH, origin: "https://evil.example", "content-type": "application/json" }, payload: method === "POST" ? "{}" : undefined });
      for (const res2 of [preflight, res]) {
        for (const name of Object.keys(res2.headers)) assert.not.ok(name.startsWith("access-control-"), `${method} ${url}: ${name}: ${String(res2.headers[name])}`);
      }
    }
  }
});

/** A browser session through the REST facade: its cookie header and CSRF token. */
async function browserSession(world: World): Promise<{ cookie: string; csrf: string; id: string }> {
  const res = await world.app.inject({ method: "POST", url: "/admin/sessions?cookie=true", headers: AUTH });
  assert.is(res.statusCode, 201, res.body);
  const cookies = res.headers["set-cookie"] as string[];
  const value = (name: string) => cookies.find((c) => c.startsWith(`${name}=`))!.split(";")[0]!.slice(name.length + 1);
  const token = value("__Host-erplink_session");
  const csrf = value("__Host-erplink_csrf");
  assert.is(csrf, createHmac("sha256", token).update("erplink csrf v1").digest("base64url"));
  return { cookie: `__Host-erplink_session=${token}; __Host-erplink_csrf=${csrf}`, csrf, id: json(res).data.id };
}

/** A concrete URL for a route: ids of the right type. */
function urlOf(path: string): string {
  return path
    .replace(/\{([a-z_]+)\}/g, (_m, name: string) => {
      const prefix = name === "id" ? "x" : name;
      return `${prefix}_00000000000000000000000000`;
    })
    .replace("/admin/systems/x_", "/admin/systems/sys_")
    .replace("/admin/instances/x_", "/admin/instances/ins_")
    .replace("/admin/api-keys/x_", "/admin/api-keys/key_")
    .replace("/admin/sessions/x_", "/admin/sessions/ses_")
    .replace("/admin/logs/x_", "/admin/logs/log_");
}

test("every admin route refuses a cookie request without the CSRF token, from another origin or not same-origin by Fetch Metadata: 403 before anything is done", async ({ world }) => {
  const { cookie, csrf } = await browserSession(world);
  const refusals: [string, Record<string, string>, string][] = [
    ["no X-CSRF-Token", {}, "missing X-CSRF-Token header: a request authenticated by the session cookie must echo the session's CSRF token"],
    ["the CSRF cookie's name as the header value", { "x-csrf-token": "__Host-erplink_csrf" }, "the X-CSRF-Token header does not match the session"],
    ["Sec-Fetch-Site: same-site (another port of the host)", { "x-csrf-token": csrf, "sec-fetch-site": "same-site" }, 'a request that is not same-origin cannot use the session cookie (Sec-Fetch-Site "same-site")'],
    ["Sec-Fetch-Site: cross-site", { "x-csrf-token": csrf, "sec-fetch-site": "cross-site" }, "a cross-site request cannot use the session cookie"],
    ["another origin on the same host", { "x-csrf-token": csrf, origin: "http://localhost:5173" }, 'a request from another origin cannot use the session cookie (Origin "http://localhost:5173" is not erplink\'s http://localhost)'],
  ];
  const before = { systems: (await world.store.systems.list({ limit: 10 })).items.length };
  for (const route of ROUTES) {
    for (const [what, headers, message] of refusals) {
      const res = await world.app.inject({
        method: route.method,
        url: urlOf(route.path),
        headers: { cookie, ...headers, "content-type": "application/json" },
        payload: route.body ? JSON.stringify({ name: "forged", type: "admin" }) : undefined,
      });
      const where = `${route.method} ${route.path}, ${what}`;
      assert.is(res.statusCode, 403, `${where}: ${res.body}`);
      assert.equal(json(res), { error: { code: "FORBIDDEN", message, requestId: res.headers["x-request-id"] } }, where);
      assert.is(res.headers["set-cookie"], undefined, `${where}: no cookie set or cleared`);
    }
  }
  assert.is((await world.store.systems.list({ limit: 10 })).items.length, before.systems);
  const keys = await world.app.inject({ method: "GET", url: "/admin/api-keys", headers: AUTH });
  assert.equal(json(keys).data.filter((k: { name: string }) => k.name === "forged"), [], "no forged key");
  // The session still works for its own page.
  const ok = await world.app.inject({ method: "GET", url: "/admin/systems", headers: { cookie, "x-csrf-token": csrf, "sec-fetch-site": "same-origin", origin: "http://localhost" } });
  assert.is(ok.statusCode, 200, ok.body);
});

test("login CSRF: another site cannot sign the browser in (a form post carries no Authorization; a cookie cannot mint a session), and nothing is set", async ({ world }) => {
  const { cookie, csrf } = await browserSession(world);
  const form = { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example", "sec-fetch-site": "cross-site" };
  const attempts: [string, Record<string, string>, string, number][] = [
    ["a cross-site form post", form, "missing bearer token: send Authorization: Bearer <token>", 401],
    ["a cross-site form post carrying the victim's cookie", { ...form, cookie }, "a cross-site request cannot use the session cookie", 403],
    ["a same-site page carrying the victim's cookie and its CSRF token", { cookie, "x-csrf-token": csrf, origin: "http://localhost:5173", "sec-fetch-site": "same-site" }, 'a request that is not same-origin cannot use the session cookie (Sec-Fetch-Site "same-site")', 403],
    ["erplink's own page with the cookie (a session cannot create a session)", { cookie, "x-csrf-token": csrf, "sec-fetch-site": "same-origin" }, "sessions are created with the master key or an admin key, not with another session", 403],
  ];
  for (const [what, headers, message, status] of attempts) {
    const res = await world.app.inject({ method: "POST", url: "/admin/sessions?cookie=true", headers, payload: headers["content-type"] === form["content-type"] ? "label=x" : undefined });
    assert.is(res.statusCode, status, `${what}: ${res.body}`);
    assert.is(json(res).error.message, message, what);
    assert.is(res.headers["set-cookie"], undefined, `${what}: no cookie set`);
  }
});

test("logout CSRF: another page cannot end the session (DELETE needs the token and erplink's origin; no method override), and the cookies stay", async ({ world }) => {
  const { cookie, csrf, id } = await browserSession(world);
  const attempts: [string, "DELETE" | "POST" | "GET", Record<string, string>][] = [
    ["without the CSRF token", "DELETE", { cookie }],
    ["from another site", "DELETE", { cookie, "x-csrf-token": csrf, "sec-fetch-site": "cross-site" }],
    ["from another origin", "DELETE", { cookie, "x-csrf-token": csrf, origin: "https://evil.example" }],
    ["a form POST with a method override", "POST", { cookie, "x-http-method-override": "DELETE", "x-http-method": "DELETE", "content-type": "application/x-www-form-urlencoded" }],
    ["a GET (a link or an image)", "GET", { cookie, "sec-fetch-site": "cross-site" }],
  ];
  for (const [what, method, headers] of attempts) {
    const res = await world.app.inject({ method, url: "/admin/sessions/current", headers, payload: method === "POST" ? "_method=DELETE" : undefined });
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${what}: ${res.statusCode} ${res.body}`);
    assert.is(res.headers["set-cookie"], undefined, `${what}: the cookies are not cleared`);
  }
  const list = await world.app.inject({ method: "GET", url: "/admin/sessions", headers: AUTH });
  assert.ok(json(list).data.some((s: { id: string }) => s.id === id), "the session is still live");
});

test.run();
