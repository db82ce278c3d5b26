/**
 * Whether a literal is a value of an EDM type: the binder's check of key
 * values and function parameters against `$metadata`. A key value must be a
 * literal of its key property's type, in the form the service's protocol
 * writes that type (a string key takes a quoted string, an Int32 key digits,
 * a Guid key a bare GUID in V4 and `guid'…'` in V2, a V2 Int64 digits with an
 * optional `L`); anything else is refused (400), whatever a back end would
 * make of it.
 *
 * Two rules go beyond the form, because back ends read some well-formed
 * values as something else:
 * - a string longer than the property's `MaxLength` is no value of it;
 * - on V2 services a string key may not begin with `aggregation'`: SAP
 *   CAP's V2 adapter reads such a key (`'aggregation''{…}'''`) as an
 *   aggregation key, drops the key and answers the whole set, with a filter
 *   taken from the value. (The typed form `aggregation'…'` is no literal.)
 */
import type { Dialect, Literal } from "../parse/literal.js";
import { describeLiteral } from "../parse/literal.js";
import type { ServiceModel } from "../metadata.js";

const INTEGER_RANGES: Readonly<Record<string, readonly [bigint, bigint]>> = {
  "Edm.Byte": [0n, 255n],
  "Edm.SByte": [-128n, 127n],
  "Edm.Int16": [-32768n, 32767n],
  "Edm.Int32": [-2147483648n, 2147483647n],
  "Edm.Int64": [-9223372036854775808n, 9223372036854775807n],
};

/**
 * Why `literal` is not a value of `type` (a qualified type name, type
 * definitions resolved) on a service of `dialect`, or undefined when it is.
 * `maxLength` is the property's facet, when it has one.
 */
export function literalMismatch(
  literal: Literal,
  type: string,
  dialect: Dialect,
  model: ServiceModel,
  options: { readonly maxLength?: number; readonly key?: boolean } = {},
): string | undefined {
  const got = describeLiteral(literal);
  const expected = (form: string): string => `${type} takes ${form}, not ${got}`;
  if (literal.kind === "null") return options.key ? "a key value cannot be null" : undefined;
  const range = INTEGER_RANGES[type];
  if (range !== undefined) {
    if (literal.kind !== "number" || !literal.integer) return expected("an integer");
    if (literal.suffix !== undefined && !(type === "Edm.Int64" && literal.suffix === "L")) return expected("an integer without a type suffix");
    const value = BigInt(literal.text.replace(/^\+/, ""));
    if (value < range[0] || value > range[1]) return `${literal.text} is out of the range of ${type}`;
    return undefined;
  }
  switch (type) {
    case "Edm.String":
      if (literal.kind !== "string") return expected("a quoted string");
      if (options.key && dialect === "2.0" && /^aggregation'/i.test(literal.value)) {
        return "a key string that begins with aggregation' is read by SAP CAP's V2 adapter as an aggregation of the whole set, not as a key";
      }
      if (options.maxLength !== undefined && [...literal.value].length > options.maxLength) {
        return `the value is longer than the ${options.maxLength} characters ${type} allows here`;
      }
      return undefined;
    case "Edm.Boolean":
      return literal.kind === "boolean" ? undefined : expected("true or false");
    case "Edm.Decimal":
      if (literal.kind !== "number" || literal.exponent || literal.special) return expected("a decimal number");
      return literal.suffix === undefined || literal.suffix === "M" ? undefined : expected("a decimal number (V2: with an optional M)");
    case "Edm.Double":
    case "Edm.Single":
      if (literal.kind !== "number") return expected("a number");
      return literal.suffix === undefined || literal.suffix === "D" || literal.suffix === "F" ? undefined : expected("a number (V2: with an optional d or f)");
    case "Edm.Guid":
      if (literal.kind !== "guid") return expected(dialect === "2.0" ? "guid'…'" : "a GUID");
      return undefined;
    case "Edm.Date":
      return literal.kind === "date" || (dialect === "2.0" && literal.kind === "dateTime") ? undefined : expected(dialect === "2.0" ? "datetime'…'" : "a date (YYYY-MM-DD)");
    case "Edm.DateTimeOffset":
      return literal.kind === "dateTimeOffset" ? undefined : expected(dialect === "2.0" ? "datetimeoffset'…'" : "a date and time with offset");
    case "Edm.DateTime":
      return literal.kind === "dateTime" ? undefined : expected("datetime'…'");
    case "Edm.TimeOfDay":
      return literal.kind === "timeOfDay" ? undefined : expected("a time of day (hh:mm:ss)");
    case "Edm.Time":
      return literal.kind === "time" ? undefined : expected("time'PT…'");
    case "Edm.Duration":
      return literal.kind === "duration" ? undefined : expected("duration'…'");
    case "Edm.Binary":
      return literal.kind === "binary" ? undefined : expected("binary'…'");
  }
  const enumType = model.enumType(type);
  if (enumType !== undefined) {
    if (literal.kind !== "enum") return expected(`${enumType.name}'Member'`);
    if (model.enumType(literal.type)?.name !== enumType.name) return `${literal.type} is not ${enumType.name}`;
    if (literal.members.length > 1 && !enumType.flags) return `${enumType.name} takes one member`;
    for (const m of literal.members) {
      if (!/^-?[0-9]+$/.test(m) && !enumType.members.includes(m)) return `'${m}' is not a member of ${enumType.name}`;
    }
    return undefined;
  }
  if (type.startsWith("Edm.Geography") || type.startsWith("Edm.Geometry")) {
    return literal.kind === "geo" && type.startsWith(literal.prefix === "geography" ? "Edm.Geography" : "Edm.Geometry") ? undefined : expected(`${type.startsWith("Edm.Geography") ? "geography" : "geometry"}'…'`);
  }
  return type === "" ? "the service metadata does not declare the property's type" : `erplink cannot check a literal against ${type}`;
}
