/**
 * The resource path, parsed segment by segment by the OData ABNF
 * (`resourcePath`: names, qualified names, key predicates, function
 * parameters, `$`-segments), knowing nothing of the service model: which
 * name is an entity set, a navigation, a cast or a bound operation, and
 * which type a key value must have, is the binder's (`../bind/path.ts`).
 *
 * A segment is one of:
 * - a name (`Customers`, `Sales.SpecialOrder`, `Sales.GetTotal`) with
 *   optional arguments in parentheses: one unnamed value (`(1)`,
 *   `('O''Neil')`, `(@k)`), named values (`(ID=1,Type='x')`), or none
 *   (`()`); every value is a primitive literal or a parameter alias;
 * - a `$`-segment (`$count`, `$value`, `$ref`, `$links`, …);
 * - a bare value, which only a key-as-segment can be (`Customers/ALFKI`
 *   parses as a name; `Orders/1` as a value).
 * Segments arrive decoded once. Nothing else is accepted: text after the
 * closing parenthesis, an argument that is not a literal or an alias, a
 * name followed by characters no name holds.
 */
import { excerpt, invalid, isQualifiedName, isSimpleIdentifier } from "../syntax.js";
import { LiteralError, readLiteral, type Dialect, type Literal } from "./literal.js";

/** A value in a key predicate or a function's parameters. */
export type ArgumentValue = { readonly kind: "literal"; readonly literal: Literal } | { readonly kind: "alias"; readonly name: string };

/** The parenthesized part of a segment. */
export type Arguments =
  /** `(value)`: an unnamed key value. */
  | { readonly kind: "positional"; readonly value: ArgumentValue }
  /** `(Name=value,…)`: key properties or function parameters; names as written. */
  | { readonly kind: "named"; readonly pairs: readonly (readonly [string, ArgumentValue])[] }
  /** `()`: a function called without parameters. */
  | { readonly kind: "empty" };

/** One segment of a resource path. */
export type PathSegment =
  | { readonly kind: "name"; readonly name: string; readonly args?: Arguments; readonly text: string }
  | { readonly kind: "dollar"; readonly name: string; readonly text: string }
  | { readonly kind: "value"; readonly text: string };

// A key-as-segment value: unquoted, and nothing that would read differently elsewhere.
const KEY_SEGMENT = /^[^'"()\\/]+$/;

/** Parses one decoded path segment. */
export function parsePathSegment(segment: string, dialect: Dialect): PathSegment {
  if (segment.startsWith("$")) {
    const open = segment.indexOf("(");
    return { kind: "dollar", name: open < 0 ? segment : segment.slice(0, open), text: segment };
  }
  const open = segment.indexOf("(");
  const name = open < 0 ? segment : segment.slice(0, open);
  if (isSimpleIdentifier(name) || isQualifiedName(name)) {
    if (open < 0) return { kind: "name", name, text: segment };
    if (!segment.endsWith(")")) invalid(`unbalanced '(' in path segment '${excerpt(segment)}'`);
    return { kind: "name", name, args: parseArguments(segment.slice(open + 1, -1), `path segment '${excerpt(segment)}'`, dialect), text: segment };
  }
  if (open >= 0 || !KEY_SEGMENT.test(segment)) invalid(`malformed path segment '${excerpt(segment)}'`);
  return { kind: "value", text: segment };
}

/** Parses the text between a segment's parentheses. */
export function parseArguments(text: string, what: string, dialect: Dialect): Arguments {
  if (text.trim() === "") {
    if (text !== "") invalid(`white space is not allowed between parentheses in ${what}`);
    return { kind: "empty" };
  }
  const pairs: (readonly [string, ArgumentValue])[] = [];
  let i = 0;
  let positional: ArgumentValue | undefined;
  for (;;) {
    // `name=` (a key property or a parameter), or an unnamed value.
    const m = /([\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]{0,127}(?:\/[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]{0,127})*)=/uy;
    m.lastIndex = i;
    const named = m.exec(text);
    if (named !== null) i += named[0].length;
    const { value, end } = readValue(text, i, what, dialect);
    i = end;
    if (named !== null) {
      if (positional !== undefined) invalid(`a composite key must name every value in ${what}`);
      if (pairs.some(([n]) => n === named[1])) invalid(`'${excerpt(named[1]!)}' is given twice in ${what}`);
      pairs.push([named[1]!, value]);
    } else {
      if (pairs.length > 0 || positional !== undefined) invalid(`a composite key must name every value in ${what}`);
      positional = value;
    }
    if (i === text.length) break;
    if (text[i] !== ",") invalid(`unexpected '${excerpt(text.slice(i, i + 20))}' in ${what}`);
    i++;
  }
  return positional !== undefined ? { kind: "positional", value: positional } : { kind: "named", pairs };
}

/** One literal or alias at `text[i]`. */
function readValue(text: string, i: number, what: string, dialect: Dialect): { value: ArgumentValue; end: number } {
  if (text[i] === "@") {
    const m = /@[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]{0,127}/uy;
    m.lastIndex = i;
    const alias = m.exec(text);
    if (alias === null) invalid(`malformed parameter alias in ${what}`);
    return { value: { kind: "alias", name: alias[0] }, end: i + alias[0].length };
  }
  let read;
  try {
    read = readLiteral(text, i, dialect);
  } catch (error) {
    if (error instanceof LiteralError) invalid(`${error.message} in ${what}`);
    throw error;
  }
  if (read === undefined) invalid(`'${excerpt(text.slice(i, i + 30))}' is not a literal or a parameter alias in ${what}`);
  return { value: { kind: "literal", literal: read.literal }, end: read.end };
}
