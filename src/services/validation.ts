/**
 * Validation of resource messages against the `(erplink.options.v1.field)`
 * rules declared in the proto files: the one source of the constraints that
 * the services enforce and the OpenAPI document publishes.
 */
import { isFieldSet, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { FieldRules } from "../gen/erplink/options/v1/field_rules_pb.js";
import { rulesOf } from "../schema/field-rules.js";
import { HTTP_URL_PATTERN } from "../schema/http-url.js";

export { rulesOf };
import { validationError, type Violation } from "./errors.js";

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in ms (Date.UTC maps years below 100 to 19xx). */
export const MIN_TIME = -62_135_596_800_000;
export const MAX_TIME = 253_402_300_799_000;

/** Why a timestamp is unusable (outside what RFC 3339 and every client can represent), or undefined. */
export function timestampProblem(ts: Timestamp): string | undefined {
  const ms = timestampDate(ts).getTime();
  return ts.nanos < 0 || ts.nanos >= 1e9 || !(ms >= MIN_TIME && ms <= MAX_TIME)
    ? "must be between 0001-01-01 and 9999-12-31"
    : undefined;
}

const compiled = new Map<string, RegExp>();
function regex(source: string): RegExp {
  let re = compiled.get(source);
  if (re === undefined) {
    re = new RegExp(source, "u");
    compiled.set(source, re);
  }
  return re;
}

function length(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function checkString(name: string, value: string, rules: FieldRules, out: Violation[]): void {
  const len = length(value);
  if (rules.maxLen > 0 && len > rules.maxLen) {
    out.push({ field: name, description: `must be at most ${rules.maxLen} characters (got ${len})` });
    return;
  }
  if (rules.minLen > 0 && len < rules.minLen) {
    out.push({ field: name, description: `must be at least ${rules.minLen} characters` });
    return;
  }
  if (rules.pattern !== "" && value !== "" && !regex(rules.pattern).test(value)) {
    out.push({ field: name, description: rules.patternMessage || `must match ${rules.pattern}` });
  }
  if (rules.httpUrl && value !== "") {
    const problem = httpUrlProblem(value);
    if (problem) out.push({ field: name, description: problem });
  }
}

/** Why `value` is not an acceptable back-end URL, or undefined if it is. */
export function httpUrlProblem(value: string): string | undefined {
  // The WHATWG parser silently repairs input (trims, drops tabs and newlines,
  // turns `\` into `/`, adds a missing `//`); what is stored must already be
  // in the form it parses to, so such input is refused, not repaired.
  if (/[\s\\\u0000-\u001f\u007f]/.test(value)) {
    return "must not contain spaces, control characters or backslashes";
  }
  if (!/^https?:\/\/[^/]/i.test(value)) return "must be an absolute http or https URL";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute http or https URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an absolute http or https URL";
  if (url.hostname === "") return "must name a host";
  if (url.username !== "" || url.password !== "") {
    return "must not contain credentials; configure back-end credentials separately";
  }
  if (url.hash !== "" || value.includes("#")) return "must not contain a fragment";
  // Also `http://@host` (empty credentials) and hosts the parser would rewrite or refuse.
  if (!HTTP_URL.test(value)) {
    return /^[^:]+:\/\/[^/?#]*@/.test(value)
      ? "must not contain credentials; configure back-end credentials separately"
      : "must be an http or https URL as RFC 3986 writes it: an ASCII DNS name, an IPv4 or a bracketed IPv6 address as its host, other characters percent-encoded";
  }
  return undefined;
}

/** The `http_url` rule's pattern, as the OpenAPI document publishes it. */
const HTTP_URL = new RegExp(HTTP_URL_PATTERN, "u");

function checkField(msg: Message, field: DescField, out: Violation[], now: Date, prefix = ""): void {
  const rules = rulesOf(field);
  const name = prefix + field.name;
  const value = (msg as unknown as Record<string, unknown>)[field.localName];
  if (field.fieldKind === "scalar" && typeof value === "string") {
    if (rules.required && value === "") {
      out.push({ field: name, description: "is required" });
      return;
    }
    checkString(name, value, rules, out);
    return;
  }
  if (field.fieldKind === "scalar" && typeof value === "number") {
    if (rules.positive && value <= 0) out.push({ field: name, description: "must be greater than zero" });
    if (rules.maxValue > 0 && value > rules.maxValue) out.push({ field: name, description: `must be at most ${rules.maxValue}` });
    return;
  }
  if (field.fieldKind === "enum") {
    if (rules.required && value === 0) {
      const names = field.enum.values.filter((v) => v.number !== 0).map((v) => v.localName.toLowerCase());
      out.push({ field: name, description: `is required: ${names.slice(0, -1).join(", ")} or ${names.at(-1)}` });
    }
    return;
  }
  if (field.fieldKind === "message" && value !== undefined) {
    if (field.message.typeName === "google.protobuf.Timestamp") {
      const problem = timestampProblem(value as Timestamp);
      if (problem !== undefined) out.push({ field: name, description: problem });
    } else if (!field.message.typeName.startsWith("google.protobuf.")) {
      for (const inner of field.message.fields) checkField(value as Message, inner, out, now, `${name}.`);
      checkVariant(field.message, value as Message, out, `${name}.`);
    }
    return;
  }
  if (field.fieldKind === "list") {
    const count = (value as readonly unknown[]).length;
    if (rules.maxItems > 0 && count > rules.maxItems) {
      out.push({ field: name, description: `must have at most ${rules.maxItems} entries (got ${count})` });
    }
    return;
  }
  if (field.fieldKind === "map") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (rules.maxPairs > 0 && entries.length > rules.maxPairs) {
      out.push({ field: name, description: `must have at most ${rules.maxPairs} entries (got ${entries.length})` });
      return;
    }
    for (const [key, v] of entries) {
      if (rules.keyPattern !== "" && !regex(rules.keyPattern).test(key)) {
        out.push({ field: `${name}.${key}`, description: rules.keyPatternMessage || `key must match ${rules.keyPattern}` });
      } else if (typeof v === "string" && rules.valueMaxLen > 0 && length(v) > rules.valueMaxLen) {
        out.push({ field: `${name}.${key}`, description: `must be at most ${rules.valueMaxLen} characters` });
      } else if (typeof v === "string" && rules.valuePattern !== "" && !regex(rules.valuePattern).test(v)) {
        out.push({ field: `${name}.${key}`, description: rules.valuePatternMessage || `must match ${rules.valuePattern}` });
      } else if (field.mapKind === "message") {
        for (const inner of field.message.fields) checkField(v as Message, inner, out, now, `${name}.${key}.`);
        checkVariant(field.message, v as Message, out, `${name}.${key}.`);
      }
    }
  }
}

/** The REST name of the value of a message's `type` enum field, or undefined when unset. */
function variantOf(desc: DescMessage, msg: Message): string | undefined {
  const type = desc.fields.find((f) => f.name === "type");
  if (type?.fieldKind !== "enum") return undefined;
  const number = (msg as unknown as Record<string, unknown>)[type.localName];
  const value = type.enum.values.find((v) => v.number === number && v.number !== 0);
  return value?.localName.toLowerCase();
}

/**
 * Whether a field of a message with a `type` enum is required, allowed or
 * unused with the type `variant` (its `required_for` / `optional_for`
 * rules); undefined for a field that has neither rule (any type).
 */
export function variantUse(field: DescField, variant: string): "required" | "optional" | "unused" | undefined {
  const rules = rulesOf(field);
  if (rules.requiredFor.length === 0 && rules.optionalFor.length === 0) return undefined;
  if (rules.requiredFor.includes(variant)) return "required";
  return rules.optionalFor.includes(variant) ? "optional" : "unused";
}

/**
 * The `required_for` / `optional_for` rules of a message with a `type`
 * enum: each such field set with the types that use it, and only with them.
 * An unset type is reported by its own `required` rule.
 */
function checkVariant(desc: DescMessage, msg: Message, out: Violation[], prefix: string): void {
  const variant = variantOf(desc, msg);
  if (variant === undefined) return;
  for (const field of desc.fields) {
    const use = variantUse(field, variant);
    if (use === undefined || field.fieldKind !== "scalar") continue;
    const set = (msg as unknown as Record<string, unknown>)[field.localName] !== "";
    if (use === "required" && !set) {
      out.push({ field: prefix + field.name, description: `is required with type '${variant}'` });
    } else if (use === "unused" && set) {
      out.push({ field: prefix + field.name, description: `is not used with type '${variant}'` });
    }
  }
}

/**
 * Checks a resource to be created: output-only fields unset, required fields
 * present, every rule met. Throws `invalid_argument` listing every violation.
 */
export function assertValidForCreate(desc: DescMessage, msg: Message, now: Date = new Date()): void {
  const out: Violation[] = [];
  for (const field of desc.fields) {
    if (rulesOf(field).outputOnly) {
      if (isFieldSet(msg, field)) out.push({ field: field.name, description: "is set by the server and cannot be written" });
      continue;
    }
    checkField(msg, field, out, now);
  }
  checkVariant(desc, msg, out, "");
  if (out.length > 0) throw validationError(out);
}

/**
 * Checks an update: every mask path names a writable top-level field, and
 * the new value of each meets its rules. Returns the validated paths.
 */
export function assertValidForUpdate(
  desc: DescMessage,
  msg: Message,
  paths: readonly string[],
  now: Date = new Date(),
): DescField[] {
  const out: Violation[] = [];
  const fields: DescField[] = [];
  if (paths.length === 0) {
    out.push({ field: "update_mask", description: "must name at least one field to change" });
  }
  for (const path of new Set(paths)) {
    const field = desc.fields.find((f) => f.name === path);
    if (field === undefined) {
      out.push({ field: path, description: "is not a field of this resource" });
    } else if (rulesOf(field).outputOnly) {
      out.push({ field: path, description: "is set by the server and cannot be written" });
    } else if (rulesOf(field).immutable) {
      out.push({ field: path, description: "cannot be changed after creation" });
    } else {
      fields.push(field);
      checkField(msg, field, out, now);
    }
  }
  if (out.length > 0) throw validationError(out);
  return fields;
}

/**
 * Reads a string filter of a list request: "" is no filter (undefined); any
 * other value must match the field's `pattern` rule (as the OpenAPI
 * document publishes it), else its `pattern_message` is reported.
 */
export function filterValue(desc: DescMessage, req: Message, name: string, out: Violation[]): string | undefined {
  const field = desc.fields.find((f) => f.name === name);
  if (field === undefined) throw new Error(`${desc.typeName} has no field ${name}`);
  const value = (req as unknown as Record<string, unknown>)[field.localName];
  if (typeof value !== "string" || value === "") return undefined;
  const { pattern, patternMessage } = rulesOf(field);
  if (pattern !== "" && !regex(pattern).test(value)) {
    out.push({ field: name, description: patternMessage || `must match ${pattern}` });
    return undefined;
  }
  return value;
}
