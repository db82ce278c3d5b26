/**
 * What the diagnostic RPCs (ApiKeyService.ExplainApiKey,
 * InstanceService.GetServiceCatalog and TestInstanceConnection) share: the
 * diagnostics port the composition root bound (`src/schema/diagnostics.ts`),
 * and the checks of an explained request beyond its field rules.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { DataRequest } from "../gen/erplink/admin/v1/diagnostics_pb.js";
import type { DiagnosticsPort } from "../schema/diagnostics.js";
import type { ApiKeyRecord } from "../store/index.js";
import type { ServiceDeps } from "./context.js";
import { validationError } from "./errors.js";

/** The diagnostics, or `unavailable` when this process serves the services without a gateway. */
export function requireDiagnostics(deps: ServiceDeps): DiagnosticsPort<ApiKeyRecord> {
  const port = deps.diagnostics.port;
  if (port === undefined) {
    throw new ConnectError("diagnostics need the OData gateway, which this process does not run", Code.Unavailable);
  }
  return port;
}

/** Methods of the data path. */
const METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "MERGE"]);

/**
 * The explained request's method (upper case) and headers (names in lower
 * case), once its field rules (method, header names and values) have been
 * checked: a name given more than once, in different cases, is one header
 * whose values are joined with `, ` in the order given, as HTTP combines
 * repeated fields. Throws `invalid_argument` for a method the rules let
 * through but the data path does not take (none, as the rules stand).
 */
export function readDataRequest(req: DataRequest): { method: string; headers: Record<string, string> } {
  const method = req.method.toUpperCase();
  if (!METHODS.has(method)) throw validationError([{ field: "method", description: "must be GET, HEAD, POST, PUT, PATCH, DELETE or MERGE" }]);
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    // The key explained is the one the call names, never a header's.
    if (lower === "authorization") continue;
    headers[lower] = Object.hasOwn(headers, lower) ? `${headers[lower]}, ${value.trim()}` : value.trim();
  }
  return { method, headers: { ...headers } };
}
