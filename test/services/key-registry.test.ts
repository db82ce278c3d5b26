/**
 * KeyRegistry over a fake ApiKeyStore that counts reads: warm keys cost no
 * store read, concurrent misses share one, unknown hashes are remembered for
 * the negative TTL, remember/forget keep the cache in step with writes, and
 * each cache is bounded.
 */
import { createHash } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KeyRegistry } from "../../src/services/key-registry.js";
import type { ApiKeyRecord, ApiKeyStore } from "../../src/store/index.js";

const T0 = new Date("2026-01-02T03:04:05.000Z").getTime();
const TTL = 30_000;

function sha256(s: string): string {
  return createHash("sha256").update(s, "utf8").digest("hex");
}

function secretOf(n: number): string {
  return `erpl_secret_${n}`;
}

function recordOf(n: number, extra: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id: `key_${String(n).padStart(26, "0")}`,
    name: `key ${n}`,
    type: "data",
    keyHash: sha256(secretOf(n)),
    prefix: secretOf(n).slice(0, 12),
    permissions: {},
    rateLimits: {},
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    ...extra,
  };
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A fake store: records by hash, every getByHash counted; `hold` makes reads wait. */
class FakeStore {
  readonly byHash = new Map<string, ApiKeyRecord>();
  readonly reads: string[] = [];
  /** When set, getByHash waits on a fresh deferred pushed here. */
  hold = false;
  readonly held: Deferred<void>[] = [];
  failNext: unknown = undefined;

  put(rec: ApiKeyRecord): void {
    this.byHash.set(rec.keyHash, rec);
  }

  async getByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    this.reads.push(hash);
    // Read now (as a database does), answer later.
    const rec = this.byHash.get(hash);
    if (this.failNext !== undefined) {
      const err = this.failNext;
      this.failNext = undefined;
      if (this.hold) {
        const d = deferred<void>();
        this.held.push(d);
        await d.promise;
      }
      throw err;
    }
    if (this.hold) {
      const d = deferred<void>();
      this.held.push(d);
      await d.promise;
    }
    return rec;
  }
}

interface Ctx {
  store: FakeStore;
  now: number;
  registry: KeyRegistry;
}

function setup(maxEntries = 100): Ctx {
  const ctx = { store: new FakeStore(), now: T0 } as Ctx;
  ctx.registry = new KeyRegistry({
    store: ctx.store as unknown as ApiKeyStore,
    clock: () => new Date(ctx.now),
    negativeTtlMs: TTL,
    maxEntries,
  });
  return ctx;
}

const test = suite("KeyRegistry");

test("a warm key is served from memory: zero store reads after the first", async () => {
  const ctx = setup();
  const rec = recordOf(1);
  ctx.store.put(rec);
  const first = ctx.registry.lookup(secretOf(1));
  assert.instance(first, Promise, "a cold lookup reads the store");
  assert.is(await first, rec);
  assert.equal(ctx.store.reads, [rec.keyHash], "read by the SHA-256 of the secret");
  for (let i = 0; i < 100; i++) {
    // Synchronous: the hot path does not even allocate a promise.
    assert.is(ctx.registry.lookup(secretOf(1)), rec);
  }
  ctx.now += 365 * 86_400_000;
  assert.is(ctx.registry.lookup(secretOf(1)), rec, "known keys do not expire from the cache");
  assert.is(ctx.store.reads.length, 1);
});

test("concurrent misses for one secret share a single store read", async () => {
  const ctx = setup();
  const rec = recordOf(1);
  ctx.store.put(rec);
  ctx.store.hold = true;
  const a = ctx.registry.lookup(secretOf(1));
  const b = ctx.registry.lookup(secretOf(1));
  const c = ctx.registry.lookup(secretOf(1));
  assert.is(ctx.store.reads.length, 1, "one read while it is in flight");
  assert.is(b, a);
  assert.is(c, a);
  ctx.store.held[0]!.resolve();
  assert.equal(await Promise.all([a, b, c]), [rec, rec, rec]);
  assert.is(ctx.registry.lookup(secretOf(1)), rec);
  assert.is(ctx.store.reads.length, 1);
});

test("concurrent misses for different secrets read separately", async () => {
  const ctx = setup();
  ctx.store.put(recordOf(1));
  ctx.store.put(recordOf(2));
  const [a, b] = await Promise.all([ctx.registry.lookup(secretOf(1)), ctx.registry.lookup(secretOf(2))]);
  assert.is(a?.id, recordOf(1).id);
  assert.is(b?.id, recordOf(2).id);
  assert.is(ctx.store.reads.length, 2);
});

test("a failed read rejects every waiter and is not cached: the next lookup reads again", async () => {
  const ctx = setup();
  const rec = recordOf(1);
  ctx.store.put(rec);
  ctx.store.hold = true;
  ctx.store.failNext = new Error("store down");
  const a = ctx.registry.lookup(secretOf(1)) as Promise<unknown>;
  const b = ctx.registry.lookup(secretOf(1)) as Promise<unknown>;
  assert.is(b, a, "the waiters share one read");
  assert.is(ctx.store.reads.length, 1);
  ctx.store.held[0]!.resolve();
  for (const p of [a, b]) {
    try {
      await p;
      assert.unreachable("should reject");
    } catch (err) {
      assert.instance(err, Error);
      assert.is((err as Error).message, "store down");
    }
  }
  assert.is(ctx.store.reads.length, 1);
  ctx.store.hold = false;
  assert.is(await ctx.registry.lookup(secretOf(1)), rec, "not remembered as unknown");
  assert.is(ctx.store.reads.length, 2);
});

test("an unknown hash is cached negatively for negativeTtlMs, then read again", async () => {
  const ctx = setup();
  assert.is(await ctx.registry.lookup(secretOf(9)), undefined);
  assert.is(ctx.store.reads.length, 1);
  for (let i = 0; i < 50; i++) assert.is(ctx.registry.lookup(secretOf(9)), undefined, "answered without a promise");
  ctx.now = T0 + TTL - 1;
  assert.is(ctx.registry.lookup(secretOf(9)), undefined);
  assert.is(ctx.store.reads.length, 1, "still within the TTL");

  // The key appears (issued by another process): found once the TTL has passed.
  const rec = recordOf(9);
  ctx.store.put(rec);
  assert.is(ctx.registry.lookup(secretOf(9)), undefined, "not yet");
  ctx.now = T0 + TTL;
  assert.is(await ctx.registry.lookup(secretOf(9)), rec);
  assert.is(ctx.store.reads.length, 2);
  assert.is(ctx.registry.lookup(secretOf(9)), rec);
  assert.is(ctx.store.reads.length, 2);
});

test("an unknown hash read again after the TTL is cached negatively again from then", async () => {
  const ctx = setup();
  await ctx.registry.lookup(secretOf(9));
  ctx.now = T0 + TTL;
  assert.is(await ctx.registry.lookup(secretOf(9)), undefined);
  assert.is(ctx.store.reads.length, 2);
  ctx.now = T0 + 2 * TTL - 1;
  assert.is(ctx.registry.lookup(secretOf(9)), undefined);
  assert.is(ctx.store.reads.length, 2);
  ctx.now = T0 + 2 * TTL;
  await ctx.registry.lookup(secretOf(9));
  assert.is(ctx.store.reads.length, 3);
});

test("remember caches a key without a read, replaces an older version and clears a negative entry", async () => {
  const ctx = setup();
  const rec = recordOf(1);
  ctx.registry.remember(rec);
  assert.is(ctx.registry.lookup(secretOf(1)), rec);
  const updated = recordOf(1, { name: "renamed", permissions: { prod: { "*": { "*": ["get"] } } } });
  ctx.registry.remember(updated);
  assert.is(ctx.registry.lookup(secretOf(1)), updated);
  assert.is(ctx.store.reads.length, 0);

  // A hash first seen as unknown, then created here: known at once, within the TTL.
  assert.is(await ctx.registry.lookup(secretOf(2)), undefined);
  assert.is(ctx.store.reads.length, 1);
  const created = recordOf(2);
  ctx.registry.remember(created);
  assert.is(ctx.registry.lookup(secretOf(2)), created);
  assert.is(ctx.store.reads.length, 1);
});

test("forget drops a key: it is answered as unknown from memory", async () => {
  const ctx = setup();
  const rec = recordOf(1);
  ctx.store.put(rec);
  assert.is(await ctx.registry.lookup(secretOf(1)), rec);
  ctx.store.byHash.delete(rec.keyHash);
  ctx.registry.forget(rec.keyHash);
  assert.is(ctx.registry.lookup(secretOf(1)), undefined);
  assert.is(ctx.store.reads.length, 1, "a revoked key costs no store read");
  // Forgetting a hash that is not cached is harmless.
  ctx.registry.forget(sha256("never seen"));
  ctx.registry.forget(rec.keyHash);
});

test("a key revoked while its cold lookup is in flight is not cached afterwards", async () => {
  const ctx = setup();
  const rec = recordOf(1);
  ctx.store.put(rec);
  ctx.store.hold = true;
  // The read sees the key; the revoke (store delete + forget) lands before the answer.
  const pending = ctx.registry.lookup(secretOf(1));
  ctx.store.byHash.delete(rec.keyHash);
  ctx.registry.forget(rec.keyHash);
  ctx.store.held[0]!.resolve();
  await pending;
  ctx.store.hold = false;
  // A revoked key must stop working once forget() has run.
  assert.is(await ctx.registry.lookup(secretOf(1)), undefined, "the revoked key is served from the cache");
});

test("a key updated while a cold lookup is in flight keeps its new version", async () => {
  const ctx = setup();
  const old = recordOf(1, { permissions: { prod: { "*": { "*": ["get", "delete"] } } } });
  ctx.store.put(old);
  ctx.store.hold = true;
  const pending = ctx.registry.lookup(secretOf(1));
  // The update (store write + remember) lands before the stale read answers.
  const updated = recordOf(1, { permissions: { prod: { "*": { "*": ["get"] } } } });
  ctx.store.put(updated);
  ctx.registry.remember(updated);
  ctx.store.held[0]!.resolve();
  await pending;
  ctx.store.hold = false;
  assert.is(await ctx.registry.lookup(secretOf(1)), updated, "the stale version replaced the update");
});

test("maxEntries bounds the known keys: the oldest is evicted and read again", async () => {
  const ctx = setup(2);
  const recs = [1, 2, 3].map((n) => recordOf(n));
  for (const rec of recs) ctx.store.put(rec);
  await ctx.registry.lookup(secretOf(1));
  await ctx.registry.lookup(secretOf(2));
  await ctx.registry.lookup(secretOf(3));
  assert.is(ctx.store.reads.length, 3);
  assert.is(ctx.registry.lookup(secretOf(3)), recs[2], "newest is cached");
  assert.is(ctx.registry.lookup(secretOf(2)), recs[1], "second newest is cached");
  assert.is(ctx.store.reads.length, 3);
  const again = ctx.registry.lookup(secretOf(1));
  assert.instance(again, Promise, "the oldest was evicted");
  assert.is(await again, recs[0]);
  assert.is(ctx.store.reads.length, 4);
});

test("maxEntries bounds the unknown hashes too", async () => {
  const ctx = setup(2);
  await ctx.registry.lookup(secretOf(7));
  await ctx.registry.lookup(secretOf(8));
  await ctx.registry.lookup(secretOf(9));
  assert.is(ctx.store.reads.length, 3);
  assert.is(ctx.registry.lookup(secretOf(9)), undefined);
  assert.is(ctx.registry.lookup(secretOf(8)), undefined);
  assert.is(ctx.store.reads.length, 3, "the two newest are remembered");
  await ctx.registry.lookup(secretOf(7));
  assert.is(ctx.store.reads.length, 4, "the oldest was evicted");
});

test.run();
