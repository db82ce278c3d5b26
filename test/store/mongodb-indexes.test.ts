/**
 * MongoDB indexes against a real MongoDB-wire server (the MongoDB run only):
 * startup brings an older database's indexes in line without failing, and
 * the main queries use an index where the server reports plans.
 */
import { MongoClient } from "mongodb";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { DuplicateKeyError, createStore } from "../../src/store/index.js";
import { dropMongoDatabase, freshMongoUrl, testMongoUrl } from "../../test-support/world.js";

const base = testMongoUrl();
const Indexes = suite<{ url: string; client: MongoClient }>("mongodb indexes (test server)");

Indexes.before.each(async (ctx) => {
  ctx.url = freshMongoUrl(base!);
  ctx.client = new MongoClient(ctx.url, { serverSelectionTimeoutMS: 5000 });
  await ctx.client.connect();
});
Indexes.after.each(async (ctx) => {
  await ctx.client.close();
  await dropMongoDatabase(ctx.url);
});

const open = (url: string) => createStore({ kind: "mongodb", url, serverSelectionTimeoutMs: 5000 });
const now = new Date("2026-01-02T03:04:05.000Z");
const system = (id: string, name: string) => ({ id, name, description: "", labels: {}, createdAt: now, updatedAt: now });

Indexes("an older index of the same name but not unique is replaced, and uniqueness holds", async ({ url, client }) => {
  await client.db().collection("systems").createIndex({ name: 1 }, { name: "systems_name_unique" });
  const store = await open(url);
  try {
    const indexes = await client.db().collection("systems").listIndexes().toArray();
    const index = indexes.find((i) => i.name === "systems_name_unique");
    assert.equal({ key: index?.key, unique: index?.unique }, { key: { name: 1 }, unique: true });
    await store.systems.create(system("sys_00000000000000000000000001", "dup"));
    try {
      await store.systems.create(system("sys_00000000000000000000000002", "dup"));
      assert.unreachable("duplicate accepted");
    } catch (err) {
      assert.instance(err, DuplicateKeyError);
      assert.is((err as DuplicateKeyError).field, "name");
    }
  } finally {
    await store.close();
  }
});

Indexes("an equivalent unique index under another name is kept; startup does not fail", async ({ url, client }) => {
  await client.db().collection("instances").createIndex({ name: 1 }, { name: "name_1", unique: true });
  const store = await open(url);
  try {
    const names = (await client.db().collection("instances").listIndexes().toArray()).map((i) => i.name).sort();
    assert.ok(names.includes("name_1"), names.join(","));
    assert.ok(names.includes("instances_systemId"), names.join(","));
  } finally {
    await store.close();
  }
  // A second start on the same database changes nothing and does not fail.
  const again = await open(url);
  await again.close();
});

Indexes("the key-hash lookup uses its index where the server reports plans", async ({ url, client }) => {
  const store = await open(url);
  try {
    const explained = (await client
      .db()
      .collection("api_keys")
      .find({ keyHash: { $eq: "0".repeat(64) }, revoked: { $eq: false } })
      .explain()) as { queryPlanner?: { winningPlan?: unknown } };
    const plan = explained.queryPlanner?.winningPlan;
    if (plan === undefined) {
      // FerretDB 1.x reports no winningPlan: nothing to check on it.
      return;
    }
    assert.match(JSON.stringify(plan), /IXSCAN/);
    assert.match(JSON.stringify(plan), /api_keys_keyHash_unique/);
  } finally {
    await store.close();
  }
});

Indexes("request_logs keeps every index on MongoDB, those the embedded store leaves out (apiKeyId, instance, status) included", async ({ url, client }) => {
  const store = await open(url);
  try {
    const indexes = await client.db().collection("request_logs").listIndexes().toArray();
    assert.equal(
      indexes.map((i) => [i.name, i.key]).sort(),
      [
        ["_id_", { _id: 1 }],
        ["request_logs_apiKeyId", { apiKeyId: 1 }],
        ["request_logs_expiresAt", { expiresAt: 1 }],
        ["request_logs_instance", { instance: 1 }],
        ["request_logs_requestId", { requestId: 1 }],
        ["request_logs_status", { status: 1 }],
        ["request_logs_timestamp", { timestamp: 1 }],
      ],
    );
  } finally {
    await store.close();
  }
});

if (base !== undefined) Indexes.run();
