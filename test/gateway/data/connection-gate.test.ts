/**
 * The connections of one instance's back end, shared between its services:
 * never more in flight than the limit, a service that hangs never takes
 * every connection from the others, waiting requests are served in order and
 * give up at their deadline, and a full queue refuses at once.
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConnectionGate, Deadline, type Release } from "../../../src/gateway/data/connection-gate.js";

const Gate = suite("connection gate");

const never = new Deadline();
const settle = () => new Promise((r) => setImmediate(r));

Gate("one service alone uses every connection; the next waits, and gets the first that comes free", async () => {
  const gate = new ConnectionGate(4);
  const held = [0, 1, 2, 3].map(() => gate.tryTake("A"));
  assert.ok(held.every((r) => r !== undefined));
  assert.is(gate.tryTake("A"), undefined);
  const waiting = gate.take("A", never);
  assert.instance(waiting, Promise);
  held[0]!();
  const release = await waiting;
  assert.equal(gate.load(), { inFlight: 4, waiting: 0 });
  release();
  held.slice(1).forEach((r) => r!());
  assert.equal(gate.load(), { inFlight: 0, waiting: 0 });
});

Gate("once a second service was asked for, a hanging one holds at most three quarters, and half while the other is active", async () => {
  const gate = new ConnectionGate(8);
  gate.tryTake("B")!();
  const slow: Release[] = [];
  for (let r = gate.tryTake("A"); r !== undefined; r = gate.tryTake("A")) slow.push(r);
  assert.is(slow.length, 6, "three quarters of 8");
  // The other service gets its quarter at once, even while A's requests wait.
  const pending = gate.take("A", never);
  const fast = [gate.tryTake("B"), gate.tryTake("B")];
  assert.ok(fast.every((r) => r !== undefined));
  // A's freed slots go to B's waiters while A is above its half (4).
  const bWaits = gate.take("B", never);
  slow.pop()!();
  await settle();
  assert.ok((await Promise.race([bWaits, Promise.resolve("not yet")])) !== "not yet", "B got the freed slot");
  let aGot = false;
  void Promise.resolve(pending).then(() => (aGot = true));
  slow.pop()!();
  await settle();
  assert.is(aGot, false, "A stays waiting: it holds 4 of 8 while B is active");
});

Gate("two hanging services do not take every connection from a third: once it is asked for, each holds at most its third", async () => {
  let now = 0;
  const gate = new ConnectionGate(8, 64, () => now);
  const hanging: Record<string, Release[]> = { A: [], B: [] };
  // A and B hang, and fill what the rules give them while they are the only two.
  for (let i = 0; i < 8; i++) for (const s of ["A", "B"]) {
    const r = gate.tryTake(s);
    if (r !== undefined) hanging[s]!.push(r);
  }
  assert.equal([hanging.A!.length, hanging.B!.length], [4, 4], "half each while two are asked for");
  // C asks: it waits, and from now on a service's part is a third (3 of 8).
  const cWaits = gate.take("C", never) as Promise<Release>;
  assert.is(gate.share, 3);
  const aWaits = gate.take("A", never);
  let aGot = false;
  void Promise.resolve(aWaits).then(() => (aGot = true));
  // A's first hanging request ends (its deadline): the slot goes to C, not back to A.
  hanging.A!.pop()!();
  await settle();
  assert.ok((await Promise.race([cWaits, Promise.resolve("not yet")])) !== "not yet", "C got the freed slot");
  // B's too: A (3) is at its third, so C's next request gets it.
  const cAgain = gate.take("C", never) as Promise<Release>;
  hanging.B!.pop()!();
  await settle();
  assert.ok((await Promise.race([cAgain, Promise.resolve("not yet")])) !== "not yet", "C got the next one");
  assert.is(aGot, false, "A waits: it holds its third");
  // Ten quiet seconds later only A has been asked for lately: half again (a part is never more than half).
  now += 10_001;
  gate.tryTake("A");
  assert.is(gate.share, 4);
});

Gate("a waiter gives up at its deadline, and what it held back goes to the others", async () => {
  const gate = new ConnectionGate(2);
  const a = gate.tryTake("A")!;
  gate.tryTake("A")!;
  const deadline = new Deadline();
  const waiting = gate.take("A", deadline) as Promise<Release>;
  deadline.abort();
  assert.is(await waiting.then(() => "granted", (e: unknown) => e), "deadline");
  assert.equal(gate.load(), { inFlight: 2, waiting: 0 });
  a();
  assert.ok(gate.tryTake("A") !== undefined);
});

Gate("beyond its queue a request is refused at once", async () => {
  const gate = new ConnectionGate(1, 2);
  gate.tryTake("A");
  const queued = [gate.take("A", never), gate.take("A", never)];
  const refused = gate.take("A", never) as Promise<Release>;
  assert.is(await refused.then(() => "granted", (e: unknown) => e), "full");
  assert.equal(gate.load(), { inFlight: 1, waiting: 2 });
  void queued;
});

type Step = { kind: "take"; service: number } | { kind: "release"; pick: number } | { kind: "abort"; pick: number };

Gate("property: in flight never above the limit, no service above its share while another is active, waiters served when they may be", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 9 }),
      fc.array(
        fc.oneof(
          fc.record({ kind: fc.constant("take" as const), service: fc.integer({ min: 0, max: 2 }) }),
          fc.record({ kind: fc.constant("release" as const), pick: fc.nat() }),
          fc.record({ kind: fc.constant("abort" as const), pick: fc.nat() }),
        ),
        { maxLength: 80 },
      ),
      async (connections, steps: Step[]) => {
        const gate = new ConnectionGate(connections, 1_000);
        const held: { service: string; release: Release }[] = [];
        const waiting: { service: string; abort: Deadline; settled: boolean }[] = [];
        const count = (service: string) => held.filter((h) => h.service === service).length;
        for (const step of steps) {
          if (step.kind === "take") {
            const service = `S${step.service}`;
            const abort = new Deadline();
            const got = gate.take(service, abort);
            if (got instanceof Promise) {
              const w = { service, abort, settled: false };
              waiting.push(w);
              got.then(
                (release) => {
                  w.settled = true;
                  held.push({ service, release });
                },
                () => (w.settled = true),
              );
            } else {
              held.push({ service, release: got });
            }
          } else if (step.kind === "release" && held.length > 0) {
            held.splice(step.pick % held.length, 1)[0]!.release();
          } else if (step.kind === "abort") {
            const open = waiting.filter((w) => !w.settled);
            if (open.length > 0) open[step.pick % open.length]!.abort.abort();
          }
          await settle();
          assert.ok(held.length <= connections, "never above the limit");
          assert.is(gate.load().inFlight, held.length);
          const active = new Set([...held.map((h) => h.service), ...waiting.filter((w) => !w.settled).map((w) => w.service)]);
          // Work-conserving: a free connection is never left idle while a waiter the rules admit waits.
          for (const w of waiting.filter((w) => !w.settled)) {
            const mine = count(w.service);
            const othersActive = [...active].some((s) => s !== w.service);
            const admitted = held.length < connections && (mine < gate.share || (!othersActive && mine < gate.alone));
            assert.not.ok(admitted, `a waiter of ${w.service} could have been served`);
          }
        }
        for (const w of waiting) w.abort.abort();
        await settle();
        for (const h of held.splice(0)) h.release();
        assert.equal(gate.load(), { inFlight: 0, waiting: 0 });
      },
    ),
    { numRuns: 300 },
  );
});

Gate.run();
