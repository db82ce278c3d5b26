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
import { ETAG_FIELD } from "../schema/etag.js";
import { HTTP_URL_PATTERN } from "../schema/http-url.js";
import { permissionsJsonSchema } from "../schema/permission-names.js";
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

/**
 * The shape of JSON fields (google.protobuf.Struct) whose contents the
 * services check, by the field's full name (with `constraints` only).
 */
const JSON_SHAPES: Readonly<Record<string, () => JsonSchema>> = {
  "erplink.admin.v1.ApiKey.permissions": permissionsJsonSchema,
  "erplink.admin.v1.ExplainApiKeyRequest.permissions": permissionsJsonSchema,
};

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

function isInteger(type: ScalarType): boolean {
  return scalarSchema(type).type === "integer";
}

/**
 * The options of a message nested in another: as the outer one in output,
 * and in a request body as a create, since a nested message given in a
 * patch replaces the whole value.
 */
function nested(options: SchemaOptions): SchemaOptions {
  return { ...options, mode: options.mode === "output" ? "output" : "create" };
}

function fieldSchema(field: DescField, options: SchemaOptions): JsonSchema {
  if (options.constraints && options.mode === "patch" && field.name === ETAG_FIELD) {
    return {
      type: "string",
      description:
        "The etag of the resource as you read it: the change is made only if it still has this etag (else 412 and nothing changes), as with `If-Match`. Not a field to change.",
    };
  }
  const rules = rulesOf(field);
  let schema: JsonSchema;
  switch (field.fieldKind) {
    case "scalar":
      schema = scalarSchema(field.scalar);
      if (options.constraints && field.scalar === ScalarType.STRING) {
        // Required: set to a non-empty value.
        if (rules.minLen > 0 || rules.required) schema.minLength = Math.max(1, rules.minLen);
        if (rules.maxLen > 0) schema.maxLength = rules.maxLen;
        // The services check a pattern on non-empty values only: "" (unset) must validate too.
        const pattern = rules.httpUrl ? HTTP_URL_PATTERN : rules.pattern;
        if (pattern !== "") schema.pattern = rules.minLen > 0 || rules.required ? pattern : `^$|${pattern}`;
        if (rules.httpUrl) schema.format = "uri";
      }
      if (options.constraints && isInteger(field.scalar)) {
        if (rules.positive) schema.minimum = 1;
        if (rules.maxValue > 0) schema.maximum = rules.maxValue;
      }
      break;
    case "enum":
      schema = { type: "string", enum: restEnumNames(field.enum) };
      break;
    case "message": {
      const shape = options.constraints ? JSON_SHAPES[`${field.parent.typeName}.${field.name}`] : undefined;
      schema = shape !== undefined ? shape() : messageSchema(field.message, nested(options));
      break;
    }
    case "list":
      schema = {
        type: "array",
        items:
          field.listKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.listKind === "enum"
              ? { type: "string", enum: restEnumNames(field.enum) }
              : messageSchema(field.message, nested(options)),
      };
      if (options.constraints && rules.maxItems > 0) schema.maxItems = rules.maxItems;
      break;
    case "map": {
      const value =
        field.mapKind === "scalar"
          ? scalarSchema(field.scalar)
          : field.mapKind === "enum"
            ? { type: "string", enum: restEnumNames(field.enum) }
            : messageSchema(field.message, nested(options));
      if (options.constraints && rules.valueMaxLen > 0) value.maxLength = rules.valueMaxLen;
      if (options.constraints && rules.valuePattern !== "") value.pattern = rules.valuePattern;
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
    // An etag is written back only as the condition of a change.
    const condition = options.mode === "patch" && field.name === ETAG_FIELD;
    if (options.constraints && options.mode !== "output" && rules.outputOnly && !condition) continue;
    if (options.constraints && options.mode === "patch" && rules.immutable) continue;
    const schema = fieldSchema(field, options);
    // In a patch, null clears an optional field (as proto JSON reads it).
    if (options.mode === "patch" && !rules.required && typeof schema.type === "string") {
      schema.type = [schema.type, "null"];
    } else if (options.mode === "patch" && !rules.required && Array.isArray(schema.oneOf)) {
      // A message of variants (BackendAuth): one more alternative.
      schema.oneOf = [...(schema.oneOf as JsonSchema[]), { type: "null" }];
    }
    properties[field.name] = schema;
    if (options.constraints && rules.required && options.mode !== "patch") required.push(field.name);
  }
  const schema: JsonSchema = { type: "object", properties, additionalProperties: false };
  if (required.length > 0) schema.required = required;
  if (options.mode === "patch") {
    schema.minProperties = 1;
    // The etag is the change's condition, not a field it changes: a patch of nothing else changes nothing.
    if ("etag" in properties) schema.not = { required: ["etag"], maxProperties: 1 };
  }
  if (options.constraints) {
    const description = docs[desc.typeName];
    if (description) schema.description = description;
  }
  if (options.constraints && options.mode !== "output") return withVariants(desc, schema);
  return schema;
}

/** How a REST route's JSON body maps to its RPC's request (the route table's `body`). */
export interface BodyMapping {
  readonly schema: DescMessage;
  readonly patch?: string | undefined;
  readonly extras?: readonly string[] | undefined;
}

/**
 * The JSON Schema of a REST request body: the message `body.schema` (a
 * create, or a patch with `body.patch`), and beside its fields the
 * `body.extras`, fields of the RPC's request message `input` read from the
 * same object (each schema'd as a field of `input`, its rules and
 * description included with `constraints`).
 */
export function bodySchema(input: DescMessage, body: BodyMapping, constraints: boolean): JsonSchema {
  const schema = messageSchema(body.schema, { mode: body.patch ? "patch" : "create", constraints });
  const extras = body.extras ?? [];
  if (extras.length === 0) return schema;
  const properties: Record<string, JsonSchema> = {};
  for (const name of extras) {
    const field = input.fields.find((f) => f.name === name);
    if (field === undefined) throw new Error(`${input.typeName} has no field ${name}`);
    if (body.schema.fields.some((f) => f.name === name)) throw new Error(`body extra ${name} is already a field of the body message ${body.schema.typeName}`);
    properties[name] = fieldSchema(field, { mode: "create", constraints });
  }
  const widen = (s: JsonSchema): JsonSchema => ({ ...s, properties: { ...(s.properties as Record<string, JsonSchema>), ...properties } });
  // A message of variants: every alternative takes the extras.
  return Array.isArray(schema.oneOf) ? { ...schema, oneOf: (schema.oneOf as JsonSchema[]).map(widen) } : widen(schema);
}

/**
 * A message whose `type` enum says which of its other fields apply (the
 * `required_for` / `optional_for` rules), as it is written: one alternative
 * per type, with that type's required fields required, the fields it does
 * not use empty, and the others optional.
 */
function withVariants(desc: DescMessage, schema: JsonSchema): JsonSchema {
  const typeField = desc.fields.find((f) => f.name === "type");
  const governed = desc.fields.filter((f) => rulesOf(f).requiredFor.length > 0 || rulesOf(f).optionalFor.length > 0);
  const properties = schema.properties as Record<string, JsonSchema>;
  // A patch cannot change the type (immutable): nothing to tell apart.
  if (typeField?.fieldKind !== "enum" || governed.length === 0 || properties.type === undefined) return schema;
  const variant = (name: string, typeGiven: boolean): JsonSchema => {
    const own: Record<string, JsonSchema> = { ...properties };
    const required: string[] = [...((schema.required as string[] | undefined) ?? [])];
    if (typeGiven) {
      own.type = { ...properties.type, enum: [name] };
      if (!required.includes("type")) required.push("type");
    } else {
      delete own.type;
    }
    for (const field of governed) {
      const rules = rulesOf(field);
      if (rules.requiredFor.includes(name)) {
        required.push(field.name);
        own[field.name] = { ...own[field.name], minLength: Math.max(1, rules.minLen) };
        // Required: the pattern no longer needs to admit "".
        if (rules.httpUrl) own[field.name]!.pattern = HTTP_URL_PATTERN;
      } else if (!rules.optionalFor.includes(name)) {
        own[field.name] =
          field.fieldKind === "scalar"
            ? { type: "string", maxLength: 0, description: `Not used with type \`${name}\`: empty or absent.` }
            : { type: "object", maxProperties: 0, description: `Not used with type \`${name}\`: empty or absent.` };
      }
    }
    return {
      title: typeGiven ? name : `${name} (type left out)`,
      type: "object",
      properties: own,
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: false,
    };
  };
  const variants = restEnumNames(typeField.enum).map((name) => variant(name, true));
  const unset = rulesOf(typeField).unsetVariant;
  if (unset !== "") variants.push(variant(unset, false));
  // Each alternative says it is an object: the outer schema only chooses.
  const { type: _object, properties: _all, required: _required, additionalProperties: _closed, ...rest } = schema;
  return { ...rest, oneOf: variants };
}
