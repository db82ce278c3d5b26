/**
 * A minimal raw HTTP/2 client: frames written byte for byte, for tests of
 * what the server does with what Node's own client never sends (HEADERS
 * without `:authority`, DATA and RST_STREAM in one packet, a reset between
 * a message and its END_STREAM).
 */
import net from "node:net";

export const END_STREAM = 0x1;
export const END_HEADERS = 0x4;

/** An HPACK integer with a `prefixBits`-bit prefix, its first byte or-ed with `first`. */
export function hpackInt(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) + 128);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** A header block of literal fields without indexing, new names, no Huffman: any decoder reads it. */
export function headerBlock(fields: [string, string][]): Buffer {
  const bytes: number[] = [];
  for (const [name, value] of fields) {
    bytes.push(0x00, ...hpackInt(name.length, 7, 0), ...Buffer.from(name, "latin1"), ...hpackInt(value.length, 7, 0), ...Buffer.from(value, "latin1"));
  }
  return Buffer.from(bytes);
}

/** One frame: its 9-byte head, then the payload. */
export function h2Frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** A HEADERS frame (END_HEADERS; END_STREAM when `end`). */
export function rawHeaders(id: number, headers: [string, string][], end: boolean): Buffer {
  return h2Frame(0x1, END_HEADERS | (end ? END_STREAM : 0), id, headerBlock(headers));
}

/** A DATA frame (END_STREAM when `end`). */
export function rawData(id: number, data: Buffer, end: boolean): Buffer {
  return h2Frame(0x0, end ? END_STREAM : 0, id, data);
}

/** An RST_STREAM frame with its error code. */
export function rawRst(id: number, code: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code, 0);
  return h2Frame(0x3, 0, id, payload);
}

/** The client's connection preface and an empty SETTINGS frame. */
export const PREFACE = Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"), h2Frame(0x4, 0, 0, Buffer.alloc(0))]);

/** The headers of a gRPC call to `path` on the server at `port`. */
export function grpcCallHeaders(port: number, path: string, extra: [string, string][] = []): [string, string][] {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", `127.0.0.1:${port}`],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ...extra,
  ];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Writes `bytes` after the preface in one socket write (then `later` after
 * a pause), holds the connection `holdMs`, closes it, and returns what the
 * server sent.
 */
export async function rawSend(port: number, bytes: Buffer, holdMs = 100, later?: { afterMs: number; bytes: Buffer }): Promise<Buffer> {
  const socket = net.connect(port, "127.0.0.1");
  const received: Buffer[] = [];
  socket.on("data", (d: Buffer) => received.push(d));
  socket.on("error", () => {});
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  // The preface first, on its own: the one-port server sniffs it before handing the socket to node:http2.
  socket.write(PREFACE);
  await sleep(15);
  socket.write(bytes);
  if (later !== undefined) {
    await sleep(later.afterMs);
    socket.write(later.bytes);
  }
  await sleep(holdMs);
  socket.destroy();
  return Buffer.concat(received);
}
