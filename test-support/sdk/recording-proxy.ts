/**
 * A recording forward HTTP proxy for the SAP Cloud SDK e2e suite: the SDK
 * reaches erplink through it (a destination's `proxyConfiguration`), so the
 * destination's URL stays erplink's own and every exchange — the SDK's CSRF
 * `HEAD`s included, which it sends and swallows on its own — is kept
 * byte for byte for assertions and failure messages.
 *
 * Plain HTTP only (absolute-form request targets); no CONNECT.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request the client sent and the answer it got. */
export interface Exchange {
  readonly method: string;
  /** The absolute URL the client asked for, as it wrote it. */
  readonly url: string;
  /** The path and query of {@link url}, as written. */
  readonly path: string;
  readonly requestHeaders: http.IncomingHttpHeaders;
  readonly requestBody: string;
  readonly status: number;
  readonly responseHeaders: http.IncomingHttpHeaders;
  /** The answer's body (the first {@link MAX_RECORDED_BODY} bytes as UTF-8). */
  readonly responseBody: string;
}

/** Bodies beyond this size are recorded truncated (they still pass whole). */
export const MAX_RECORDED_BODY = 256 * 1024;

/** A running proxy. */
export interface RecordingProxy {
  /** For a destination: `{ proxyConfiguration: proxy.proxyConfiguration }`. */
  readonly proxyConfiguration: { readonly host: string; readonly port: number; readonly protocol: "http" };
  /** Every exchange so far, in the order the answers ended. */
  readonly exchanges: readonly Exchange[];
  /** Returns the exchanges recorded since the last call and forgets them. */
  take(): Exchange[];
  close(): Promise<void>;
}

function collect(stream: NodeJS.ReadableStream, limit = Infinity): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on("data", (c: Buffer) => {
      if (size < limit) chunks.push(c);
      size += c.length;
    });
    stream.on("end", () => resolve(Buffer.concat(chunks).subarray(0, limit)));
    stream.on("error", reject);
  });
}

/** Starts a recording proxy on 127.0.0.1 (ephemeral port). */
export async function startRecordingProxy(): Promise<RecordingProxy> {
  let recorded: Exchange[] = [];
  const all: Exchange[] = [];
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer(async (req, res) => {
    try {
      const url = req.url ?? "";
      if (!/^http:\/\//i.test(url)) {
        res.writeHead(400, { "content-type": "text/plain" }).end("recording proxy: absolute-form http:// URLs only");
        return;
      }
      const body = await collect(req);
      const target = new URL(url);
      const headers = { ...req.headers };
      delete headers["proxy-connection"];
      const upstream = http.request(target, { method: req.method, headers, agent });
      upstream.on("error", (err) => {
        if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
        res.end(`recording proxy: ${err.message}`);
      });
      upstream.on("response", async (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        const kept: Buffer[] = [];
        let size = 0;
        answer.on("data", (c: Buffer) => {
          if (size < MAX_RECORDED_BODY) kept.push(c);
          size += c.length;
          res.write(c);
        });
        answer.on("end", () => {
          const exchange: Exchange = {
            method: req.method ?? "",
            url,
            path: url.replace(/^http:\/\/[^/]*/i, ""),
            requestHeaders: req.headers,
            requestBody: body.toString("utf8"),
            status: answer.statusCode ?? 0,
            responseHeaders: answer.headers,
            responseBody: Buffer.concat(kept).subarray(0, MAX_RECORDED_BODY).toString("utf8"),
          };
          recorded.push(exchange);
          all.push(exchange);
          res.end();
        });
      });
      upstream.end(body);
    } catch (err) {
      res.destroy(err as Error);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    proxyConfiguration: { host: "127.0.0.1", port, protocol: "http" },
    get exchanges() {
      return all;
    },
    take() {
      const out = recorded;
      recorded = [];
      return out;
    },
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Headers worth showing in a failure message (the key is masked). */
const SHOWN_HEADERS = ["authorization", "content-type", "content-length", "accept", "if-match", "x-csrf-token", "x-http-method", "prefer", "content-id", "location", "odata-version", "dataserviceversion", "x-request-id"];

/** One exchange as text: request line, relevant headers, body; status, headers, body (both cut at `max`). */
export function describeExchange(e: Exchange, max = 4000): string {
  const headers = (h: http.IncomingHttpHeaders) =>
    SHOWN_HEADERS.filter((k) => h[k] !== undefined)
      .map((k) => `  ${k}: ${k === "authorization" ? String(h[k]).replace(/(erpl_.{6}).*/, "$1…") : String(h[k])}`)
      .join("\n");
  const cut = (s: string) => (s.length > max ? `${s.slice(0, max)}… (${s.length} chars)` : s);
  return [
    `> ${e.method} ${e.path}`,
    headers(e.requestHeaders),
    e.requestBody ? cut(e.requestBody) : "",
    `< ${e.status}`,
    headers(e.responseHeaders),
    e.responseBody ? cut(e.responseBody) : "",
  ]
    .filter((l) => l !== "")
    .join("\n");
}

/** Several exchanges as text, for an assertion's message. */
export function describeExchanges(list: readonly Exchange[], max?: number): string {
  return list.length === 0 ? "(no requests)" : list.map((e) => describeExchange(e, max)).join("\n----\n");
}
