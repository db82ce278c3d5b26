/**
 * The connections of one instance's back end, shared between its services.
 * At most `connections` requests are in flight at once. Once the instance has
 * been asked for more than one service, no service holds more than three quarters of
 * them (rounded down, at least one fewer than all), so a quarter is always
 * there for the others; while another service has requests in flight or
 * waiting, a service holds at most half (rounded up), and when more
 * services were asked for in the last few seconds, its part of them (all of
 * them rounded up: a third for three). A service whose back end hangs thus
 * never takes every connection from the others, nor do two hanging services
 * together once a third has been asked for; and once the others ask, every
 * connection that comes free goes to them until the hanging ones are back
 * within their part. Waiting requests are served in arrival order
 * among those the limits let through, give up at their deadline, and are
 * few: beyond `maxWaiting` a request is refused at once.
 *
 * Taking a free slot is synchronous (no promise on the hot path).
 */
import { EventEmitter } from "node:events";

/** Gives a slot back; call exactly once. */
export type Release = () => void;

interface ServiceLoad {
  inFlight: number;
  waiting: number;
}

interface Waiter {
  readonly service: string;
  readonly grant: (release: Release) => void;
  done: boolean;
}

/** Why a request got no slot: the gate's queue was full, or its deadline passed while it waited. */
export type NoSlot = "full" | "deadline";

/**
 * The deadline of one exchange, which the wait for a connection and the
 * upstream request listen to: an EventEmitter with `aborted`, which undici
 * takes as a request's signal like an AbortSignal. Making an AbortSignal and
 * listening to it cost some 10 µs per data request (EventTarget's
 * machinery), a sixth of what the whole data path costs erplink.
 */
export class Deadline extends EventEmitter {
  aborted = false;
  /** Ends the waits (once). */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit("abort");
  }
}

/** How long a service counts as asked for after its last request (ms). */
const RECENT_MS = 10_000;
/** Most services remembered as asked for lately. */
const MAX_RECENT = 64;

export class ConnectionGate {
  private inFlight = 0;
  private readonly services = new Map<string, ServiceLoad>();
  private queue: Waiter[] = [];
  /** Services asked for through this gate, up to two (whether it serves more than one is all that counts). */
  private readonly seen = new Set<string>();
  /** When each service was last asked for (ms), for {@link share}; at most {@link MAX_RECENT}. */
  private readonly recent = new Map<string, number>();

  constructor(
    /** Most requests in flight to the back end at once. */
    readonly connections: number,
    /** Most requests waiting for a slot; beyond it a request is refused at once. */
    private readonly maxWaiting: number = connections * 8,
    /** The clock (ms), for tests. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The most one service may hold while another is active: its part among the services asked for lately (at least two). */
  get share(): number {
    return Math.ceil(this.connections / Math.max(2, this.recentServices()));
  }

  /** Services asked for within the last {@link RECENT_MS}. */
  private recentServices(): number {
    if (this.recent.size <= 2) return this.recent.size;
    const since = this.now() - RECENT_MS;
    let n = 0;
    for (const [service, at] of this.recent) {
      if (at >= since) n++;
      else this.recent.delete(service);
    }
    return n;
  }

  /** The most one service may hold while no other is active. */
  get alone(): number {
    if (this.seen.size < 2) return this.connections;
    return Math.max(this.share, Math.min(this.connections - 1, Math.floor((this.connections * 3) / 4)));
  }

  /** Requests in flight and waiting, for tests and metrics. */
  load(): { inFlight: number; waiting: number } {
    return { inFlight: this.inFlight, waiting: this.queue.length };
  }

  /** A slot for `service` now, or undefined when the limits say wait. */
  tryTake(service: string): Release | undefined {
    if (this.seen.size < 2) this.seen.add(service);
    // Refreshed in place; a new name beyond the bound takes the place of the longest remembered.
    if (!this.recent.has(service) && this.recent.size >= MAX_RECENT) this.recent.delete(this.recent.keys().next().value!);
    this.recent.set(service, this.now());
    // Waiters of this service come first: a newcomer does not overtake them.
    if (this.services.get(service)?.waiting || !this.mayTake(service)) return undefined;
    return this.grant(service);
  }

  /**
   * A slot for `service`: at once if the limits allow, else when one comes
   * free for it. Rejects with "full" when too many wait already, and with
   * "deadline" when `signal` aborts first.
   */
  take(service: string, signal: Deadline): Release | Promise<Release> {
    const now = this.tryTake(service);
    if (now !== undefined) return now;
    if (this.queue.length >= this.maxWaiting) return Promise.reject<Release>("full" satisfies NoSlot);
    if (signal.aborted) return Promise.reject<Release>("deadline" satisfies NoSlot);
    return new Promise<Release>((resolve, reject) => {
      const load = this.loadOf(service);
      load.waiting++;
      const onAbort = () => {
        if (waiter.done) return;
        waiter.done = true;
        load.waiting--;
        this.queue = this.queue.filter((w) => w !== waiter);
        this.forgetIdle(service, load);
        // The others may now take what this one was holding back (its share rule).
        this.drain();
        reject("deadline" satisfies NoSlot);
      };
      const waiter: Waiter = {
        service,
        done: false,
        grant: (release) => {
          signal.removeListener("abort", onAbort);
          resolve(release);
        },
      };
      signal.once("abort", onAbort);
      this.queue.push(waiter);
    });
  }

  private mayTake(service: string): boolean {
    if (this.inFlight >= this.connections) return false;
    const load = this.services.get(service);
    const held = load?.inFlight ?? 0;
    if (held < this.share) return true;
    // Beyond its share only while no other service is active, and never into the others' quarter.
    return this.services.size === (load === undefined ? 0 : 1) && held < this.alone;
  }

  private loadOf(service: string): ServiceLoad {
    let load = this.services.get(service);
    if (load === undefined) {
      load = { inFlight: 0, waiting: 0 };
      this.services.set(service, load);
    }
    return load;
  }

  private forgetIdle(service: string, load: ServiceLoad): void {
    if (load.inFlight === 0 && load.waiting === 0) this.services.delete(service);
  }

  private grant(service: string): Release {
    const load = this.loadOf(service);
    load.inFlight++;
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      load.inFlight--;
      this.inFlight--;
      this.forgetIdle(service, load);
      if (this.queue.length > 0) this.drain();
    };
  }

  /** Grants free slots to the waiters the limits let through, oldest first. */
  private drain(): void {
    for (let i = 0; i < this.queue.length && this.inFlight < this.connections; ) {
      const waiter = this.queue[i]!;
      if (!this.mayTake(waiter.service)) {
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      waiter.done = true;
      this.services.get(waiter.service)!.waiting--;
      waiter.grant(this.grant(waiter.service));
    }
  }
}
