/**
 * SessionStore on the store tests run on (embedded in memory, or a fresh
 * MongoDB database when ERPLINK_TEST_MONGODB_URL is set): the round trip of
 * every field, lookup by token hash (unique), newest-first listing with the
 * principal and expiry filters and beforeId paging, and the purge of
 * sessions past their absolute expiry.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import { DuplicateKeyError, type SessionRecord, type Store } from "../../src/store/index.js";
import { openTestStore, testMongoUrl } from "../../test-support/world.js";

type TestStore = Store & { dispose(): Promise<void> };

const test = suite<{ store: TestStore }>(`SessionStore (${testMongoUrl() === undefined ? "embedded (memory)" : "mongodb"})`);

test.before.each(async (ctx) => {
  ctx.store = await openTestStore();
});
test.after.each(async (ctx) => {
  await ctx.store.dispose();
});

const T0 = Date.parse("2026-01-02T03:04:05.678Z");
const HOUR = 3_600_000;
const KEY_A = "key_01KA0000000000000000000000";
const IDS = (() => {
  const newId = createIdGenerator(() => new Date(T0));
  return Array.from({ length: 6 }, () => newId("ses"));
})();

function session(i: number, fields: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: IDS[i]!,
    label: `s${i}`,
    actsFor: "master",
    tokenHash: `${i}`.repeat(64).slice(0, 64),
    principalHash: "f".repeat(64),
    cookie: i % 2 === 0,
    lastUsedAt: new Date(T0 + i * 1000),
    expiresAt: new Date(T0 + 12 * HOUR),
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    ...fields,
  };
}

test("create/get/getByHash round-trip every field; a second session with the same token hash is a DuplicateKeyError naming it", async ({ store }) => {
  const rec = session(0, { label: "Firefox ü", actsFor: KEY_A, cookie: true });
  await store.sessions.create(rec);
  assert.equal(await store.sessions.get(rec.id), rec);
  assert.equal(await store.sessions.getByHash(rec.tokenHash), rec);
  assert.is(await store.sessions.getByHash("0".repeat(63) + "1"), undefined);
  try {
    await store.sessions.create(session(1, { tokenHash: rec.tokenHash }));
    assert.unreachable("duplicate token hash accepted");
  } catch (err) {
    assert.instance(err, DuplicateKeyError);
    assert.is((err as DuplicateKeyError).field, "tokenHash");
  }
});

test("listNewest: newest first, only unexpired ones, by principal when asked, paged by beforeId", async ({ store }) => {
  for (let i = 0; i < 5; i++) {
    await store.sessions.create(session(i, { actsFor: i % 2 === 0 ? "master" : KEY_A, expiresAt: new Date(T0 + (i === 2 ? 1 : 12) * HOUR) }));
  }
  const now = new Date(T0 + 2 * HOUR);
  const ids = (items: SessionRecord[]) => items.map((r) => IDS.indexOf(r.id));
  const all = await store.sessions.listNewest({ limit: 10, now });
  assert.equal([ids(all.items), all.more], [[4, 3, 1, 0], false]);
  const page = await store.sessions.listNewest({ limit: 2, now });
  assert.equal([ids(page.items), page.more], [[4, 3], true]);
  const rest = await store.sessions.listNewest({ limit: 2, now, beforeId: IDS[3]! });
  assert.equal([ids(rest.items), rest.more], [[1, 0], false]);
  const mine = await store.sessions.listNewest({ limit: 10, now, actsFor: KEY_A });
  assert.equal(ids(mine.items), [3, 1]);
  // Expired exactly now: gone from the list.
  const atExpiry = await store.sessions.listNewest({ limit: 10, now: new Date(T0 + 12 * HOUR) });
  assert.equal(ids(atExpiry.items), []);
});

test("purge removes the sessions past their absolute expiry and keeps the others", async ({ store }) => {
  await store.sessions.create(session(0, { expiresAt: new Date(T0 + HOUR) }));
  await store.sessions.create(session(1, { expiresAt: new Date(T0 + 3 * HOUR) }));
  assert.is(await store.sessions.purge(new Date(T0 + 2 * HOUR)), 1);
  assert.is(await store.sessions.get(IDS[0]!), undefined);
  assert.ok(await store.sessions.get(IDS[1]!));
});

test.run();
