/**
 * A data key's permissions as the dashboard edits them, without the page:
 * the operations (shared with the server, src/schema/permission-names.ts),
 * a toggle that changes one operation and keeps the rest, which entries
 * name functions or actions, and the JSON view's check, which refuses what
 * the server refuses about the shape and the operations (`invoke` only on a
 * named entry), so that no draft is lost to a save.
 *
 * Changes share structure: a change returns new objects only along the path
 * it changes (the permissions, the instance, the service) and keeps every
 * other instance, service and entry as the same object, so that a key with
 * 10,000 entries is changed, compared and re-rendered by what changed.
 */
import { OPERATIONS, WILDCARD } from "../schema/permission-names.js";

export { OPERATIONS, WILDCARD };

/** Every operation a permission can grant, in the order the server keeps them. */
export type Operation = (typeof OPERATIONS)[number];

/** The operations on an entity set (or `*`), the toggles of an entity set's row. */
export const SET_OPERATIONS = ["list", "get", "create", "update", "delete"] as const satisfies readonly Operation[];

/** Calls a function or action: granted only on an entry that names it, never on `*`. */
export const INVOKE = "invoke" satisfies Operation;

/** instance name → service name or `*` → entity set or operation name, or `*` → operations. */
export type Permissions = Record<string, Record<string, Record<string, string[]>>>;

/**
 * `ops` with `op` turned on or off and nothing else changed: the operations
 * in the server's order, then anything else the entry held, as it was.
 */
export function toggled(ops: readonly string[], op: string, on: boolean): string[] {
  const next = new Set(ops.filter((o) => o !== op));
  if (on) next.add(op);
  const known = (OPERATIONS as readonly string[]).filter((o) => next.has(o));
  return [...known, ...[...next].filter((o) => !known.includes(o))];
}

/**
 * Whether an entry of a service names a function or action rather than an
 * entity set: the service's catalog says so when it has the name; else a
 * qualified name (entity set names have no dots), or an entry that grants
 * `invoke` and nothing an entity set uses.
 */
export function isOperationEntry(
  name: string,
  ops: readonly string[],
  catalog?: {
    readonly sets: readonly string[] | ReadonlySet<string>;
    readonly operations: readonly { readonly name: string }[] | ReadonlyMap<string, unknown>;
  },
): boolean {
  if (name === WILDCARD) return false;
  if (catalog !== undefined) {
    const { sets, operations } = catalog;
    if (operations instanceof Map ? operations.has(name) : (operations as readonly { readonly name: string }[]).some((o) => o.name === name)) return true;
    if (sets instanceof Set ? sets.has(name) : (sets as readonly string[]).includes(name)) return false;
  }
  return name.includes(".") || (ops.includes(INVOKE) && !ops.some((o) => (SET_OPERATIONS as readonly string[]).includes(o)));
}

/** Reads the JSON view: the permissions, or why not (the first problem, with its place). */
export function parsePermissions(text: string): Permissions | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `Not valid JSON: ${(err as Error).message}`;
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(value)) return "The permissions must be an object: instance → service → entity set → operations.";
  for (const [i, services] of Object.entries(value)) {
    if (!isObject(services)) return `${i}: must be an object of services`;
    for (const [s, sets] of Object.entries(services)) {
      if (!isObject(sets)) return `${i}.${s}: must be an object of entity sets and operations`;
      for (const [e, ops] of Object.entries(sets)) {
        if (!Array.isArray(ops)) return `${i}.${s}.${e}: must be a list of operations`;
        for (const op of ops) {
          if (!(OPERATIONS as readonly unknown[]).includes(op)) return `${i}.${s}.${e}: unknown operation ${JSON.stringify(op)} (use ${OPERATIONS.join(", ")})`;
        }
        // As the server checks it: a function or action is granted by name only.
        if (e === WILDCARD && ops.includes(INVOKE)) return `${i}.${s}.*: 'invoke' must name the operation: '*' never includes functions or actions`;
      }
    }
  }
  return value as Permissions;
}

/**
 * `p` with entries of one service set (`string[]`) or removed (`undefined`),
 * by name; the service is created when missing. Only the permissions, that
 * instance and that service are new objects; an entry keeps its place.
 */
export function withEntries(p: Permissions, inst: string, service: string, changes: ReadonlyMap<string, readonly string[] | undefined>): Permissions {
  const services = p[inst] ?? {};
  const sets: Record<string, string[]> = { ...(services[service] ?? {}) };
  for (const [name, ops] of changes) {
    if (ops === undefined) delete sets[name];
    else sets[name] = [...ops];
  }
  return { ...p, [inst]: { ...services, [service]: sets } };
}

/** `p` with one entry set to `ops`, or removed (`undefined`). */
export function withEntry(p: Permissions, inst: string, service: string, name: string, ops: readonly string[] | undefined): Permissions {
  return withEntries(p, inst, service, new Map([[name, ops]]));
}

/** `p` with an instance's services replaced, created (`{}` when absent) or removed (`undefined`). */
export function withInstance(p: Permissions, inst: string, services: Permissions[string] | undefined): Permissions {
  const next = { ...p };
  if (services === undefined) delete next[inst];
  else next[inst] = services;
  return next;
}

/** `p` with a service of an instance replaced, created or removed (`undefined`). */
export function withService(p: Permissions, inst: string, service: string, sets: Permissions[string][string] | undefined): Permissions {
  const services = { ...(p[inst] ?? {}) };
  if (sets === undefined) delete services[service];
  else services[service] = sets;
  return { ...p, [inst]: services };
}

/**
 * `op` turned on or off for each of `names` (entries of one service), each
 * as {@link toggled} does; entries that already have it as asked are kept
 * as they are. The bulk change of a matrix row or column.
 */
export function withOperation(p: Permissions, inst: string, service: string, names: readonly string[], ops: readonly string[], on: boolean): Permissions {
  const sets = p[inst]?.[service] ?? {};
  const changes = new Map<string, string[]>();
  for (const name of names) {
    const before = sets[name] ?? [];
    let next = before;
    for (const op of ops) if (next.includes(op) !== on) next = toggled(next, op, on);
    if (next !== before) changes.set(name, next);
  }
  return changes.size === 0 ? p : withEntries(p, inst, service, changes);
}

/** How many entries (entity sets, `*` and operations) the permissions hold over all instances and services. */
export function entryCount(p: Permissions): number {
  let n = 0;
  for (const services of Object.values(p)) for (const sets of Object.values(services)) n += Object.keys(sets).length;
  return n;
}

/**
 * The JSON view's text: indented by level, each entry's operations on its
 * own line (`"Customers": ["list", "get"]`), so that 10,000 entries are
 * 10,000 lines, not 70,000. It parses to `p` exactly.
 */
export function formatPermissions(p: Permissions): string {
  const q = JSON.stringify;
  const block = (entries: string[], indent: string) => (entries.length === 0 ? "{}" : `{\n${entries.join(",\n")}\n${indent}}`);
  return block(
    Object.entries(p).map(([inst, services]) =>
      `  ${q(inst)}: ${block(
        Object.entries(services).map(([service, sets]) =>
          `    ${q(service)}: ${block(
            Object.entries(sets).map(([name, ops]) => `      ${q(name)}: [${ops.map((o) => q(o)).join(", ")}]`),
            "    ",
          )}`,
        ),
        "  ",
      )}`,
    ),
    "",
  );
}

/**
 * Whether two JSON-like values are equal, parts that are the same object
 * taken as equal without a look inside: drafts share every part a change
 * did not touch, so comparing a draft with the saved version costs the
 * changed path, not the whole tree (10,000 entity sets) on every keystroke.
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((v, i) => sameValue(v, other[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  return keys.every((k) => Object.hasOwn(y, k) && sameValue(x[k], y[k]));
}
