/**
 * Answers for requests Node's HTTP/1.1 parser refuses before Fastify sees
 * them (a malformed request line or header, an unknown method token, headers
 * too large, a request that takes too long to arrive): written on the socket
 * in the envelope, with a request id, like every other answer of erplink's,
 * and the connection closed (the stream cannot be trusted to continue).
 */
import { randomUUID } from "node:crypto";
import type { Socket } from "node:net";

/** A request line with a method token, a target and an HTTP version. */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^\s]+ HTTP\/[0-9]\.[0-9]\r?$/;

/**
 * The status, envelope code and message for a parser error of Node's
 * (`code`), given the first line of what the client sent.
 */
function answerFor(code: string | undefined, firstLine: string): { status: number; reason: string; code: string; message: string } {
  switch (code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, reason: "Request Timeout", code: "REQUEST_TIMEOUT", message: "the request did not arrive in time" };
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, reason: "Request Header Fields Too Large", code: "HEADERS_TOO_LARGE", message: "the request's headers are too large" };
    case "HPE_INVALID_METHOD":
      // RFC 9110 §9.1: a well-formed request with a method the server does not recognise is 501.
      if (REQUEST_LINE.test(firstLine)) {
        return { status: 501, reason: "Not Implemented", code: "NOT_IMPLEMENTED", message: "the request method is not one erplink implements" };
      }
      return { status: 400, reason: "Bad Request", code: "VALIDATION_ERROR", message: "the request is not well-formed HTTP/1.1" };
    default:
      return { status: 400, reason: "Bad Request", code: "VALIDATION_ERROR", message: "the request is not well-formed HTTP/1.1" };
  }
}

/** The raw HTTP/1.1 answer to a parser error (exported for tests). */
export function clientErrorResponse(code: string | undefined, firstLine: string, requestId: string): string {
  const a = answerFor(code, firstLine);
  const body = JSON.stringify({ error: { code: a.code, message: a.message, requestId } });
  return (
    `HTTP/1.1 ${a.status} ${a.reason}\r\n` +
    `x-request-id: ${requestId}\r\n` +
    "content-type: application/json; charset=utf-8\r\n" +
    "cache-control: no-store\r\n" +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    "connection: close\r\n\r\n" +
    body
  );
}

/**
 * Fastify's `clientErrorHandler`: answers in the envelope when the socket
 * can still be written to, then closes it. A connection reset needs no answer.
 */
export function onClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  // A response is already under way on this connection: nothing can follow it.
  if (!socket.writable || (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true) {
    socket.destroy();
    return;
  }
  const firstLine = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString("latin1").split("\n", 1)[0]! : "";
  socket.end(clientErrorResponse(err.code, firstLine, `req_${randomUUID()}`), () => socket.destroy());
}
