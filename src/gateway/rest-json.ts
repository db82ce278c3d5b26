/**
 * The REST facade's JSON differs from proto JSON in a few ways REST clients
 * expect: enum values are written without their type prefix and in lower
 * case (`"admin"` for `API_KEY_TYPE_ADMIN`); write-only (`secret`) fields
 * never appear in responses; nested messages leave out empty strings. These
 * walk a message's JSON by its descriptor, each way.
 */
import type { DescEnum, DescField, DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { rulesOf } from "../schema/field-rules.js";

/** The REST name of an enum value (`API_KEY_TYPE_ADMIN` -> `admin`). */
export function restEnumName(value: { readonly localName: string }): string {
  return value.localName.toLowerCase();
}

/** The REST names of an enum's values, without the zero (unspecified) value. */
export function restEnumNames(desc: DescEnum): string[] {
  return desc.values.filter((v) => v.number !== 0).map(restEnumName);
}

type EnumMapper = (desc: DescEnum, value: JsonValue) => JsonValue;

const toRest: EnumMapper = (desc, value) => {
  const v = typeof value === "string" ? desc.values.find((x) => x.name === value) : undefined;
  return v === undefined ? value : restEnumName(v);
};

const fromRest: EnumMapper = (desc, value) => {
  const v = typeof value === "string" ? desc.values.find((x) => x.number !== 0 && restEnumName(x) === value) : undefined;
  // Anything else is left for the proto JSON parser to reject.
  return v === undefined ? value : v.name;
};

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The direction of a conversion. */
interface Direction {
  readonly map: EnumMapper;
  /** Responses: drop secrets, and empty strings of nested messages. */
  readonly outbound: boolean;
}

function convertField(field: DescField, value: JsonValue, dir: Direction): JsonValue {
  switch (field.fieldKind) {
    case "enum":
      return dir.map(field.enum, value);
    case "message":
      return convertMessage(field.message, value, dir, true);
    case "list":
      if (!Array.isArray(value)) return value;
      if (field.listKind === "enum") return value.map((v) => dir.map(field.enum, v));
      if (field.listKind === "message") return value.map((v) => convertMessage(field.message, v, dir, true));
      return value;
    case "map":
      if (!isObject(value) || field.mapKind === "scalar") return value;
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [
          k,
          field.mapKind === "enum" ? dir.map(field.enum, v) : convertMessage(field.message, v, dir, true),
        ]),
      );
    default:
      return value;
  }
}

function convertMessage(desc: DescMessage, value: JsonValue, dir: Direction, nested: boolean): JsonValue {
  // Well-known types (Struct, Timestamp, ...) have JSON forms of their own.
  if (!isObject(value) || desc.typeName.startsWith("google.protobuf.")) return value;
  const out: JsonObject = { ...value };
  for (const field of desc.fields) {
    const v = value[field.name];
    if (v === undefined) continue;
    // Only unset string fields: a JSON value (google.protobuf.Value) of "" is data.
    if (dir.outbound && (rulesOf(field).secret || (nested && v === "" && field.fieldKind === "scalar"))) {
      delete out[field.name];
      continue;
    }
    out[field.name] = convertField(field, v, dir);
  }
  return out;
}

const OUTBOUND: Direction = { map: toRest, outbound: true };
const INBOUND: Direction = { map: fromRest, outbound: false };

/** Proto JSON (proto field names) -> REST JSON. */
export function toRestJson(desc: DescMessage, value: JsonValue): JsonValue {
  return Array.isArray(value)
    ? value.map((v) => convertMessage(desc, v, OUTBOUND, false))
    : convertMessage(desc, value, OUTBOUND, false);
}

/** REST JSON -> proto JSON (proto field names). */
export function fromRestJson(desc: DescMessage, value: JsonValue): JsonValue {
  return convertMessage(desc, value, INBOUND, false);
}
