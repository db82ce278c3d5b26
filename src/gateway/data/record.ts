/**
 * The request log's view of a data request: created when the request
 * arrives (with where it was addressed), filled in by every stage (the key,
 * the accesses authorized, the denial step, what was sent upstream, how
 * the back end answered and how much of its answer was passed on), and
 * written by the gateway when the exchange ends.
 */
import type { FastifyRequest } from "fastify";
import { GatewayError } from "../errors.js";
import type { Incoming } from "./exchange.js";
import type { DataLogFacts } from "./ports.js";

/** Permission steps as the request log names them. */
export const STEP_NAMES: Readonly<Record<string, string>> = {
  instance: "INSTANCE",
  service: "SERVICE",
  entity: "ENTITY",
  operation: "OPERATION",
};

/**
 * The request as it arrived, with fresh log facts registered in `facts`.
 * The resource path is taken from the raw URL (everything after
 * `/odata/<instance>/<service>`), so that it is decoded exactly once, by
 * the analyzer, however the client encoded the names before it. Where the
 * client reached erplink is `publicUrl` (`ERPLINK_PUBLIC_URL`) when
 * configured (behind a TLS proxy the request itself says `http`), else the
 * request's scheme and host (HTTP/2's `:authority`); a request that names no
 * host is refused, since the back end's absolute URLs could not be made
 * erplink's, and so is an HTTP/2 request whose `Host` header contradicts its
 * `:authority`.
 */
export function receive(req: FastifyRequest, facts: WeakMap<object, DataLogFacts>, publicUrl?: URL): Incoming {
  const params = req.params as { instance: string; service: string };
  const rawUrl = req.raw.url ?? req.url;
  const fact = newFacts(params.instance, params.service);
  fact.handling = true;
  facts.set(req, fact);
  // An absolute-form target (`GET http://host/odata/…`) is routed by Fastify
  // from its path but would be split here from the scheme: one parser only.
  if (!rawUrl.startsWith("/")) throw new GatewayError(400, "the request target must be a path (absolute-form targets are for proxies)");
  // HTTP/2 names the host in :authority; a Host header beside it may not name another
  // (RFC 9113 §8.3.1), and Fastify's req.host would take the Host one.
  const authority = req.raw.headers[":authority"];
  const hostHeader = req.raw.headers.host;
  if (typeof authority === "string" && hostHeader !== undefined && hostHeader.toLowerCase() !== authority.toLowerCase()) {
    throw new GatewayError(400, "the request's Host header names another host than its :authority");
  }
  const host = publicUrl?.host ?? req.host;
  if (host === "") throw new GatewayError(400, "the request names no host: send a Host header");
  const proto = publicUrl?.protocol.slice(0, -1) ?? req.protocol;
  const { rawPath, rawQuery, clientPath } = splitTarget(rawUrl, publicUrl);
  return {
    req,
    fact,
    instanceName: params.instance,
    serviceName: params.service,
    rawPath,
    rawQuery,
    client: { origin: `${proto}://${host}`, proto, host, path: clientPath },
  };
}

/** Fresh log facts of a request to `instance` and `service`. */
export function newFacts(instance: string, service: string): DataLogFacts {
  return {
    apiKeyId: "",
    instance,
    service,
    accesses: [],
    denialStep: "",
    upstreamMethod: "",
    upstreamUrl: "",
    upstreamStatus: 0,
    upstreamDurationMs: 0,
    answerBytes: undefined,
    answerFailure: undefined,
    handling: false,
  };
}

/**
 * Splits an origin-form target `/odata/<instance>/<service><raw path>?<raw
 * query>` (raw: nothing decoded): the resource path after the service
 * (`""` or starting with `/`), the query without `?`, and the path where the
 * client addressed the service (after the public URL's path, if any).
 */
export function splitTarget(rawUrl: string, publicUrl?: URL): { rawPath: string; rawQuery: string; clientPath: string } {
  const q = rawUrl.indexOf("?");
  const end = q < 0 ? rawUrl.length : q;
  // The fourth `/` (the first is the target's own) ends `/odata/<instance>/<service>`.
  let slash = 0;
  for (let n = 1; n < 4 && slash !== -1; n++) slash = rawUrl.indexOf("/", slash + 1);
  const split = slash === -1 || slash >= end ? end : slash;
  const prefix = publicUrl === undefined ? "" : publicUrl.pathname.replace(/\/+$/, "");
  return {
    rawPath: rawUrl.slice(split, end),
    rawQuery: q < 0 ? "" : rawUrl.slice(q + 1),
    clientPath: prefix === "" ? rawUrl.slice(0, split) : `${prefix}${rawUrl.slice(0, split)}`,
  };
}
