/**
 * A call's Node request as Connect's universal request, for both ways a call
 * is served (the Fastify route, src/gateway/rpc/plugin.ts, and the h2c
 * shortcut, src/gateway/rpc/direct.ts).
 *
 * connect-node builds the request's URL from its authority (`:authority`,
 * else `Host`) and throws when there is none or it makes no URL (`x:99999`,
 * `[`, `a%zz`, empty). That is the client's mistake, and it is refused as
 * one: `invalid_argument` in the protocol's own answer, never a handler
 * failure logged as ours, an empty 200 or a stream left open.
 */
import type http from "node:http";
import type http2 from "node:http2";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import { universalRequestFromNodeRequest } from "@connectrpc/connect-node";

/** Why a call with an authority that makes no URL is refused. */
export const BAD_AUTHORITY_MESSAGE = "the request's authority (:authority or Host) is missing or not a valid host";

/**
 * The universal request of a call (connect-node's), or the refusal
 * (`invalid_argument`) of a call whose authority makes no URL. Anything
 * else connect-node throws is thrown.
 */
export function universalRequestOf(
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
  contextValues: ContextValues | undefined,
): UniversalServerRequest | ConnectError {
  try {
    return universalRequestFromNodeRequest(req, res, undefined, contextValues);
  } catch (err) {
    // Checked only after a failure: the hot path parses the URL once, in connect-node.
    if (makesUrl(req)) throw err;
    return new ConnectError(BAD_AUTHORITY_MESSAGE, Code.InvalidArgument);
  }
}

/** Whether connect-node can make a request's URL (as it does: `new URL(url, scheme://authority)`). */
function makesUrl(req: http.IncomingMessage | http2.Http2ServerRequest): boolean {
  const authority = "authority" in req ? req.authority : req.headers.host;
  return authority !== undefined && URL.canParse(req.url ?? "", `http://${authority}`);
}
