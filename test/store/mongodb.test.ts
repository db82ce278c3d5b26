/**
 * The MongoDB adapter: URL handling and failing fast without a server (no
 * server needed); named indexes and idempotent opening against the test
 * server when ERPLINK_TEST_MONGODB_URL is set, and a request-log batch sent
 * again after an insert the server took in part. The store contract itself
 * runs on MongoDB from contract.test.ts.
 */
import { MongoClient } from "mongodb";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createStore, DuplicateKeyError, openStore, StoreUnavailableError, type Store } from "../../src/store/index.js";
import { createMongoBackend, databaseName } from "../../src/store/mongodb.js";
import { logRecord } from "../../test-support/log-entries.js";
import { dropMongoDatabase, freshMongoUrl, testMongoUrl } from "../../test-support/world.js";

const T0 = new Date("2026-01-02T03:04:05.678Z");

const pure = suite("mongodb adapter (no server)");

pure("databaseName: the URL's path names the database, else erplink", () => {
  const cases: [url: string, db: string][] = [
    ["mongodb://h/", "erplink"],
    ["mongodb://h", "erplink"],
    ["mongodb://h/x", "x"],
    ["mongodb://h:27017/x?authSource=admin", "x"],
    ["mongodb://h1,h2/db?replicaSet=rs", "db"],
    ["mongodb://h1:27017,h2:27018/db?replicaSet=rs", "db"],
    ["mongodb+srv://user:p@c.example.net/prod?retryWrites=true", "prod"],
    ["mongodb+srv://user:p@c.example.net/?retryWrites=true", "erplink"],
  ];
  assert.equal(
    cases.map(([url]) => [url, databaseName(url)]),
    cases,
  );
});

pure("createStore rejects with StoreUnavailableError within ~2 s when no server answers", async () => {
  const started = performance.now();
  let caught: unknown;
  try {
    const store = await createStore({ kind: "mongodb", url: "mongodb://127.0.0.1:1/x", serverSelectionTimeoutMs: 300 });
    await store.close();
  } catch (err) {
    caught = err;
  }
  const elapsed = performance.now() - started;
  assert.instance(caught, StoreUnavailableError);
  assert.is((caught as Error).name, "StoreUnavailableError");
  assert.ok((caught as Error).cause !== undefined, "the driver error is kept as the cause");
  assert.ok(elapsed < 2000, `took ${Math.round(elapsed)} ms`);
});

pure.run();

const base = testMongoUrl();
if (base !== undefined) {
  const server = suite<{ url: string; opened: Store[] }>("mongodb adapter (test server)", { url: "", opened: [] });

  server.before.each((ctx) => {
    ctx.url = freshMongoUrl(base);
    ctx.opened = [];
  });
  server.after.each(async (ctx) => {
    for (const store of ctx.opened) await store.close();
    await dropMongoDatabase(ctx.url);
  });

  // createStore's steps, so that a failed open still closes its client: createStore
  // itself leaves the client open when opening the aggregates fails, and the
  // leaked client would keep this test process from exiting.
  const open = async (ctx: { url: string; opened: Store[] }): Promise<Store> => {
    const backend = await createMongoBackend({ url: ctx.url, serverSelectionTimeoutMs: 5000 });
    try {
      const store = await openStore(backend);
      ctx.opened.push(store);
      return store;
    } catch (err) {
      await backend.close();
      const cause = err instanceof Error && err.cause instanceof Error ? ` (cause: ${err.cause.message})` : "";
      throw new Error(`opening the store failed: ${String(err)}${cause}`, { cause: err });
    }
  };

  /** Index names, keys and uniqueness per collection, as the server lists them. */
  const indexes = async (url: string) => {
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
    try {
      await client.connect();
      const out: Record<string, { name: string; key: unknown; unique: boolean }[]> = {};
      for (const coll of ["systems", "instances", "system_deletions"]) {
        const list = await client.db().collection(coll).listIndexes().toArray();
        out[coll] = list
          .filter((i) => i.name !== "_id_")
          .map((i) => ({ name: String(i.name), key: i.key, unique: i.unique === true }))
          .sort((a, b) => a.name.localeCompare(b.name));
      }
      return out;
    } finally {
      await client.close();
    }
  };

  const expectedIndexes = {
    systems: [{ name: "systems_name_unique", key: { name: 1 }, unique: true }],
    instances: [
      { name: "instances_name_unique", key: { name: 1 }, unique: true },
      { name: "instances_systemId", key: { systemId: 1 }, unique: false },
    ],
    system_deletions: [{ name: "system_deletions_systemId", key: { systemId: 1 }, unique: false }],
  };

  server("a request-log batch sent again after an insert taken in part is written once, whole: the duplicates are not an error", async (ctx) => {
    const store = await open(ctx);
    const ids = ["log_01KDYAK3SECDGET9P81C8CQPQA", "log_01KDYAK3SECDGET9P81C8CQPQB", "log_01KDYAK3SECDGET9P81C8CQPQC"];
    const record = (id: string, i: number) => logRecord({ id, requestId: `r${i}`, timestamp: new Date(T0.getTime() + i * 1000) });
    const batch = ids.map(record);
    // What the server took of the first attempt before its answer was lost.
    await store.logs.append([batch[0]!, batch[2]!]);
    await store.logs.append(batch);
    assert.equal((await store.logs.query({ limit: 10 })).items, [...batch].reverse());
  });

  server("opening creates the named indexes: systems_name_unique, instances_name_unique, instances_systemId", async (ctx) => {
    const store = await open(ctx);
    assert.is(store.kind, "mongodb");
    await store.ping();
    assert.equal(await indexes(ctx.url), expectedIndexes);
  });

  server("opening the store twice on one database is idempotent: same indexes, shared data and constraints", async (ctx) => {
    const first = await open(ctx);
    const system = {
      id: "sys_01KDYAK3SECDGET9P81C8CQPQK",
      name: "erp",
      description: "",
      labels: { "a.b/c": "d" },
      createdAt: T0,
      updatedAt: T0,
    };
    await first.systems.create(system);

    const second = await open(ctx);
    assert.equal(await indexes(ctx.url), expectedIndexes);
    assert.equal(await second.systems.get(system.id), system);
    let caught: unknown;
    try {
      await second.systems.create({ ...system, id: "sys_01KDYAK3SECDGET9P81C8CQPQM" });
    } catch (err) {
      caught = err;
    }
    assert.instance(caught, DuplicateKeyError);
    assert.equal([(caught as DuplicateKeyError).collection, (caught as DuplicateKeyError).field], ["systems", "name"]);

    // And once more after both are closed, as on a restart.
    for (const store of ctx.opened.splice(0)) await store.close();
    const third = await open(ctx);
    assert.equal(await third.systems.list({ limit: 10 }), { items: [system], more: false });
  });

  server.run();
}
