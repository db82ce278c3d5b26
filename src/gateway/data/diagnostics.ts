/**
 * The data path's diagnostics, the gateway's side of the services'
 * {@link DiagnosticsPort} (`src/schema/diagnostics.ts`):
 *
 * - **explain**: what the data path would decide for a request of a key,
 *   decided by the data path's own stages over the same shared resources
 *   (`./resources.ts`: the `$metadata` cache, the sessions): the key's
 *   checks, `resolve instance`, `analyze`, `authorize`, the rate limits as
 *   the services looked at them (the `admit` position, nothing counted) and
 *   the forward stage's self-check; nothing is forwarded and no log entry
 *   written. A refusal is the answer (its status, code, message and denial
 *   step, exactly as the data path writes them), not an error.
 * - **catalog**: a service's entity sets, functions and actions from its
 *   cached `$metadata` (operations: `./catalog-operations.ts`).
 * - **testConnection**: `./connection-test.ts`.
 *
 * Everything thrown is a ConnectError, since the services call it.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AccessDecisionSchema,
  CanonicalRequestSchema,
  CatalogEntitySetSchema,
  CatalogNavigationSchema,
  ExplanationSchema,
  ServiceCatalogSchema,
  type AccessDecision,
  type ConnectionTest,
  type Explanation,
  type ServiceCatalog,
} from "../../gen/erplink/admin/v1/diagnostics_pb.js";
import { BadRequestSchema, FieldViolationSchema } from "../../gen/erplink/errors/v1/bad_request_pb.js";
import { BAD_GATEWAY_METADATA, type DiagnosedInstance, type DiagnosticsPort, type ExplainInput } from "../../schema/diagnostics.js";
import { GatewayError, fromConnectError } from "../errors.js";
import type { Position, ServiceModel } from "../odata/metadata.js";
import { overLimit } from "./admit.js";
import { analyze } from "./analyze.js";
import { accessDecision, authorize, conditionsOf, decisionOf } from "./authorize.js";
import { catalogOperation } from "./catalog-operations.js";
import { testConnection } from "./connection-test.js";
import type { Analyzed, Authenticated, ClientRequest, Incoming } from "./exchange.js";
import { upstreamTarget } from "./forward.js";
import type { DataKey, DataPort } from "./ports.js";
import { STEP_NAMES, newFacts, splitTarget } from "./record.js";
import { clientCsrf } from "./client-csrf.js";
import { checkServiceName, resolveInstance } from "./resolve-instance.js";
import type { DataResources } from "./resources.js";
import { ServiceRoot } from "./service-root.js";

/** Options of {@link createDiagnostics}. */
export interface DiagnosticsOptions<K extends DataKey> {
  /** The data path's port into the services (the same one the data routes use). */
  readonly port: DataPort<K>;
  /** The data path's shared resources. */
  readonly resources: DataResources;
  /** `ERPLINK_PUBLIC_URL`, if configured: its path prefixes the client's service root. */
  readonly publicUrl?: string | undefined;
}

/** The diagnostics over the data path's stages and resources. */
export function createDiagnostics<K extends DataKey>(options: DiagnosticsOptions<K>): DiagnosticsPort<K> {
  const publicUrl = options.publicUrl === undefined ? undefined : new URL(options.publicUrl);
  return {
    explain: (input) => explain(input, options, publicUrl),
    catalog: (instance, service) => catalog(instance, service, options.resources),
    testConnection: (instance, service) => connectionTest(instance, service, options.resources),
  };
}

/** An `invalid_argument` error naming the request field at fault. */
function invalid(field: string, description: string): ConnectError {
  return new ConnectError(`${field}: ${description}`, Code.InvalidArgument, undefined, [
    { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: [create(FieldViolationSchema, { field, description })] }) },
  ]);
}

/** Characters a name may keep unencoded in a path segment (the service-name set). */
const PATH_SAFE = /^[A-Za-z0-9_.~!$&'()*+,;=:@-]*$/;

/** A name as a raw path segment. */
function segment(name: string): string {
  return PATH_SAFE.test(name) ? name : encodeURIComponent(name);
}

/**
 * The origin-form target the data path would receive for the explained
 * request, `/odata/<instance>/<service>…`, raw: from any of the URL forms
 * `DataRequest.url` accepts. Throws `invalid_argument` for a URL that names
 * no service or another instance or service than the request's fields.
 */
function originForm(input: ExplainInput<unknown>, publicUrl: URL | undefined): string {
  // A full URL is sent by the client as its path and query.
  let url = input.url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, "");
  const prefix = publicUrl?.pathname.replace(/\/+$/, "") ?? "";
  if (prefix !== "" && url.startsWith(`${prefix}/odata/`)) url = url.slice(prefix.length);
  const root = `/odata/${segment(input.instance)}/`;
  if (url.startsWith("/")) {
    // The router matches the path decoded once: `/%6Fdata/…` reaches the data path as `/odata/…` does.
    const first = url.slice(1).split(/[/?]/)[0]!;
    if (decodeSegment(first) !== "odata" || url[first.length + 1] !== "/") {
      throw invalid("url", "must be /odata/<instance>/<service>/…, <service>/…, or a path relative to the service root when service is set");
    }
    return url;
  }
  if (input.service !== "") return `${root}${segment(input.service)}${url === "" || url.startsWith("?") ? "" : "/"}${url}`;
  return `${root}${url}`;
}

/** Decodes a path segment as the router does; undefined when it is not valid percent-encoding. */
function decodeSegment(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** What the data path answers for a refusal: the envelope's status, code and message. */
function refusalOf(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  // The key's checks (401, 403) and nothing else: a store failure is the call's own error.
  if (err instanceof ConnectError && (err.code === Code.Unauthenticated || err.code === Code.PermissionDenied)) return fromConnectError(err);
  throw err;
}

async function explain<K extends DataKey>(input: ExplainInput<K>, options: DiagnosticsOptions<K>, publicUrl: URL | undefined): Promise<Explanation> {
  const { port, resources } = options;
  const target = originForm(input, publicUrl);
  // The path the router reads: up to the first `?` or `#` (find-my-way's sanitizeUrlPath).
  const routed = /^[^?#]*/.exec(target)![0];
  const segments = routed.split("/");
  const [instanceRaw = "", serviceRaw = ""] = segments.slice(2, 4);
  // The router routes any path with a segment after the instance, an empty one too
  // (`/odata/prod//x`: service ""), which the data path then refuses; only a path
  // that ends at the instance has no route.
  if (segments.length < 4) throw invalid("url", "must name a service: /odata/<instance>/<service>/…");
  const out = create(ExplanationSchema, {
    keyId: input.key.id,
    instance: input.instance,
    service: input.service,
    withinRateLimits: input.withinRateLimits,
  });
  const refuse = (e: GatewayError, step: string): Explanation =>
    Object.assign(out, { allowed: false, status: e.status, code: e.code, message: e.message, denialStep: step });

  // The router decodes that path once; one that is not valid percent-encoding is refused before any stage.
  const instanceName = decodeSegment(instanceRaw);
  const serviceName = decodeSegment(serviceRaw);
  if (decodeSegment(routed) === undefined || instanceName === undefined || serviceName === undefined) {
    return refuse(new GatewayError(400, "the request path is not valid percent-encoding"), "");
  }
  if (instanceName !== input.instance) throw invalid("url", `names instance '${instanceName}', not '${input.instance}'`);
  if (input.service !== "" && serviceName !== input.service) throw invalid("url", `names service '${serviceName}', not '${input.service}'`);
  out.instance = instanceName;
  out.service = serviceName;

  const fact = newFacts(instanceName, serviceName);
  const { rawPath, rawQuery, clientPath } = splitTarget(target, publicUrl);
  const origin = publicUrl?.origin ?? "http://localhost";
  const req: ClientRequest = {
    id: "explain",
    ip: "",
    method: input.method,
    headers: { ...input.headers },
    body: input.body === "" ? undefined : Buffer.from(input.body, "utf8"),
  };
  const incoming: Incoming = {
    req,
    fact,
    instanceName,
    serviceName,
    rawPath,
    rawQuery,
    client: { origin, proto: new URL(origin).protocol.slice(0, -1), host: new URL(origin).host, path: clientPath },
  };
  let analyzed: Analyzed<K> | undefined;
  try {
    // authenticate: the key is named by its id; its checks are the stage's.
    try {
      port.checkKey(input.key);
    } catch (err) {
      fact.denialStep = "KEY_INVALID";
      throw err;
    }
    const authenticated: Authenticated<K> = { ...incoming, key: input.key };
    const resolved = await resolveInstance(authenticated, port);
    // The clients' CSRF stage: a write's token that is not erplink's is refused; a HEAD token fetch is answered
    // by erplink (allowed, counted, nothing analyzed or sent: no canonical request).
    if (clientCsrf(resolved, resources.clientCsrf, { headers: () => undefined })) {
      if (!input.withinRateLimits) throw overLimit(fact);
      out.allowed = true;
      return out;
    }
    analyzed = await analyze(resolved, port, resources.metadata);
    describe(out, analyzed, port);
    const authorized = authorize(analyzed, port);
    // admit: the services looked at the key's windows without counting.
    if (!input.withinRateLimits) throw overLimit(fact);
    upstreamTarget(authorized, port);
    out.allowed = true;
    return out;
  } catch (err) {
    return refuse(refusalOf(err), fact.denialStep);
  }
}

/**
 * Fills in the canonical request and every access's decision; when the
 * analysis stopped at an entity set, only the accesses read before it (the
 * request was not analyzed to the end, so there is no canonical request).
 */
function describe<K extends DataKey>(out: Explanation, a: Analyzed<K>, port: DataPort<K>): void {
  const { request, root } = a;
  if (a.stop === undefined) {
    const { ifMatchStar, preferMinimal } = conditionsOf(a, port);
    const headers: Record<string, string> = { ...request.headers };
    if (ifMatchStar) headers["if-match"] = "*";
    if (preferMinimal) headers.prefer = "return=minimal";
    out.request = create(CanonicalRequestSchema, {
      kind: request.kind,
      method: request.method,
      target: request.forward,
      upstreamUrl: root.urlOf(request.forward),
      headers,
      ifMatchAdded: ifMatchStar,
      batchPartUrls: [...request.partUrls],
    });
  }
  const decide = decisionOf(a, port);
  const batched = request.kind === "batch";
  // What the key is allowed besides (an upsert's create, an update's answer) is authorized as the data path authorizes it.
  const granted = a.stop === undefined ? conditionsOf(a, port).granted : [];
  out.accesses = [...request.accesses, ...granted].map((access): AccessDecision => {
    const decision = accessDecision(decide, access);
    return create(AccessDecisionSchema, {
      entitySet: access.entitySet,
      operation: access.operation,
      reason: access.reason,
      allowed: decision.allowed,
      ...(decision.allowed
        ? {}
        : {
            denialStep: STEP_NAMES[decision.step] ?? "",
            message: batched ? `${decision.message} (batch ${access.reason})` : decision.message,
          }),
    });
  });
}

/** The ConnectError of a failed upstream call: 504 `deadline_exceeded`, otherwise `unavailable` marked as a bad gateway (502). */
function upstreamError(err: unknown): ConnectError {
  if (!(err instanceof GatewayError)) return ConnectError.from(err);
  if (err.status === 504) return new ConnectError(err.message, Code.DeadlineExceeded);
  if (err.status === 400) return invalid("service", err.message);
  return new ConnectError(err.message, Code.Unavailable, new Headers({ [BAD_GATEWAY_METADATA]: "1" }));
}

/** The service's root upstream, its name checked as the data path checks it (`invalid_argument` otherwise). */
function serviceRoot(instance: DiagnosedInstance, service: string): ServiceRoot {
  try {
    checkServiceName(service);
  } catch (err) {
    throw invalid("service", (err as Error).message);
  }
  const root = new ServiceRoot(instance, service);
  if (!root.withinBase) throw invalid("service", "the service's path leaves the instance's base URL");
  return root;
}

async function catalog(instance: DiagnosedInstance, service: string, resources: DataResources): Promise<ServiceCatalog> {
  const root = serviceRoot(instance, service);
  let model: ServiceModel;
  try {
    model = await resources.metadata.model(instance, root, "cannot read the service's catalog");
  } catch (err) {
    throw upstreamError(err);
  }
  const sets = [...model.entitySets.map((name) => [name, false] as const), ...model.singletons.map((name) => [name, true] as const)];
  return create(ServiceCatalogSchema, {
    instanceId: instance.id,
    service,
    odataVersion: model.version,
    entitySets: sets.flatMap(([name, singleton]) => {
      const found = model.root(name);
      if (found === undefined || (found.kind !== "entitySet" && found.kind !== "singleton")) return [];
      const position = found.position;
      return [
        create(CatalogEntitySetSchema, {
          name,
          singleton,
          entityType: position.type,
          keyProperties: [...model.keyOf(position)],
          media: model.hasStream(position),
          navigationProperties: model.navigationPaths(position).map((path) => navigation(model, position, path)),
        }),
      ];
    }),
    functionImports: [...model.functionImports],
    actionImports: [...model.actionImports],
    operations: model.operations.map((operation) => catalogOperation(model, operation)),
  });
}

/** Where a navigation path from an entity set leads (through complex properties and casts). */
function navigation(model: ServiceModel, from: Position, path: readonly string[]) {
  let at = from;
  for (const [i, name] of path.entries()) {
    const step = model.step(at, name);
    if (step.kind === "navigation" && i === path.length - 1) {
      return create(CatalogNavigationSchema, { name: path.join("/"), targetEntitySet: step.target?.entitySet ?? "", collection: step.collection });
    }
    if ((step.kind === "property" || step.kind === "cast") && step.position !== undefined) at = step.position;
    else break;
  }
  return create(CatalogNavigationSchema, { name: path.join("/") });
}

async function connectionTest(instance: DiagnosedInstance, service: string, resources: DataResources): Promise<ConnectionTest> {
  const root = service === "" ? undefined : serviceRoot(instance, service);
  return testConnection(instance, root, { timeoutMs: resources.upstreamTimeoutMs });
}
