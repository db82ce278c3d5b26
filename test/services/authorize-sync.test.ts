/**
 * Authorize's synchronous path: the limiter's consume
 * answering at once from spare places and continuing from the store when a
 * window needs a lease, and the service counting every call once.
 *
 * The limiter runs over a store whose operations wait until the test runs
 * them, in any order, so that consume calls of two limiters (two processes)
 * interleave with leases and give-backs resolving late.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AuthorizeRequestSchema, DenialStep, Operation, type AuthorizeResponse } from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { generateApiKeySecret, hashApiKey } from "../../src/services/api-key-secret.js";
import { AuthorizationServiceImpl } from "../../src/services/authorization-service.js";
import type { ServiceDeps } from "../../src/services/context.js";
import { LEASE_MIN_LIMIT, RateLimiter, type Limits, type RateLimitResult } from "../../src/services/rate-limiter.js";
import { StoreUnavailableError, type ApiKeyRecord, type Lease, type RateWindowStore } from "../../src/store/index.js";

const NOW = new Date("2026-03-04T12:00:30.500Z");
const clock = () => NOW;
const unix = (iso: string) => Date.parse(iso) / 1000;
const MINUTE = (subject: string) => `${subject}|minute|${unix("2026-03-04T12:00:00Z")}|60`;
const DAY = (subject: string) => `${subject}|day|${unix("2026-03-04T00:00:00Z")}|86400`;

/** Lets every settled promise's handlers run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A rate-window store (one database) whose operations take effect only when
 * the test runs them (`run`), in the order it chooses. A lease grants what
 * the window has left, or less when `cap` says so (a lease that comes back
 * short). `failing` makes the next operations on a window id fail.
 */
class SlowWindows implements RateWindowStore {
  readonly counts = new Map<string, number>();
  readonly pending: (() => void)[] = [];
  cap: ((want: number) => number) | undefined;
  readonly failing = new Map<string, number>();

  private fails(id: string): boolean {
    const n = this.failing.get(id) ?? 0;
    if (n === 0) return false;
    this.failing.set(id, n - 1);
    return true;
  }

  lease(id: string, want: number, limit: number): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      this.pending.push(() => {
        if (this.fails(id)) return reject(new StoreUnavailableError());
        const count = this.counts.get(id) ?? 0;
        let granted = Math.max(0, Math.min(want, limit - count));
        if (this.cap !== undefined) granted = Math.min(granted, this.cap(want));
        this.counts.set(id, count + granted);
        resolve({ granted, issued: count + granted });
      });
    });
  }

  giveBack(id: string, count: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push(() => {
        if (this.fails(id)) return reject(new StoreUnavailableError());
        this.counts.set(id, (this.counts.get(id) ?? 0) - count);
        resolve();
      });
    });
  }

  used(id: string): Promise<number> {
    return Promise.resolve(this.counts.get(id) ?? 0);
  }

  purge(): Promise<number> {
    return Promise.resolve(0);
  }

  /** Runs the pending operation at `pick` (modulo how many wait); false when none waits. */
  run(pick = 0): boolean {
    if (this.pending.length === 0) return false;
    this.pending.splice(pick % this.pending.length, 1)[0]!();
    return true;
  }

  /** Runs every operation, and those they lead to, until nothing waits. */
  async drain(pick: () => number = () => 0): Promise<void> {
    for (let rounds = 0; ; rounds++) {
      await flush();
      if (!this.run(pick())) {
        await flush();
        if (this.pending.length === 0) return;
      }
      if (rounds > 100_000) throw new Error("the store never went quiet");
    }
  }
}

// ------------------------------------------------------------------ limiter

const Limiter = suite("limiter: synchronous spends, late leases, interleaved consumes");

interface WindowSpec {
  readonly limit: number;
  /** Places the window has left at the start (other processes hold the rest). */
  readonly left: number;
}

/** A window: absent, counted request by request (small), or leased (large). */
const windowSpec: fc.Arbitrary<WindowSpec | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.integer({ min: 1, max: 12 }).chain((limit) => fc.record({ limit: fc.constant(limit), left: fc.integer({ min: 0, max: limit }) })),
  fc.record({ limit: fc.integer({ min: LEASE_MIN_LIMIT, max: LEASE_MIN_LIMIT + 64 }), left: fc.integer({ min: 0, max: 40 }) }),
);

type Action =
  | { readonly kind: "consume"; readonly process: 0 | 1 }
  | { readonly kind: "run"; readonly pick: number; readonly flush: boolean }
  | { readonly kind: "flush" };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("consume" as const), process: fc.constantFrom(0 as const, 1 as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("run" as const), pick: fc.nat(), flush: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "flush" as const }) },
);

let runs = 0;
let syncAnswers = 0;
let asyncAnswers = 0;

Limiter("two limiters on one store, random interleavings, leases resolving late and short: never over-admits, and after stop the store holds exactly what passed (property)", async () => {
  await fc.assert(
    fc.asyncProperty(
      windowSpec,
      windowSpec,
      fc.array(action, { minLength: 1, maxLength: 120, size: "max" }),
      fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
      async (minute, day, actions, cap, drainPicks) => {
        const store = new SlowWindows();
        if (cap !== undefined) store.cap = (want) => Math.min(want, cap);
        const limits: Limits = { perMinute: minute?.limit, perDay: day?.limit };
        const windows = [
          ...(minute === undefined ? [] : [{ id: MINUTE("k"), ...minute }]),
          ...(day === undefined ? [] : [{ id: DAY("k"), ...day }]),
        ];
        for (const w of windows) store.counts.set(w.id, w.limit - w.left);
        const limiters = [new RateLimiter(store, clock), new RateLimiter(store, clock)] as const;
        const results: RateLimitResult[] = [];
        const errors: unknown[] = [];
        let calls = 0;
        for (const a of actions) {
          if (a.kind === "consume") {
            calls++;
            const r = limiters[a.process].consume("k", limits);
            if (r instanceof Promise) {
              asyncAnswers++;
              r.then((x) => results.push(x), (err: unknown) => errors.push(err));
            } else {
              syncAnswers++;
              results.push(r);
            }
          } else if (a.kind === "run") {
            store.run(a.pick);
            if (a.flush) await flush();
          } else {
            await flush();
          }
        }
        let p = 0;
        await store.drain(() => drainPicks[p++ % drainPicks.length]!);
        assert.equal(errors, []);
        assert.is(results.length, calls, "every consume answered");
        const allowed = results.filter((r) => r.allowed).length;
        for (const w of windows) assert.ok(allowed <= w.left, `${allowed} passed, ${w.left} places were left in ${w.id}`);
        for (const r of results) if (!r.allowed) assert.ok(r.retryAfterSeconds !== undefined && r.retryAfterSeconds >= 1);
        // Stop gives back every spare place: the store then holds exactly the places of the requests that passed.
        const stopping = Promise.all(limiters.map((l) => l.stop()));
        await store.drain();
        await stopping;
        for (const w of windows) assert.is(store.counts.get(w.id), w.limit - w.left + allowed, `${w.id}: held after stop`);
        runs++;
      },
    ),
    { numRuns: 400 },
  );
  assert.is(runs, 400);
  // The property exercised both kinds of answer.
  assert.ok(syncAnswers > 0, `${syncAnswers} synchronous answers`);
  assert.ok(asyncAnswers > 0, `${asyncAnswers} answers by promise`);
});

Limiter("a request whose later window's lease fails gives back the place it took in the earlier window (small limits, counted in the store)", async () => {
  const store = new SlowWindows();
  const limiter = new RateLimiter(store, clock);
  const limits = { perMinute: 2, perDay: 10 };
  // The minute place is leased, then the day window's lease fails.
  store.failing.set(DAY("k"), 1);
  const failed = Promise.resolve(limiter.consume("k", limits)).then(
    () => "answered",
    (err: unknown) => err,
  );
  await store.drain();
  assert.instance(await failed, StoreUnavailableError, "the call failed on the day window");
  // Nothing passed: the window must still have both its places.
  assert.is(store.counts.get(MINUTE("k")) ?? 0, 0, "the failed request holds no minute place");
  const next = [limiter.consume("k", limits), limiter.consume("k", limits)];
  await store.drain();
  assert.equal((await Promise.all(next)).map((r) => r.allowed), [true, true], "2 per minute, none passed yet");
});

Limiter("a request whose later window's lease fails gives back the spare place it spent in the earlier window (leased minute window)", async () => {
  const store = new SlowWindows();
  const limiter = new RateLimiter(store, clock);
  const limits = { perMinute: 100_000, perDay: 10 };
  // Two requests: the minute window's second lease leaves a spare place.
  for (let i = 0; i < 2; i++) {
    const r = Promise.resolve(limiter.consume("k", limits));
    await store.drain();
    assert.ok((await r).allowed);
  }
  store.failing.set(DAY("k"), 1);
  const failed = Promise.resolve(limiter.consume("k", limits)).then(
    () => "answered",
    (err: unknown) => err,
  );
  await store.drain();
  assert.instance(await failed, StoreUnavailableError);
  const stopping = limiter.stop();
  await store.drain();
  await stopping;
  assert.is(store.counts.get(MINUTE("k")), 2, "after stop the minute window holds the 2 requests that passed");
});

Limiter.run();

// ------------------------------------------------------------------ the service

const Service = suite("AuthorizationService.authorize: one count per call, store failures as before");

const SECRET = generateApiKeySecret();

function service(store: RateWindowStore, rateLimits: Limits) {
  const outcomes: string[] = [];
  const key = {
    id: "key_01TEST",
    name: "k",
    type: "data",
    keyHash: hashApiKey(SECRET),
    prefix: SECRET.slice(0, 12),
    permissions: { prod: { API_BP: { A_BusinessPartner: ["get"] } } },
    rateLimits,
    createdAt: NOW,
    updatedAt: NOW,
  } satisfies ApiKeyRecord;
  const deps = {
    clock,
    keys: { cached: (hash: string) => (hash === key.keyHash ? key : undefined), lookupHash: () => undefined },
    usage: { touch() {} },
    limiter: new RateLimiter(store, clock),
    dataLimits: {},
    metrics: { authorization: { decided: (_api: string, outcome: string) => outcomes.push(outcome) } },
  } as unknown as ServiceDeps;
  return { impl: new AuthorizationServiceImpl(deps), outcomes };
}

const request = (extra: Partial<{ apiKey: string; operation: Operation }> = {}) =>
  create(AuthorizeRequestSchema, { apiKey: SECRET, instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: Operation.GET, ...extra });

/** What Connect makes of the answer: it awaits it, a synchronous throw included. */
function settle(call: () => AuthorizeResponse | Promise<AuthorizeResponse>): Promise<AuthorizeResponse | ConnectError> {
  return Promise.resolve()
    .then(call)
    .catch((err: unknown) => {
      assert.instance(err, ConnectError);
      return err as ConnectError;
    });
}

Service("warm key: synchronous and promised answers, refusals, validation errors and lease failures are each counted once, with their outcome", async () => {
  const store = new SlowWindows();
  const { impl, outcomes } = service(store, { perMinute: LEASE_MIN_LIMIT * 10, perDay: LEASE_MIN_LIMIT * 10 });
  let sync = 0;
  let calls = 0;
  for (let i = 0; i < 40; i++) {
    calls++;
    const res = impl.authorize(request());
    if (!(res instanceof Promise)) sync++;
    const answer = settle(() => res);
    await store.drain();
    const a = await answer;
    assert.ok(!(a instanceof ConnectError) && a.allowed, `call ${i} allowed`);
  }
  assert.ok(sync > 0, "some answers were synchronous");
  assert.is(outcomes.length, calls);
  assert.ok(outcomes.every((o) => o === "allowed"));

  // A validation error (thrown at once) counts as invalid_request, once.
  outcomes.length = 0;
  const invalid = await settle(() => impl.authorize(request({ operation: Operation.UNSPECIFIED })));
  assert.ok(invalid instanceof ConnectError && invalid.code === Code.InvalidArgument);
  assert.equal(outcomes, ["invalid_request"]);

  // A lease failure mid-way reaches the client as unavailable and counts as error, once.
  outcomes.length = 0;
  store.failing.set(MINUTE("data:key_01TEST"), 1);
  store.failing.set(DAY("data:key_01TEST"), 1);
  // The windows hold spare places: the calls are answered from them until one needs a lease.
  let failures = 0;
  for (let i = 0; i < 2000 && failures === 0; i++) {
    const answer = settle(() => impl.authorize(request()));
    await store.drain();
    const a = await answer;
    if (a instanceof ConnectError) {
      failures++;
      assert.is(a.code, Code.Unavailable);
      assert.is(a.rawMessage, "the store is unavailable; try again later");
      assert.instance(a.cause, StoreUnavailableError);
    }
    assert.is(outcomes.length, i + 1, "one count per call");
    assert.is(outcomes[i], a instanceof ConnectError ? "error" : "allowed");
  }
  assert.is(failures, 1, "a lease failed and was reported");
});

Service("a refusal by the rate limit is counted once as rate_limited, with the exhausted window's reset time (shared, frozen)", async () => {
  const store = new SlowWindows();
  const { impl, outcomes } = service(store, { perMinute: 2 });
  const answers: AuthorizeResponse[] = [];
  for (let i = 0; i < 3; i++) {
    const answer = settle(() => impl.authorize(request()));
    await store.drain();
    const a = await answer;
    assert.ok(!(a instanceof ConnectError));
    answers.push(a);
  }
  assert.equal(answers.map((a) => a.allowed), [true, true, false]);
  assert.is(answers[2]!.denialStep, DenialStep.RATE_LIMITED);
  assert.equal(outcomes, ["allowed", "allowed", "rate_limited"]);
  const reset = answers[2]!.rateLimit!.resetTime!;
  assert.is(reset, answers[0]!.rateLimit!.resetTime, "one Timestamp per window end");
  assert.ok(Object.isFrozen(reset));
  assert.is(Number(reset.seconds), unix("2026-03-04T12:01:00Z"));
});

Service.run();
