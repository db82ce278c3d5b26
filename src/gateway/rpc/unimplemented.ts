/**
 * Unknown services and methods, answered the way each RPC protocol says,
 * instead of the REST facade's 404 envelope: gRPC and gRPC-Web `UNIMPLEMENTED`
 * (HTTP 200, `grpc-status: 12`; gRPC in trailers, gRPC-Web as a
 * trailers-only answer in the headers), Connect `unimplemented` (HTTP 404
 * with the Connect error JSON, or an end-stream message for streaming
 * content types). The messages are grpc-go's (`unknown service …`,
 * `unknown method … for service …`), so clients and people recognise them.
 *
 * The same answers carry other refusals made before a handler runs
 * ({@link errorResponse}: a malformed authority, src/gateway/rpc/node-request.ts).
 *
 * Only requests that no route took come here, so a service registered later
 * (by anyone, on any router) is never shadowed; requests that are not RPCs
 * (REST, browsers, the data path) keep their 404s.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, createEndStreamSerialization, endStreamFlag, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { GRPC_WEB_TEXT_PROTO } from "./grpc-web-text.js";

/** How an RPC request is framed, as far as its answer depends on it. */
export type RpcKind =
  | { readonly protocol: "grpc"; readonly json: boolean }
  | { readonly protocol: "grpc-web"; readonly json: boolean; readonly text: boolean }
  | { readonly protocol: "connect"; readonly json: boolean; readonly stream: boolean };

/** `/<package>.<Service>/<Method>`: the path of an RPC of a service in a package. */
const RPC_PATH = /^\/[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\/[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether a path has the shape of an RPC of a service in a package. */
export function isRpcPath(path: string): boolean {
  return RPC_PATH.test(path);
}

/** The request's content type without parameters, lower-cased ("" when absent). */
function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

/**
 * Tells whether a request is an RPC call, and which kind: any gRPC, gRPC-Web
 * or Connect streaming content type; a Connect unary call (`application/json`
 * or `application/proto`) when it says `Connect-Protocol-Version` or its path
 * is `/<package>.<Service>/<Method>`; a Connect GET (`?connect=v1`) to such a
 * path. Anything else is not an RPC (a REST client posting JSON to an unknown
 * `/admin` path keeps its 404 envelope).
 */
export function rpcKindOf(req: {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}): RpcKind | undefined {
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const type = mediaType(header("content-type"));
  if (type === "application/grpc" || type.startsWith("application/grpc+")) {
    return { protocol: "grpc", json: type === "application/grpc+json" };
  }
  if (type === "application/grpc-web-text" || type.startsWith("application/grpc-web-text+")) {
    return { protocol: "grpc-web", json: false, text: true };
  }
  if (type === "application/grpc-web" || type.startsWith("application/grpc-web+")) {
    return { protocol: "grpc-web", json: type === "application/grpc-web+json", text: false };
  }
  if (type.startsWith("application/connect+")) {
    return { protocol: "connect", json: type === "application/connect+json", stream: true };
  }
  const connectHeader = header("connect-protocol-version") !== undefined;
  if (req.method === "POST" && (type === "application/json" || type === "application/proto") && (connectHeader || isRpcPath(req.path))) {
    return { protocol: "connect", json: type === "application/json", stream: false };
  }
  if (req.method === "GET" && req.query.get("connect") === "v1" && isRpcPath(req.path)) {
    return { protocol: "connect", json: req.query.get("encoding") !== "proto", stream: false };
  }
  return undefined;
}

/** Longest part of a path repeated in a message. */
const MAX_SHOWN = 200;

/** grpc-go's wording for a path no handler serves. */
export function unimplementedMessage(path: string, knownServices: ReadonlySet<string>): string {
  const shown = (s: string) => (s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN)}…` : s);
  const m = /^\/([^/]+)\/([^/]+)$/.exec(path);
  if (m === null) return `malformed method name: ${shown(path)}`;
  const [, service, method] = m as unknown as [string, string, string];
  return knownServices.has(service) ? `unknown method ${shown(method)} for service ${service}` : `unknown service ${shown(service)}`;
}

/** The protocol's answer to a call of a method no handler serves. */
export function unimplementedResponse(kind: RpcKind, message: string): UniversalServerResponse {
  return errorResponse(kind, new ConnectError(message, Code.Unimplemented));
}

/** The protocol's answer to a call refused with `error` before any handler saw it. */
export function errorResponse(kind: RpcKind, error: ConnectError): UniversalServerResponse {
  switch (kind.protocol) {
    case "grpc":
      return {
        status: 200,
        header: new Headers({ "content-type": kind.json ? "application/grpc+json" : "application/grpc+proto" }),
        trailer: setTrailerStatus(new Headers(), error),
      };
    case "grpc-web": {
      const type = kind.text ? GRPC_WEB_TEXT_PROTO : kind.json ? "application/grpc-web+json" : "application/grpc-web+proto";
      // Trailers-only: the status travels in the headers and the body is empty.
      return { status: 200, header: setTrailerStatus(new Headers({ "content-type": type }), error) };
    }
    case "connect": {
      if (!kind.stream) {
        return {
          status: codeToHttpStatus(error.code),
          header: new Headers({ "content-type": "application/json" }),
          body: once(errorToJsonBytes(error, {})),
        };
      }
      const end = createEndStreamSerialization({}).serialize({ metadata: new Headers(), error });
      return {
        status: 200,
        header: new Headers({ "content-type": kind.json ? "application/connect+json" : "application/connect+proto" }),
        body: once(encodeEnvelope(endStreamFlag, end)),
      };
    }
  }
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
