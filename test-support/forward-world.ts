/**
 * erplink in front of a recording upstream of our own that sees each
 * request line byte for byte (the forwarding tests: what erplink sends is
 * what it authorized): the upstream answers `$metadata` and CSRF fetches
 * itself and records every other request before the test's answer; the
 * world has the system `S4` with the instance `prod` (SAP client 100,
 * basic credentials) over the upstream's `/erp/`, the services given, and
 * the data keys given; erplink listens on a loopback port.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import * as assert from "uvu/assert";
import { json, post } from "./http.js";
import { rawHttp, type RawResponse } from "./raw-http.js";
import { createWorld, type World } from "./world.js";

/** A request as the upstream received it. */
export interface UpstreamRequest {
  method: string;
  /** The request target exactly as it arrived. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface ForwardWorld {
  world: World;
  upstream: http.Server;
  /** `http://127.0.0.1:<upstream's port>`. */
  origin: string;
  /** erplink's port. */
  port: number;
  /** Data requests that reached the upstream (`$metadata` and CSRF fetches left out). */
  seen: UpstreamRequest[];
  /** Every request, `$metadata` and CSRF fetches included. */
  all: UpstreamRequest[];
  /** Key name -> its secret and id. */
  keys: Record<string, { key: string; id: string }>;
}

export interface ForwardWorldOptions {
  /** The `$metadata` document served at `path`. */
  readonly metadata: (path: string) => string;
  /** Headers of the answer to a CSRF token fetch (beside `x-csrf-token`). */
  readonly csrfHeaders?: http.OutgoingHttpHeaders;
  /** The instance's services (name -> path under `/erp/`). */
  readonly services: Record<string, string>;
  /** Data keys: name -> permissions. */
  readonly keys: Record<string, unknown>;
  /** Answers a data request (already recorded). */
  readonly answer: (req: http.IncomingMessage, res: http.ServerResponse, origin: string) => void;
}

export async function startForwardWorld(options: ForwardWorldOptions): Promise<ForwardWorld> {
  const seen: UpstreamRequest[] = [];
  const all: UpstreamRequest[] = [];
  let origin = "";
  const upstream = http.createServer(async (req, res) => {
    const rec: UpstreamRequest = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: "" };
    for await (const chunk of req) rec.body += String(chunk);
    all.push(rec);
    const path = rec.url.split("?")[0]!;
    if (path.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(options.metadata(path));
      return;
    }
    if (req.headers["x-csrf-token"] === "Fetch") {
      res.writeHead(200, { "x-csrf-token": "tok-1", ...options.csrfHeaders }).end("{}");
      return;
    }
    seen.push(rec);
    options.answer(req, res, origin);
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const world = await createWorld();
  const sys = json(await post(world.app, "/admin/systems", { name: "S4" })).data.id;
  const services = Object.fromEntries(Object.entries(options.services).map(([name, path]) => [name, { path }]));
  const ins = await post(world.app, `/admin/systems/${sys}/instances`, {
    name: "prod",
    base_url: `${origin}/erp/`,
    services,
    sap_client: "100",
    auth: { type: "basic", username: "erp-user", password: "erp-pass" },
  });
  assert.is(ins.statusCode, 201, ins.body);
  const keys: ForwardWorld["keys"] = {};
  for (const [name, permissions] of Object.entries(options.keys)) {
    const res = await post(world.app, "/admin/api-keys", { name, permissions });
    assert.is(res.statusCode, 201, res.body);
    const data = json(res).data;
    keys[name] = { key: data.key, id: data.id };
  }
  await world.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (world.app.server.address() as AddressInfo).port;
  return { world, upstream, origin, port, seen, all, keys };
}

export async function stopForwardWorld(w: ForwardWorld): Promise<void> {
  await w.world.close();
  w.upstream.closeAllConnections();
  await new Promise<void>((r) => w.upstream.close(() => r()));
}

/** Sends a request line as written to erplink, with `key` as the bearer token (a body with its length). */
export function rawRequest(w: ForwardWorld, requestLine: string, key: string, opts: { headers?: string[]; body?: string } = {}): Promise<RawResponse> {
  const head = [requestLine, `Host: 127.0.0.1:${w.port}`, `Authorization: Bearer ${key}`, ...(opts.headers ?? [])];
  if (opts.body !== undefined) head.push(`Content-Length: ${Buffer.byteLength(opts.body)}`);
  return rawHttp(w.port, head.join("\r\n"), opts.body ?? "");
}

/** Sends each target (under `base`) as a GET with `key`; returns those the upstream received, as `status target -> what it received`. */
export async function forwardedWith(w: ForwardWorld, key: string, base: string, targets: readonly string[]): Promise<string[]> {
  const reached: string[] = [];
  for (const target of targets) {
    const before = w.seen.length;
    const res = await rawRequest(w, `GET ${base}/${target} HTTP/1.1`, key);
    if (w.seen.length > before) reached.push(`${res.status} ${target} -> ${w.seen[w.seen.length - 1]!.url}`);
  }
  return reached;
}
