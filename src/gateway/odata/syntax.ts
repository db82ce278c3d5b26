/**
 * Lexical helpers shared by the OData path and query analyzers: identifiers,
 * quoted literals, bracket matching and top-level splitting. Every helper is
 * linear in its input and refuses nesting deeper than {@link MAX_NESTING}, so
 * hostile input costs little and cannot exhaust the stack.
 */

/** Deepest nesting of parentheses, brackets and braces accepted anywhere in a request. */
export const MAX_NESTING = 32;

/**
 * An early answer from deep inside the analysis: thrown by {@link invalid}
 * and {@link denied}, caught at the module's boundary and returned as is.
 */
export class Refusal extends Error {
  constructor(
    readonly kind: "invalid" | "denied",
    message: string,
  ) {
    super(message);
  }
}

/**
 * The analysis stops at an entity set named in the request (the first
 * segment of a resource path, of a `$batch` part's, of a URL in a body):
 * either the key may not touch it (`status` 403, the entity step of the
 * permission model, whether or not the service has such a set) or the key
 * may, and the service has none of that name (`status` 404). Unlike a
 * {@link Refusal}, what was read before it is still authorized first, so the
 * answer never depends on whether a set the key may not touch exists.
 */
export class Stop extends Error {
  constructor(
    readonly status: 403 | 404,
    /** The name as the request wrote it. */
    readonly entitySet: string,
    /** Where it was named (`resource path`, `bind Customer`, `part 2: resource path`). */
    readonly reason: string,
    /** 403: the entity step's message (`API key has no access to entity 'X'`); 404: the whole message. */
    message: string,
  ) {
    super(message);
  }
}

/**
 * The key's entity step for an entity set (or singleton, or import) named by
 * the request: undefined when some grant names it or `*`, else the denial's
 * message. Absent: the analysis is not for a key, and every name may be
 * looked up.
 */
export type EntityStep = (entitySet: string) => string | undefined;

/** Stops the analysis: the request is malformed (400). */
export function invalid(message: string): never {
  throw new Refusal("invalid", message);
}

/** Stops the analysis: the request is well-formed but not allowed through the gateway (403). */
export function denied(message: string): never {
  throw new Refusal("denied", message);
}

// CSDL SimpleIdentifier: a letter or underscore, then letters, digits,
// underscores and combining marks; at most 128 characters.
const SIMPLE_IDENTIFIER = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]{0,127}$/u;

/** Whether `s` is an OData simple identifier. */
export function isSimpleIdentifier(s: string): boolean {
  return SIMPLE_IDENTIFIER.test(s);
}

/** Whether `s` is a namespace-qualified name (`NS.Name`, `A.B.Name`). */
export function isQualifiedName(s: string): boolean {
  const parts = s.split(".");
  return parts.length >= 2 && parts.every(isSimpleIdentifier);
}

// C0 controls and DEL: never part of a legitimate name or key, and a classic
// way to make two parsers disagree.
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether `s` contains a control character. */
export function hasControlCharacter(s: string): boolean {
  return CONTROL.test(s);
}

/** Percent-decodes `raw` exactly once; undefined when the encoding is malformed. */
export function decodeOnce(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/**
 * Index just past the single-quoted literal opening at `s[i]` (`'O''Neil'`:
 * a doubled quote is an escaped quote), or -1 when it is not terminated.
 */
export function skipSingleQuoted(s: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const close = s.indexOf("'", j);
    if (close < 0) return -1;
    if (s[close + 1] === "'") {
      j = close + 2;
      continue;
    }
    return close + 1;
  }
}

/**
 * Refuses an escaped quote (`''`) inside the quotes of a typed literal
 * (`time'…'`, `datetime'…'`, `guid'…'`, `X'…'`, `Namespace.Enum'Member'`),
 * which never holds one: SAP CAP's V2 adapter converts such literals with a
 * pattern that ends at the first quote, so the rest would be read as
 * expression (`time'00:00 or to_Address/any(…) or ID eq ''x'`).
 */
export function checkTypedLiteral(quoted: string, what: string): void {
  if (quoted.slice(1, -1).includes("'")) invalid(`a typed literal may not hold a quote in ${what}: back ends read where it ends differently`);
}

/** Index just past the JSON string opening at `s[i]`, or -1 when it is not terminated. */
export function skipDoubleQuoted(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === "\\") j++;
    else if (s[j] === '"') return j + 1;
  }
  return -1;
}

const CLOSER: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

/**
 * Walks `s[start, end)` honouring quotes and brackets and calls `atTopLevel`
 * with the index of every character outside any literal or bracket.
 * Refuses (invalid) unbalanced brackets, unterminated literals and nesting
 * deeper than {@link MAX_NESTING}; `what` names the text in those messages.
 */
export function walkTopLevel(
  s: string,
  what: string,
  atTopLevel: (index: number) => void,
  start = 0,
  end = s.length,
): void {
  const stack: string[] = [];
  for (let i = start; i < end; i++) {
    const c = s[i];
    if (c === "'" || c === '"') {
      const next = c === "'" ? skipSingleQuoted(s, i) : skipDoubleQuoted(s, i);
      if (next < 0 || next > end) invalid(`unterminated string literal in ${what}`);
      if (stack.length === 0) atTopLevel(i);
      i = next - 1;
      continue;
    }
    const closer = CLOSER[c];
    if (closer !== undefined) {
      if (stack.length === 0) atTopLevel(i);
      if (stack.length >= MAX_NESTING) invalid(`${what} is nested more than ${MAX_NESTING} levels deep`);
      stack.push(closer);
      continue;
    }
    if (c === ")" || c === "]" || c === "}") {
      if (stack.pop() !== c) invalid(`unbalanced '${c}' in ${what}`);
      if (stack.length === 0) atTopLevel(i);
      continue;
    }
    if (stack.length === 0) atTopLevel(i);
  }
  if (stack.length > 0) invalid(`unbalanced '${stack[stack.length - 1] === ")" ? "(" : stack[stack.length - 1]}' in ${what}`);
}

/**
 * Splits `s` at every top-level `separator` (outside literals and brackets).
 * An empty string gives one empty part.
 */
export function splitTopLevel(s: string, separator: string, what: string): string[] {
  const parts: string[] = [];
  let from = 0;
  walkTopLevel(s, what, (i) => {
    if (s[i] === separator) {
      parts.push(s.slice(from, i));
      from = i + 1;
    }
  });
  parts.push(s.slice(from));
  return parts;
}

/**
 * Splits `name(args)` into its name and the text between the parentheses.
 * `args` is undefined when there are no parentheses; the closing parenthesis
 * must end `s`.
 */
export function splitCall(s: string, what: string): { name: string; args?: string } {
  const open = s.indexOf("(");
  const head = open < 0 ? s : s.slice(0, open);
  if (head.includes(")")) invalid(`unbalanced ')' in ${what}`);
  if (head.includes("'") || head.includes('"')) invalid(`misplaced quote in ${what}`);
  if (open < 0) return { name: s };
  let close = -1;
  walkTopLevel(
    s,
    what,
    (i) => {
      if (s[i] === ")" && close < 0) close = i;
      else if (close >= 0) invalid(`unexpected characters after ')' in ${what}`);
    },
    open,
  );
  return { name: s.slice(0, open), args: s.slice(open + 1, close) };
}

/** `s` cut to at most 60 characters, for echoing untrusted text in messages. */
export function excerpt(s: string): string {
  return s.length <= 60 ? s : `${s.slice(0, 57)}...`;
}
