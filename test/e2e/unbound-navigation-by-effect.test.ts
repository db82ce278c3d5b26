/**
 * Navigations the service metadata gives no entity set, judged by effect:
 * TripPin's `Person.Trips` (no `NavigationPropertyBinding`) through erplink
 * to SAP's Fiori elements mock server (the effect lab,
 * test-support/effect-lab.ts), which keeps the trips inside each People row.
 *
 * erplink records what such a navigation reads against `*`, the entry that
 * covers every entity set of the service: a key with `*` and the operation
 * at the entity level of TripPin reads through it (in the path, `$expand`,
 * `$expand=*` and a `$filter` lambda) with every effect covered; a key
 * that names its sets one by one (all of them, even) is refused at the
 * entity step, one with `*` but not the operation at the operation step,
 * with messages naming the navigation, and nothing reaches the back end.
 * Explain says the same, either way.
 */
import * as assert from "uvu/assert";
import type { LightMyRequestResponse } from "fastify";
import { ALL, TRIP, type EffectLab, type Permissions } from "../../test-support/effect-lab.js";
import { assertError, authorized, call, effectLabSuite, mockEffects } from "../../test-support/effect-lab.js";
import { json, post } from "../../test-support/http.js";
import { AUTH } from "../../test-support/world.js";

const permissions: Permissions = {
  // Every entity set of TripPin, by `*`.
  everySet: { trip: { TripPin: { "*": ["list", "get"] } } },
  // `*` without `list`.
  everySetGetOnly: { trip: { TripPin: { "*": ["get"] } } },
  // Every entity set and the singleton, each by its name, with every operation.
  namedSets: { trip: { TripPin: { People: ALL, Airlines: ALL, Airports: ALL, Me: ALL } } },
};

const E2E = effectLabSuite("navigations without an entity set, by effect (SAP's mock server, TripPin)", permissions);

const RUSSELL = `${TRIP}/People('russellwhyte')`;
const TRIPS = "navigation 'Trips' of 'People'";
const WHY = "the service metadata does not say which entity set it leads to";
/** erplink's refusal of a key without `*` at the entity level. */
const NO_EVERY_SET = `API key has no access to ${TRIPS}: ${WHY}, so only a grant on every entity set ('*') covers it`;
/** erplink's refusal of a key with `*` but not `list` on it. */
const NO_LIST = `API key lacks permission 'list' for entity '*', which ${TRIPS} needs: ${WHY}`;

/** The reads through `Trips`, each with what erplink authorizes for it and what the mock server's data layer does. */
const READS: readonly { readonly url: string; readonly authorized: readonly string[]; readonly effects: readonly string[] }[] = [
  { url: `${RUSSELL}/Trips`, authorized: ["get People", "list *"], effects: ["get People"] },
  { url: `${RUSSELL}/Trips/$count`, authorized: ["get People", "list *"], effects: ["get People"] },
  { url: `${RUSSELL}?$expand=Trips`, authorized: ["get People", "list *"], effects: ["get People"] },
  { url: `${TRIP}/People?$expand=Trips&$select=UserName`, authorized: ["list People", "list *"], effects: ["list People"] },
  { url: `${TRIP}/People?$expand=*`, authorized: ["list People", "list *"], effects: ["list People"] },
  { url: `${TRIP}/People?$filter=Trips/any(t:t/Budget%20gt%205000)&$select=UserName`, authorized: ["list People", "list *"], effects: ["list People"] },
];

const logged = async (ctx: EffectLab, res: LightMyRequestResponse) => (await authorized(ctx, res)).map((a) => `${a.operation} ${a.entity}`);

E2E("a key with '*' reads through Person/Trips in the path, $expand, $expand=* and a $filter lambda, every effect covered", async (ctx) => {
  for (const read of READS) {
    const res = await call(ctx, "everySet", "GET", read.url);
    assert.is(res.statusCode, 200, `${read.url}: ${res.body}`);
    assert.equal(await logged(ctx, res), read.authorized, read.url);
    assert.equal(await mockEffects(ctx, res), read.effects, read.url);
  }
});

E2E("what the back end answers through Person/Trips is the trips of the person, and the people a lambda over them selects", async (ctx) => {
  const trips = JSON.parse((await call(ctx, "everySet", "GET", `${RUSSELL}/Trips`)).body);
  assert.equal(trips.value.map((t: { TripId: number; Name: string }) => [t.TripId, t.Name]), [[0, "Trip in US"], [1, "Trip in Beijing"]]);
  assert.is((await call(ctx, "everySet", "GET", `${RUSSELL}/Trips/$count`)).body, "2");
  const expanded = JSON.parse((await call(ctx, "everySet", "GET", `${RUSSELL}?$expand=Trips`)).body);
  assert.equal(expanded.Trips.map((t: { TripId: number }) => t.TripId), [0, 1]);
  const rich = JSON.parse((await call(ctx, "everySet", "GET", `${TRIP}/People?$filter=Trips/any(t:t/Budget%20gt%205000)&$select=UserName`)).body);
  assert.equal(rich.value, [{ UserName: "ronaldmundy" }]);
});

E2E("a key naming every set one by one is refused 403 at the entity step for each read through Person/Trips, and nothing is forwarded", async (ctx) => {
  const received = ctx.mockProxy.received.length;
  for (const read of READS) {
    const res = await call(ctx, "namedSets", "GET", read.url);
    assertError(res, 403, "FORBIDDEN", NO_EVERY_SET);
    // What was read before the navigation passed; the navigation's `*` was asked and refused.
    assert.equal(await logged(ctx, res), read.authorized, read.url);
  }
  assert.is(ctx.mockProxy.received.length, received, "the back end received nothing");
});

E2E("a key with '*' but without list is refused 403 at the operation step, naming the navigation", async (ctx) => {
  const received = ctx.mockProxy.received.length;
  for (const read of READS.slice(0, 3)) assertError(await call(ctx, "everySetGetOnly", "GET", read.url), 403, "FORBIDDEN", NO_LIST);
  assert.is(ctx.mockProxy.received.length, received, "the back end received nothing");
});

E2E("explain says why either way: the access on '*' for Person/Trips, allowed for '*', refused with the data path's words otherwise", async (ctx) => {
  const list = await ctx.world.app.inject({ method: "GET", url: "/admin/api-keys?page_size=100", headers: AUTH });
  assert.is(list.statusCode, 200, list.body);
  const idOf = (name: string): string => json(list).data.find((k: { name: string }) => k.name === name).id;
  const explain = async (key: string) => {
    const res = await post(ctx.world.app, `/admin/api-keys/${idOf(key)}/explain`, { instance: "trip", method: "GET", url: `${RUSSELL}/Trips` });
    assert.is(res.statusCode, 200, res.body);
    const data = json(res).data;
    return {
      allowed: data.allowed,
      status: data.status,
      message: data.message,
      denial_step: data.denial_step,
      accesses: data.accesses.map((a: Record<string, unknown>) => [a.entity_set, a.operation, a.allowed, a.message ?? "", a.reason]),
    };
  };
  const reason = `resource path; ${TRIPS}: ${WHY}, so '*' covers it`;
  const source = ["People", "get", true, "", "navigation source in resource path"];
  assert.equal(await explain("everySet"), { allowed: true, status: 0, message: "", denial_step: "", accesses: [source, ["*", "list", true, "", reason]] });
  assert.equal(await explain("namedSets"), {
    allowed: false,
    status: 403,
    message: NO_EVERY_SET,
    denial_step: "ENTITY",
    accesses: [source, ["*", "list", false, NO_EVERY_SET, reason]],
  });
  assert.equal(await explain("everySetGetOnly"), {
    allowed: false,
    status: 403,
    message: NO_LIST,
    denial_step: "OPERATION",
    accesses: [source, ["*", "list", false, NO_LIST, reason]],
  });
});

E2E.run();
