/**
 * The form of a data key's permissions document (instance -> service or `*`
 * -> entity set or `*` -> operations), shared by the services (which parse
 * and enforce it, src/services/permissions.ts) and the gateway (which
 * publishes it as JSON Schema in the OpenAPI document).
 */

/**
 * Every operation a permission can grant, in the order normalized lists use.
 * `invoke` calls a function or action; it is granted only on an entry that
 * names the operation, never on `*`.
 */
export const OPERATIONS = ["list", "get", "create", "update", "delete", "invoke"] as const;

/** Names every service and every entity set at its level. */
export const WILDCARD = "*";

/** An instance name (as instances are named); no wildcard at this level. */
export const INSTANCE_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";
/** A service name. */
export const SERVICE_NAME_PATTERN = "^[A-Za-z0-9_][A-Za-z0-9_.;=-]{0,127}$";
/**
 * An entity set name (an OData identifier), or an operation's: an import's
 * name, or a bound operation's namespace-qualified name (`Sales.Approve`).
 */
export const ENTITY_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]{0,127}(?:\\.[A-Za-z_][A-Za-z0-9_]{0,127}){0,7}$";

/** Most (instance, service, entity) entries one key may hold. */
export const MAX_PERMISSION_ENTRIES = 10_000;

function operationList(ops: readonly string[]): Record<string, unknown> {
  return { type: "array", minItems: 1, items: { type: "string", enum: [...ops] } };
}

/** The JSON Schema of a permissions document (the entry cap is only described). */
export function permissionsJsonSchema(): Record<string, unknown> {
  const wildOr = (pattern: string) => `^\\*$|${pattern}`;
  return {
    type: "object",
    propertyNames: { pattern: INSTANCE_NAME_PATTERN },
    additionalProperties: {
      type: "object",
      propertyNames: { pattern: wildOr(SERVICE_NAME_PATTERN) },
      additionalProperties: {
        type: "object",
        propertyNames: { pattern: wildOr(ENTITY_NAME_PATTERN) },
        // `*` names every entity set and no operation, so it never holds `invoke`.
        properties: { [WILDCARD]: operationList(OPERATIONS.filter((op) => op !== "invoke")) },
        additionalProperties: operationList(OPERATIONS),
      },
    },
  };
}
