/**
 * The instrumented store (src/store/instrumented.ts): the store contract
 * holds through it, and every collection operation reports its collection,
 * operation, time and failure kind to the metrics port. Embedded in memory,
 * or MongoDB when ERPLINK_TEST_MONGODB_URL is set.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { StoreErrorKind, StoreMetrics } from "../../src/metrics/port.js";
import { createIdGenerator } from "../../src/services/ids.js";
import { storeErrorKind } from "../../src/store/instrumented.js";
import { createStore, DuplicateKeyError, NotFoundError, StoreUnavailableError, type Store } from "../../src/store/index.js";
import { storeContract } from "../../test-support/store-contract.js";
import { dropMongoDatabase, freshMongoUrl, testMongoUrl } from "../../test-support/world.js";

interface Seen {
  collection: string;
  operation: string;
  seconds: number;
  error: StoreErrorKind | undefined;
}

/** A store whose operations are reported into `seen`. */
async function openInstrumented(seen: Seen[] = []): Promise<Store & { dispose(): Promise<void> }> {
  const metrics: StoreMetrics = { operation: (collection, operation, seconds, error) => void seen.push({ collection, operation, seconds, error }) };
  const base = testMongoUrl();
  if (base === undefined) {
    const store = await createStore({ kind: "embedded", dataDir: ":memory:" }, metrics);
    return Object.assign(store, { dispose: () => store.close() });
  }
  const url = freshMongoUrl(base);
  const store = await createStore({ kind: "mongodb", url, serverSelectionTimeoutMs: 5000 }, metrics);
  return Object.assign(store, {
    dispose: async () => {
      await store.close();
      await dropMongoDatabase(url);
    },
  });
}

storeContract(`${testMongoUrl() === undefined ? "embedded (memory)" : "mongodb"}, instrumented`, () => openInstrumented());

const Instrumented = suite("instrumented store: what it reports");
const newId = createIdGenerator(() => new Date("2026-01-02T03:04:05Z"));
const T0 = new Date("2026-01-02T03:04:05Z");

Instrumented("each operation once, with its collection, its operation and a duration; a duplicate name as duplicate_key", async () => {
  const seen: Seen[] = [];
  const store = await openInstrumented(seen);
  try {
    seen.length = 0;
    const id = newId("sys");
    await store.systems.create({ id, name: "S4", description: "", labels: {}, createdAt: T0, updatedAt: T0 });
    assert.equal(
      seen.map((s) => [s.collection, s.operation, s.error]),
      [["systems", "insert", undefined]],
    );
    assert.ok(seen[0]!.seconds >= 0 && seen[0]!.seconds < 5, String(seen[0]!.seconds));

    seen.length = 0;
    try {
      await store.systems.create({ id: newId("sys"), name: "S4", description: "", labels: {}, createdAt: T0, updatedAt: T0 });
      assert.unreachable("a second S4 was accepted");
    } catch (err) {
      assert.instance(err, DuplicateKeyError);
    }
    // The adapter may look up which field collided (a findOne); the insert itself failed as duplicate_key.
    const insert = seen.filter((s) => s.operation === "insert");
    assert.equal(insert.map((s) => [s.collection, s.error]), [["systems", "duplicate_key"]]);

    seen.length = 0;
    assert.is((await store.systems.get(id))?.name, "S4");
    assert.equal(seen.map((s) => [s.collection, s.operation, s.error]), [["systems", "get", undefined]]);
  } finally {
    await store.dispose();
  }
});

Instrumented("error kinds: unavailable, duplicate_key, anything else other", () => {
  assert.is(storeErrorKind(new StoreUnavailableError()), "unavailable");
  assert.is(storeErrorKind(new DuplicateKeyError("systems", "name")), "duplicate_key");
  assert.is(storeErrorKind(new NotFoundError("systems", "sys_1")), "other");
  assert.is(storeErrorKind(new TypeError("filter on name must be a scalar")), "other");
});

Instrumented("a refused filter (an operator smuggled in) is reported as a failed operation", async () => {
  const seen: Seen[] = [];
  const store = await openInstrumented(seen);
  try {
    seen.length = 0;
    // Filters must be scalars: the adapter refuses an object before it reaches the database.
    await store.instances.getByName({ $ne: null } as unknown as string).then(
      () => assert.unreachable("accepted"),
      (err: unknown) => assert.instance(err, TypeError),
    );
    assert.equal(seen.map((s) => [s.collection, s.operation, s.error]), [["instances", "findOne", "other"]]);
  } finally {
    await store.dispose();
  }
});

Instrumented.run();
