/**
 * Validation of resource messages against the `(erplink.options.v1.field)`
 * rules declared in the proto files: the one source of the constraints that
 * the services enforce and the OpenAPI document publishes.
 */
import { isFieldSet, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { FieldRules } from "../gen/erplink/options/v1/field_rules_pb.js";
import { rulesOf } from "../schema/field-rules.js";

export { rulesOf };
import { validationError, type Violation } from "./errors.js";

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in ms (Date.UTC maps years below 100 to 19xx). */
const MIN_TIME = -62_135_596_800_000;
const MAX_TIME = 253_402_300_799_000;

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
    out.push({ field: name, description: `must match ${rules.pattern}` });
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
  return undefined;
}

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
    return;
  }
  if (field.fieldKind === "message" && value !== undefined) {
    if (field.message.typeName === "google.protobuf.Timestamp") {
      const problem = timestampProblem(value as Timestamp);
      if (problem !== undefined) out.push({ field: name, description: problem });
      else if (rules.future && timestampDate(value as Timestamp).getTime() <= now.getTime()) {
        out.push({ field: name, description: "must be in the future" });
      }
    } else if (!field.message.typeName.startsWith("google.protobuf.")) {
      for (const inner of field.message.fields) checkField(value as Message, inner, out, now, `${name}.`);
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
        out.push({ field: `${name}.${key}`, description: `key must match ${rules.keyPattern}` });
      } else if (typeof v === "string" && rules.valueMaxLen > 0 && length(v) > rules.valueMaxLen) {
        out.push({ field: `${name}.${key}`, description: `must be at most ${rules.valueMaxLen} characters` });
      } else if (field.mapKind === "message") {
        for (const inner of field.message.fields) checkField(v as Message, inner, out, now, `${name}.${key}.`);
      }
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
