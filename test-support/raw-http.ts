/**
 * HTTP/1.1 over a plain socket, byte for byte: for tests whose point is a
 * request line no client library would send as written (a raw backslash,
 * dot segments, `Expect: 100-continue`). `app.inject()` cannot: it parses
 * the URL with the WHATWG parser first.
 */
import net from "node:net";

/** An answer as read off the socket. */
export interface RawResponse {
  readonly status: number;
  /** Header names in lower case; repeated ones joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Interim `1xx` status lines received before the answer (`HTTP/1.1 100 Continue`). */
  readonly interim: readonly string[];
}

/**
 * Sends `head` (request line and headers, CRLF-separated, without the blank
 * line; `Connection: close` is added) and then `body`, and reads the answer
 * until the server closes. With `waitForContinue`, the body is sent only
 * after a `100 Continue`.
 */
export function rawHttp(port: number, head: string, body = "", waitForContinue = false): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let data = Buffer.alloc(0);
    let sentBody = !waitForContinue;
    socket.setTimeout(5_000, () => socket.destroy(new Error("no answer within 5 s")));
    socket.on("connect", () => {
      socket.write(`${head}\r\nConnection: close\r\n\r\n`);
      if (sentBody) socket.write(body);
    });
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (!sentBody && /^HTTP\/1\.1 100 /.test(data.toString("latin1"))) {
        sentBody = true;
        socket.write(body);
      }
    });
    socket.on("error", reject);
    socket.on("close", () => {
      // latin1: one character per byte, so chunk sizes count right; the body is decoded as UTF-8 at the end.
      let text = data.toString("latin1");
      const interim: string[] = [];
      while (/^HTTP\/1\.1 1\d\d /.test(text)) {
        const end = text.indexOf("\r\n\r\n");
        interim.push(text.slice(0, text.indexOf("\r\n")));
        text = text.slice(end + 4);
      }
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) {
        reject(new Error(`no complete answer: ${JSON.stringify(text.slice(0, 200))}`));
        return;
      }
      const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
      }
      let payload = text.slice(end + 4);
      if (headers["transfer-encoding"] === "chunked") payload = unchunk(payload);
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: Buffer.from(payload, "latin1").toString("utf8"), interim });
    });
  });
}

function unchunk(text: string): string {
  let out = "";
  let rest = text;
  for (;;) {
    const eol = rest.indexOf("\r\n");
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}
