/**
 * How the REST facade reads a browser session's cookie and where a cookie
 * request may come from, against hostile headers:
 * only one well-formed session token in the cookie is a credential (not the
 * master key or an API key put there, not a percent-encoded or quoted
 * token, not one of two session cookies), Fetch Metadata other than
 * same-origin is refused, an `Origin` must be a bare origin, an
 * `Authorization` header always decides, and cookies are no credential on
 * the gRPC/Connect path.
 */
import { createHmac } from "node:crypto";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { json, post } from "../../test-support/http.js";
import { rawHttp } from "../../test-support/raw-http.js";
import { worldTests, type TestWorld } from "../../test-support/rpc.js";
import { AUTH, MASTER_KEY } from "../../test-support/world.js";

type World = TestWorld;

const test = suite("session cookies");
const it = worldTests(test);

const csrfOf = (token: string) => createHmac("sha256", token).update("erplink csrf v1").digest("base64url");

function expectError(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string, message: string) {
  assert.is(res.statusCode, status, res.body);
  assert.equal(json(res as never), { error: { code, message, requestId: res.headers["x-request-id"] } });
  assert.is(res.headers["cache-control"], "no-store");
  if (status === 401) assert.is(res.headers["www-authenticate"], "Bearer");
}

/** A browser session: its token (from the Set-Cookie) and CSRF token. */
async function browserSession(w: World) {
  const res = await w.app.inject({ method: "POST", url: "/admin/sessions?cookie=true", headers: AUTH });
  assert.is(res.statusCode, 201, res.body);
  const token = /^__Host-erplink_session=([^;]+);/.exec((res.headers["set-cookie"] as string[])[0]!)![1]!;
  return { token, csrf: json(res).data.csrf_token as string, id: json(res).data.id as string };
}

function get(w: World, headers: Record<string, string>) {
  return w.app.inject({ method: "GET", url: "/admin/systems", headers });
}

const NOT_A_SESSION = "the __Host-erplink_session cookie does not hold a session token: sign in again";

it("the session cookie holds only session tokens: the master key or an admin key put in it, with its matching X-CSRF-Token, is 401", async (w) => {
  const created = await post(w.app, "/admin/api-keys", { name: "ops", type: "admin" });
  const adminKey = json(created).data.key as string;
  for (const secret of [MASTER_KEY, adminKey]) {
    const res = await get(w, { cookie: `__Host-erplink_session=${secret}`, "x-csrf-token": csrfOf(secret) });
    expectError(res, 401, "UNAUTHORIZED", NOT_A_SESSION);
  }
  // Nor anything else that is not a session token.
  for (const value of ["erpls_x", "a b", "Bearer erpls_x", "erpls_" + "A".repeat(49)]) {
    expectError(await get(w, { cookie: `__Host-erplink_session=${value}`, "x-csrf-token": csrfOf(value) }), 401, "UNAUTHORIZED", NOT_A_SESSION);
  }
});

it("the cookie's bytes are the token: a percent-encoded, quoted or space-padded session token is 401, not decoded or trimmed into the real one", async (w) => {
  const { token, csrf } = await browserSession(w);
  const encoded = `%${token.charCodeAt(0).toString(16)}${token.slice(1)}`;
  expectError(await get(w, { cookie: `__Host-erplink_session=${encoded}`, "x-csrf-token": csrf }), 401, "UNAUTHORIZED", NOT_A_SESSION);
  expectError(await get(w, { cookie: `__Host-erplink_session="${token}"`, "x-csrf-token": csrf }), 401, "UNAUTHORIZED", NOT_A_SESSION);
  expectError(await get(w, { cookie: `__Host-erplink_session="${token}"`, "x-csrf-token": csrfOf(`"${token}"`) }), 401, "UNAUTHORIZED", NOT_A_SESSION);
  // Space around the name is the separator's; around the value, readers
  // differ (undici keeps it, the cookie package trims it): no token.
  const spaced = await get(w, { cookie: `a=b;  __Host-erplink_session \t=${token}; c=d`, "x-csrf-token": csrf });
  assert.is(spaced.statusCode, 200, spaced.body);
  for (const value of [` ${token}`, `${token}\t`, `\t${token} `]) {
    expectError(await get(w, { cookie: `a=b; __Host-erplink_session=${value}; c=d`, "x-csrf-token": csrf }), 401, "UNAUTHORIZED", NOT_A_SESSION);
  }
});

it("two __Host-erplink_session cookies in one request are 401, whichever one the X-CSRF-Token matches (first-wins and last-wins readers disagree)", async (w) => {
  const a = await browserSession(w);
  const b = await browserSession(w);
  const message = "the request carries 2 __Host-erplink_session cookies: sign in again";
  for (const csrf of [a.csrf, b.csrf]) {
    expectError(await get(w, { cookie: `__Host-erplink_session=${a.token}; __Host-erplink_session=${b.token}`, "x-csrf-token": csrf }), 401, "UNAUTHORIZED", message);
  }
  // The same token twice is still two cookies (a tossed one beside the real one).
  expectError(await get(w, { cookie: `__Host-erplink_session=${a.token};__Host-erplink_session=${a.token}`, "x-csrf-token": a.csrf }), 401, "UNAUTHORIZED", message);
  // An empty one counts too: a last-wins reader would read nothing.
  for (const cookie of [`__Host-erplink_session=; __Host-erplink_session=${a.token}`, `__Host-erplink_session=${a.token}; __Host-erplink_session=`]) {
    expectError(await get(w, { cookie, "x-csrf-token": a.csrf }), 401, "UNAUTHORIZED", message);
  }
  expectError(await get(w, { cookie: "__Host-erplink_session=", "x-csrf-token": csrfOf("") }), 401, "UNAUTHORIZED", NOT_A_SESSION);
});

it("cookie names are exact and case-sensitive: __host-erplink_session, __Host-erplink_session2 or erplink_session is no credential (401 missing bearer token)", async (w) => {
  const { token, csrf } = await browserSession(w);
  for (const name of ["__host-erplink_session", "__HOST-erplink_session", "__Host-erplink_session2", "erplink_session", "__Secure-erplink_session", "__Host-erplink_csrf"]) {
    expectError(
      await get(w, { cookie: `${name}=${token}`, "x-csrf-token": csrf }),
      401,
      "UNAUTHORIZED",
      "missing bearer token: send Authorization: Bearer <token>",
    );
  }
  // A look-alike beside the real cookie leaves the real one the only credential.
  const beside = await get(w, { cookie: `__host-erplink_session=erpls_evil; __Host-erplink_session=${token}`, "x-csrf-token": csrf });
  assert.is(beside.statusCode, 200, beside.body);
});

it("Sec-Fetch-Site: only same-origin, none or no header may use the cookie; same-site, case and list variants of cross-site and junk are 403", async (w) => {
  const { token, csrf } = await browserSession(w);
  const send = (site: string) => get(w, { cookie: `__Host-erplink_session=${token}`, "x-csrf-token": csrf, "sec-fetch-site": site });
  for (const site of ["same-site", "Cross-Site", "CROSS-SITE", "cross-site, same-origin", "same-origin, cross-site", "Same-Origin", "x"]) {
    expectError(
      await send(site),
      403,
      "FORBIDDEN",
      `a request that is not same-origin cannot use the session cookie (Sec-Fetch-Site ${JSON.stringify(site)})`,
    );
  }
  expectError(await send("cross-site"), 403, "FORBIDDEN", "a cross-site request cannot use the session cookie");
  for (const site of ["same-origin", "none"]) assert.is((await send(site)).statusCode, 200, site);
  // A header given twice reaches erplink joined (`a, b`), and every value counts, not the first.
  const listed = await w.app.inject({
    method: "GET",
    url: "/admin/systems",
    headers: { cookie: `__Host-erplink_session=${token}`, "x-csrf-token": csrf, "sec-fetch-site": ["same-origin", "cross-site"] },
  });
  expectError(listed, 403, "FORBIDDEN", 'a request that is not same-origin cannot use the session cookie (Sec-Fetch-Site "same-origin, cross-site")');
});

it("an Origin that is not a bare origin (a path, user info, a backslash, a query) is 403 even when its host is erplink's", async (w) => {
  const { token, csrf } = await browserSession(w);
  const send = (origin: string) => get(w, { cookie: `__Host-erplink_session=${token}`, "x-csrf-token": csrf, origin });
  for (const origin of ["http://localhost/", "http://localhost/x", "http://evil.example@localhost", "http://localhost\\@evil.example", "http://localhost?x", "http://localhost#x"]) {
    expectError(
      await send(origin),
      403,
      "FORBIDDEN",
      `a request from another origin cannot use the session cookie (Origin ${JSON.stringify(origin)} is not erplink's http://localhost)`,
    );
  }
  // Foreign origins in every spelling.
  for (const origin of ["http://localhost.", "https://localhost", "http://localhost:8080", "http://127.0.0.1", "http://xn--lcalhost-8za", "null", "", "http://localhost, http://localhost"]) {
    assert.is((await send(origin)).statusCode, 403, origin);
  }
  // erplink's own, as a browser may serialize it.
  for (const origin of ["http://localhost", "http://localhost:80"]) assert.is((await send(origin)).statusCode, 200, origin);
});

it("an Authorization header decides even when empty or malformed: the valid cookie and CSRF token beside it are not used (401)", async (w) => {
  const { token, csrf } = await browserSession(w);
  const cookie = `__Host-erplink_session=${token}`;
  expectError(await get(w, { authorization: "", cookie, "x-csrf-token": csrf }), 401, "UNAUTHORIZED", "missing bearer token: send Authorization: Bearer <token>");
  expectError(await get(w, { authorization: "Basic Zm9vOmJhcg==", cookie, "x-csrf-token": csrf }), 401, "UNAUTHORIZED", "missing bearer token: send Authorization: Bearer <token>");
  expectError(await get(w, { authorization: "Bearer nope", cookie, "x-csrf-token": csrf }), 401, "UNAUTHORIZED", "invalid bearer token");
  // And with the same session as a bearer token, no CSRF token is needed.
  assert.is((await get(w, { authorization: `Bearer ${token}` })).statusCode, 200);
});

it("over gRPC/Connect the session cookie and X-CSRF-Token are no credential: 401 unauthenticated; the token as a bearer works", async (w) => {
  const { token, csrf } = await browserSession(w);
  const call = (headers: Record<string, string>) =>
    w.app.inject({
      method: "POST",
      url: "/erplink.admin.v1.SystemService/ListSystems",
      headers: { "content-type": "application/json", ...headers },
      payload: "{}",
    });
  const viaCookie = await call({ cookie: `__Host-erplink_session=${token}`, "x-csrf-token": csrf, origin: "http://localhost" });
  assert.is(viaCookie.statusCode, 401, viaCookie.body);
  assert.equal(json(viaCookie), { code: "unauthenticated", message: "missing bearer token: send Authorization: Bearer <token>" });
  const viaBearer = await call({ authorization: `Bearer ${token}` });
  assert.is(viaBearer.statusCode, 200, viaBearer.body);
});

it("session fixation: signing in while the browser sends someone else's session cookie issues a fresh token, and the planted one stays its owner's", async (w) => {
  // The attacker's own live session, planted in the victim's browser.
  const planted = await browserSession(w);
  const res = await w.app.inject({
    method: "POST",
    url: "/admin/sessions?cookie=true",
    headers: { ...AUTH, cookie: `__Host-erplink_session=${planted.token}`, "x-csrf-token": planted.csrf },
  });
  assert.is(res.statusCode, 201, res.body);
  const fresh = /^__Host-erplink_session=([^;]+);/.exec((res.headers["set-cookie"] as string[])[0]!)![1]!;
  assert.is.not(fresh, planted.token);
  assert.is.not(json(res).data.id, planted.id);
  assert.is.not(json(res).data.csrf_token, planted.csrf);
  // Signing in with the planted session itself (no key) makes nothing new.
  const viaCookie = await w.app.inject({
    method: "POST",
    url: "/admin/sessions?cookie=true",
    headers: { cookie: `__Host-erplink_session=${planted.token}`, "x-csrf-token": planted.csrf },
  });
  expectError(viaCookie, 403, "FORBIDDEN", "sessions are created with the master key or an admin key, not with another session");
  assert.is(viaCookie.headers["set-cookie"], undefined);
  // A token erplink never issued cannot be planted at all.
  const chosen = "erpls_" + "0".repeat(49);
  expectError(await get(w, { cookie: `__Host-erplink_session=${chosen}`, "x-csrf-token": csrfOf(chosen) }), 401, "UNAUTHORIZED", NOT_A_SESSION);
});

it("headers repeated on the wire (Cookie, X-CSRF-Token, Origin, Sec-Fetch-Site, Authorization) are read as Node joins or keeps them, and never let a cookie request through", async (w) => {
  const a = await browserSession(w);
  const b = await browserSession(w);
  await w.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (w.app.server.address() as AddressInfo).port;
  const send = async (...headers: string[]) => {
    const res = await rawHttp(port, ["GET /admin/systems HTTP/1.1", "Host: localhost", ...headers].join("\r\n"));
    return { statusCode: res.status, headers: res.headers as Record<string, unknown>, body: res.body };
  };
  const cookie = `Cookie: __Host-erplink_session=${a.token}`;
  const csrf = `X-CSRF-Token: ${a.csrf}`;
  assert.is((await send(cookie, csrf)).statusCode, 200);
  // Two Cookie headers are one list: a second session cookie is refused, another cookie is not.
  expectError(await send(cookie, `Cookie: __Host-erplink_session=${b.token}`, csrf), 401, "UNAUTHORIZED", "the request carries 2 __Host-erplink_session cookies: sign in again");
  assert.is((await send("Cookie: a=b", cookie, csrf)).statusCode, 200);
  expectError(await send(cookie, csrf, csrf), 403, "FORBIDDEN", "the X-CSRF-Token header does not match the session");
  expectError(
    await send(cookie, csrf, "Sec-Fetch-Site: same-origin", "Sec-Fetch-Site: cross-site"),
    403,
    "FORBIDDEN",
    'a request that is not same-origin cannot use the session cookie (Sec-Fetch-Site "same-origin, cross-site")',
  );
  expectError(
    await send(cookie, csrf, "Origin: http://localhost", "Origin: https://evil.example"),
    403,
    "FORBIDDEN",
    `a request from another origin cannot use the session cookie (Origin "http://localhost, https://evil.example" is not erplink's http://localhost)`,
  );
  // Node keeps the first Authorization header; either way the cookie is not consulted.
  expectError(await send("Authorization: Bearer nope", `Authorization: Bearer ${MASTER_KEY}`, cookie, csrf), 401, "UNAUTHORIZED", "invalid bearer token");
  assert.is((await send(`Authorization: Bearer ${MASTER_KEY}`, "Authorization: Bearer nope", cookie)).statusCode, 200);
});

test.run();
