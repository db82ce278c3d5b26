/**
 * gRPC-Web framing for wire-level tests (test/gateway/rpc): frames a
 * message as a client does and reads an answer's frames (data and trailer)
 * back, in binary or base64 text. Written from PROTOCOL-WEB.md, independent
 * of the server's code. Lives outside test/ because uvu runs every file there.
 */
import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/** One length-prefixed frame: flag byte, 4-byte big-endian length, payload. */
export function frame(flag: number, payload: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flag, 0);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** A request body of one message. */
export function requestBody<D extends DescMessage>(schema: D, message: MessageShape<D>): Buffer {
  return frame(0, toBinary(schema, message));
}

/** An answer read back: its messages and its trailer (from the trailer frame). */
export interface GrpcWebAnswer {
  readonly messages: Uint8Array[];
  readonly trailer: Record<string, string>;
}

/** Reads the frames of a binary body. Throws on a torn frame. */
export function readFrames(body: Buffer): GrpcWebAnswer {
  const messages: Uint8Array[] = [];
  const trailer: Record<string, string> = {};
  let at = 0;
  while (at < body.length) {
    if (body.length - at < 5) throw new Error(`torn frame header at ${at}`);
    const flag = body.readUInt8(at);
    const length = body.readUInt32BE(at + 1);
    const payload = body.subarray(at + 5, at + 5 + length);
    if (payload.length !== length) throw new Error(`torn frame at ${at}: ${payload.length} of ${length} bytes`);
    at += 5 + length;
    if ((flag & 0x80) !== 0) {
      for (const line of payload.toString("latin1").split("\r\n")) {
        if (line === "") continue;
        const colon = line.indexOf(":");
        trailer[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
    } else {
      messages.push(payload);
    }
  }
  return { messages, trailer };
}

/**
 * Decodes a text body, which may be several padded base64 chunks one after
 * another (every 4 characters decode on their own, so a padded quantum may
 * sit anywhere).
 */
export function decodeTextBody(text: string): Buffer {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/=]*$/.test(text)) throw new Error(`not base64 quanta: ${text.slice(0, 80)}`);
  const parts: Buffer[] = [];
  for (let i = 0; i < text.length; i += 4) parts.push(Buffer.from(text.slice(i, i + 4), "base64"));
  return Buffer.concat(parts);
}

/** The first message of an answer, decoded. */
export function firstMessage<D extends DescMessage>(schema: D, answer: GrpcWebAnswer): MessageShape<D> {
  const m = answer.messages[0];
  if (m === undefined) throw new Error(`no message; trailer ${JSON.stringify(answer.trailer)}`);
  return fromBinary(schema, m);
}
