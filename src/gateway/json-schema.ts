/**
 * JSON Schema (2020-12, as OpenAPI 3.1 uses it) for protobuf messages in
 * their proto-JSON form with proto field names, derived from the descriptors,
 * the `(erplink.options.v1.field)` rules and the proto comments.
 *
 * Two uses: the OpenAPI document (`constraints: true`: every rule, comments
 * as descriptions) and the shape check of request bodies (`constraints:
 * false`: types and unknown fields only, so that the services, which enforce
 * the rules for every protocol, give the same messages to REST and gRPC
 * callers).
 */
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { docs } from "../gen/docs.js";
import { rulesOf } from "../schema/field-rules.js";
import { restEnumNames } from "./rest-json.js";

/** A JSON Schema object. */
export type JsonSchema = { [key: string]: unknown };

/** What the schema describes. */
export type SchemaMode =
  /** A resource as the server returns it. */
  | "output"
  /** A request body that creates a resource: writable fields, required ones required. */
  | "create"
  /** A request body that changes a resource: writable fields, at least one. */
  | "patch";

/** Options of {@link messageSchema}. */
export interface SchemaOptions {
  readonly mode: SchemaMode;
  /** Include every rule and description (OpenAPI), or types only (body check). */
  readonly constraints: boolean;
}

const WELL_KNOWN: Readonly<Record<string, JsonSchema>> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.FieldMask": { type: "string" },
  "google.protobuf.Struct": { type: "object" },
  // Any JSON value, null included.
  "google.protobuf.Value": {},
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$" },
};

function scalarSchema(type: ScalarType): JsonSchema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    default:
      // 64-bit integers are strings in proto JSON.
      return { type: "string", format: "int64" };
  }
}

function fieldSchema(field: DescField, options: SchemaOptions): JsonSchema {
  const rules = rulesOf(field);
  let schema: JsonSchema;
  switch (field.fieldKind) {
    case "scalar":
      schema = scalarSchema(field.scalar);
      if (options.constraints && field.scalar === ScalarType.STRING) {
        if (rules.minLen > 0) schema.minLength = rules.minLen;
        if (rules.maxLen > 0) schema.maxLength = rules.maxLen;
        // The services check a pattern on non-empty values only: "" (unset) must validate too.
        if (rules.pattern !== "") schema.pattern = rules.minLen > 0 || rules.required ? rules.pattern : `^$|${rules.pattern}`;
        if (rules.httpUrl) schema.format = "uri";
      }
      break;
    case "enum":
      schema = { type: "string", enum: restEnumNames(field.enum) };
      break;
    case "message":
      schema = messageSchema(field.message, { ...options, mode: "output" });
      break;
    case "list":
      schema = {
        type: "array",
        items:
          field.listKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.listKind === "enum"
              ? { type: "string", enum: restEnumNames(field.enum) }
              : messageSchema(field.message, { ...options, mode: "output" }),
      };
      break;
    case "map": {
      const value =
        field.mapKind === "scalar"
          ? scalarSchema(field.scalar)
          : field.mapKind === "enum"
            ? { type: "string", enum: restEnumNames(field.enum) }
            : messageSchema(field.message, { ...options, mode: "output" });
      if (options.constraints && rules.valueMaxLen > 0) value.maxLength = rules.valueMaxLen;
      schema = { type: "object", additionalProperties: value };
      if (options.constraints) {
        if (rules.maxPairs > 0) schema.maxProperties = rules.maxPairs;
        if (rules.keyPattern !== "") schema.propertyNames = { pattern: rules.keyPattern };
      }
      break;
    }
  }
  if (options.constraints) {
    const description = docs[`${field.parent.typeName}.${field.name}`];
    if (description) schema.description = description;
    if (rules.outputOnly) schema.readOnly = true;
    if (rules.secret) schema.writeOnly = true;
  }
  return schema;
}

/** The JSON Schema of a message. */
export function messageSchema(desc: DescMessage, options: SchemaOptions): JsonSchema {
  const wkt = WELL_KNOWN[desc.typeName];
  if (wkt) return { ...wkt };
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of desc.fields) {
    const rules = rulesOf(field);
    // Output-only (and, in patches, immutable) fields stay in input schemas
    // when only types are checked, so that the service can say why they are
    // refused rather than "unknown field".
    if (options.constraints && options.mode !== "output" && rules.outputOnly) continue;
    if (options.constraints && options.mode === "patch" && rules.immutable) continue;
    const schema = fieldSchema(field, options);
    // In a patch, null clears an optional field (as proto JSON reads it).
    if (options.mode === "patch" && !rules.required && typeof schema.type === "string") {
      schema.type = [schema.type, "null"];
    }
    properties[field.name] = schema;
    if (options.constraints && rules.required && options.mode !== "patch") required.push(field.name);
  }
  const schema: JsonSchema = { type: "object", properties, additionalProperties: false };
  if (required.length > 0) schema.required = required;
  if (options.mode === "patch") schema.minProperties = 1;
  if (options.constraints) {
    const description = docs[desc.typeName];
    if (description) schema.description = description;
  }
  return schema;
}
