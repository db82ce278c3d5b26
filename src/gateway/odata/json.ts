/**
 * Strict JSON for the OData authorizer: RFC 8259 with positions, refusing
 * duplicate member names (`JSON.parse` keeps the last, a back end may keep
 * the first: then it would act on a body nobody authorized) and nesting
 * deeper than {@link MAX_JSON_DEPTH}. Used for request bodies, `$batch`
 * part bodies and JSON batches alike.
 */
import { excerpt, invalid } from "./syntax.js";

/** Deepest nesting of arrays and objects in a JSON batch or JSON part body. */
export const MAX_JSON_DEPTH = 64;

/** A parsed JSON value with where it lies in the text. */
export type JsonNode =
  | { readonly type: "object"; readonly start: number; readonly end: number; readonly members: readonly { readonly name: string; readonly value: JsonNode }[] }
  | { readonly type: "array"; readonly start: number; readonly end: number; readonly items: readonly JsonNode[] }
  | { readonly type: "string"; readonly start: number; readonly end: number; readonly value: string }
  | { readonly type: "scalar"; readonly start: number; readonly end: number; readonly value: number | boolean | null };

const JSON_NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const SIMPLE_ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

/**
 * Parses JSON (RFC 8259) keeping positions; refuses (invalid) malformed
 * text, duplicate member names and nesting deeper than {@link MAX_JSON_DEPTH}.
 */
export function parseJson(text: string, what: string): JsonNode {
  let i = 0;
  const fail: (why: string) => never = (why) => invalid(`${what} is not valid JSON: ${why} at offset ${i}`);
  const space = () => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else return;
    }
  };
  const string = (): JsonNode & { type: "string" } => {
    const start = i++;
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) fail("control character in a string");
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e !== undefined && SIMPLE_ESCAPES.has(e)) i += 2;
        else if (e === "u" && /^[0-9A-Fa-f]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else fail("malformed escape");
        continue;
      }
      i++;
    }
    i++;
    return { type: "string", start, end: i, value: JSON.parse(text.slice(start, i)) as string };
  };
  const value = (depth: number): JsonNode => {
    space();
    const start = i;
    const c = text[i];
    if (c === "{" || c === "[") {
      if (depth >= MAX_JSON_DEPTH) fail(`nested more than ${MAX_JSON_DEPTH} levels deep`);
      i++;
      space();
      if (c === "[") {
        const items: JsonNode[] = [];
        if (text[i] === "]") {
          i++;
          return { type: "array", start, end: i, items };
        }
        for (;;) {
          items.push(value(depth + 1));
          space();
          if (text[i] === ",") i++;
          else if (text[i] === "]") {
            i++;
            return { type: "array", start, end: i, items };
          } else fail("expected ',' or ']'");
        }
      }
      const members: { name: string; value: JsonNode }[] = [];
      const names = new Set<string>();
      if (text[i] === "}") {
        i++;
        return { type: "object", start, end: i, members };
      }
      for (;;) {
        space();
        if (text[i] !== '"') fail("expected a member name");
        const at = i;
        const name = string().value;
        if (names.has(name)) {
          i = at;
          fail(`duplicate member '${excerpt(name)}'`);
        }
        names.add(name);
        space();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        members.push({ name, value: value(depth + 1) });
        space();
        if (text[i] === ",") i++;
        else if (text[i] === "}") {
          i++;
          return { type: "object", start, end: i, members };
        } else fail("expected ',' or '}'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return { type: "scalar", start, end: i, value: v };
      }
    }
    JSON_NUMBER.lastIndex = i;
    const m = JSON_NUMBER.exec(text);
    if (m === null) fail(i >= text.length ? "unexpected end" : "unexpected character");
    i += m[0].length;
    return { type: "scalar", start, end: i, value: Number(m[0]) };
  };
  const root = value(0);
  space();
  if (i < text.length) fail("unexpected text after the value");
  return root;
}

/** The plain value of a node, as `JSON.parse` would give it. */
export function jsonValue(node: JsonNode): unknown {
  switch (node.type) {
    case "object": {
      const out: Record<string, unknown> = {};
      // defineProperty, as JSON.parse does: a member `__proto__` stays a member.
      for (const m of node.members) Object.defineProperty(out, m.name, { value: jsonValue(m.value), enumerable: true, writable: true, configurable: true });
      return out;
    }
    case "array":
      return node.items.map(jsonValue);
    default:
      return node.value;
  }
}
