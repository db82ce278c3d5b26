/**
 * Every key of an instance reaches the back end as the same back-end user,
 * so nothing a back end keeps between requests may cross from one key to
 * another: each key has its own SAP CSRF session (the token and the session
 * cookies it belongs to), and the repeatable-request ids a back end may
 * replay stored answers by (`Repeatability-Request-ID`, `-Client-ID`) reach
 * it scoped to the key, so that a key naming another's id gets nothing of
 * the other's. A retry by the same key with the same id is still the same
 * request to the back end.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { rawRequest, startForwardWorld, stopForwardWorld, type ForwardWorld } from "../../../test-support/forward-world.js";

const SALES = "/odata/prod/SALES";
const T = suite<ForwardWorld>("data path: no back-end state crosses from one key to another");

T.before.each(async (ctx) => {
  Object.assign(
    ctx,
    await startForwardWorld({
      metadata: () => V4_METADATA,
      // The CSRF fetch answers with a session cookie, as SAP Gateway does.
      csrfHeaders: { "set-cookie": "SAP_SESSIONID_ERP_100=s1; path=/; HttpOnly" },
      services: { SALES: "sap/sales/0001" },
      keys: {
        a: { prod: { SALES: { SalesOrders: ["list", "get", "create", "update"] } } },
        b: { prod: { SALES: { SalesOrders: ["list", "get", "create", "update"] } } },
      },
      answer: (_req, res) => res.writeHead(201, { "content-type": "application/json" }).end("{}"),
    }),
  );
});

T.after.each((ctx) => stopForwardWorld(ctx));

const create = (ctx: ForwardWorld, key: string, headers: string[] = []) =>
  rawRequest(ctx, `POST ${SALES}/SalesOrders HTTP/1.1`, ctx.keys[key]!.key, { headers: ["Content-Type: application/json", ...headers], body: '{"Note":"x"}' });

T("each key has its own CSRF session: a fetch per key, reused by that key's later writes", async (ctx) => {
  for (const key of ["a", "a", "b", "b", "a"]) assert.is((await create(ctx, key)).status, 201);
  const fetches = ctx.all.filter((r) => r.headers["x-csrf-token"] === "Fetch");
  assert.is(fetches.length, 2, "one CSRF fetch per key");
  assert.is(ctx.seen.length, 5);
  for (const r of ctx.seen) {
    assert.is(r.headers["x-csrf-token"], "tok-1");
    assert.is(r.headers.cookie, "SAP_SESSIONID_ERP_100=s1");
  }
});

T("repeatable-request ids reach the back end scoped to the key: same key and id, same id; another key, another", async (ctx) => {
  const ids = ["Repeatability-Request-ID: 5f7a1c7e-0000-4000-8000-000000000001", "Repeatability-Client-ID: client-1", "Repeatability-First-Sent: Sun, 06 Dec 2026 10:00:00 GMT"];
  await create(ctx, "a", ids);
  await create(ctx, "a", ids);
  await create(ctx, "b", ids);
  const [first, retry, other] = ctx.seen.map((r) => [r.headers["repeatability-request-id"], r.headers["repeatability-client-id"], r.headers["repeatability-first-sent"]]);
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  assert.match(String(first![0]), UUID);
  assert.match(String(first![1]), UUID);
  assert.equal(retry, first, "a retry by the same key is the same request to the back end");
  assert.is.not(other![0], first![0], "another key's request id is another");
  assert.is.not(other![1], first![1], "another key's client id is another");
  assert.is(first![0] === "5f7a1c7e-0000-4000-8000-000000000001", false, "the client's own id never reaches the back end");
  assert.is(first![2], "Sun, 06 Dec 2026 10:00:00 GMT", "the first-sent date passes as written");
});

T.run();
