/**
 * Limits the one-port server puts on clients that use HTTP/2 and HTTP/1.1
 * against it rather than to talk to it.
 *
 * - **HTTP/2 rapid reset** (CVE-2023-44487): a stream reset by its client
 *   before its answer began costs erplink the work of starting it and the
 *   client nothing. Each session may reset `resetBurst` such streams at once
 *   and `resetsPerSecond` more every second; beyond that it is sent GOAWAY
 *   with `ENHANCE_YOUR_CALM` and closed, and its client's address gets a
 *   strike.
 * - **Reconnecting to do it again**: an address with a strike is refused new
 *   connections (they are closed as they arrive) for a second, doubling with
 *   each further strike up to a minute; the strikes fade after a quiet
 *   minute.
 * - **Streams at once**: each session may have `maxConcurrentStreams` streams
 *   open (the HTTP/2 setting, enforced by nghttp2), and the process
 *   `maxProcessStreams` over all sessions; a stream beyond the process bound
 *   is refused with `REFUSED_STREAM`, which a client may retry elsewhere.
 * - **HTTP/1.1 pipelining**: a connection has at most `pipelined` requests in
 *   progress; those Node parsed beyond them wait in order, and the socket
 *   stops being read until they are under way (what the client sent further
 *   stays in the kernel, and TCP pushes back), so a connection costs a
 *   bounded amount of memory however many requests it sends ahead.
 */
import type http from "node:http";
import http2 from "node:http2";
import type net from "node:net";

/** The limits; every field has a default. */
export interface AbuseLimits {
  /** Streams one session may reset before their answer began, at once (default 100). */
  readonly resetBurst?: number;
  /** Further such resets per second (default 20). */
  readonly resetsPerSecond?: number;
  /** The HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` erplink announces (default 128). */
  readonly maxConcurrentStreams?: number;
  /** Streams open at once over all sessions (default 8192). */
  readonly maxProcessStreams?: number;
  /** HTTP/1.1 requests in progress at once on one connection (default 8). */
  readonly pipelined?: number;
  /** Answers a session's client may cut short (reset after they began) before the session is asked to go away (default 200). */
  readonly cancelsPerSession?: number;
  /** The clock (ms), for tests. */
  readonly now?: () => number;
}

/** How long an address is first refused after a strike (ms); doubled per further strike. */
const FIRST_PENALTY_MS = 1_000;
const MAX_PENALTY_MS = 60_000;
/** Strikes are forgotten this long after the last one (ms). */
const STRIKE_MEMORY_MS = 60_000;
/** Most addresses remembered. */
const MAX_ADDRESSES = 10_000;

interface Strikes {
  count: number;
  last: number;
  until: number;
}

/** What the one-port server asks of the guard. */
export class AbuseGuard {
  readonly maxConcurrentStreams: number;
  private readonly resetBurst: number;
  private readonly resetsPerSecond: number;
  private readonly maxProcessStreams: number;
  private readonly pipelined: number;
  private readonly cancelsPerSession: number;
  private readonly now: () => number;
  private readonly strikes = new Map<string, Strikes>();
  private openStreams = 0;
  /** Counts for the logs and tests. */
  readonly counts = { calmed: 0, refusedConnections: 0, refusedStreams: 0, cancelledAway: 0 };

  constructor(limits: AbuseLimits = {}) {
    this.resetBurst = limits.resetBurst ?? 100;
    this.resetsPerSecond = limits.resetsPerSecond ?? 20;
    this.maxConcurrentStreams = limits.maxConcurrentStreams ?? 128;
    this.maxProcessStreams = limits.maxProcessStreams ?? 8_192;
    this.pipelined = limits.pipelined ?? 8;
    this.cancelsPerSession = limits.cancelsPerSession ?? 200;
    this.now = limits.now ?? (() => performance.now());
  }

  /** Whether a new connection from `address` is refused now (its address has a fresh strike). */
  refuses(address: string | undefined): boolean {
    if (address === undefined) return false;
    const s = this.strikes.get(address);
    if (s === undefined) return false;
    const now = this.now();
    if (now - s.last > STRIKE_MEMORY_MS) {
      this.strikes.delete(address);
      return false;
    }
    if (s.until <= now) return false;
    this.counts.refusedConnections++;
    return true;
  }

  /** A strike for `address`: refused for a while, longer with each strike. */
  strike(address: string | undefined): void {
    if (address === undefined) return;
    const now = this.now();
    let s = this.strikes.get(address);
    if (s === undefined || now - s.last > STRIKE_MEMORY_MS) {
      if (this.strikes.size >= MAX_ADDRESSES) this.strikes.delete(this.strikes.keys().next().value!);
      s = { count: 0, last: now, until: now };
      this.strikes.set(address, s);
    }
    s.count++;
    s.last = now;
    s.until = now + Math.min(MAX_PENALTY_MS, FIRST_PENALTY_MS * 2 ** (s.count - 1));
  }

  /** Watches a new HTTP/2 session for resets beyond its budget. */
  watchSession(session: http2.ServerHttp2Session, address: string | undefined): void {
    let tokens = this.resetBurst;
    let refilled = this.now();
    let calmed = false;
    const onReset = () => {
      if (calmed) return;
      const now = this.now();
      tokens = Math.min(this.resetBurst, tokens + ((now - refilled) / 1000) * this.resetsPerSecond);
      refilled = now;
      tokens -= 1;
      if (tokens >= 0 || session.destroyed) return;
      calmed = true;
      this.counts.calmed++;
      this.strike(address);
      session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      // The GOAWAY is flushed before the connection ends; the streams left go with it.
      setImmediate(() => session.destroy());
    };
    (session as SessionWithResets)[RESET] = onReset;
    // Node counts the part of an answer it had queued when the client reset
    // the stream against the session's memory limit (maxSessionMemory) and
    // never gives it back, so a session whose client cancels answers (gRPC
    // deadlines, a browser leaving a download) would in the end have every
    // new stream refused with ENHANCE_YOUR_CALM. Before that, it is asked to
    // go away (GOAWAY NO_ERROR, its open streams finished): its client
    // carries on over a new one.
    let cancels = 0;
    (session as SessionWithResets)[CANCEL] = () => {
      if (++cancels === this.cancelsPerSession && !session.closed && !session.destroyed) {
        this.counts.cancelledAway++;
        session.close();
      }
    };
  }

  /**
   * A new stream: false if the process has too many open (the stream is
   * refused with REFUSED_STREAM); else the stream is counted until it
   * closes, and a reset by its client before its answer began is charged to
   * its session.
   */
  admitStream(stream: http2.ServerHttp2Stream): boolean {
    if (this.openStreams >= this.maxProcessStreams) {
      this.counts.refusedStreams++;
      // Closing with an error code emits 'error' on the stream: without a listener it would end the process.
      stream.on("error", () => {});
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return false;
    }
    this.openStreams++;
    const session = stream.session as SessionWithResets | undefined;
    stream.once("close", () => {
      this.openStreams--;
      // Reset by the client (a code other than NO_ERROR) before any answer: nothing came of it.
      if (stream.rstCode === http2.constants.NGHTTP2_NO_ERROR || stream.rstCode === undefined) return;
      if (!stream.headersSent) session?.[RESET]?.();
      // Reset after its answer began, before the answer was all written.
      else if (!stream.writableFinished) session?.[CANCEL]?.();
    });
    return true;
  }

  /** Open streams over all sessions, for tests. */
  streams(): number {
    return this.openStreams;
  }

  /**
   * Wraps an HTTP/1.1 request handler so that a connection has at most
   * `pipelined` requests in progress. Node parses a whole chunk of what the
   * client sent at once, up to some hundreds of small requests; those beyond
   * the limit wait here, in order, and the socket is paused (no further
   * chunk is read, TCP pushes back) until they are all under way.
   */
  pipeline(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): (req: http.IncomingMessage, res: http.ServerResponse) => void {
    const limit = this.pipelined;
    return (req, res) => {
      const socket = req.socket as PipelinedSocket;
      let state = socket[PIPELINE];
      if (state === undefined) {
        state = pipelineOf(socket, handler);
        socket[PIPELINE] = state;
        holdWhileWaiting(socket, state);
      }
      if (state.active < limit) return state.run(req, res);
      state.waiting.push([req, res]);
      // Node's own flag for a socket its server paused: reading a request body does not resume it,
      // and Node pauses its parser once the chunk at hand is parsed.
      state.paused = true;
      socket._paused = true;
      socket.pause();
    };
  }
}

/**
 * The pipeline of one connection. Its two functions are made once per
 * connection, not per request: a request costs one listener, no closure.
 */
function pipelineOf(socket: PipelinedSocket, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): PipelineState {
  const state: PipelineState = {
    active: 0,
    waiting: [],
    paused: false,
    open: new Set(),
    run(rq, rs) {
      state.active++;
      state.open.add(rs);
      // "close" comes once per response.
      rs.on("close", state.finished);
      handler(rq, rs);
    },
    finished(this: http.ServerResponse) {
      state.active--;
      state.open.delete(this);
      // The connection is gone: what waits was never started, and never will be.
      if (socket.destroyed) {
        state.waiting.length = 0;
        return;
      }
      const next = state.waiting.shift();
      if (next !== undefined) return state.run(next[0], next[1]);
      if (state.paused) {
        state.paused = false;
        // Left to Node while its answers wait for the client to read them: its drain resumes the socket.
        if (socket.writableNeedDrain) return;
        socket._paused = false;
        socket.parser?.resume();
        socket.resume();
      }
    },
  };
  // Node closes only the response being written when its connection closes;
  // those queued behind it would never end, and their exchanges never be
  // reported (nor their request-log entries written). They are closed here
  // as Node closes the first.
  socket.once("close", () => {
    state.waiting.length = 0;
    for (const rs of [...state.open]) {
      if (rs.socket !== null && rs.socket !== undefined) continue;
      rs.destroy();
      rs.emit("close");
    }
  });
  return state;
}

/**
 * Keeps a socket paused while requests wait in its pipeline. Node resumes a
 * socket its server paused whenever the answers queued behind the one being
 * sent hold few bytes (`socketOnDrain`, called on every write of such an
 * answer), without knowing of the requests waiting here: each such resume
 * let Node parse another chunk, so that a client that pipelined 20,000
 * requests had them all parsed and held while the first few were answered
 * (four such connections took erplink from 180 to 430 MiB of RSS). The socket's `resume` now leaves it paused
 * (its parser too) while any request waits; the pipeline resumes it when
 * the last one is under way.
 */
function holdWhileWaiting(socket: PipelinedSocket, pipeline: PipelineState): void {
  const resume = socket.resume;
  socket.resume = function (this: PipelinedSocket) {
    if (pipeline.waiting.length > 0 && !this.destroyed) {
      this._paused = true;
      this.parser?.pause();
      return this;
    }
    return resume.call(this);
  };
}

const RESET = Symbol("erplink.resetCharge");
const CANCEL = Symbol("erplink.cancelCharge");
const PIPELINE = Symbol("erplink.pipeline");
type SessionWithResets = http2.ServerHttp2Session & { [RESET]?: () => void; [CANCEL]?: () => void };
interface PipelineState {
  active: number;
  waiting: [http.IncomingMessage, http.ServerResponse][];
  paused: boolean;
  /** Responses of the requests in progress. */
  open: Set<http.ServerResponse>;
  /** Starts a request: counted in progress until its response closes. */
  run(req: http.IncomingMessage, res: http.ServerResponse): void;
  /** A response closed (`this`): the next waiting request starts, or the socket reads again. */
  finished(this: http.ServerResponse): void;
}
type PipelinedSocket = net.Socket & { [PIPELINE]?: PipelineState; _paused?: boolean; parser?: { resume(): void; pause(): void } | null };
