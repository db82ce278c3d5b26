/**
 * A data key's permissions as the dashboard edits them, without the page:
 * the operations (shared with the server, src/schema/permission-names.ts),
 * a toggle that changes one operation and keeps the rest, which entries
 * name functions or actions, and the JSON view's check, which refuses what
 * the server refuses about the shape and the operations (`invoke` only on a
 * named entry), so that no draft is lost to a save.
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
  catalog?: { readonly sets: readonly string[]; readonly operations: readonly { readonly name: string }[] },
): boolean {
  if (name === WILDCARD) return false;
  if (catalog !== undefined) {
    if (catalog.operations.some((o) => o.name === name)) return true;
    if (catalog.sets.includes(name)) return false;
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
