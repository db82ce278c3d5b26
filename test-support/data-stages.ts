/**
 * The data path's own stages (resolve instance, analyze, authorize) run in
 * process over a described request, as the diagnostics run them, with a
 * given `$metadata` model and a key's permissions: no Fastify, no store, no
 * back end. For differential tests of what the stages decide, where a real
 * gateway would cost a process and an upstream per model.
 */
import { GatewayError } from "../src/gateway/errors.js";
import { analyze } from "../src/gateway/data/analyze.js";
import { authorize } from "../src/gateway/data/authorize.js";
import type { Incoming } from "../src/gateway/data/exchange.js";
import type { MetadataCache } from "../src/gateway/data/metadata-cache.js";
import type { DataInstance, DataPort } from "../src/gateway/data/ports.js";
import { newFacts, splitTarget } from "../src/gateway/data/record.js";
import { resolveInstance } from "../src/gateway/data/resolve-instance.js";
import type { ServiceModel } from "../src/gateway/odata/metadata.js";
import { evaluate, type Permissions } from "../src/services/permissions.js";

/** A key as the stages see it. */
export interface StageKey {
  readonly id: string;
  readonly permissions: Permissions;
}

/** A data request: method, origin-form target `/odata/<instance>/<service>/…` (raw), headers, body. */
export interface StageRequest {
  readonly method: string;
  readonly target: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Buffer | undefined;
}

/** What the stages decided, and what the request log would say was authorized. */
export type StageAnswer =
  | { readonly allowed: true; readonly method: string; readonly forward: string; readonly accesses: readonly string[] }
  | {
      readonly allowed: false;
      readonly status: number;
      readonly code: string;
      readonly message: string;
      readonly denialStep: string;
      readonly accesses: readonly string[];
    };

/** The port of the services as far as the stages ask it (the same evaluation as src/services/data-plane.ts). */
function portOf(instances: ReadonlyMap<string, DataInstance>): DataPort<StageKey> {
  return {
    authenticate: () => Promise.reject(new Error("not used")),
    checkKey: () => undefined,
    instance: async (name) => instances.get(name),
    serviceDecision: (key, instance, service) => {
      const d = evaluate(key.permissions, { instance, service, entity: "*", operation: "list" });
      return d.allowed || d.step === "entity" || d.step === "operation" ? { allowed: true } : d;
    },
    decide: (key, access) => evaluate(key.permissions, access),
    admit: () => Promise.reject(new Error("not used")),
  };
}

/** An instance on a back end that is never reached. */
export function stageInstance(sapClient?: string): DataInstance {
  return {
    id: "ins_test",
    baseUrl: "http://backend.invalid/odata",
    servicePath: (service) => service,
    credentials: { type: "none" },
    sapClient,
  };
}

/**
 * Runs resolve instance, analyze and authorize over `request` for `key`,
 * with `model` as every service's `$metadata` and `instances` by name.
 * Returns undefined when the target is not a data path the router would
 * route (no service segment, or not valid percent-encoding there).
 */
export async function decide(
  request: StageRequest,
  key: StageKey,
  model: ServiceModel,
  instances: ReadonlyMap<string, DataInstance>,
): Promise<StageAnswer | undefined> {
  const q = request.target.indexOf("?");
  const segments = (q < 0 ? request.target : request.target.slice(0, q)).split("/");
  if (segments[1] !== "odata" || segments.length < 4 || segments[3] === "") return undefined;
  let instanceName: string;
  let serviceName: string;
  try {
    instanceName = decodeURIComponent(segments[2]!);
    serviceName = decodeURIComponent(segments[3]!);
  } catch {
    return undefined;
  }
  const fact = newFacts(instanceName, serviceName);
  const { rawPath, rawQuery, clientPath } = splitTarget(request.target);
  const headers: Record<string, string> = {};
  for (const [n, v] of Object.entries(request.headers ?? {})) headers[n.toLowerCase()] = v;
  if (request.body !== undefined && request.body.length > 0) headers["content-length"] = String(request.body.length);
  const incoming: Incoming = {
    req: { id: "stage", ip: "", method: request.method, headers, body: request.body },
    fact,
    instanceName,
    serviceName,
    rawPath,
    rawQuery,
    client: { origin: "http://localhost", proto: "http", host: "localhost", path: clientPath },
  };
  const port = portOf(instances);
  const metadata = { model: async () => model } as unknown as MetadataCache;
  const accesses = () => fact.accesses.map((a) => `${a.operation} ${a.entity}`);
  try {
    const resolved = await resolveInstance({ ...incoming, key }, port);
    const analyzed = await analyze(resolved, port, metadata);
    const authorized = authorize(analyzed, port);
    return { allowed: true, method: authorized.request.method, forward: authorized.request.forward, accesses: authorized.request.accesses.map((a) => `${a.operation} ${a.entitySet}`) };
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return { allowed: false, status: err.status, code: err.code, message: err.message, denialStep: fact.denialStep, accesses: accesses() };
  }
}
