/**
 * Stage 6, forward: writes the upstream request from the canonical request
 * (never from the client's bytes), checks it (`./verify.ts`), and sends it
 * with the instance's back-end credentials (`../upstream-session.ts`: basic,
 * bearer, OAuth 2.0 client credentials; the SAP CSRF token and session
 * cookies on modifying requests). A refused CSRF token (403 with
 * `X-CSRF-Token: Required`) or OAuth token (401) is fetched anew and the
 * request sent once more; the client's answer is the back end's, streamed,
 * with its headers cleaned (`./headers.ts`). Records what was sent, how
 * the back end answered, how much of its answer was passed on and whether
 * it failed midway, for the request log.
 *
 * Headers erplink adds: `X-Request-Id`; `Forwarded` and
 * `X-Forwarded-For/-Proto/-Host`; `X-Forwarded-Path` with the path the
 * client used (`/odata/<instance>/<service>/<canonical path>`), from which
 * back ends such as CAP's V2 adapter build the absolute URLs of their answers
 * (`__metadata.uri`, `__deferred`, `__next`), so that a client following them
 * stays on erplink; `If-Match: *` where an update must not create.
 */
import http2 from "node:http2";
import type { FastifyReply } from "fastify";
import { errors } from "undici";
import { GatewayError } from "../errors.js";
import type { Operation } from "./ports.js";
import { csrfRequired, type UpstreamSessions } from "../upstream-session.js";
import { analysisNeutral, markVerified } from "./analysis-cache.js";
import { decisionOf } from "./authorize.js";
import { BODILESS, type Admitted, type Authorized } from "./exchange.js";
import { brokenAnswerError, clientGoneError, type Forwarder, type UpstreamResponse } from "./forwarder.js";
import { clientResponseHeaders, clientUrl, scopeRepeatability } from "./headers.js";
import type { DataKey, DataLogFacts, DataPort } from "./ports.js";
import { verifyBatch, verifyForward } from "./verify.js";
import { rewriteV2Answer } from "./v2-urls.js";

/** Methods that only read; every other one carries the CSRF session. */
const READS = new Set(["GET", "HEAD"]);

/** What the forward stage works with. */
export interface ForwardDeps<K extends DataKey> {
  readonly port: DataPort<K>;
  readonly forwarder: Forwarder;
  readonly sessions: UpstreamSessions;
}

/**
 * The upstream request target and the headers that change how the analyzer
 * reads it (the client's allowed ones, and `If-Match: *`), checked by the
 * self-check (`./verify.ts`, 400 on a difference). Sends nothing: the
 * explanation of a request runs it too.
 */
export function upstreamTarget<K extends DataKey>(a: Authorized<K>, port: DataPort<K>): { path: string; headers: Record<string, string> } {
  const { request, root } = a;
  const path = root.pathOf(request.forward);
  // Object.assign, not a spread: adding properties to a spread's copy takes
  // V8's slow path (some 4 µs for the headers added below, measured in bench/README.md).
  const headers: Record<string, string> = Object.assign({}, request.headers);
  if (a.ifMatchStar) headers["if-match"] = "*";
  // No answer the key may not read: the back end then reads nothing back.
  if (a.preferMinimal) headers.prefer = "return=minimal";
  scopeRepeatability(headers, a.key.id);
  // A remembered analysis whose target passed the check for this root passes it again: nothing else it depends on differs.
  const cached = request.cached !== undefined && analysisNeutral(headers) ? request.cached : undefined;
  if (cached === undefined || !cached.verified.has(root.key)) {
    verifyForward(a, path, headers);
    if (cached !== undefined) markVerified(cached, root.key);
  }
  if (request.kind === "batch") {
    const decide = decisionOf(a, port);
    verifyBatch(a, (entity: string, operation: Operation) => decide(entity, operation).allowed);
  }
  return { path, headers };
}

export async function forward<K extends DataKey>(a: Admitted<K>, deps: ForwardDeps<K>, reply: FastifyReply): Promise<void> {
  const { req, request, root, instance, fact } = a;
  // A client that reset its request (or lost its session) before anything was sent: nothing is.
  // Over HTTP/2 with no Content-Length, Node ends the request at the reset, so a body cut short
  // would pass for a whole one; and a client that sent END_STREAM, then reset, has given up.
  const client = new ClientOf(reply, fact);
  // Node runs a stream's handler, up to here, while it still reads the frames
  // that came with its HEADERS: a reset sent right behind them (HTTP/2 rapid
  // reset) is read only once this turn of the event loop has seen them all.
  // Waiting for that turn costs one setImmediate, and a stream reset by then
  // is never forwarded.
  if (reply.request.raw.httpVersionMajor === 2) await new Promise(setImmediate);
  if (client.gone()) throw clientGoneError();
  const { path, headers } = upstreamTarget(a, deps.port);

  if (request.body !== undefined) headers["content-type"] = request.body.contentType;
  headers["x-request-id"] = req.id;
  const { host, proto } = a.client;
  headers.forwarded = `for=${quoted(req.ip)};proto=${proto};host=${quoted(host)}`;
  headers["x-forwarded-for"] = req.ip;
  headers["x-forwarded-proto"] = proto;
  headers["x-forwarded-host"] = host;
  const query = request.forward.indexOf("?");
  headers["x-forwarded-path"] = `${a.client.path}/${query < 0 ? request.forward : request.forward.slice(0, query)}`;
  const body = BODILESS.has(request.method) ? undefined : (request.body?.bytes ?? Buffer.alloc(0));
  const modifying = !READS.has(request.method);
  // Logged as sent once the forwarder hands it to a connection (`ClientOf.sending`): a request
  // refused before (no connection came free, a token could not be had, the client left) sent nothing.
  client.sends(request.method, `${root.origin}${path}`);

  const started = performance.now();
  let res: UpstreamResponse | undefined;
  // A second attempt (with a new CSRF or OAuth token) starts again from the headers as they were before the first.
  const unsent = modifying || instance.credentials.type === "oauth2_client_credentials" ? Object.assign({}, headers) : undefined;
  for (let attempt = 0; res === undefined; attempt++) {
    const authorization = await deps.sessions.authorization(instance);
    const csrf = modifying ? await deps.sessions.csrfSession(instance, root, authorization, a.key.id) : undefined;
    const sent = attempt === 0 ? headers : Object.assign({}, unsent!);
    if (authorization !== undefined) sent.authorization = authorization;
    if (csrf?.token !== undefined) sent["x-csrf-token"] = csrf.token;
    if (csrf !== undefined && csrf.cookie !== "") sent.cookie = csrf.cookie;
    const answer = await deps.forwarder.send(
      { origin: root.origin, path, method: request.method, headers: sent, body },
      { instance: instance.id, connections: instance.upstreamConnections, service: a.serviceName, startedAt: started, client },
    );
    const csrfRefused = csrf !== undefined && csrfRequired(answer.status, answer.headers);
    const tokenRefused = answer.status === 401 && instance.credentials.type === "oauth2_client_credentials";
    if (attempt === 0 && (csrfRefused || tokenRefused)) {
      // Sent once more with a new token; the refusal's body is not the client's.
      answer.body.on("error", () => {});
      answer.body.resume();
      if (csrfRefused) deps.sessions.dropCsrf(instance, root, csrf, a.key.id);
      else deps.sessions.dropToken(instance, authorization);
      continue;
    }
    res = answer;
  }
  fact.upstreamStatus = res.status;
  fact.upstreamDurationMs = Math.round((performance.now() - started) * 1000) / 1000;
  const { body: answer } = res;
  // undici reads any three digits as a status; Fastify (and HTTP) stop at 599.
  if (res.status > 599) {
    discard(answer);
    throw new GatewayError(502, `the back end answered with status ${res.status}, which HTTP does not define`);
  }
  reply.code(res.status);
  // The request id (set when the request came in) and admit's rate-limit
  // headers are on the reply already: the back end's own are left out,
  // always (its rate limits are those of erplink's shared credentials, not the key's).
  const passed = clientResponseHeaders(res.headers, root, a.client);
  // A V2 answer's URLs name erplink (`./v2-urls.ts`); its headers then fit the rewritten body.
  const v2 = request.model !== undefined ? request.model.version === "2.0" : res.headers.dataserviceversion !== undefined && res.headers["odata-version"] === undefined;
  const sent = v2 && request.method !== "HEAD" && res.status !== 206 ? rewriteV2Answer(answer, passed, (url) => clientUrl(url, root, a.client), root.path) : answer;
  reply.headers(passed);
  if (res.status === 304) {
    // No body, by definition; undici takes the Content-Length a 304 may carry
    // (the representation's, RFC 9110 §8.6) for one that never came, and fails.
    discard(answer);
    reply.send();
    return;
  }
  if (a.preferMinimal && res.status >= 200 && res.status < 300 && res.status !== 204) {
    // Asked for no answer, a back end that answers the update with the entity
    // anyway (SAP's mock server does on V2) would hand the key what it may
    // not read: the answer is the success it stands for, without the entity.
    discard(answer);
    for (const name of ["content-type", "content-length"]) reply.removeHeader(name);
    reply.code(204).header("preference-applied", "return=minimal");
    reply.send();
    return;
  }
  answer.once("error", (err) => {
    if (!reply.raw.headersSent) {
      // Nothing passed yet: the error handler answers (502 or 504, see
      // brokenAnswerError), without what the back end said of its answer,
      // and the request log counts that answer's bytes instead.
      for (const name in passed) reply.removeHeader(name);
      fact.answerBytes = undefined;
      return;
    }
    // Dropped by Fastify because its client went away: that is how the exchange ended, not this.
    if (err instanceof errors.RequestAbortedError) return;
    // The request log gives the exchange the status of what happened (the client was sent the back end's): 502, or 504 when it went silent.
    fact.answerFailure = brokenAnswerError(err) ?? new GatewayError(502, "the back end's answer broke off");
    if (reply.request.raw.httpVersionMajor === 2) {
      // Over HTTP/2 Fastify's res.destroy() would reset the stream with
      // NO_ERROR, which ends an answer like any other: the client must learn
      // it is incomplete, as over HTTP/1.1, where the connection ends.
      (reply.raw as unknown as http2.Http2ServerResponse).stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    }
  });
  // Counted as it is passed on, for the request log. prependListener, not
  // on: a Readable's on("data") would start the flow before Fastify pipes it.
  fact.answerBytes = 0;
  answer.prependListener("data", (chunk: Buffer) => {
    fact.answerBytes! += chunk.length;
  });
  // A client that reads nothing more for the upstream timeout has its
  // exchange ended as one whose client went away: otherwise the answer would
  // hold its connection to the back end until the total deadline, and a few
  // clients that never read could take an instance's connections cheaply.
  let stall: NodeJS.Timeout | undefined;
  const stallMs = deps.forwarder.stallTimeoutMs;
  // The pipe pauses the body when a write to the client is refused, and lets it flow at the client's drain.
  answer.on("pause", () => {
    if (stall !== undefined) return;
    stall = setTimeout(() => reply.raw.destroy(), stallMs);
    reply.raw.once("drain", () => {
      clearTimeout(stall);
      stall = undefined;
    });
  });
  answer.once("close", () => clearTimeout(stall));
  // Not awaited: the handler returns the reply, and Fastify streams the body
  // (an upstream error mid-stream ends the connection, or the HTTP/2 stream
  // with INTERNAL_ERROR; the status is sent).
  reply.send(sent);
}

/**
 * Whether the client has given up on the exchange: it reset its HTTP/2
 * stream (a stream whose request had ended is reset without an `aborted`
 * event: its closed state says it), its request was aborted, or its
 * connection is gone. Checked before anything is sent upstream, and again
 * once a connection is there, so a reset request is never forwarded.
 */
function clientGone(reply: FastifyReply): boolean {
  const req = reply.request.raw as { aborted?: boolean; socket?: { destroyed?: boolean } | null };
  if (req.aborted === true) return true;
  const stream = (reply.raw as unknown as { stream?: http2.ServerHttp2Stream }).stream;
  if (stream !== undefined) return stream.closed || stream.destroyed;
  return req.socket?.destroyed === true;
}

/** The client of an exchange, as the forwarder asks after it and tells it what it sends. */
class ClientOf {
  private method = "";
  private url = "";
  constructor(
    private readonly reply: FastifyReply,
    private readonly fact: DataLogFacts,
  ) {}
  gone(): boolean {
    return clientGone(this.reply);
  }
  /** What will be sent, once it is. */
  sends(method: string, url: string): void {
    this.method = method;
    this.url = url;
  }
  /** The request goes to the back end now: the request log says what was sent. */
  sending(): void {
    this.fact.upstreamMethod = this.method;
    this.fact.upstreamUrl = this.url;
  }
}

/** Reads an answer's body to its end and drops it (errors included). */
function discard(body: UpstreamResponse["body"]): void {
  body.on("error", () => {});
  body.resume();
}

const QUOTED_SPECIALS = /["\\]/;

/** An RFC 9110 quoted-string. */
function quoted(s: string): string {
  return QUOTED_SPECIALS.test(s) ? `"${s.replace(/["\\]/g, (c) => `\\${c}`)}"` : `"${s}"`;
}
