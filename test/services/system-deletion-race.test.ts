/**
 * No orphans under concurrency: deleting a system while
 * instances are created in it never leaves an instance without its system,
 * also when another administrator creates a system of the same name in the
 * window. Many CreateInstance calls race one DeleteSystem, round after
 * round, through the services over the in-process transport, on the store
 * under test (embedded, or MongoDB with ERPLINK_TEST_MONGODB_URL): either the
 * delete is refused (409 `failed_precondition`) and the system keeps every
 * instance created, or it is deleted and no instance of it survives.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import type { TestWorld } from "../../test-support/rpc.js";
import { createWorld } from "../../test-support/world.js";

const test = suite("DeleteSystem racing CreateInstance: no orphans");

/** Rounds per test (fewer on MongoDB, where each costs a second) and parallel creates per round; ERPLINK_RACE_ROUNDS overrides the rounds. */
const roundsOn = (kind: string) => Number(process.env.ERPLINK_RACE_ROUNDS ?? (kind === "embedded" ? 16 : 8));
const CREATES = 10;

/** Waits `turns` turns of the event loop, so that the racing calls start at different points of each other. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Waits `n` units: turns of the event loop on the embedded store (its
 * operations take about one), 2 ms on MongoDB (a round trip takes a few),
 * so that the creates fall over the whole of the delete on both.
 */
async function pause(w: TestWorld, n: number): Promise<void> {
  if (w.store.kind === "embedded") await turns(n);
  else await new Promise((resolve) => setTimeout(resolve, 2 * n));
}

/** How many units create `i` of round `r` waits: spread over the delete's whole run, differently each round (a fixed LCG, so runs repeat). */
function spread(r: number, i: number): number {
  const x = Math.imul(r * 131 + i * 7919 + 17, 1103515245) + 12345;
  return ((x >>> 8) % 40) + 0;
}

/** The code of a rejected call (the call must fail with a ConnectError). */
function codeOf(result: PromiseSettledResult<unknown>): Code | "ok" {
  if (result.status === "fulfilled") return "ok";
  assert.instance(result.reason, ConnectError, String(result.reason));
  return (result.reason as ConnectError).code;
}

/** Every instance belongs to a system that exists. */
async function assertNoOrphans(w: TestWorld): Promise<void> {
  const systems = new Set((await w.store.systems.list({ limit: 1000 })).items.map((s) => s.id));
  for (const i of (await w.store.instances.list({ limit: 1000 })).items) {
    assert.ok(systems.has(i.systemId), `instance ${i.name} has no system (${i.systemId})`);
  }
}

/** One round: `CREATES` instances created in a new system while it is deleted (and, with `rename`, its name taken again). */
async function round(w: TestWorld, r: number, rename: boolean): Promise<{ deleted: boolean; kept: number }> {
  const systems = w.client(SystemService);
  const instances = w.client(InstanceService);
  const name = `race-${rename ? "r" : "p"}-${r}`;
  const sys = (await systems.createSystem({ system: { name } })).system!;
  const creates = Array.from({ length: CREATES }, async (_, i) => {
    // Rounds differ in where the creates fall: before, around and after the delete's own writes.
    await pause(w, spread(r, i));
    return instances.createInstance({ systemId: sys.id, instance: { name: `${name}-i${i}`, baseUrl: "https://erp.example.com/odata" } });
  });
  const deleting = (async () => {
    await pause(w, r % 3);
    return systems.deleteSystem({ id: sys.id });
  })();
  // Another administrator creates the name again as soon as it is free, and an instance in the new system.
  const recreating = rename
    ? (async () => {
        for (let attempt = 0; attempt < 200; attempt++) {
          try {
            const again = (await systems.createSystem({ system: { name } })).system!;
            await instances.createInstance({ systemId: again.id, instance: { name: `${name}-again`, baseUrl: "https://erp.example.com/odata" } });
            return again;
          } catch (err) {
            if (!(err instanceof ConnectError && err.code === Code.AlreadyExists)) throw err;
            await turns(1);
          }
        }
        return undefined;
      })()
    : Promise.resolve(undefined);
  const [deleted, ...created] = await Promise.allSettled([deleting, ...creates]);
  const again = await recreating;
  const deleteCode = codeOf(deleted!);
  assert.ok(deleteCode === "ok" || deleteCode === Code.FailedPrecondition, `round ${r}: delete answered ${deleteCode}`);
  const createCodes = created.map(codeOf);
  for (const c of createCodes) assert.ok(c === "ok" || c === Code.NotFound || c === Code.FailedPrecondition, `round ${r}: create answered ${c}`);
  const left = (await w.store.instances.list({ limit: 1000, systemId: sys.id })).items;
  const okCount = createCodes.filter((c) => c === "ok").length;
  if (deleteCode === "ok") {
    assert.is(await w.store.systems.get(sys.id), undefined);
    assert.equal(left, [], `round ${r}: the system was deleted, yet ${left.length} of its instances survive`);
    assert.is(okCount, 0, `round ${r}: the system was deleted, yet ${okCount} creates succeeded`);
  } else {
    assert.ok(await w.store.systems.get(sys.id), `round ${r}: the delete was refused, yet the system is gone`);
    assert.is(left.length, okCount, `round ${r}: every successful create, and only those, left an instance`);
  }
  if (rename) {
    assert.ok(again !== undefined || deleteCode !== "ok", `round ${r}: the name was freed but never taken again`);
    if (deleteCode !== "ok") assert.is(again, undefined, `round ${r}: the name was taken while the system still existed`);
  }
  await assertNoOrphans(w);
  return { deleted: deleteCode === "ok", kept: left.length };
}

for (const rename of [false, true]) {
  test(`rounds of ${CREATES} creates against one delete${rename ? ", the name created again in the window" : ""}: the delete is refused or no instance survives`, async () => {
    const w = await createWorld();
    const ROUNDS = roundsOn(w.store.kind);
    try {
      const outcomes = { deleted: 0, refused: 0 };
      for (let r = 0; r < ROUNDS; r++) {
        const { deleted } = await round(w, r, rename);
        outcomes[deleted ? "deleted" : "refused"]++;
      }
      console.log(`system-deletion race${rename ? " (name taken again)" : ""}: ${JSON.stringify(outcomes)} over ${ROUNDS} rounds on ${w.store.kind}`);
      assert.equal(w.errors, [], "no masked internal errors");
    } finally {
      await w.close();
    }
  });
}

test("scripted: an instance created between the delete's first count and its delete, and the name created again right after: the delete is refused, nothing is orphaned", async () => {
  // The interleaving that used to orphan an instance: the system was deleted, found to have
  // gained an instance, and could not be put back because its name had been taken meanwhile.
  const w = await createWorld();
  try {
    const systems = w.client(SystemService);
    const instances = w.client(InstanceService);
    const sys = (await systems.createSystem({ system: { name: "erp" } })).system!;
    const count = w.store.instances.countBySystem.bind(w.store.instances);
    let calls = 0;
    let recreated: PromiseSettledResult<unknown> | undefined;
    w.store.instances.countBySystem = async (id) => {
      calls++;
      if (calls === 1) {
        const before = await count(id);
        // After the delete's precondition, an instance is created in full.
        await instances.createInstance({ systemId: sys.id, instance: { name: "prd", baseUrl: "https://erp.example.com/odata" } });
        return before;
      }
      // Before the delete counts again, another administrator tries to take the name.
      [recreated] = await Promise.allSettled([systems.createSystem({ system: { name: "erp" } })]);
      return count(id);
    };
    const deleted = await Promise.allSettled([systems.deleteSystem({ id: sys.id })]);
    assert.is(codeOf(deleted[0]!), Code.FailedPrecondition);
    assert.is(((deleted[0] as PromiseRejectedResult).reason as ConnectError).rawMessage, "system gained an instance while being deleted; delete it first");
    assert.is(codeOf(recreated!), Code.AlreadyExists, "the name stays taken: the system was never deleted");
    assert.ok(await w.store.systems.get(sys.id));
    assert.equal((await w.store.instances.list({ limit: 10 })).items.map((i) => [i.name, i.systemId]), [["prd", sys.id]]);
    await assertNoOrphans(w);
    assert.equal(w.errors, [], "no masked internal errors");
  } finally {
    await w.close();
  }
});

test("scripted: an instance created in full between the delete's count under its mark and its delete is removed again; the system is deleted", async () => {
  // Both calls write and then read what the other wrote: here the count missed the instance, so the instance must see the mark.
  const w = await createWorld();
  try {
    const systems = w.client(SystemService);
    const instances = w.client(InstanceService);
    const sys = (await systems.createSystem({ system: { name: "erp" } })).system!;
    const count = w.store.instances.countBySystem.bind(w.store.instances);
    let calls = 0;
    let created: PromiseSettledResult<unknown> | undefined;
    w.store.instances.countBySystem = async (id) => {
      const n = await count(id);
      if (++calls === 2) {
        [created] = await Promise.allSettled([
          instances.createInstance({ systemId: sys.id, instance: { name: "prd", baseUrl: "https://erp.example.com/odata" } }),
        ]);
      }
      return n;
    };
    const deleted = await systems.deleteSystem({ id: sys.id });
    assert.is(deleted.system?.id, sys.id);
    assert.is(codeOf(created!), Code.FailedPrecondition);
    assert.is(((created as PromiseRejectedResult).reason as ConnectError).rawMessage, "system is being deleted");
    assert.is(await w.store.systems.get(sys.id), undefined);
    assert.equal((await w.store.instances.list({ limit: 10 })).items, []);
    assert.is(await w.store.systems.deletionInProgress(sys.id, new Date(0)), false, "the mark is removed");
    assert.equal(w.errors, [], "no masked internal errors");
  } finally {
    await w.close();
  }
});

test.run();
