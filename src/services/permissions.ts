/**
 * The permission model of data API keys: which instance, OData service,
 * entity set and operation a key may reach. Pure: no I/O, no Connect, no
 * Fastify, so the gateway, the services and the tests share one evaluator.
 *
 * A key's permissions are a three-level map, instance -> service -> entity ->
 * operations. Services and entities may be `*` (every one); instances must be
 * named, so that creating an instance later never widens an existing key.
 */
import {
  ENTITY_NAME_PATTERN,
  INSTANCE_NAME_PATTERN,
  MAX_PERMISSION_ENTRIES,
  OPERATIONS,
  SERVICE_NAME_PATTERN,
  WILDCARD,
} from "../schema/permission-names.js";
import type { Violation } from "./errors.js";

export { OPERATIONS };

/** One operation on an entity set. No operation implies another. */
export type Operation = (typeof OPERATIONS)[number];

/** instance name -> service name or "*" -> entity name or "*" -> operations */
export type Permissions = Readonly<
  Record<string, Readonly<Record<string, Readonly<Record<string, readonly Operation[]>>>>>
>;

/** The check that denied a request, from the coarsest to the finest. */
export type DenialStep = "instance" | "service" | "entity" | "operation";

/** The outcome of {@link evaluate}: allowed, or denied with the step and a client-facing message. */
export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly step: DenialStep; readonly message: string };

/** What a data request wants to do, with names exactly as they appear in the request. */
export interface AccessRequest {
  readonly instance: string;
  readonly service: string;
  readonly entity: string;
  readonly operation: Operation;
}

// Shared because every allowed request returns it: the hot path allocates
// nothing when access is granted.
const ALLOWED: Decision = Object.freeze({ allowed: true });

function deny(step: DenialStep, message: string): Decision {
  return { allowed: false, step, message };
}

type Entities = Readonly<Record<string, readonly Operation[]>>;

/** Whether `ops` (absent when the entity entry is missing) grants `operation`. */
function grants(ops: readonly Operation[] | undefined, operation: Operation): boolean {
  return ops !== undefined && ops.includes(operation);
}

/**
 * Decides whether `request` is allowed by `permissions`.
 *
 * Checks run from coarse to fine and the first failing one denies, so the
 * message tells the caller the outermost thing it lacks. Grants are additive:
 * a named entry and a `*` entry at the same level both apply. Lookups use own
 * properties only, so request names such as `__proto__` or `toString` never
 * match inherited members. Called on every data request, so it does only
 * property lookups.
 */
export function evaluate(permissions: Permissions, request: AccessRequest): Decision {
  const { instance, service, entity, operation } = request;

  if (!Object.hasOwn(permissions, instance)) {
    return deny("instance", `API key has no access to instance '${instance}'`);
  }
  const services = permissions[instance];

  const named: Entities | undefined = Object.hasOwn(services, service) ? services[service] : undefined;
  // A request for the service literally named `*` already found the wildcard
  // entry above; looking it up twice would change nothing.
  const wild: Entities | undefined =
    service !== WILDCARD && Object.hasOwn(services, WILDCARD) ? services[WILDCARD] : undefined;
  if (named === undefined && wild === undefined) {
    return deny("service", `API key has no access to service '${service}'`);
  }

  // Up to four (service entry, entity entry) pairs can apply; each is looked
  // up in place rather than collected, to keep the hot path allocation-free.
  // A function or action is granted only by an entry naming it: `*` never invokes.
  const entityIsWild = entity === WILDCARD || operation === "invoke";
  const namedNamed = named !== undefined && Object.hasOwn(named, entity) ? named[entity] : undefined;
  const namedWild =
    named !== undefined && !entityIsWild && Object.hasOwn(named, WILDCARD) ? named[WILDCARD] : undefined;
  const wildNamed = wild !== undefined && Object.hasOwn(wild, entity) ? wild[entity] : undefined;
  const wildWild = wild !== undefined && !entityIsWild && Object.hasOwn(wild, WILDCARD) ? wild[WILDCARD] : undefined;
  if (namedNamed === undefined && namedWild === undefined && wildNamed === undefined && wildWild === undefined) {
    return deny("entity", operation === "invoke" ? `API key has no access to operation '${entity}'` : `API key has no access to entity '${entity}'`);
  }

  if (
    grants(namedNamed, operation) ||
    grants(namedWild, operation) ||
    grants(wildNamed, operation) ||
    grants(wildWild, operation)
  ) {
    return ALLOWED;
  }
  return deny("operation", operation === "invoke" ? `API key lacks permission 'invoke' for operation '${entity}'` : `API key lacks permission '${operation}' for entity '${entity}'`);
}

/** Whether `s` names one of the {@link OPERATIONS} (exact, case-sensitive). */
export function isOperation(s: string): s is Operation {
  return s === "list" || s === "get" || s === "create" || s === "update" || s === "delete" || s === "invoke";
}

/** Most (instance, service, entity) entries one key may hold; bounds the work of every check. */
const MAX_ENTRIES = MAX_PERMISSION_ENTRIES;

// The names' patterns are shared with the OpenAPI document (src/schema/permission-names.ts).
const INSTANCE_NAME = new RegExp(INSTANCE_NAME_PATTERN);
const SERVICE_NAME = new RegExp(SERVICE_NAME_PATTERN);
// An OData identifier, as entity set names are.
const ENTITY_NAME = new RegExp(ENTITY_NAME_PATTERN);

const ROOT = "permissions";

/**
 * A name no key may use although it matches the patterns: REST's JSON parser
 * refuses any body holding a `__proto__` key (prototype poisoning), so a key
 * holding it could be created over gRPC but never edited over REST or in the
 * dashboard. No OData service names an entity set so.
 */
const RESERVED_NAME = "__proto__";
const RESERVED = `'${RESERVED_NAME}' is reserved (JSON parsers refuse it as a key)`;

/**
 * Only plain JSON objects: a decoded Struct never yields anything else, and
 * accepting class instances (Date, Map, …) would let their inherited shape
 * leak into the checks.
 */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Counts (instance, service, entity) entries, stopping as soon as the cap is
 * passed, so that an oversized document costs no more than the cap to reject.
 */
function exceedsEntryCap(root: Record<string, unknown>): boolean {
  let entries = 0;
  for (const instanceKey of Object.keys(root)) {
    const services = root[instanceKey];
    if (!isPlainObject(services)) continue;
    for (const serviceKey of Object.keys(services)) {
      const entities = services[serviceKey];
      if (!isPlainObject(entities)) continue;
      entries += Object.keys(entities).length;
      if (entries > MAX_ENTRIES) return true;
    }
  }
  return false;
}

// Null-prototype objects: a key named `__proto__` (legal for services and
// entities) becomes an ordinary own property and nothing is inherited.
function emptyMap<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

function parseOperations(path: string, value: unknown, out: Violation[]): readonly Operation[] | undefined {
  if (!Array.isArray(value)) {
    out.push({ field: path, description: "must be an array of operations (list, get, create, update, delete, invoke)" });
    return undefined;
  }
  if (value.length === 0) {
    out.push({ field: path, description: "must list at least one operation" });
    return undefined;
  }
  const seen = new Set<Operation>();
  let valid = true;
  for (let i = 0; i < value.length; i++) {
    const element: unknown = value[i];
    if (typeof element === "string" && isOperation(element)) {
      seen.add(element);
    } else {
      out.push({ field: `${path}[${i}]`, description: "must be one of list, get, create, update, delete, invoke" });
      valid = false;
    }
  }
  if (!valid) return undefined;
  // Canonical order, so equal grants compare and display equally.
  return Object.freeze(OPERATIONS.filter((op) => seen.has(op)));
}

function parseEntities(path: string, value: unknown, out: Violation[]): Entities | undefined {
  if (!isPlainObject(value)) {
    out.push({ field: path, description: "must be an object of entity name or '*' -> operations" });
    return undefined;
  }
  const entities = emptyMap<readonly Operation[]>();
  for (const key of Object.keys(value)) {
    const entryPath = `${path}.${key}`;
    if (key !== WILDCARD && !ENTITY_NAME.test(key)) {
      out.push({ field: entryPath, description: "must be an entity set name, an operation's name or '*'" });
      continue;
    }
    if (key === RESERVED_NAME) {
      out.push({ field: entryPath, description: RESERVED });
      continue;
    }
    const ops = parseOperations(entryPath, value[key], out);
    if (ops !== undefined && key === WILDCARD && ops.includes("invoke")) {
      out.push({ field: entryPath, description: "'invoke' must name the operation: '*' never includes functions or actions" });
      continue;
    }
    if (ops !== undefined) entities[key] = ops;
  }
  return Object.freeze(entities);
}

function parseServices(path: string, value: unknown, out: Violation[]): Permissions[string] | undefined {
  if (!isPlainObject(value)) {
    out.push({ field: path, description: "must be an object of service name or '*' -> entities" });
    return undefined;
  }
  const services = emptyMap<Entities>();
  for (const key of Object.keys(value)) {
    const entryPath = `${path}.${key}`;
    if (key !== WILDCARD && !SERVICE_NAME.test(key)) {
      out.push({ field: entryPath, description: "must be a service name or '*'" });
      continue;
    }
    if (key === RESERVED_NAME) {
      out.push({ field: entryPath, description: RESERVED });
      continue;
    }
    const entities = parseEntities(entryPath, value[key], out);
    if (entities !== undefined) services[key] = entities;
  }
  return Object.freeze(services);
}

/**
 * Validates an untrusted permissions document (as decoded from a
 * `google.protobuf.Struct`) and returns a normalized, frozen copy built from
 * null-prototype objects, with each operation list de-duplicated and in
 * {@link OPERATIONS} order; or every violation found, with field paths such
 * as `permissions.prod.API_BP.A_BusinessPartner[2]`.
 *
 * Nothing below an invalid name is checked: the name must change anyway, and
 * repeating an arbitrary untrusted key in the path of every descendant would
 * let a small document produce a large error. A document with more than
 * 10,000 (instance, service, entity) entries is rejected with that single
 * violation before any other check, since the rest was not examined.
 */
export function parsePermissions(
  value: unknown,
): { ok: true; permissions: Permissions } | { ok: false; violations: Violation[] } {
  if (!isPlainObject(value)) {
    return {
      ok: false,
      violations: [
        { field: ROOT, description: "must be an object of instance name -> service -> entity -> operations" },
      ],
    };
  }
  if (exceedsEntryCap(value)) {
    return { ok: false, violations: [{ field: ROOT, description: `has more than ${MAX_ENTRIES} entries` }] };
  }

  const out: Violation[] = [];
  const permissions = emptyMap<Permissions[string]>();
  for (const key of Object.keys(value)) {
    const path = `${ROOT}.${key}`;
    if (key === WILDCARD) {
      out.push({
        field: path,
        description:
          "instances must be named: '*' is not allowed at the instance level, " +
          "so that a key never gains future instances",
      });
      continue;
    }
    if (!INSTANCE_NAME.test(key)) {
      out.push({
        field: path,
        description: "must be an instance name (letters, digits, _ . -, at most 64 characters)",
      });
      continue;
    }
    const services = parseServices(path, value[key], out);
    if (services !== undefined) permissions[key] = services;
  }
  if (out.length > 0) return { ok: false, violations: out };
  return { ok: true, permissions: Object.freeze(permissions) };
}
