/**
 * Cross-process key changes: a second registry on the same store (as another
 * erplink process would have) learns of revokes and updates by sync().
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code, ConnectError } from "@connectrpc/connect";
import { ApiKeyService } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { generateApiKeySecret } from "../../src/services/api-key-secret.js";
import { KeyRegistry, SYNC_OVERLAP_MS } from "../../src/services/key-registry.js";
import { createWorld } from "../../test-support/world.js";
import type { ApiKeyStore } from "../../src/store/index.js";

const Sync = suite("key registry sync");

/** Permissions are null-prototype objects; compare their JSON. */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

function countingStore(store: ApiKeyStore): ApiKeyStore & { reads: number } {
  const counted = Object.create(store) as ApiKeyStore & { reads: number };
  counted.reads = 0;
  counted.getByHash = async (hash: string) => {
    counted.reads++;
    return store.getByHash(hash);
  };
  return counted;
}

Sync("another process's revoke and update reach this registry at the next sync, without a lookup read", async () => {
  const w = await createWorld();
  try {
    const store = countingStore(w.store.apiKeys);
    const other = new KeyRegistry({ store, clock: () => w.now, negativeTtlMs: 30_000, maxEntries: 100 });
    other.start(60_000, (err) => assert.unreachable(String(err)));
    const keys = w.client(ApiKeyService);
    const a = await keys.createApiKey({ apiKey: { name: "a", permissions: { prod: { S: { E: ["list"] } } } } });
    const b = await keys.createApiKey({ apiKey: { name: "b", permissions: { prod: { S: { E: ["list"] } } } } });
    assert.is((await other.lookup(a.key))?.id, a.apiKey!.id);
    assert.is((await other.lookup(b.key))?.id, b.apiKey!.id);
    assert.is(store.reads, 2);

    w.now = new Date(w.now.getTime() + 1000);
    await keys.deleteApiKey({ id: a.apiKey!.id });
    await keys.updateApiKey({
      apiKey: { id: b.apiKey!.id, permissions: { prod: { S: { E: ["get"] } } } },
      updateMask: { paths: ["permissions"] },
    });
    // Before the sync the other process still has its cached copies.
    assert.is((await other.lookup(a.key))?.id, a.apiKey!.id);
    assert.equal(plain((await other.lookup(b.key))?.permissions), { prod: { S: { E: ["list"] } } });

    w.now = new Date(w.now.getTime() + 2000);
    await other.sync();
    assert.is(await other.lookup(a.key), undefined, "revoked elsewhere");
    assert.equal(plain((await other.lookup(b.key))?.permissions), { prod: { S: { E: ["get"] } } });
    assert.is(store.reads, 2, "the sync replaced the entries; lookups read nothing");
    other.stop();
  } finally {
    await w.close();
  }
});

Sync("a sync never replaces a cached key with an older version, and looks back over the skew overlap", async () => {
  const w = await createWorld();
  try {
    const other = new KeyRegistry({ store: w.store.apiKeys, clock: () => w.now, negativeTtlMs: 30_000, maxEntries: 100 });
    const keys = w.client(ApiKeyService);
    const k = await keys.createApiKey({ apiKey: { name: "k", permissions: { prod: { S: { E: ["list"] } } } } });
    other.start(60_000, (err) => assert.unreachable(String(err)));
    const cached = await other.lookup(k.key);
    // A newer version this process learnt of directly.
    other.remember({ ...cached!, name: "newer", updatedAt: new Date(w.now.getTime() + 5000) });
    await other.sync();
    assert.is((await other.lookup(k.key))?.name, "newer");

    // A change stamped up to the overlap before the last sync (another
    // process's clock running behind) is still seen.
    const at = new Date(w.now.getTime() - SYNC_OVERLAP_MS + 1000);
    await w.store.apiKeys.revoke(k.apiKey!.id, at);
    w.now = new Date(w.now.getTime() + 1000);
    await other.sync();
    assert.is(await other.lookup(k.key), undefined);
    other.stop();
  } finally {
    await w.close();
  }
});

Sync("forged well-formed tokens cost at most coldReadsPerSecond store reads; beyond them a token not cached is 'unavailable, retry in 1 s', never unknown", async () => {
  const w = await createWorld();
  try {
    const store = countingStore(w.store.apiKeys);
    let now = w.now.getTime();
    const registry = new KeyRegistry({ store, clock: () => new Date(now), negativeTtlMs: 30_000, maxEntries: 100, coldReadsPerSecond: 5 });
    const forged = Array.from({ length: 20 }, () => generateApiKeySecret());
    const spent = async (token: string) => {
      const err = await Promise.resolve()
        .then(() => registry.lookup(token))
        .then(
          () => assert.unreachable("a cold token beyond the budget was answered"),
          (e: unknown) => e,
        );
      assert.instance(err, ConnectError);
      assert.equal([(err as ConnectError).code, (err as ConnectError).metadata.get("retry-after")], [Code.Unavailable, "1"]);
    };
    for (const token of forged.slice(0, 5)) assert.is(await registry.lookup(token), undefined);
    for (const token of forged.slice(5)) await spent(token);
    assert.is(store.reads, 5);
    // A real key presented during the flood is not refused as invalid, nor remembered as unknown...
    const real = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "real" } });
    await spent(real.key);
    assert.is(store.reads, 5);
    // ...so once the budget refills it works; the forged ones read are remembered as unknown, at no read.
    now += 1000;
    assert.is((await registry.lookup(real.key))?.id, real.apiKey!.id);
    assert.is(await registry.lookup(forged[0]!), undefined);
    assert.is(store.reads, 6);
  } finally {
    await w.close();
  }
});

Sync("stats for the metrics: cached keys, unknown hashes, the last successful sync and the failed ones", async () => {
  const w = await createWorld();
  try {
    let failing = false;
    const store = Object.create(w.store.apiKeys) as ApiKeyStore;
    store.changedSince = (from, limit) => (failing ? Promise.reject(new Error("store down")) : w.store.apiKeys.changedSince(from, limit));
    const registry = new KeyRegistry({ store, clock: () => w.now, negativeTtlMs: 30_000, maxEntries: 100 });
    assert.equal(registry.stats(), { known: 0, unknown: 0, lastSyncAt: undefined, syncFailures: 0 });
    const created = await w.client(ApiKeyService).createApiKey({ apiKey: { name: "a", permissions: { prod: { S: { E: ["list"] } } } } });
    assert.is((await registry.lookup(created.key))?.id, created.apiKey!.id);
    assert.is(await registry.lookup(generateApiKeySecret()), undefined);
    const synced = new Date(w.now.getTime() + 1000);
    w.now = synced;
    await registry.sync();
    assert.equal(registry.stats(), { known: 1, unknown: 1, lastSyncAt: synced, syncFailures: 0 });
    failing = true;
    w.now = new Date(w.now.getTime() + 1000);
    await registry.sync().then(
      () => assert.unreachable("a failed sync resolved"),
      (err: unknown) => assert.is((err as Error).message, "store down"),
    );
    assert.equal(registry.stats(), { known: 1, unknown: 1, lastSyncAt: synced, syncFailures: 1 }, "the last success stays");
  } finally {
    await w.close();
  }
});

Sync.run();
