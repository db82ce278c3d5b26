/**
 * Sends a request to a back end exactly as erplink wrote it: undici's
 * dispatcher takes the origin and the request target (path and query) as
 * separate strings and writes the target into the request line unchanged,
 * so no URL parser sits between what was verified and what is sent (a
 * proxy library that rebuilds the URL, as `@fastify/reply-from` does with
 * `new URL(source, base)` and the client's query, would be a second parser).
 * Keep-alive connections, no retries (the client decides), answers streamed.
 *
 * Each instance's back end gets at most `connections` requests in flight,
 * shared fairly between its services (`./connection-gate.ts`). One deadline
 * covers the whole exchange up to the answer's headers: waiting for a
 * connection, connecting, sending, and the back end's wait before it
 * answers; after the headers each gap in the body is bounded by the same
 * time, and the whole answer by `totalTimeoutMs`.
 */
import type { Readable } from "node:stream";
import { Agent, errors } from "undici";
import { GatewayError } from "../errors.js";
import { ConnectionGate, Deadline, type NoSlot, type Release } from "./connection-gate.js";

/** A request as it goes to the back end. */
export interface UpstreamRequest {
  /** `https://host[:port]`. */
  readonly origin: string;
  /** The request target, written into the request line as is. */
  readonly path: string;
  readonly method: string;
  /** Lower-case names; never hop-by-hop ones, `Expect` or `Content-Length` (undici writes it). */
  readonly headers: Readonly<Record<string, string>>;
  /** Undefined for requests without a body (GET, HEAD, DELETE). */
  readonly body: Buffer | undefined;
}

/** The back end's answer, its body not yet read. */
export interface UpstreamResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Readable;
}

/** Where a request goes, for the connection limits. */
export interface UpstreamRoute {
  /** The instance whose connections it takes. */
  readonly instance: string;
  /** The instance's own limit on them, if it sets one (else the process default). */
  readonly connections?: number | undefined;
  /** The service it addresses (services of one instance share its connections fairly). */
  readonly service: string;
  /**
   * When the exchange started (`performance.now()`): the deadline runs from
   * there, so what came before the send (a CSRF or OAuth token fetch) counts.
   */
  readonly startedAt: number;
  /**
   * Whether the client has given up, checked once a connection is there,
   * before anything is sent; and `sending`, told when the request goes to
   * the back end (nothing before it was sent).
   */
  readonly client?: { gone(): boolean; sending?(): void };
}

/** Options of {@link Forwarder}. */
export interface ForwarderOptions {
  /**
   * How long an exchange may take up to the answer's headers, waiting for a
   * connection included, and each gap in the answer's body (ms).
   */
  readonly timeoutMs: number;
  /** How long a whole answer may take, its body included (ms); default 10 minutes. */
  readonly totalTimeoutMs?: number;
  /** Most requests in flight to one instance's back end; default 64. */
  readonly connections?: number;
}

/**
 * The gateway's error for a back-end answer whose body stream failed before
 * any of it was passed on (the error then reaches the error handler):
 * 504 when the back end stopped sending for longer than the timeout, 502 when
 * it broke off (closed early, sent less than its `Content-Length`). Undefined
 * for any other error.
 */
export function brokenAnswerError(err: unknown): GatewayError | undefined {
  if (isTimeout(err) || err === TOTAL_DEADLINE || err === FIRST_BYTE_DEADLINE) return notInTime();
  if (err instanceof errors.UndiciError) return new GatewayError(502, "the back end's answer broke off");
  return undefined;
}

/** Whether undici gave up waiting for the back end's headers or the next part of its body. */
function isTimeout(err: unknown): boolean {
  return err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError;
}

/** The gateway's error for a back end that did not answer within the timeout. */
function notInTime(): GatewayError {
  return new GatewayError(504, "the back end did not answer in time");
}

/** The reason a whole answer's deadline aborts its body with. */
const TOTAL_DEADLINE = new Error("the back end's answer took longer than the total deadline");
/** The reason the exchange's deadline aborts a body whose first byte did not come in time. */
const FIRST_BYTE_DEADLINE = new Error("the back end's answer did not begin within the deadline");

/** Default of {@link ForwarderOptions.totalTimeoutMs}. */
const DEFAULT_TOTAL_TIMEOUT_MS = 600_000;
/** Default of {@link ForwarderOptions.connections}. */
export const DEFAULT_UPSTREAM_CONNECTIONS = 64;

/** Upstream connections of the data path. */
export class Forwarder {
  /**
   * Connections are limited per instance by the gates, not per origin by the
   * agent. A connection attempt gives up at the timeout (undici's default is
   * 10 s, and an aborted request does not end the attempt it waits for).
   */
  private readonly agent: Agent;
  private readonly gates = new Map<string, ConnectionGate>();

  constructor(private readonly options: ForwarderOptions) {
    this.agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 30_000, connect: { timeout: options.timeoutMs } });
  }

  /**
   * How long a client may leave an answer unread (ms): while it does, the
   * answer holds one of the instance's connections, and undici's body timeout
   * does not run while backpressure pauses the body.
   */
  get stallTimeoutMs(): number {
    return this.options.timeoutMs;
  }

  /**
   * The gate of an instance's connections, at its own limit or the process
   * default. A changed limit takes a new gate; requests holding the old
   * one's slots give them back there.
   */
  gate(instance: string, connections?: number): ConnectionGate {
    const limit = connections ?? this.options.connections ?? DEFAULT_UPSTREAM_CONNECTIONS;
    let gate = this.gates.get(instance);
    if (gate === undefined || gate.connections !== limit) {
      gate = new ConnectionGate(limit);
      this.gates.set(instance, gate);
    }
    return gate;
  }

  /**
   * Sends `request`; resolves with the answer's status and headers. Throws a
   * {@link GatewayError}: 504 when no answer came within the deadline
   * (waiting for a connection included), 503 when too many requests wait for
   * the instance's connections already, 502 when the back end cannot be reached.
   */
  async send(request: UpstreamRequest, route: UpstreamRoute): Promise<UpstreamResponse> {
    const { timeoutMs } = this.options;
    const left = route.startedAt + timeoutMs - performance.now();
    if (left <= 0) throw notInTime();
    const deadline = new Deadline();
    let timer: NodeJS.Timeout | undefined = setTimeout(() => deadline.abort(), left);
    let release: Release | undefined;
    try {
      const gate = this.gate(route.instance, route.connections);
      const slot = gate.take(route.service, deadline);
      release = slot instanceof Promise ? await slot.catch(noSlot) : slot;
      if (route.client?.gone() === true) throw clientGoneError();
      route.client?.sending?.();
      const res = await this.agent.request({
        origin: request.origin,
        path: request.path,
        method: request.method as "GET",
        headers: request.headers,
        body: request.body,
        signal: deadline,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      // The exchange's deadline runs on to the body's first byte (a back end
      // that sends its headers and then nothing gets its 504 on time); after
      // it each gap is bounded by bodyTimeout, and the whole answer by the total deadline.
      clearTimeout(timer);
      const body = res.body;
      const now = performance.now();
      const firstByte = setTimeout(() => body.destroy(FIRST_BYTE_DEADLINE), Math.max(route.startedAt + timeoutMs - now, 0));
      // Not on("data"): that would start the flow before the body is piped to the client.
      body.prependOnceListener("data", () => clearTimeout(firstByte));
      const total = route.startedAt + (this.options.totalTimeoutMs ?? DEFAULT_TOTAL_TIMEOUT_MS) - now;
      const answered = setTimeout(() => body.destroy(TOTAL_DEADLINE), Math.max(total, 0));
      timer = undefined;
      const done = release;
      body.once("close", () => {
        clearTimeout(firstByte);
        clearTimeout(answered);
        done();
      });
      release = undefined;
      return { status: res.statusCode, headers: res.headers, body: res.body };
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      throw deadline.aborted || isTimeout(err) ? notInTime() : new GatewayError(502, "the back end could not be reached");
    } finally {
      clearTimeout(timer);
      release?.();
    }
  }

  /** Closes the pools (at shutdown). */
  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** The error of an exchange its client gave up before anything was sent. */
export function clientGoneError(): GatewayError {
  return new GatewayError(400, "the client reset the request before it was sent upstream: nothing was forwarded");
}

/** The gateway's error for a request that got no connection. */
function noSlot(reason: NoSlot): never {
  if (reason === "full") throw new GatewayError(503, "too many requests are waiting for this instance's back end: retry shortly", { headers: { "retry-after": "1" } });
  throw new GatewayError(504, "the back end did not answer in time (no connection to it came free)");
}
