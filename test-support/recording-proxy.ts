/**
 * A recording reverse proxy between erplink and a real back end (CAP) for
 * the e2e suites: every request is recorded exactly as it arrived (the
 * request target as Node's parser hands it over, unnormalized; the headers;
 * the body bytes) and passed on unchanged, target included, to the back
 * end, whose answer streams back. What the back end received is what the
 * proxy received.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the back end received it. */
export interface Received {
  readonly method: string;
  /** The request target, byte for byte as sent. */
  readonly target: string;
  /** Header names in lower case. */
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** A running proxy. */
export interface RecordingProxy {
  /** `http://127.0.0.1:<port>`, no trailing slash: use it where the back end's base URL would go. */
  readonly baseUrl: string;
  /** Every request received, in order of arrival. */
  readonly received: readonly Received[];
  close(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 in front of `backend` (`http://host:port`). */
export async function startRecordingProxy(backend: string): Promise<RecordingProxy> {
  const received: Received[] = [];
  const target = new URL(backend);
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    received.push({ method: req.method ?? "", target: req.url ?? "", headers: req.headers, body });
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host }, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    upstream.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: async () => {
      server.closeAllConnections();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
