/**
 * What every HTTP/2 stream of the one-port server needs once its answer has
 * ended or its client has reset it, whoever answers it (the h2c shortcut,
 * src/gateway/rpc/direct.ts, or Node's compat layer and Fastify, for which
 * src/gateway/server.ts registers {@link settleStream}).
 *
 * Node closes a server stream only once its readable side has been read to
 * its end. A stream answered before its request body was read to the end
 * (a body over the limit, a malformed message, more messages than a unary
 * method takes, a stream ended by shutdown), or reset by its client with
 * NO_ERROR while its answer waited for flow control, therefore never
 * closed: the request was never reported (metrics, access log, request
 * log), its session never released, and a shutdown waited for its timeout.
 */
import http2 from "node:http2";

/**
 * Discards what the client still sends on a stream whose answer has ended.
 * Whatever read it before (a body iterator left suspended when its reader
 * stopped early, or the compat request's `data` listener, which pauses the
 * stream when its own buffer is full) is detached first: while a `readable`
 * listener is attached, `resume()` does nothing.
 */
export function discardUnread(stream: http2.ServerHttp2Stream): void {
  stream.removeAllListeners("readable");
  stream.removeAllListeners("data");
  stream.resume();
}

/**
 * After an answer's trailers: if the client is still sending, discards the
 * rest ({@link discardUnread}) and resets the stream NO_ERROR, as RFC 9113
 * §8.1 lets a server that has sent its complete response and as grpc-go
 * does: a client that never ends its side no longer holds its stream.
 *
 * The reset waits for the next turn of the event loop: submitted at once,
 * nghttp2 sends it before the trailers still queued beside it, and the
 * client never sees the status. By then Node has handed the trailers to
 * the socket, and the reset follows them there.
 */
export function drainUnread(stream: http2.ServerHttp2Stream): void {
  if (stream.readableEnded || stream.destroyed) return;
  discardUnread(stream);
  setImmediate(resetUnended, stream);
}

/** Resets a stream whose answer is complete and whose client has still not ended its side; destroys it if that does not close it. */
function resetUnended(stream: http2.ServerHttp2Stream): void {
  if (stream.readableEnded || stream.destroyed) return;
  if (!stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  // The reset is submitted; a stream still open after it (data left unread) is let go.
  if (!stream.destroyed && !stream.readableEnded) stream.destroy();
}

/**
 * The `aborted` listener: the client reset the stream (or its session went
 * away) before the answer was complete. The exchange is over, so the
 * stream is destroyed, which closes it (`close`: the request is reported, a
 * write waiting for `drain` fails, a handler's signal is aborted). On the
 * next tick: `aborted` is emitted before Node submits the reset of a
 * `close(code)` of our own, which a destroyed stream would drop.
 */
export function onStreamAborted(this: http2.ServerHttp2Stream): void {
  process.nextTick(destroyStream, this);
}

function destroyStream(stream: http2.ServerHttp2Stream): void {
  if (!stream.destroyed) stream.destroy();
}

/** The `wantTrailers` listener of a stream answered by the compat layer (which sends the trailers in its own listener, registered before this one). */
function onCompatTrailers(this: http2.ServerHttp2Stream): void {
  drainUnread(this);
}

/**
 * Registers what a stream the compat layer answers needs (every answer of
 * Node's compat response waits for trailers, so `wantTrailers` marks its
 * end). `on`, not `once`: each fires at most once.
 */
export function settleStream(stream: http2.ServerHttp2Stream): void {
  stream.on("wantTrailers", onCompatTrailers);
  stream.on("aborted", onStreamAborted);
}
