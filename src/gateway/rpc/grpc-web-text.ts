/**
 * gRPC-Web text (`application/grpc-web-text`, the official grpc-web
 * client's default mode): the gRPC-Web binary protocol with both bodies
 * base64-encoded. Connect serves only the binary form (it answers the text
 * form 415), so this layer transcodes in front of its handlers: the request
 * body is decoded as it streams in and handed over as
 * `application/grpc-web+proto`; the answer's frames are encoded as they
 * stream out, each chunk padded on its own (PROTOCOL-WEB.md allows padded
 * chunks, and it delivers each server-streamed message at once), under
 * `application/grpc-web-text+proto`.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalHandlerFn, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";

/** `application/grpc-web-text` and `application/grpc-web-text+proto` (the protobuf codec only, as the clients send). */
const TEXT_CONTENT_TYPE = /^application\/grpc-web-text(?:\+proto)?\s*(?:;|$)/i;
/** What the binary handler answers a protobuf call with. */
const BINARY_CONTENT_TYPE = /^application\/grpc-web\+proto\s*$/i;

/** The content type of a text answer. */
export const GRPC_WEB_TEXT_PROTO = "application/grpc-web-text+proto";

/** Whether a request's content type is gRPC-Web text. */
export function isGrpcWebText(contentType: string | null | undefined): boolean {
  return contentType != null && TEXT_CONTENT_TYPE.test(contentType);
}

/** Whole base64 quanta, padding allowed only in a chunk's last quantum. */
const CHUNKS = /^(?:(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=))*(?:[A-Za-z0-9+/]{4})*$/;
/** One padded chunk (or the unpadded rest). */
const CHUNK = /(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)|(?:[A-Za-z0-9+/]{4})+/g;

function malformed(): ConnectError {
  return new ConnectError("the grpc-web-text request body is not base64", Code.InvalidArgument);
}

/**
 * Decodes a whole number of base64 quanta, which may be several padded
 * chunks one after another (a client may flush padded chunks); strict
 * alphabet, no whitespace.
 */
export function decodeQuanta(text: string): Uint8Array {
  if (!CHUNKS.test(text)) throw malformed();
  const parts = text.match(CHUNK) ?? [];
  return Buffer.concat(parts.map((p) => Buffer.from(p, "base64")));
}

/** Decodes a streamed base64 body into its bytes, quantum by quantum. */
export async function* decodeBase64Stream(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  let pending = "";
  for await (const chunk of body) {
    pending += Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
    const whole = pending.length - (pending.length % 4);
    if (whole === 0) continue;
    const bytes = decodeQuanta(pending.slice(0, whole));
    pending = pending.slice(whole);
    if (bytes.length > 0) yield bytes;
  }
  if (pending.length > 0) throw malformed();
}

/** Encodes each chunk of a body as padded base64 on its own. */
export async function* encodeBase64Stream(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    if (chunk.byteLength === 0) continue;
    yield Buffer.from(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("base64"), "latin1");
  }
}

/**
 * Wraps a Connect handler so that it also serves gRPC-Web text; other
 * requests pass through untouched.
 */
export function withGrpcWebText<H extends UniversalHandlerFn>(handler: H): UniversalHandlerFn {
  return async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    if (!isGrpcWebText(req.header.get("content-type"))) return handler(req);
    const header = new Headers(req.header);
    header.set("content-type", "application/grpc-web+proto");
    const body = req.body;
    const res = await handler({
      ...req,
      header,
      // The Node adapter always streams the body (the plugin parses none).
      body: isByteStream(body) ? decodeBase64Stream(body) : body,
    });
    const type = res.header === undefined ? null : new Headers(res.header).get("content-type");
    if (type === null || !BINARY_CONTENT_TYPE.test(type)) return res;
    const out = new Headers(res.header);
    out.set("content-type", GRPC_WEB_TEXT_PROTO);
    return { ...res, header: out, body: res.body === undefined ? undefined : encodeBase64Stream(res.body) };
  };
}

function isByteStream(body: UniversalServerRequest["body"]): body is AsyncIterable<Uint8Array> {
  return typeof body === "object" && body !== null && Symbol.asyncIterator in body;
}
