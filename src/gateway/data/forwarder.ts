/**
 * Sends a request to a back end exactly as erplink wrote it: undici's
 * dispatcher takes the origin and the request target (path and query) as
 * separate strings and writes the target into the request line unchanged,
 * so no URL parser sits between what was verified and what is sent (a
 * proxy library that rebuilds the URL, as `@fastify/reply-from` does with
 * `new URL(source, base)` and the client's query, would be a second parser).
 * Keep-alive connection pools per origin, no retries (the client decides),
 * answers streamed.
 */
import type { Readable } from "node:stream";
import { Agent, errors } from "undici";
import { GatewayError } from "../errors.js";

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

/** Options of {@link Forwarder}. */
export interface ForwarderOptions {
  /** How long the back end may take to answer, and to send each part of its body (ms). */
  readonly timeoutMs: number;
}

/**
 * The gateway's error for a back-end answer whose body stream failed before
 * any of it was passed on (the error then reaches the error handler):
 * 504 when the back end stopped sending for longer than the timeout, 502 when
 * it broke off (closed early, sent less than its `Content-Length`). Undefined
 * for any other error.
 */
export function brokenAnswerError(err: unknown): GatewayError | undefined {
  if (isTimeout(err)) return notInTime();
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

/** Upstream connections of the data path. */
export class Forwarder {
  private readonly agent: Agent;

  constructor(private readonly options: ForwarderOptions) {
    this.agent = new Agent({ connections: 64, pipelining: 1, keepAliveTimeout: 30_000 });
  }

  /**
   * Sends `request`; resolves with the answer's status and headers. Throws a
   * {@link GatewayError}: 504 when the back end does not answer in time, 502
   * when it cannot be reached.
   */
  async send(request: UpstreamRequest): Promise<UpstreamResponse> {
    try {
      const res = await this.agent.request({
        origin: request.origin,
        path: request.path,
        method: request.method as "GET",
        headers: request.headers,
        body: request.body,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
      });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    } catch (err) {
      throw isTimeout(err) ? notInTime() : new GatewayError(502, "the back end could not be reached");
    }
  }

  /** Closes the pools (at shutdown). */
  async close(): Promise<void> {
    await this.agent.close();
  }
}
