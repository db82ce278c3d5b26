/**
 * `grpc.health.v1.Health` (gRPC's health-checking protocol, what
 * grpc-health-probe, Kubernetes' gRPC probes and load balancers call):
 * `Check`, `List` and `Watch`, overall (`""`) and per served service,
 * without authentication. A service that needs the store is `NOT_SERVING`
 * while the store does not answer, exactly as `/readyz` decides; the gRPC
 * infrastructure services (health, reflection) need nothing and are
 * `SERVING` while the process serves. From shutdown on, everything is
 * `NOT_SERVING` (grpc-go's `Shutdown()` does the same) and Watch streams end.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
  type HealthCheckRequest,
  type HealthCheckResponse,
} from "../../gen/grpc/health/v1/health_pb.js";

/** Options of {@link createHealth}. */
export interface HealthOptions {
  /** Resolves when the store answers; rejects otherwise (the same check as `/readyz`). */
  readonly ready: () => Promise<void>;
  /** The fully-qualified names of the services served, read at each call (services registered later count too). */
  readonly services: () => Iterable<string>;
  /** Served services that do not need the store: `SERVING` whatever it does. */
  readonly independent: ReadonlySet<string>;
  /** How often the store is checked while Watch streams are open (ms). */
  readonly watchIntervalMs: number;
  /**
   * Longest a Check waits for the store before answering `NOT_SERVING` (ms);
   * shortened to fit the caller's deadline, so a probe gets an answer, not a timeout.
   */
  readonly checkTimeoutMs: number;
}

/** The health service and its controls. */
export interface HealthServer {
  readonly service: ServiceImpl<typeof Health>;
  /** Number of open Watch streams. */
  watchers(): number;
  /** From now on everything is `NOT_SERVING`: Watch streams get that status and end. Idempotent. */
  shutdown(): void;
}

/** Time kept back from a caller's deadline for the answer to reach it (ms). */
const DEADLINE_MARGIN_MS = 200;
/** Shortest wait for the store, even under a tight deadline (ms). */
const MIN_CHECK_MS = 50;

/** One open Watch stream: receives every store check's result. */
interface Watcher {
  push(storeUp: boolean): void;
  end(): void;
}

/** Creates the health service over the store check. */
export function createHealth(options: HealthOptions): HealthServer {
  let stopped = false;
  /** The store check in flight, shared by concurrent callers. */
  let inflight: Promise<boolean> | undefined;
  const watchers = new Set<Watcher>();
  let timer: NodeJS.Timeout | undefined;

  /** Whether the store answers within `boundMs` (one check in flight at a time). */
  const storeUp = (boundMs: number): Promise<boolean> => {
    if (stopped) return Promise.resolve(false);
    inflight ??= options.ready().then(
      () => true,
      () => false,
    ).finally(() => {
      inflight = undefined;
    });
    let bound: NodeJS.Timeout | undefined;
    return Promise.race([
      inflight,
      new Promise<boolean>((resolve) => {
        bound = setTimeout(() => resolve(false), boundMs);
      }),
    ]).finally(() => clearTimeout(bound));
  };

  const known = (service: string) => service === "" || [...options.services()].includes(service);

  const statusOf = (service: string, up: boolean): ServingStatus => {
    if (stopped) return ServingStatus.NOT_SERVING;
    if (!known(service)) return ServingStatus.SERVICE_UNKNOWN;
    if (service !== "" && options.independent.has(service)) return ServingStatus.SERVING;
    return up ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  };

  const response = (status: ServingStatus): HealthCheckResponse => create(HealthCheckResponseSchema, { status });

  /** The wait for the store that fits the caller's deadline. */
  const checkBound = (ctx: HandlerContext): number => {
    const left = ctx.timeoutMs();
    if (left === undefined) return options.checkTimeoutMs;
    return Math.max(MIN_CHECK_MS, Math.min(options.checkTimeoutMs, left - DEADLINE_MARGIN_MS));
  };

  /** Checks the store every interval while anyone watches, and tells every watcher. */
  const schedule = () => {
    if (timer !== undefined || watchers.size === 0 || stopped) return;
    timer = setTimeout(() => {
      void storeUp(options.watchIntervalMs).then((up) => {
        timer = undefined;
        for (const w of watchers) w.push(up);
        schedule();
      });
    }, options.watchIntervalMs);
  };

  /** An open stream of store results, ended by the caller going away or by shutdown. */
  function subscribe(signal: AbortSignal): AsyncIterable<boolean> & { close(): void } {
    const queue: boolean[] = [];
    let ended = false;
    let wake: (() => void) | undefined;
    const watcher: Watcher = {
      push(up) {
        queue.push(up);
        wake?.();
      },
      end() {
        ended = true;
        wake?.();
      },
    };
    const close = () => {
      watchers.delete(watcher);
      watcher.end();
      if (watchers.size === 0 && timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
    };
    // A Watch that arrives during a shutdown ends with NOT_SERVING at once, as the open ones did;
    // one whose call has already ended (its deadline passed before its message came) ends too:
    // an abort listener added now would never run.
    if (stopped || signal.aborted) ended = true;
    else {
      signal.addEventListener("abort", close, { once: true });
      watchers.add(watcher);
      schedule();
    }
    return {
      close,
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const next = queue.shift();
          if (next !== undefined) {
            yield next;
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      },
    };
  }

  const service: ServiceImpl<typeof Health> = {
    async check(req: HealthCheckRequest, ctx: HandlerContext) {
      if (!known(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      const up = options.independent.has(req.service) || (await storeUp(checkBound(ctx)));
      return response(statusOf(req.service, up));
    },
    async list(_req, ctx) {
      const up = await storeUp(checkBound(ctx));
      const statuses: Record<string, HealthCheckResponse> = { "": response(statusOf("", up)) };
      for (const name of options.services()) statuses[name] = response(statusOf(name, up));
      return { statuses };
    },
    async *watch(req: HealthCheckRequest, ctx: HandlerContext) {
      const stream = subscribe(ctx.signal);
      try {
        let last = statusOf(req.service, await storeUp(options.checkTimeoutMs));
        yield response(last);
        for await (const up of stream) {
          const status = statusOf(req.service, up);
          if (status === last) continue;
          last = status;
          yield response(status);
        }
        // Ended by shutdown: the last word is NOT_SERVING.
        if (stopped) {
          if (last !== ServingStatus.NOT_SERVING) yield response(ServingStatus.NOT_SERVING);
        } else if (ctx.signal.aborted) {
          // Ended by the call's deadline (or the client going away): its status, DEADLINE_EXCEEDED, not OK.
          throw ConnectError.from(ctx.signal.reason);
        }
      } finally {
        stream.close();
      }
    },
  };

  return {
    service,
    watchers: () => watchers.size,
    shutdown() {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      for (const w of [...watchers]) w.end();
    },
  };
}
