/**
 * The store contract: one uvu suite that every adapter (embedded in memory,
 * embedded on disk, MongoDB) must pass. Each test opens a fresh store and
 * disposes of it afterwards, so no test depends on another. Lives outside
 * test/ because uvu runs every file there.
 */
import { inspect } from "node:util";
import { MongoClient } from "mongodb";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator, isId, type IdPrefix } from "../src/services/ids.js";
import type { DocumentCollection } from "../src/store/collection.js";
import {
  DuplicateKeyError,
  NotFoundError,
  RevisionMismatchError,
  type ApiKeyRecord,
  type AuditRecord,
  type InstanceRecord,
  type InstanceStore,
  type Page,
  type Store,
  type SystemRecord,
  type SystemStore,
} from "../src/store/index.js";
import { testMongoUrl } from "./world.js";

/** A store under test and how to throw it away. */
export type ContractStore = Store & { dispose(): Promise<void> };

const T0 = new Date("2026-01-02T03:04:05.678Z");
const T1 = new Date("2026-01-02T03:04:06.789Z");
const T2 = new Date("2026-03-04T05:06:07.001Z");

/** Values that must never reach a filter: each could act as an operator. */
const OPERATOR_VALUES: readonly unknown[] = [
  { $ne: null },
  { $gt: "" },
  { $regex: "." },
  { $exists: true },
  { $in: ["Prod", "prod"] },
  ["Prod"],
  null,
];

/** Ids in strictly ascending order (one generator on a fixed clock). */
function idsOf(prefix: IdPrefix, n: number): string[] {
  const newId = createIdGenerator(() => T0);
  const ids = Array.from({ length: n }, () => newId(prefix));
  // Precondition: the paging assertions rely on these being well-formed and ascending.
  for (const id of ids) assert.ok(isId(prefix, id), `malformed id ${id}`);
  assert.equal([...ids].sort(), ids, "generated ids are not ascending");
  assert.is(new Set(ids).size, n, "generated ids are not unique");
  return ids;
}

function system(id: string, name: string, fields: Partial<SystemRecord> = {}): SystemRecord {
  return { id, name, description: `about ${name}`, labels: {}, createdAt: T0, updatedAt: T0, ...fields };
}

function instance(id: string, systemId: string, name: string, fields: Partial<InstanceRecord> = {}): InstanceRecord {
  return {
    id,
    systemId,
    name,
    environment: "production",
    baseUrl: `https://${name.toLowerCase()}.example.com/sap/opu/odata/sap/`,
    services: {},
    createdAt: T0,
    updatedAt: T1,
    ...fields,
  };
}

/** The error `op` rejects (or throws) with; fails the test if it resolves. */
export async function rejection(op: () => Promise<unknown>, what = "the call"): Promise<unknown> {
  let value: unknown;
  try {
    value = await op();
  } catch (err) {
    return err;
  }
  assert.unreachable(`${what}: expected a rejection, got ${inspect(value, { breakLength: Infinity })}`);
  return undefined;
}

/** A one-line description of an error, for assertion messages. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return inspect(err);
  const code = (err as { code?: unknown }).code;
  return `${err.constructor.name}${code === undefined ? "" : ` (code ${String(code)})`}: ${err.message.slice(0, 300)}`;
}

function assertDuplicate(err: unknown, collection: string, field: string): void {
  assert.instance(err, DuplicateKeyError, `expected DuplicateKeyError, got ${describe(err)}`);
  const dup = err as DuplicateKeyError;
  assert.equal(
    { name: dup.name, collection: dup.collection, field: dup.field },
    { name: "DuplicateKeyError", collection, field },
  );
}

function assertNotFound(err: unknown, collection: string, id: string): void {
  assert.instance(err, NotFoundError, `expected NotFoundError, got ${describe(err)}`);
  const nf = err as NotFoundError;
  assert.equal({ name: nf.name, collection: nf.collection, id: nf.id }, { name: "NotFoundError", collection, id });
}

function assertMismatch(err: unknown, collection: string, id: string, expected: number, actual: number): void {
  assert.instance(err, RevisionMismatchError, `expected RevisionMismatchError, got ${describe(err)}`);
  const m = err as RevisionMismatchError;
  assert.equal(
    { name: m.name, collection: m.collection, id: m.id, expected: m.expected, actual: m.actual },
    { name: "RevisionMismatchError", collection, id, expected, actual },
  );
}

function assertTypeError(err: unknown, what: string): void {
  assert.instance(err, TypeError, `${what}: expected TypeError, got ${describe(err)}`);
}

/** Every record of a port, in id order, checking that one big page holds them all. */
async function all<R>(port: { list(request: { limit: number }): Promise<Page<R>> }): Promise<R[]> {
  const page = await port.list({ limit: 1000 });
  assert.is(page.more, false);
  return page.items;
}

/**
 * The adapter's collection under an aggregate port. `collection` is protected
 * on AggregateStore; the contract reaches through it to test the
 * DocumentCollection port of the store under test itself.
 */
function collectionOf(port: SystemStore | InstanceStore): DocumentCollection {
  const coll = (port as unknown as { readonly collection?: DocumentCollection }).collection;
  // Without this, a renamed field would make every "throws TypeError" check pass vacuously.
  assert.type(coll?.findOne, "function", "aggregate port has no `collection`");
  return coll as DocumentCollection;
}

/**
 * A collection with no unique index but the id, for the tests of the
 * generic collection operations: the usage rollups' `usage_hours` (private
 * on UsageRollupStore; reached through it as {@link collectionOf} does).
 */
function plainCollectionOf(store: Store): DocumentCollection {
  const coll = (store.usageRollups as unknown as { readonly hoursColl?: DocumentCollection }).hoursColl;
  assert.type(coll?.findOne, "function", "UsageRollupStore has no `hoursColl`");
  return coll as DocumentCollection;
}

/**
 * Why the store's database cannot be held to an atomic compare-and-set
 * (findOneAndUpdate with the revision in its filter), or undefined when it
 * can: FerretDB 1.x reads and writes a document in two steps, so two
 * concurrent conditional writes may both apply there (as the README says
 * of `$inc` and compare-and-set). MongoDB and the embedded store make it
 * atomic.
 */
async function nonAtomicCompareAndSet(store: Store): Promise<string | undefined> {
  const url = testMongoUrl();
  if (store.kind !== "mongodb" || url === undefined) return undefined;
  const client = new MongoClient(url);
  try {
    const info = await client.db().admin().command({ buildInfo: 1 });
    return info.ferretdbVersion === undefined ? undefined : `a FerretDB server (version ${String(info.ferretdbVersion)}) does not make compare-and-set atomic`;
  } finally {
    await client.close();
  }
}

/** Registers and runs the store contract suite on stores from `open`. */
export function storeContract(name: string, open: () => Promise<ContractStore>): void {
  const test = suite<{ store?: ContractStore }>(`store contract: ${name}`, {});

  test.before.each(async (ctx) => {
    ctx.store = await open();
  });
  test.after.each(async (ctx) => {
    const store = ctx.store;
    ctx.store = undefined;
    await store?.dispose();
  });

  const storeOf = (ctx: { store?: ContractStore }): ContractStore => {
    assert.ok(ctx.store, "store not opened");
    return ctx.store!;
  };

  // ---- systems -------------------------------------------------------------

  test("systems: create then get round-trips every field (labels keyed with . and /, empty description, ms dates)", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b] = idsOf("sys", 2);
    const rec = system(a, "S/4HANA Finance", {
      description: "",
      labels: {
        "app.kubernetes.io/name": "erp",
        "team.example.com/owner": "fin-ops",
        "a.b.c": "",
        cost_centre: "4711",
      },
      createdAt: T0,
      updatedAt: T1,
    });
    const bare = system(b, "bare", { labels: {} });
    assert.equal(await systems.create(rec), rec);
    assert.equal(await systems.create(bare), bare);

    const got = await systems.get(a);
    assert.equal(got, rec);
    assert.instance(got!.createdAt, Date);
    assert.instance(got!.updatedAt, Date);
    assert.is(got!.createdAt.toISOString(), "2026-01-02T03:04:05.678Z");
    assert.is(got!.updatedAt.toISOString(), "2026-01-02T03:04:06.789Z");
    assert.equal(await systems.get(b), bare);
  });

  test("systems: get of an unknown id returns undefined", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, unknown] = idsOf("sys", 2);
    await systems.create(system(a, "erp"));
    assert.is(await systems.get(unknown), undefined);
    assert.is(await systems.get(""), undefined);
    assert.is(await systems.get(a.toLowerCase()), undefined);
  });

  test("systems: create with a taken name throws DuplicateKeyError(systems, name) and writes nothing", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b] = idsOf("sys", 2);
    const first = system(a, "erp-prod");
    await systems.create(first);
    const err = await rejection(() => systems.create(system(b, "erp-prod", { description: "second" })));
    assertDuplicate(err, "systems", "name");
    assert.equal(await all(systems), [first]);
    assert.is(await systems.get(b), undefined);
  });

  test("systems: create with a taken id throws DuplicateKeyError(systems, id) and keeps the original", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a] = idsOf("sys", 1);
    const first = system(a, "erp-prod");
    await systems.create(first);
    assertDuplicate(await rejection(() => systems.create(system(a, "other-name"))), "systems", "id");
    assert.equal(await all(systems), [first]);
  });

  test("systems: update changes only the given fields and returns the updated record", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b] = idsOf("sys", 2);
    const recA = system(a, "erp-a", { labels: { "app.kubernetes.io/name": "a", tier: "gold" } });
    const recB = system(b, "erp-b", { labels: { tier: "silver" } });
    await systems.create(recA);
    await systems.create(recB);

    const expected: SystemRecord = { ...recA, description: "General ledger", updatedAt: T2 };
    assert.equal(await systems.update(a, { description: "General ledger", updatedAt: T2 }), expected);
    assert.equal(await systems.get(a), expected);
    assert.equal(await systems.get(b), recB);
  });

  test("systems: update of labels replaces the whole map (keys with . and /), never merges", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a] = idsOf("sys", 1);
    const rec = system(a, "erp-a", { labels: { "app.kubernetes.io/name": "a", tier: "gold" } });
    await systems.create(rec);

    const relabelled: SystemRecord = { ...rec, labels: { "x.example.com/zone": "eu-1" } };
    assert.equal(await systems.update(a, { labels: { "x.example.com/zone": "eu-1" } }), relabelled);
    assert.equal(await systems.get(a), relabelled);

    const cleared: SystemRecord = { ...rec, labels: {} };
    assert.equal(await systems.update(a, { labels: {} }), cleared);
    assert.equal(await systems.get(a), cleared);
  });

  test("systems: renaming frees the old name; keeping one's own name is no conflict", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b] = idsOf("sys", 2);
    const rec = system(a, "erp-old");
    await systems.create(rec);

    assert.equal(await systems.update(a, { name: "erp-old", updatedAt: T1 }), { ...rec, updatedAt: T1 });
    assert.equal(await systems.update(a, { name: "erp-new" }), { ...rec, name: "erp-new", updatedAt: T1 });
    const reuse = system(b, "erp-old");
    assert.equal(await systems.create(reuse), reuse);
    assert.equal(await all(systems), [{ ...rec, name: "erp-new", updatedAt: T1 }, reuse]);
  });

  test("systems: update to a name another system holds throws DuplicateKeyError(systems, name) and changes nothing", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b] = idsOf("sys", 2);
    const recA = system(a, "erp-a");
    const recB = system(b, "erp-b");
    await systems.create(recA);
    await systems.create(recB);

    const err = await rejection(() => systems.update(b, { name: "erp-a", description: "changed", updatedAt: T2 }));
    assertDuplicate(err, "systems", "name");
    assert.equal(await systems.get(b), recB);
    assert.equal(await systems.get(a), recA);
  });

  test("systems: update of an unknown id throws NotFoundError(systems, id) and creates nothing", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, unknown] = idsOf("sys", 2);
    const rec = system(a, "erp-a");
    await systems.create(rec);
    assertNotFound(await rejection(() => systems.update(unknown, { description: "x" })), "systems", unknown);
    // The name is taken, but there is nothing to update: not found wins.
    assertNotFound(await rejection(() => systems.update(unknown, { name: "erp-a" })), "systems", unknown);
    assert.equal(await all(systems), [rec]);
  });

  test("systems: delete returns the record as it was, removes it and frees its name", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b, c] = idsOf("sys", 3);
    const recA = system(a, "erp-a", { labels: { "app.kubernetes.io/name": "a" }, updatedAt: T1 });
    const recB = system(b, "erp-b");
    await systems.create(recA);
    await systems.create(recB);

    assert.equal(await systems.delete(a), recA);
    assert.is(await systems.get(a), undefined);
    assert.equal(await all(systems), [recB]);
    const reuse = system(c, "erp-a");
    assert.equal(await systems.create(reuse), reuse);
  });

  test("systems: delete of an unknown (or already deleted) id throws NotFoundError(systems, id)", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b, unknown] = idsOf("sys", 3);
    const recB = system(b, "erp-b");
    await systems.create(system(a, "erp-a"));
    await systems.create(recB);
    assertNotFound(await rejection(() => systems.delete(unknown)), "systems", unknown);
    await systems.delete(a);
    assertNotFound(await rejection(() => systems.delete(a)), "systems", a);
    assert.equal(await all(systems), [recB]);
  });

  // ---- revisions (etags) -----------------------------------------------------

  test("systems: revise raises the revision by one in the write; a record stored without one is at 0; update (erplink's own write) leaves it", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b] = idsOf("sys", 2);
    await systems.create(system(a, "legacy"));
    await systems.create(system(b, "fresh", { revision: 1 }));
    assert.is((await systems.get(a))!.revision, undefined, "a document written without a revision reads as having none (0)");
    assert.is((await systems.revise(a, { description: "one", updatedAt: T1 })).revision, 1);
    assert.is((await systems.revise(a, { description: "two", updatedAt: T2 }, 1)).revision, 2);
    assert.equal(await systems.get(a), system(a, "legacy", { description: "two", updatedAt: T2, revision: 2 }));
    assert.is((await systems.update(a, { description: "touched" })).revision, 2);
    assert.is((await systems.revise(b, { description: "b" }, 1)).revision, 2);
  });

  test("systems: revise expecting revision 0 applies to a record stored without a revision", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a] = idsOf("sys", 1);
    await systems.create(system(a, "legacy"));
    assert.equal(await systems.revise(a, { description: "changed" }, 0), system(a, "legacy", { description: "changed", revision: 1 }));
    assertMismatch(await rejection(() => systems.revise(a, { description: "again" }, 0)), "systems", a, 0, 1);
  });

  test("systems: revise with a stale revision throws RevisionMismatchError(expected, actual) and changes nothing; of an absent record NotFoundError", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, absent] = idsOf("sys", 2);
    const rec = system(a, "erp", { revision: 3 });
    await systems.create(rec);
    assertMismatch(await rejection(() => systems.revise(a, { description: "stale", updatedAt: T2 }, 2)), "systems", a, 2, 3);
    assertMismatch(await rejection(() => systems.revise(a, { description: "never", updatedAt: T2 }, -1)), "systems", a, -1, 3);
    assert.equal(await systems.get(a), rec);
    assertNotFound(await rejection(() => systems.revise(absent, { description: "x" }, 3)), "systems", absent);
    assertNotFound(await rejection(() => systems.revise(absent, { description: "x" })), "systems", absent);
  });

  test("systems: of concurrent revises expecting the same revision, exactly one applies and the others throw RevisionMismatchError", async (ctx) => {
    const { systems } = storeOf(ctx);
    const unsupported = await nonAtomicCompareAndSet(storeOf(ctx));
    if (unsupported !== undefined) return console.log(`    (not checked: ${unsupported})`);
    const ids = idsOf("sys", 10);
    for (const [round, id] of ids.entries()) {
      await systems.create(system(id, `race-${round}`, { revision: 1 }));
      const writers = 2 + (round % 4);
      const outcomes = await Promise.allSettled(
        Array.from({ length: writers }, (_, i) => systems.revise(id, { description: `writer ${i}` }, 1)),
      );
      const won = outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [i] : []));
      assert.is(won.length, 1, `round ${round}: ${won.length} of ${writers} writers applied`);
      for (const o of outcomes) if (o.status === "rejected") assertMismatch(o.reason, "systems", id, 1, 2);
      assert.equal(await systems.get(id), system(id, `race-${round}`, { description: `writer ${won[0]}`, revision: 2 }));
    }
  });

  test("systems: delete with a stale revision throws RevisionMismatchError and removes nothing; with the current one removes the record", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [a, b] = idsOf("sys", 2);
    const rec = system(a, "erp", { revision: 2 });
    await systems.create(rec);
    await systems.create(system(b, "legacy"));
    assertMismatch(await rejection(() => systems.delete(a, 1)), "systems", a, 1, 2);
    assert.equal(await systems.get(a), rec);
    assert.equal(await systems.delete(a, 2), rec);
    assert.is(await systems.get(a), undefined);
    assertNotFound(await rejection(() => systems.delete(a, 2)), "systems", a);
    assert.equal(await systems.delete(b, 0), system(b, "legacy"));
  });

  test("systems: a delete and a revise expecting the same revision, concurrently: exactly one applies", async (ctx) => {
    const { systems } = storeOf(ctx);
    const unsupported = await nonAtomicCompareAndSet(storeOf(ctx));
    if (unsupported !== undefined) return console.log(`    (not checked: ${unsupported})`);
    const ids = idsOf("sys", 8);
    for (const [round, id] of ids.entries()) {
      await systems.create(system(id, `race-${round}`, { revision: 4 }));
      const [deleted, revised] = await Promise.allSettled([systems.delete(id, 4), systems.revise(id, { description: "changed" }, 4)]);
      assert.is([deleted, revised].filter((o) => o.status === "fulfilled").length, 1, `round ${round}`);
      const after = await systems.get(id);
      if (deleted.status === "fulfilled") {
        assert.is(after, undefined);
        assert.ok(revised.status === "rejected" && (revised.reason instanceof NotFoundError || revised.reason instanceof RevisionMismatchError), `round ${round}: ${describe(revised.status === "rejected" ? revised.reason : undefined)}`);
      } else {
        assert.equal(after, system(id, `race-${round}`, { description: "changed", revision: 5 }));
        assertMismatch(deleted.reason, "systems", id, 4, 5);
      }
    }
  });

  test("instances and API keys keep revisions too: revise raises it, a stale one changes nothing", async (ctx) => {
    const { systems, instances, apiKeys } = storeOf(ctx);
    const [s] = idsOf("sys", 1);
    const [i] = idsOf("ins", 1);
    const [k] = idsOf("key", 1);
    await systems.create(system(s, "erp"));
    const ins = instance(i, s, "prod", { revision: 1 });
    await instances.create(ins);
    assert.is((await instances.revise(i, { environment: "qa" }, 1)).revision, 2);
    assertMismatch(await rejection(() => instances.revise(i, { environment: "dev" }, 1)), "instances", i, 1, 2);
    assert.equal(await instances.get(i), { ...ins, environment: "qa", revision: 2 });
    const key = {
      id: k,
      name: "app",
      type: "data" as const,
      keyHash: "ab".repeat(32),
      prefix: "erpl_abcdefg",
      permissions: {},
      rateLimits: {},
      createdAt: T0,
      updatedAt: T0,
      revision: 1,
    };
    await apiKeys.create(key);
    // A key's use is erplink's own write: the revision stays.
    assert.is((await apiKeys.update(k, { lastUsedAt: T1 })).revision, 1);
    assertMismatch(await rejection(() => apiKeys.revoke(k, T2, 0)), "api_keys", k, 0, 1);
    const facts = (r: ApiKeyRecord | undefined) => r && { name: r.name, lastUsedAt: r.lastUsedAt, revokedAt: r.revokedAt, revision: r.revision };
    assert.equal(facts(await apiKeys.get(k)), { name: "app", lastUsedAt: T1, revokedAt: undefined, revision: 1 });
    assert.equal(facts(await apiKeys.revoke(k, T2, 1)), { name: "app", lastUsedAt: T1, revokedAt: undefined, revision: 1 }, "returned as it was");
    assert.is(await apiKeys.get(k), undefined);
    assert.equal(facts((await apiKeys.changedSince(T2, 10))[0]), { name: "app", lastUsedAt: T1, revokedAt: T2, revision: 2 });
  });

  test("API keys: revoked keys are listed only with showRevoked, found by hash only with includeRevoked, and purged by revokedAt only", async (ctx) => {
    const { apiKeys } = storeOf(ctx);
    const [old, recent, live] = idsOf("key", 3);
    const key = (id: string, n: number): ApiKeyRecord => ({
      id,
      name: `key ${n}`,
      type: "data",
      keyHash: String(n).repeat(64),
      prefix: "erpl_abcdefg",
      permissions: {},
      rateLimits: {},
      createdAt: T0,
      updatedAt: T0,
      revision: 1,
    });
    for (const [id, n] of [[old, 1], [recent, 2], [live, 3]] as const) await apiKeys.create(key(id, n));
    await apiKeys.revoke(old, T1);
    await apiKeys.revoke(recent, T2);
    const ids = (page: { items: readonly ApiKeyRecord[] }) => page.items.map((k) => [k.id, k.revokedAt]);
    assert.equal(ids(await apiKeys.list({ limit: 10 })), [[live, undefined]]);
    assert.equal(ids(await apiKeys.list({ limit: 10 }, { showRevoked: true })), [[old, T1], [recent, T2], [live, undefined]]);
    assert.equal(ids(await apiKeys.list({ limit: 1, afterId: old }, { showRevoked: true })), [[recent, T2]]);
    assert.is(await apiKeys.getByHash("1".repeat(64)), undefined);
    assert.equal((await apiKeys.getByHash("1".repeat(64), { includeRevoked: true }))?.revokedAt, T1);
    assert.equal((await apiKeys.getByHash("3".repeat(64), { includeRevoked: true }))?.id, live);
    // Revoked before the cutoff: removed. Revoked after it, or in force (however old): kept.
    assert.is(await apiKeys.purgeRevoked(new Date(T1.getTime() + 1)), 1);
    assert.equal(ids(await apiKeys.list({ limit: 10 }, { showRevoked: true })), [[recent, T2], [live, undefined]]);
    assert.is(await apiKeys.purgeRevoked(new Date(T2.getTime() + 365 * 86_400_000)), 1);
    assert.equal(ids(await apiKeys.list({ limit: 10 }, { showRevoked: true })), [[live, undefined]]);
  });

  // ---- paging ----------------------------------------------------------------

  /** Seven systems with ascending ids, inserted out of order; returned in id order. */
  async function seven(systems: SystemStore): Promise<SystemRecord[]> {
    const ids = idsOf("sys", 7);
    const records = ids.map((id, i) => system(id, `erp-${i}`, { createdAt: new Date(T0.getTime() + i) }));
    // Out of insertion order, so only sorting by id can give the expected order.
    for (const i of [3, 0, 6, 1, 5, 2, 4]) await systems.create(records[i]);
    return records;
  }

  test("systems.list: limit 3 pages through 7 systems in id order; only the last page has more=false", async (ctx) => {
    const { systems } = storeOf(ctx);
    const records = await seven(systems);

    const p1 = await systems.list({ limit: 3 });
    assert.equal(p1, { items: records.slice(0, 3), more: true });
    const p2 = await systems.list({ afterId: p1.items[2].id, limit: 3 });
    assert.equal(p2, { items: records.slice(3, 6), more: true });
    const p3 = await systems.list({ afterId: p2.items[2].id, limit: 3 });
    assert.equal(p3, { items: records.slice(6), more: false });
    assert.equal([...p1.items, ...p2.items, ...p3.items], records);
  });

  test("systems.list: more is false exactly when nothing follows (limits 6, 7, 10; empty store)", async (ctx) => {
    const { systems } = storeOf(ctx);
    assert.equal(await systems.list({ limit: 5 }), { items: [], more: false });
    const records = await seven(systems);
    assert.equal(await systems.list({ limit: 6 }), { items: records.slice(0, 6), more: true });
    assert.equal(await systems.list({ limit: 7 }), { items: records, more: false });
    assert.equal(await systems.list({ limit: 10 }), { items: records, more: false });
    assert.equal(await systems.list({ afterId: records[6].id, limit: 3 }), { items: [], more: false });
    assert.equal(await systems.list({ afterId: records[5].id, limit: 1 }), { items: records.slice(6), more: false });
  });

  test("systems.list: afterId need not be a stored id (a deleted one still pages on)", async (ctx) => {
    const { systems } = storeOf(ctx);
    const records = await seven(systems);
    await systems.delete(records[2].id);
    assert.equal(await systems.list({ afterId: records[2].id, limit: 2 }), { items: records.slice(3, 5), more: true });
    // "sys_" sorts before every id of the type.
    assert.equal(await systems.list({ afterId: "sys_", limit: 2 }), { items: records.slice(0, 2), more: true });
  });

  // ---- instances -------------------------------------------------------------

  test("instances: create/get/update/delete round-trip every field", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1] = idsOf("sys", 1);
    const [i1, unknown] = idsOf("ins", 2);
    await systems.create(system(s1, "erp"));
    const rec = instance(i1, s1, "erp-prod", { environment: "", sapClient: "100" });
    assert.equal(await instances.create(rec), rec);
    const got = await instances.get(i1);
    assert.equal(got, rec);
    assert.instance(got!.createdAt, Date);
    assert.is(await instances.get(unknown), undefined);

    const patch = { baseUrl: "https://new.example.com/odata/", environment: "staging", sapClient: "200", updatedAt: T2 };
    const updated: InstanceRecord = { ...rec, ...patch };
    assert.equal(await instances.update(i1, patch), updated);
    assert.equal(await instances.get(i1), updated);
    assertNotFound(await rejection(() => instances.update(unknown, { environment: "x" })), "instances", unknown);

    assert.equal(await instances.delete(i1), updated);
    assert.is(await instances.get(i1), undefined);
    assertNotFound(await rejection(() => instances.delete(i1)), "instances", i1);
  });

  test("instances: sapClient is cleared by a patch of undefined (read back absent); a document without it reads as absent", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1] = idsOf("sys", 1);
    const [i1, i2] = idsOf("ins", 2);
    await systems.create(system(s1, "erp"));
    const rec = instance(i1, s1, "erp-prod", { sapClient: "100" });
    await instances.create(rec);
    const { sapClient: _cleared, ...without } = rec;
    const cleared = await instances.update(i1, { sapClient: undefined, updatedAt: T2 });
    assert.equal(cleared, { ...without, updatedAt: T2 });
    assert.not.ok("sapClient" in cleared, "absent, not undefined or null");
    assert.equal(await instances.get(i1), { ...without, updatedAt: T2 });
    assert.equal(await instances.getByName("erp-prod"), { ...without, updatedAt: T2 });

    // As an older release wrote it: no sapClient field at all.
    await collectionOf(instances).insert({
      _id: i2,
      systemId: s1,
      name: "erp-old",
      environment: "production",
      baseUrl: "https://old.example.com/odata/",
      services: [],
      createdAt: T0,
      updatedAt: T1,
    });
    const old = await instances.get(i2);
    assert.equal(old, instance(i2, s1, "erp-old", { baseUrl: "https://old.example.com/odata/" }));
    assert.not.ok("sapClient" in old!, "absent in an older document");
  });

  test("instances: names are unique across systems: DuplicateKeyError(instances, name), nothing written", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1, s2] = idsOf("sys", 2);
    const [i1, i2, i3] = idsOf("ins", 3);
    await systems.create(system(s1, "erp-1"));
    await systems.create(system(s2, "erp-2"));
    const first = instance(i1, s1, "erp-prod");
    const other = instance(i3, s2, "erp-test");
    await instances.create(first);
    await instances.create(other);

    assertDuplicate(await rejection(() => instances.create(instance(i2, s2, "erp-prod"))), "instances", "name");
    assert.is(await instances.get(i2), undefined);
    assert.is(await instances.countBySystem(s2), 1);
    const renamed = await rejection(() => instances.update(i3, { name: "erp-prod", updatedAt: T2 }));
    assertDuplicate(renamed, "instances", "name");
    assert.equal(await all(instances), [first, other]);
  });

  test("instances.list: filtered by systemId gives only that system's instances, in id order, paged", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1, s2, s3] = idsOf("sys", 3);
    await systems.create(system(s1, "erp-1"));
    await systems.create(system(s2, "erp-2"));
    const ids = idsOf("ins", 6);
    const owners = [s1, s2, s1, s1, s2, s1];
    const recs = ids.map((id, i) => instance(id, owners[i], `ins-${i}`));
    for (const i of [5, 1, 3, 0, 4, 2]) await instances.create(recs[i]);

    const p1 = await instances.list({ systemId: s1, limit: 2 });
    assert.equal(p1, { items: [recs[0], recs[2]], more: true });
    // recs[4] (of s2) lies between recs[3] and recs[5]: `more` must look at s1's instances only.
    const p2 = await instances.list({ systemId: s1, afterId: p1.items[1].id, limit: 2 });
    assert.equal(p2, { items: [recs[3], recs[5]], more: false });
    const last = await instances.list({ systemId: s1, afterId: recs[3].id, limit: 1 });
    assert.equal(last, { items: [recs[5]], more: false });
    assert.equal(await instances.list({ systemId: s2, limit: 10 }), { items: [recs[1], recs[4]], more: false });
    assert.equal(await instances.list({ systemId: s2, limit: 1 }), { items: [recs[1]], more: true });
    assert.equal(await instances.list({ systemId: s3, limit: 10 }), { items: [], more: false });
    assert.equal(await instances.list({ limit: 4 }), { items: recs.slice(0, 4), more: true });
    assert.equal(await instances.list({ limit: 10 }), { items: recs, more: false });
  });

  test("instances.countBySystem counts only that system's instances", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1, s2, s3] = idsOf("sys", 3);
    await systems.create(system(s1, "erp-1"));
    await systems.create(system(s2, "erp-2"));
    const ids = idsOf("ins", 5);
    const owners = [s1, s2, s1, s1, s2];
    for (const [i, id] of ids.entries()) await instances.create(instance(id, owners[i], `ins-${i}`));

    assert.equal(
      [await instances.countBySystem(s1), await instances.countBySystem(s2), await instances.countBySystem(s3)],
      [3, 2, 0],
    );
    await instances.delete(ids[2]);
    assert.is(await instances.countBySystem(s1), 2);
    assert.is(await instances.countBySystem(""), 0);
  });

  test("systems: deletion marks: begin, in progress since a time, end (once), stale ones cleared; per system", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [s1, s2] = idsOf("sys", 2);
    assert.is(await systems.deletionInProgress(s1, T0), false);
    const old = await systems.beginDeletion(s1, T0);
    const fresh = await systems.beginDeletion(s1, T2);
    assert.is.not(old, fresh);
    assert.is(await systems.deletionInProgress(s1, T0), true);
    assert.is(await systems.deletionInProgress(s1, T2), true);
    assert.is(await systems.deletionInProgress(s1, new Date(T2.getTime() + 1)), false, "older marks are not in progress");
    assert.is(await systems.deletionInProgress(s2, T0), false, "marks are per system");
    assert.is(await systems.endDeletion(fresh), true);
    assert.is(await systems.endDeletion(fresh), false, "a mark ends once");
    assert.is(await systems.deletionInProgress(s1, T1), false);
    assert.is(await systems.deletionInProgress(s1, T0), true);
    await systems.beginDeletion(s2, T0);
    assert.is(await systems.clearStaleDeletions(s1, T1), 1);
    assert.is(await systems.deletionInProgress(s1, new Date(0)), false);
    assert.is(await systems.deletionInProgress(s2, T0), true, "only that system's marks are cleared");
    assert.is(await systems.endDeletion(old), false);
  });

  test("systems and instances, concurrently: of a deletion mark then an instance count, and an instance insert then a mark look-up, one sees the other's write", async (ctx) => {
    // What DeleteSystem and CreateInstance rely on (src/services/system-service.ts): every round races
    // (mark; count) against (insert; look up the mark), and never may both miss the other's write.
    const { systems, instances } = storeOf(ctx);
    const rounds = 40;
    const sysIds = idsOf("sys", rounds);
    const insIds = idsOf("ins", rounds);
    let both = 0;
    for (let r = 0; r < rounds; r++) {
      const sys = sysIds[r]!;
      await systems.create(system(sys, `race-${r}`));
      const deleter = async () => {
        const mark = await systems.beginDeletion(sys, T1);
        return { mark, counted: await instances.countBySystem(sys) };
      };
      const creator = async () => {
        // Spread the starts over a few turns of the event loop.
        for (let i = 0; i < r % 4; i++) await new Promise((resolve) => setImmediate(resolve));
        await instances.create(instance(insIds[r]!, sys, `race-ins-${r}`));
        return systems.deletionInProgress(sys, T0);
      };
      const [d, sawMark] = await Promise.all([deleter(), creator()]);
      assert.ok(d.counted > 0 || sawMark, `round ${r}: the count missed the instance and the instance missed the mark`);
      if (d.counted > 0 && sawMark) both++;
      await systems.endDeletion(d.mark);
    }
    // Not an assertion of timing, only a note of how often both saw each other.
    assert.ok(both <= rounds);
  });

  test("instances.getByName is exact and case-sensitive: Prod and prod are distinct instances", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1] = idsOf("sys", 1);
    const [i1, i2] = idsOf("ins", 2);
    await systems.create(system(s1, "erp"));
    const upper = instance(i1, s1, "Prod");
    const lower = instance(i2, s1, "prod", { environment: "sandbox" });
    await instances.create(upper);
    await instances.create(lower);

    assert.equal(await instances.getByName("Prod"), upper);
    assert.equal(await instances.getByName("prod"), lower);
    for (const miss of ["PROD", "Pro", "Prod ", " prod", "P.od", "^Prod$", ".*", ""]) {
      assert.is(await instances.getByName(miss), undefined, `getByName(${JSON.stringify(miss)})`);
    }
    assert.equal(await all(instances), [upper, lower]);
  });

  // ---- incrementMany and getMany (the usage rollups') --------------------------

  test("collection.incrementMany creates absent documents (set fields, nested amounts) and adds to existing ones in one batch", async (ctx) => {
    // A collection with no unique index but the id.
    const coll = plainCollectionOf(storeOf(ctx));
    const at = new Date("2026-01-02T03:00:00.000Z");
    await coll.incrementMany([
      { id: "a", inc: { "c.requests": 2, "c.latencySumMs": 1.25, "g.entity.vA%2EB.requests": 1 }, set: { start: at, writer: "w1" } },
    ]);
    await coll.incrementMany([]);
    // "a" exists, "b" does not: both in one batch.
    await coll.incrementMany([
      { id: "a", inc: { "c.requests": 3, "c.latencySumMs": 0.5, "g.entity.vA%2EB.requests": 1, "g.entity.v.requests": 4 }, set: { start: at, writer: "w1" } },
      { id: "b", inc: { "c.requests": 1 }, set: { start: at, writer: "w2" } },
    ]);
    assert.equal(await coll.get("a"), {
      _id: "a",
      start: at,
      writer: "w1",
      c: { requests: 5, latencySumMs: 1.75 },
      g: { entity: { "vA%2EB": { requests: 2 }, v: { requests: 4 } } },
    });
    assert.equal(await coll.get("b"), { _id: "b", start: at, writer: "w2", c: { requests: 1 } });
    assert.is(await coll.count({}), 2);
  });

  test("collection.incrementMany of many documents (a backlog), some existing, some not: each gets exactly its amounts", async (ctx) => {
    const coll = plainCollectionOf(storeOf(ctx));
    const ids = Array.from({ length: 12 }, (_, i) => `d${String(i).padStart(2, "0")}`);
    await coll.incrementMany(ids.slice(0, 3).map((id) => ({ id, inc: { "c.n": 1 }, set: { w: "x" } })));
    await coll.incrementMany(ids.map((id, i) => ({ id, inc: { "c.n": i, "g.k.vA.n": 2 }, set: { w: "x" } })));
    const docs = (await coll.getMany(ids)).sort((a, b) => (a._id < b._id ? -1 : 1));
    assert.equal(
      docs,
      ids.map((id, i) => ({ _id: id, w: "x", c: { n: i + (i < 3 ? 1 : 0) }, g: { k: { vA: { n: 2 } } } })),
    );
  });

  test("collection.incrementMany: two batches creating the same many documents at once both count (one inserts, the other adds)", async (ctx) => {
    const coll = plainCollectionOf(storeOf(ctx));
    const ids = Array.from({ length: 10 }, (_, i) => `r${i}`);
    const batch = ids.map((id) => ({ id, inc: { n: 1 }, set: {} }));
    await Promise.all([coll.incrementMany(batch), coll.incrementMany(batch)]);
    assert.equal(
      (await coll.getMany(ids)).map((d) => d.n),
      ids.map(() => 2),
    );
  });

  test("collection.getMany returns the documents with the given ids, leaving out absent ones", async (ctx) => {
    const coll = plainCollectionOf(storeOf(ctx));
    await coll.incrementMany(["a", "b", "c"].map((id, i) => ({ id, inc: { n: i }, set: {} })));
    const byId = (docs: { _id: string }[]) => [...docs].sort((x, y) => (x._id < y._id ? -1 : 1));
    assert.equal(byId(await coll.getMany(["c", "zz", "a"])), [
      { _id: "a", n: 0 },
      { _id: "c", n: 2 },
    ]);
    assert.equal(await coll.getMany([]), []);
    assert.equal(await coll.getMany(["A", "a ", ""]), []);
    for (const bad of OPERATOR_VALUES) {
      assertTypeError(await rejection(() => coll.getMany(["a", bad as string]), inspect(bad)), `getMany(${inspect(bad)})`);
    }
  });

  test("collection.keepNewest removes the lowest ids, at most `most` per call, after inserts in and out of order, upserts, deletes and a purge", async (ctx) => {
    const coll = plainCollectionOf(storeOf(ctx));
    const ids = async () => (await coll.list({}, { limit: 100 })).map((d) => d._id);
    const at = (s: number) => new Date(T0.getTime() + s * 1000);
    await coll.insertMany(["k05", "k06", "k07", "k08", "k09"].map((id, i) => ({ _id: id, at: at(5 + i) })));
    assert.equal(await coll.keepNewest(100, 10), { removed: 0, remaining: 5 });
    // Older ids after newer ones.
    await coll.insertMany(["k00", "k01", "k02", "k03", "k04"].map((id, i) => ({ _id: id, at: at(i) })));
    assert.equal(await coll.keepNewest(8, 1), { removed: 1, remaining: 9 }, "most: one at a time");
    assert.equal(await ids(), ["k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09"]);
    // An upsert creates k10 (dated before the others) and one adds to k09; one insert of a newer id.
    await coll.incrementMany([
      { id: "k10", inc: { n: 1 }, set: { at: at(0) } },
      { id: "k09", inc: { n: 1 }, set: {} },
    ]);
    await coll.insert({ _id: "k11", at: at(11) });
    assert.equal(await coll.keepNewest(9, 10), { removed: 2, remaining: 9 });
    assert.equal(await ids(), ["k03", "k04", "k05", "k06", "k07", "k08", "k09", "k10", "k11"]);
    // One upsert of an id among the oldest.
    assert.is(await coll.increment("k035", "n", 1, { at: at(3) }), 1);
    assert.equal(await coll.keepNewest(9, 10), { removed: 1, remaining: 9 });
    assert.equal(await ids(), ["k035", "k04", "k05", "k06", "k07", "k08", "k09", "k10", "k11"]);
    // A delete of the newest.
    assert.ok(await coll.delete("k11"));
    assert.equal(await coll.keepNewest(7, 10), { removed: 1, remaining: 7 });
    assert.equal(await ids(), ["k04", "k05", "k06", "k07", "k08", "k09", "k10"]);
    // A purge by date that takes an old id and a new one.
    assert.is(await coll.deleteBefore("at", at(5)), 2, "k04 and k10");
    assert.equal(await coll.keepNewest(4, 10), { removed: 1, remaining: 4 });
    assert.equal(await ids(), ["k06", "k07", "k08", "k09"]);
    assert.equal(await coll.keepNewest(0, 3), { removed: 3, remaining: 1 });
    assert.equal(await coll.keepNewest(0, 3), { removed: 1, remaining: 0 });
    assert.equal(await coll.keepNewest(0, 3), { removed: 0, remaining: 0 });
  });

  test("injection: incrementMany throws TypeError on an object id and changes nothing", async (ctx) => {
    const coll = plainCollectionOf(storeOf(ctx));
    await coll.incrementMany([{ id: "a", inc: { n: 1 }, set: {} }]);
    for (const bad of OPERATOR_VALUES) {
      const err = await rejection(() => coll.incrementMany([{ id: bad as string, inc: { n: 1 }, set: {} }]), inspect(bad));
      assertTypeError(err, `incrementMany(${inspect(bad)})`);
    }
    assert.equal(await coll.get("a"), { _id: "a", n: 1 });
    assert.is(await coll.count({}), 1);
  });

  // ---- rate windows ------------------------------------------------------------

  test("rateWindows: leases grant what is asked while the window has it, then what is left, then nothing; used counts what is held", async (ctx) => {
    const { rateWindows } = storeOf(ctx);
    const exp = new Date("2026-03-04T12:02:00Z");
    assert.equal(await rateWindows.lease("w1", 4, 10, exp), { granted: 4, issued: 4 });
    assert.equal(await rateWindows.lease("w1", 5, 10, exp), { granted: 5, issued: 9 });
    assert.equal(await rateWindows.lease("w1", 5, 10, exp), { granted: 1, issued: 10 });
    assert.equal(await rateWindows.lease("w1", 1, 10, exp), { granted: 0, issued: 10 });
    assert.is(await rateWindows.used("w1"), 10);
    // Given back: held no more, and granted again.
    await rateWindows.giveBack("w1", 3, exp);
    assert.is(await rateWindows.used("w1"), 7);
    assert.equal(await rateWindows.lease("w1", 5, 10, exp), { granted: 3, issued: 10 });
    // A raised limit grants more; windows are separate.
    assert.equal(await rateWindows.lease("w1", 2, 11, exp), { granted: 1, issued: 11 });
    assert.equal(await rateWindows.lease("w2", 2, 10, exp), { granted: 2, issued: 2 });
    assert.is(await rateWindows.used("w3"), 0);
  });

  test("rateWindows: 60 concurrent leases of 1 to 7 places on a window of 100 grant exactly 100 in all, none more than asked", async (ctx) => {
    const { rateWindows } = storeOf(ctx);
    const exp = new Date("2026-03-04T12:02:00Z");
    const wants = Array.from({ length: 60 }, (_, i) => (i % 7) + 1);
    const leases = await Promise.all(wants.map((want) => rateWindows.lease("w", want, 100, exp)));
    leases.forEach((l, i) => assert.ok(l.granted >= 0 && l.granted <= wants[i]!, `lease ${i}: ${l.granted} of ${wants[i]}`));
    assert.is(leases.reduce((n, l) => n + l.granted, 0), 100);
    assert.is(await rateWindows.used("w"), 100);
  });

  test("rateWindows: purge removes the windows that expired, and only those", async (ctx) => {
    const { rateWindows } = storeOf(ctx);
    await rateWindows.lease("old", 3, 10, new Date("2026-03-04T12:01:00Z"));
    await rateWindows.lease("old", 2, 10, new Date("2026-03-04T12:01:00Z"));
    await rateWindows.lease("new", 1, 10, new Date("2026-03-04T12:03:00Z"));
    assert.ok((await rateWindows.purge(new Date("2026-03-04T12:02:00Z"))) >= 1);
    assert.is(await rateWindows.used("old"), 0);
    assert.is(await rateWindows.used("new"), 1);
  });

  // ---- injection -------------------------------------------------------------

  test("injection: operator-looking strings are plain values and match nothing", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1] = idsOf("sys", 1);
    const [i1] = idsOf("ins", 1);
    await systems.create(system(s1, "erp"));
    await instances.create(instance(i1, s1, "Prod"));

    for (const s of ['{"$ne":null}', "$ne", '{"$gt":""}', '{"$regex":".*"}']) {
      assert.is(await instances.getByName(s), undefined, `getByName(${s})`);
      assert.is(await systems.get(s), undefined, `systems.get(${s})`);
      assert.is(await instances.countBySystem(s), 0, `countBySystem(${s})`);
      assert.equal(await instances.list({ systemId: s, limit: 10 }), { items: [], more: false });
    }
  });

  test("injection: DocumentCollection findOne/list/count/get throw TypeError on any object filter value", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1] = idsOf("sys", 1);
    const [i1] = idsOf("ins", 1);
    await systems.create(system(s1, "erp"));
    await instances.create(instance(i1, s1, "Prod"));
    const coll = collectionOf(instances);
    // Positive control: the same calls with scalars do find the document.
    assert.is((await coll.findOne({ name: "Prod" }))?._id, i1);
    assert.is((await coll.get(i1))?._id, i1);
    assert.is(await coll.count({ systemId: s1 }), 1);
    assert.equal((await coll.list({ systemId: s1 }, { limit: 10 })).map((d) => d._id), [i1]);

    for (const bad of OPERATOR_VALUES) {
      const v = bad as string;
      const what = inspect(bad);
      assertTypeError(await rejection(() => coll.findOne({ name: v })), `findOne({name: ${what}})`);
      assertTypeError(await rejection(() => coll.findOne({ _id: v })), `findOne({_id: ${what}})`);
      assertTypeError(await rejection(() => coll.list({ systemId: v }, { limit: 10 })), `list({systemId: ${what}})`);
      assertTypeError(await rejection(() => coll.count({ systemId: v })), `count({systemId: ${what}})`);
      assertTypeError(await rejection(() => coll.get(v)), `get(${what})`);
    }
  });

  test("injection: the aggregate ports throw TypeError on object ids, names and system ids", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1] = idsOf("sys", 1);
    const [i1] = idsOf("ins", 1);
    await systems.create(system(s1, "erp"));
    await instances.create(instance(i1, s1, "Prod"));

    for (const bad of OPERATOR_VALUES) {
      const v = bad as string;
      const what = inspect(bad);
      assertTypeError(await rejection(() => instances.getByName(v)), `getByName(${what})`);
      assertTypeError(await rejection(() => systems.get(v)), `systems.get(${what})`);
      assertTypeError(await rejection(() => instances.get(v)), `instances.get(${what})`);
      assertTypeError(await rejection(() => instances.countBySystem(v)), `countBySystem(${what})`);
      assertTypeError(await rejection(() => instances.list({ systemId: v, limit: 10 })), `list({systemId: ${what}})`);
    }
  });

  test("injection: update and delete with an operator object as id match nothing and change nothing", async (ctx) => {
    const { systems, instances } = storeOf(ctx);
    const [s1, s2] = idsOf("sys", 2);
    const [i1] = idsOf("ins", 1);
    const recS1 = system(s1, "erp-1");
    const recS2 = system(s2, "erp-2");
    const recI1 = instance(i1, s1, "Prod");
    await systems.create(recS1);
    await systems.create(recS2);
    await instances.create(recI1);
    const refused = async (what: string, op: () => Promise<unknown>) => {
      const err = await rejection(op, what);
      assert.ok(
        err instanceof TypeError || err instanceof NotFoundError,
        `${what}: expected TypeError or NotFoundError, got ${describe(err)}`,
      );
    };

    for (const bad of OPERATOR_VALUES) {
      const v = bad as string;
      const what = inspect(bad);
      await refused(`systems.update(${what})`, () => systems.update(v, { description: "pwned" }));
      await refused(`instances.update(${what})`, () => instances.update(v, { baseUrl: "https://evil.example.com/" }));
      await refused(`systems.delete(${what})`, () => systems.delete(v));
      await refused(`instances.delete(${what})`, () => instances.delete(v));

      const coll = collectionOf(systems);
      const updated = await coll.update(v, { description: "pwned" }).catch((err: unknown) => {
        assertTypeError(err, `collection.update(${what})`);
        return undefined;
      });
      assert.is(updated, undefined, `collection.update(${what}) matched a document`);
      const deleted = await coll.delete(v).catch((err: unknown) => {
        assertTypeError(err, `collection.delete(${what})`);
        return undefined;
      });
      assert.is(deleted, undefined, `collection.delete(${what}) matched a document`);

      assert.equal(await all(systems), [recS1, recS2], `systems changed by ${what}`);
      assert.equal(await all(instances), [recI1], `instances changed by ${what}`);
    }
  });

  test("injection: list with an operator object as afterId throws TypeError or matches nothing", async (ctx) => {
    const { systems } = storeOf(ctx);
    const [s1, s2] = idsOf("sys", 2);
    await systems.create(system(s1, "erp-1"));
    await systems.create(system(s2, "erp-2"));

    for (const bad of [{ $ne: null }, { $gt: "" }, { $lt: "zzz" }, { $exists: true }]) {
      const what = inspect(bad);
      let page: unknown;
      try {
        page = await systems.list({ afterId: bad as unknown as string, limit: 10 });
      } catch (err) {
        assertTypeError(err, `list({afterId: ${what}})`);
        continue;
      }
      assert.equal(page, { items: [], more: false }, `list({afterId: ${what}})`);
    }
  });

  // ---- audit trail -----------------------------------------------------------

  /** An audit entry whose snapshots hold keys no document field name may (`.`, `$`, empty). */
  function auditEntry(id: string, i: number, fields: Partial<AuditRecord> = {}): AuditRecord {
    return {
      id,
      timestamp: new Date(T0.getTime() + i * 60_000),
      actor: "master",
      sessionId: "",
      action: "update",
      resourceType: "api_key",
      resourceId: `key_0000000000000000000000000${i % 10}`,
      requestId: `req-${i}`,
      state: "pending",
      before: { name: "a", permissions: { "s4.prod": { $metadata: { "": ["list"] } } }, key: "[redacted]" },
      after: { name: "b", permissions: { "s4.prod": { $metadata: { "": ["list", "get"] } } }, key: "[redacted]", n: 1.5, ok: true, none: null },
      changes: [
        { path: ["name"], before: "a", after: "b" },
        { path: ["permissions", "s4.prod", "$metadata", ""], before: ["list"], after: ["list", "get"] },
      ],
      ...fields,
    };
  }

  test("audit: append then get round-trips every field (snapshot keys with ., $ and empty, nulls, numbers)", async (ctx) => {
    const { audit } = storeOf(ctx);
    const [a, b, unknown] = idsOf("aud", 3);
    const rec = auditEntry(a, 0, { sessionId: "ses_abc", actor: "key_01KA0000000000000000000000" });
    const created = auditEntry(b, 1, { action: "create", before: null, changes: [{ path: ["name"], before: null, after: "b" }] });
    await audit.append(rec);
    await audit.append(created);
    const got = await audit.get(a);
    assert.equal(got, rec);
    assert.instance(got!.timestamp, Date);
    assert.equal(await audit.get(b), created);
    assert.is(await audit.get(unknown), undefined);
    assertDuplicate(await rejection(() => audit.append(auditEntry(a, 5))), "audit_entries", "id");
    assert.equal(await audit.get(a), rec);
  });

  test("audit: markApplied sets state, after and changes, keeps the rest; unknown id is NotFoundError", async (ctx) => {
    const { audit } = storeOf(ctx);
    const [a, unknown] = idsOf("aud", 2);
    const rec = auditEntry(a, 0);
    await audit.append(rec);
    const result = { after: { name: "c", "x.y": { $z: [1, null] } }, changes: [{ path: ["name"], before: "a", after: "c" }] };
    const applied: AuditRecord = { ...rec, state: "applied", ...result };
    assert.equal(await audit.markApplied(a, result), applied);
    assert.equal(await audit.get(a), applied);
    assertNotFound(await rejection(() => audit.markApplied(unknown, result)), "audit_entries", unknown);
    assert.is(await audit.get(unknown), undefined);
  });

  test("audit: remove deletes one entry and says whether there was one", async (ctx) => {
    const { audit } = storeOf(ctx);
    const [a, b] = idsOf("aud", 2);
    await audit.append(auditEntry(a, 0));
    await audit.append(auditEntry(b, 1));
    assert.is(await audit.remove(a), true);
    assert.is(await audit.remove(a), false);
    assert.is(await audit.get(a), undefined);
    assert.equal(await audit.get(b), auditEntry(b, 1));
  });

  test("audit.query: newest first, paged by beforeId, every filter alone and together, [from, to)", async (ctx) => {
    const { audit } = storeOf(ctx);
    const ids = idsOf("aud", 6);
    const K1 = "key_01KA0000000000000000000001";
    const recs = [
      auditEntry(ids[0]!, 0, { action: "create", resourceType: "system", resourceId: "sys_1", actor: "master" }),
      auditEntry(ids[1]!, 1, { action: "update", resourceType: "system", resourceId: "sys_1", actor: K1, sessionId: "ses_1" }),
      auditEntry(ids[2]!, 2, { action: "create", resourceType: "api_key", resourceId: "key_9", actor: K1 }),
      auditEntry(ids[3]!, 3, { action: "revoke", resourceType: "api_key", resourceId: "key_9", actor: "master", sessionId: "ses_1" }),
      auditEntry(ids[4]!, 4, { action: "delete", resourceType: "system", resourceId: "sys_1", actor: "internal" }),
      auditEntry(ids[5]!, 5, { action: "update", resourceType: "instance", resourceId: "ins_1", actor: "master" }),
    ];
    // Out of order, so only sorting by id can give the expected order.
    for (const i of [3, 0, 5, 1, 4, 2]) await audit.append(recs[i]!);
    const newest = [...recs].reverse();

    assert.equal(await audit.query({ limit: 10 }), { items: newest, more: false });
    const p1 = await audit.query({ limit: 4 });
    assert.equal(p1, { items: newest.slice(0, 4), more: true });
    assert.equal(await audit.query({ limit: 4, beforeId: p1.items[3]!.id }), { items: newest.slice(4), more: false });
    assert.equal(await audit.query({ limit: 2, beforeId: recs[2]!.id }), { items: [recs[1], recs[0]], more: false });

    const found = async (q: Omit<Parameters<typeof audit.query>[0], "limit">) =>
      (await audit.query({ ...q, limit: 10 })).items.map((r) => ids.indexOf(r.id));
    assert.equal(await found({ actor: K1 }), [2, 1]);
    assert.equal(await found({ actor: "internal" }), [4]);
    assert.equal(await found({ sessionId: "ses_1" }), [3, 1]);
    assert.equal(await found({ resourceType: "system" }), [4, 1, 0]);
    assert.equal(await found({ resourceId: "key_9" }), [3, 2]);
    assert.equal(await found({ action: "create" }), [2, 0]);
    assert.equal(await found({ resourceType: "system", action: "update", actor: K1 }), [1]);
    assert.equal(await found({ resourceType: "system", action: "revoke" }), []);
    // [from, to): entry i is at T0 + i minutes.
    const at = (i: number) => new Date(T0.getTime() + i * 60_000);
    assert.equal(await found({ from: at(2), to: at(4) }), [3, 2]);
    assert.equal(await found({ from: at(5) }), [5]);
    assert.equal(await found({ to: at(1) }), [0]);
    assert.equal(await found({ from: at(1), to: at(5), actor: "master" }), [3]);
    assert.equal(await audit.query({ limit: 1, resourceType: "system" }), { items: [recs[4]], more: true });
    assert.equal(await audit.query({ limit: 3, resourceType: "system" }), { items: [recs[4], recs[1], recs[0]], more: false });
  });

  test("audit.query: operator-looking strings are plain values; object values throw TypeError", async (ctx) => {
    const { audit } = storeOf(ctx);
    const [a] = idsOf("aud", 1);
    await audit.append(auditEntry(a, 0));
    for (const s of ['{"$ne":null}', "$ne", '{"$gt":""}']) {
      assert.equal(await audit.query({ actor: s, limit: 10 }), { items: [], more: false });
      assert.equal(await audit.query({ resourceId: s, limit: 10 }), { items: [], more: false });
    }
    for (const bad of OPERATOR_VALUES) {
      const what = inspect(bad);
      assertTypeError(await rejection(() => audit.query({ actor: bad as string, limit: 10 })), `query({actor: ${what}})`);
      assertTypeError(await rejection(() => audit.query({ resourceId: bad as string, limit: 10 })), `query({resourceId: ${what}})`);
    }
  });

  test("audit.purge removes exactly the entries written before the cutoff", async (ctx) => {
    const { audit } = storeOf(ctx);
    const ids = idsOf("aud", 4);
    const recs = ids.map((id, i) => auditEntry(id, i));
    for (const r of recs) await audit.append(r);
    assert.is(await audit.purge(new Date(T0.getTime() + 2 * 60_000)), 2);
    assert.equal(await audit.query({ limit: 10 }), { items: [recs[3], recs[2]], more: false });
    assert.is(await audit.purge(T0), 0);
  });

  test.run();
}
