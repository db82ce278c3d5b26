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
import { validationError, type Violation } from "./errors.js";

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

/** A header name (RFC 9110 token) and a value an HTTP parser accepts. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[^\x00-\x08\x0a-\x1f\x7f]*$/;

/**
 * The explained request's method (upper case) and headers (names in lower
 * case), checked as an HTTP parser would have; throws `invalid_argument`
 * listing every problem.
 */
export function readDataRequest(req: DataRequest): { method: string; headers: Record<string, string> } {
  const violations: Violation[] = [];
  const method = req.method.toUpperCase();
  if (!METHODS.has(method)) violations.push({ field: "method", description: "must be GET, HEAD, POST, PUT, PATCH, DELETE or MERGE" });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name)) violations.push({ field: `headers.${name}`, description: "is not a valid header name" });
    else if (!FIELD_VALUE.test(value)) violations.push({ field: `headers.${name}`, description: "must not contain control characters" });
    else if (Object.hasOwn(headers, lower)) violations.push({ field: `headers.${name}`, description: "is given twice (header names are case-insensitive)" });
    // The key explained is the one the call names, never a header's.
    else if (lower !== "authorization") headers[lower] = value.trim();
  }
  if (violations.length > 0) throw validationError(violations);
  return { method, headers };
}
