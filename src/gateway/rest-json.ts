/**
 * The REST facade's JSON differs from proto JSON in one way: enum values are
 * written without their type prefix and in lower case (`"admin"` for
 * `API_KEY_TYPE_ADMIN`), as REST clients expect. These walk a message's JSON
 * by its descriptor and convert enum values each way.
 */
import type { DescEnum, DescField, DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";

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

function convertField(field: DescField, value: JsonValue, map: EnumMapper): JsonValue {
  switch (field.fieldKind) {
    case "enum":
      return map(field.enum, value);
    case "message":
      return convertMessage(field.message, value, map);
    case "list":
      if (!Array.isArray(value)) return value;
      if (field.listKind === "enum") return value.map((v) => map(field.enum, v));
      if (field.listKind === "message") return value.map((v) => convertMessage(field.message, v, map));
      return value;
    case "map":
      if (!isObject(value) || field.mapKind === "scalar") return value;
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [
          k,
          field.mapKind === "enum" ? map(field.enum, v) : convertMessage(field.message, v, map),
        ]),
      );
    default:
      return value;
  }
}

function convertMessage(desc: DescMessage, value: JsonValue, map: EnumMapper): JsonValue {
  // Well-known types (Struct, Timestamp, ...) have JSON forms of their own.
  if (!isObject(value) || desc.typeName.startsWith("google.protobuf.")) return value;
  const out: JsonObject = { ...value };
  for (const field of desc.fields) {
    const v = value[field.name];
    if (v !== undefined) out[field.name] = convertField(field, v, map);
  }
  return out;
}

/** Proto JSON (proto field names) -> REST JSON. */
export function toRestJson(desc: DescMessage, value: JsonValue): JsonValue {
  return Array.isArray(value) ? value.map((v) => convertMessage(desc, v, toRest)) : convertMessage(desc, value, toRest);
}

/** REST JSON -> proto JSON (proto field names). */
export function fromRestJson(desc: DescMessage, value: JsonValue): JsonValue {
  return convertMessage(desc, value, fromRest);
}
