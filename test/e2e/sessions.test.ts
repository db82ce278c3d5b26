/**
 * A dashboard's session end to end over a real port, as a browser holds it:
 * the master key exchanged once for cookies (fetch's `Set-Cookie` read into
 * a small jar), reads and writes with the cookie and the CSRF header from
 * erplink's own origin, a forged cross-site write refused and changing
 * nothing, the audit trail naming the session for its writes, and logging
 * out clearing the cookies.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const test = suite<{ server: RunningErplink }>("e2e: a browser session");

test.before(async (ctx) => {
  ctx.server = await startErplink();
});
test.after(async (ctx) => {
  await ctx.server.close();
});

/** The `name=value` pairs a browser would send back, from `Set-Cookie` headers (no attributes). */
function jar(setCookies: string[]): string {
  return setCookies.map((c) => c.split(";")[0]!).join("; ");
}

test("sign in with the master key, work with the cookie and CSRF header, see the session in the audit trail, sign out", async ({ server }) => {
  const base = server.baseUrl;
  const signIn = await fetch(`${base}/admin/sessions?cookie=true`, {
    method: "POST",
    headers: { authorization: server.authorization, "content-type": "application/json" },
    body: JSON.stringify({ label: "e2e browser" }),
  });
  assert.is(signIn.status, 201, await signIn.clone().text());
  const setCookies = signIn.headers.getSetCookie();
  assert.equal(
    setCookies.map((c) => c.replace(/=[^;]*;/, "=…;")),
    [
      "__Host-erplink_session=…; Max-Age=43200; Path=/; HttpOnly; Secure; SameSite=Strict",
      "__Host-erplink_csrf=…; Max-Age=43200; Path=/; Secure; SameSite=Strict",
    ],
  );
  const session = (await signIn.json()) as { data: { id: string; token: string; csrf_token: string; label: string } };
  assert.is(session.data.token, "", "the token is only in the HttpOnly cookie");
  assert.is(session.data.label, "e2e browser");
  const cookie = jar(setCookies);
  const browser = { cookie, "x-csrf-token": session.data.csrf_token, origin: base, "sec-fetch-site": "same-origin" };

  const created = await fetch(`${base}/admin/systems`, {
    method: "POST",
    headers: { ...browser, "content-type": "application/json" },
    body: JSON.stringify({ name: "S/4HANA from the dashboard" }),
  });
  assert.is(created.status, 201, await created.clone().text());
  assert.is(created.headers.get("cache-control"), "no-store");
  const system = (await created.json()) as { data: { id: string } };

  // A page on another site posting with the browser's cookie: no CSRF token, foreign origin.
  const forged = await fetch(`${base}/admin/systems`, {
    method: "POST",
    headers: { cookie, origin: "https://evil.example", "sec-fetch-site": "cross-site", "content-type": "application/json" },
    body: JSON.stringify({ name: "evil" }),
  });
  assert.is(forged.status, 403);
  assert.is(((await forged.json()) as { error: { code: string } }).error.code, "FORBIDDEN");
  const systems = (await (await fetch(`${base}/admin/systems`, { headers: browser })).json()) as { data: { name: string }[] };
  assert.equal(systems.data.map((s) => s.name), ["S/4HANA from the dashboard"]);

  const audit = await fetch(`${base}/admin/audit?resource_type=system`, { headers: browser });
  assert.is(audit.status, 200, await audit.clone().text());
  const entries = (await audit.json()) as { data: { actor: string; session_id: string; action: string; resource_id: string }[] };
  assert.equal(
    entries.data.map((e) => [e.actor, e.session_id, e.action, e.resource_id]),
    [["master", session.data.id, "create", system.data.id]],
  );

  const signOut = await fetch(`${base}/admin/sessions/current`, { method: "DELETE", headers: browser });
  assert.is(signOut.status, 200, await signOut.clone().text());
  assert.equal(signOut.headers.getSetCookie().map((c) => c.split(";").slice(0, 2).join(";")), [
    "__Host-erplink_session=; Max-Age=0",
    "__Host-erplink_csrf=; Max-Age=0",
  ]);
  const after = await fetch(`${base}/admin/systems`, { headers: browser });
  assert.is(after.status, 401);
  assert.is(after.headers.get("www-authenticate"), "Bearer");
});

test.run();
