/**
 * Stage 2, resolve instance: the instance step of the permission model
 * before the lookup (403 if the key does not name the instance, else 404 if
 * it does not exist, so a key never learns of instances it cannot see), then
 * the service step; the service name must be a plain path segment. Yields
 * the instance (cached by the services) and the service's root upstream.
 */
import { GatewayError } from "../errors.js";
import { extend, type Authenticated, type Resolved } from "./exchange.js";
import type { DataInstance, DataKey, DataPort } from "./ports.js";
import { STEP_NAMES } from "./record.js";
import { ServiceRoot } from "./service-root.js";

/**
 * A service name as it may appear in the back end's URL: RFC 3986 path
 * segment characters, no `%` (it is already decoded), `/`, `?` or `#`.
 */
const SERVICE_NAME = /^[A-Za-z0-9_.~!$&'()*+,;=:@-]{1,200}$/;

/** Refuses (400) a service name that cannot be a path segment of the back end's URL. */
export function checkServiceName(name: string): void {
  if (!SERVICE_NAME.test(name)) {
    throw new GatewayError(400, "the service name may only contain letters, digits and the characters _ . ~ ! $ & ' ( ) * + , ; = : @ -");
  }
  // A dot segment would leave the instance's base URL (with its credentials).
  if (name === "." || name === "..") throw new GatewayError(400, "the service name may not be '.' or '..'");
}

export async function resolveInstance<K extends DataKey>(a: Authenticated<K>, port: DataPort<K>): Promise<Resolved<K>> {
  checkServiceName(a.serviceName);
  const seen = port.serviceDecision(a.key, a.instanceName, a.serviceName);
  if (!seen.allowed && seen.step === "instance") {
    a.fact.denialStep = "INSTANCE";
    throw new GatewayError(403, seen.message);
  }
  const instance = await port.instance(a.instanceName);
  if (instance === undefined) throw new GatewayError(404, `instance '${a.instanceName}' not found`);
  if (!seen.allowed) {
    a.fact.denialStep = STEP_NAMES[seen.step] ?? "";
    throw new GatewayError(403, seen.message);
  }
  const root = serviceRootOf(instance, a.serviceName);
  if (!root.withinBase) throw new GatewayError(400, "the service's path leaves the instance's base URL");
  return extend(a, { instance, root });
}

/** Most service roots kept per instance object. */
const MAX_ROOTS_PER_INSTANCE = 256;
/**
 * Service roots by instance object and service name: a root is a function of
 * the instance's base URL, service paths and SAP client, which an instance
 * object never changes (an edited instance is a new object), so it is built
 * (and its URLs parsed) once rather than per request. Bounded per instance;
 * dropped with the instance object.
 */
const roots = new WeakMap<object, Map<string, ServiceRoot>>();

function serviceRootOf(instance: Pick<DataInstance, "baseUrl" | "servicePath" | "sapClient">, service: string): ServiceRoot {
  let byService = roots.get(instance);
  if (byService === undefined) roots.set(instance, (byService = new Map()));
  let root = byService.get(service);
  if (root === undefined) {
    if (byService.size >= MAX_ROOTS_PER_INSTANCE) byService.clear();
    root = new ServiceRoot(instance, service);
    byService.set(service, root);
  }
  return root;
}
