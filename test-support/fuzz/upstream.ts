/**
 * The recording upstream of the forwarding fuzzer: an HTTP server that
 * records every request exactly as it arrives (the raw request-target as
 * Node's parser hands it over, the method, the headers, the body bytes) and
 * either answers itself (serving the universe's `$metadata` documents and
 * the CSRF-token fetch) or, as a proxy, passes the request on unchanged to a
 * real back end (CAP) and records that back end's answer too.
 *
 * Requests the parser cannot read are recorded as well (`unparsed`), with
 * the bytes it saw: a back end received them, whatever it makes of them.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { metadataOf, serviceRoots, type Universe } from "./model.js";

/** One request as the upstream received it. */
export interface Received {
  /** Order of arrival, from 0. */
  readonly seq: number;
  readonly method: string;
  /** The request-target exactly as received (Node does not normalize it). */
  readonly target: string;
  /** Header names in lower case; repeated headers joined as Node does. */
  readonly headers: http.IncomingHttpHeaders;
  /** Header lines as received (name, value, name, value, …). */
  readonly rawHeaders: readonly string[];
  readonly body: Buffer;
  /** The `x-request-id` erplink forwarded, if any (its own fetches carry none). */
  readonly requestId: string | undefined;
  /** Set when Node's HTTP parser refused the bytes: what it saw. */
  readonly unparsed?: string;
  /** Proxy mode: the back end's answer. */
  answer?: { status: number; headers: http.IncomingHttpHeaders; body: Buffer };
}

/** A running recording upstream. */
export interface RecordingUpstream {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly baseUrl: string;
  /** Everything received, in order of arrival. */
  readonly received: Received[];
  /** Whether a record is one of erplink's own fetches (`$metadata`, the CSRF token), not a forwarded request. */
  isInternal(r: Received): boolean;
  close(): Promise<void>;
}

/** Options of {@link startRecordingUpstream}. */
export interface RecordingUpstreamOptions {
  readonly universe: Universe;
  /** Proxy mode: pass every request on to this origin (`http://127.0.0.1:<port>`), unchanged. */
  readonly proxyTo?: string;
  /** Basic credentials the upstream demands (answers 401 without them); none by default. */
  readonly credentials?: { readonly username: string; readonly password: string };
}

/** The answer of the self-answering upstream to a forwarded request. */
export const UPSTREAM_ANSWER = '{"value":[],"fuzz":"upstream"}';

/** Starts a recording upstream on an ephemeral port of 127.0.0.1. */
export async function startRecordingUpstream(options: RecordingUpstreamOptions): Promise<RecordingUpstream> {
  const received: Received[] = [];
  // erplink's own fetches: `$metadata` and the CSRF token at the service root, with the
  // instance's `sap-client` when it has one.
  const documents = new Map<string, string>();
  const roots = new Set<string>();
  for (const r of serviceRoots(options.universe)) {
    const q = r.instance.sapClient !== undefined ? `?sap-client=${r.instance.sapClient}` : "";
    documents.set(`${r.path}/$metadata${q}`, metadataOf(options.universe.services[r.service]!, r.version));
    roots.add(`${r.path}/${q}`);
  }
  const expectedAuth =
    options.credentials === undefined ? undefined : `Basic ${Buffer.from(`${options.credentials.username}:${options.credentials.password}`).toString("base64")}`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

  const isInternal = (r: Received): boolean => {
    if (r.requestId !== undefined || r.unparsed !== undefined || r.body.length > 0) return false;
    if (r.method !== "GET") return false;
    if (documents.has(r.target)) return true;
    return roots.has(r.target) && String(r.headers["x-csrf-token"] ?? "").toLowerCase() === "fetch";
  };

  const server = http.createServer({ insecureHTTPParser: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rid = req.headers["x-request-id"];
      const rec: Received = {
        seq: received.length,
        method: req.method ?? "",
        target: req.url ?? "",
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
        requestId: typeof rid === "string" ? rid : undefined,
      };
      received.push(rec);
      if (options.proxyTo !== undefined) {
        proxy(rec, res);
        return;
      }
      answer(rec, res);
    });
  });
  server.on("clientError", (err: Error & { rawPacket?: Buffer }, socket) => {
    received.push({
      seq: received.length,
      method: "",
      target: "",
      headers: {},
      rawHeaders: [],
      body: Buffer.alloc(0),
      requestId: undefined,
      unparsed: `${err.message}: ${err.rawPacket?.toString("latin1") ?? ""}`,
    });
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    else socket.destroy();
  });

  function answer(rec: Received, res: http.ServerResponse): void {
    if (expectedAuth !== undefined && rec.headers.authorization !== expectedAuth) {
      res.writeHead(401, { "content-type": "text/plain" }).end("no credentials");
      return;
    }
    const doc = documents.get(rec.target);
    if (doc !== undefined && rec.method === "GET") {
      res.writeHead(200, { "content-type": "application/xml" }).end(doc);
      return;
    }
    if (String(rec.headers["x-csrf-token"] ?? "").toLowerCase() === "fetch") {
      res.writeHead(200, { "content-type": "application/json", "x-csrf-token": "fuzz-token", "set-cookie": "SAP_SESSIONID=fuzz; path=/" }).end("{}");
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" });
    res.end(rec.method === "HEAD" ? undefined : UPSTREAM_ANSWER);
  }

  function proxy(rec: Received, res: http.ServerResponse): void {
    const headers: http.OutgoingHttpHeaders = { ...rec.headers };
    delete headers.connection;
    delete headers["keep-alive"];
    delete headers["transfer-encoding"];
    headers["content-length"] = String(rec.body.length);
    if (rec.body.length === 0 && (rec.method === "GET" || rec.method === "HEAD")) delete headers["content-length"];
    let out: http.ClientRequest;
    try {
      out = http.request(`${options.proxyTo}${rec.target}`, { method: rec.method, headers, agent });
    } catch (err) {
      // The target could not even be sent on (Node's client refuses it): the back end never saw it.
      rec.answer = { status: 599, headers: {}, body: Buffer.from(String(err)) };
      res.writeHead(502, { "content-type": "text/plain" }).end(`recording proxy could not forward: ${String(err)}`);
      return;
    }
    out.on("response", (up) => {
      const chunks: Buffer[] = [];
      up.on("data", (c: Buffer) => chunks.push(c));
      up.on("end", () => {
        const body = Buffer.concat(chunks);
        rec.answer = { status: up.statusCode ?? 0, headers: up.headers, body };
        const h: http.OutgoingHttpHeaders = { ...up.headers };
        delete h["transfer-encoding"];
        delete h.connection;
        delete h["keep-alive"];
        h["content-length"] = String(body.length);
        res.writeHead(up.statusCode ?? 502, h);
        res.end(rec.method === "HEAD" ? undefined : body);
      });
    });
    out.on("error", (err) => {
      rec.answer = { status: 598, headers: {}, body: Buffer.from(String(err)) };
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`recording proxy: back end failed: ${String(err)}`);
    });
    out.end(rec.body);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    received,
    isInternal,
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
