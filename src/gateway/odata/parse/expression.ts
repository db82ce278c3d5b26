/**
 * OData common expressions (`$filter`, `$orderby`, `$compute`, parameter
 * alias values, and the same inside `$expand`/`$select` options), parsed
 * into a tree by the OData ABNF (`commonExpr`, `boolCommonExpr`,
 * `orderbyItem`, `computeItem`), knowing nothing of the service model: a
 * member path is a list of names, a call is a name and its arguments. The
 * binding pass (`../bind/expression.ts`) resolves them against `$metadata`.
 *
 * The grammar is followed, not approximated: every character of the text is
 * read by a rule or the text is refused (`invalid`), saying where.
 * - White space is a space or a tab (`RWS`/`BWS`), around operators and
 *   inside parentheses only, never inside a member path (`Customer / Name`
 *   is refused: readers that join it and readers that do not disagree).
 * - A `%` left after the value was decoded, outside a string literal, is no
 *   character of the grammar; inside one, a `%` followed by two hex digits
 *   is refused too, since a back end that decodes the value again (SAP's
 *   mock server does) would read another character there.
 * - JSON objects, arrays and double-quoted strings (4.01's `arrayOrObject`)
 *   are refused: back ends disagree on where they end.
 * - `§§` is refused anywhere: SAP CAP's V2 adapter marks function arguments
 *   with it and rewrites calls by patterns that match it inside literals.
 * - Operators and the literals `null`, `true`, `false` are matched in any
 *   case (OData 4.01 lets services do so); a word in operand position is
 *   an operand (`In eq null` compares the property `In`), in operator
 *   position an operator.
 *
 * Pure; bounded: nesting beyond {@link MAX_NESTING} and texts costing more
 * than the caller's budget are refused.
 */
import { MAX_NESTING, excerpt, invalid, skipSingleQuoted } from "../syntax.js";
import { LiteralError, readLiteral, type Dialect, type Literal } from "./literal.js";

/** A binary operator, lower case. */
export type BinaryOperator =
  | "or" | "and"
  | "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "has" | "in"
  | "add" | "sub" | "mul" | "div" | "divby" | "mod";

/** One segment of a member path: a name (simple or qualified), `$count`, or a call of a qualified name. */
export interface MemberSegment {
  readonly name: string;
  /** Arguments of a call written in the path (`Sales.Total(x=1)`): refused by the binder unless it is OData's. */
  readonly args?: readonly Expr[];
}

/** A node of an expression tree. */
export type Expr =
  | { readonly t: "literal"; readonly literal: Literal }
  /** A parameter alias (`@p`, with the `@`). */
  | { readonly t: "alias"; readonly name: string }
  /**
   * A member path: optionally from `$it`, `$this` or `$root`; the first
   * segment may be a lambda variable (the binder decides); segments are
   * names, qualified names (casts, bound operations) or `$count`.
   */
  | { readonly t: "member"; readonly from?: "$it" | "$this" | "$root"; readonly segments: readonly MemberSegment[] }
  /** A call of a function by name (`contains(…)`, `geo.distance(…)`, `Sales.Total(…)`). */
  | { readonly t: "call"; readonly name: string; readonly args: readonly Expr[] }
  /** `path/any(v:body)`, `path/all(v:body)`, `path/any()`. */
  | { readonly t: "lambda"; readonly operator: "any" | "all"; readonly collection: Extract<Expr, { t: "member" }>; readonly variable?: string; readonly body?: Expr }
  | { readonly t: "unary"; readonly operator: "-" | "not"; readonly operand: Expr }
  | { readonly t: "binary"; readonly operator: BinaryOperator; readonly left: Expr; readonly right: Expr }
  /** A parenthesized list after `in`. */
  | { readonly t: "list"; readonly items: readonly Expr[] };

/** One `$orderby` item. */
export interface OrderItem {
  readonly expr: Expr;
  readonly direction: "asc" | "desc";
}

/** One `$compute` item. */
export interface ComputeItem {
  readonly expr: Expr;
  readonly alias: string;
}

/** A work budget shared by everything one request parses (characters and nodes). */
export interface Budget {
  spent: number;
  readonly limit: number;
}

/** Spends `units` of `budget`; beyond its limit the request is refused. */
export function spend(budget: Budget, units: number): void {
  budget.spent += units;
  if (budget.spent > budget.limit) invalid("request is too complex to authorize");
}

const BINARY_OPERATORS: ReadonlyMap<string, { readonly precedence: number; readonly operator: BinaryOperator }> = new Map(
  (
    [
      ["or", 1],
      ["and", 2],
      ["eq", 3], ["ne", 3],
      ["lt", 4], ["le", 4], ["gt", 4], ["ge", 4], ["has", 4], ["in", 4],
      ["add", 5], ["sub", 5],
      ["mul", 6], ["div", 6], ["divby", 6], ["mod", 6],
    ] as const
  ).map(([name, precedence]) => [name, { precedence, operator: name }]),
);

const IDENTIFIER = /[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]{0,127}/uy;
const IDENTIFIER_START = /[\p{L}\p{Nl}_]/u;

/**
 * Refuses a `"`, `{`, `[` or `\\` outside single-quoted literals of a text
 * holding expressions (`$filter`, `$orderby`, `$compute`, alias values, the
 * items and nested options of `$expand`/`$select`). Back ends disagree on
 * where what the first three open ends: SAP CAP's grammar ends `{…}` at the
 * first `}` and `[…]` at the first `]` whatever quotes lie between, and takes
 * a `"` after a name for part of the name (`@a"`), so text one reader takes
 * for a string another reads as paths. A `\\` has no meaning there but a
 * lenient reader's `/`.
 */
export function refuseOutsideLiterals(s: string, what: string): void {
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "'") {
      const end = skipSingleQuoted(s, i);
      if (end < 0) return; // unterminated: the parser says so
      i = end - 1;
    } else if (c === "\\") {
      invalid(`'\\' is not allowed in ${what} outside a single-quoted literal: a lenient back end reads it as '/'`);
    } else if (c === '"' || c === "{" || c === "[") {
      invalid(`'${c}' is not allowed in ${what} outside a single-quoted literal: back ends disagree on where a JSON value, a list or a double-quoted string ends`);
    }
  }
}

/** A parser over one expression text. */
class Parser {
  #i = 0;
  #depth = 0;

  constructor(
    readonly s: string,
    readonly what: string,
    readonly dialect: Dialect,
    readonly budget: Budget,
  ) {
    spend(budget, s.length);
    if (s.includes("§§")) invalid(`'§§' is not allowed in ${what}: a back end (SAP CAP's V2 adapter) marks function arguments with it`);
    refuseOutsideLiterals(s, what);
  }

  fail(message: string): never {
    const at = this.#i >= this.s.length ? "at its end" : `at '${excerpt(this.s.slice(this.#i, this.#i + 30))}'`;
    invalid(`${message} in ${this.what} ${at}`);
  }

  /** Where the cursor stands. */
  get position(): number {
    return this.#i;
  }

  /** Moves the cursor by `n` characters (back when negative). */
  skip(n: number): void {
    this.#i += n;
  }

  get done(): boolean {
    return this.#i >= this.s.length;
  }

  peek(): string | undefined {
    return this.s[this.#i];
  }

  /** Skips optional white space; returns whether there was some. */
  space(): boolean {
    const start = this.#i;
    while (this.s[this.#i] === " " || this.s[this.#i] === "\t") this.#i++;
    return this.#i > start;
  }

  expect(ch: string): void {
    if (this.s[this.#i] !== ch) this.fail(`expected '${ch}'`);
    this.#i++;
  }

  /** The word (letters, digits, `_`) at the cursor, without moving. */
  word(): string | undefined {
    IDENTIFIER.lastIndex = this.#i;
    return IDENTIFIER.exec(this.s)?.[0];
  }

  identifier(what: string): string {
    const w = this.word();
    if (w === undefined) this.fail(`expected ${what}`);
    this.#i += w.length;
    return w;
  }

  /** A simple or qualified name (`Name`, `NS.Type`, `geo.distance`). */
  name(): string {
    let out = this.identifier("a name");
    while (this.s[this.#i] === "." && IDENTIFIER_START.test(this.s[this.#i + 1] ?? "")) {
      this.#i++;
      out += `.${this.identifier("a name")}`;
    }
    return out;
  }

  enter(): void {
    if (++this.#depth > MAX_NESTING) invalid(`${this.what} is nested more than ${MAX_NESTING} levels deep`);
    spend(this.budget, 1);
  }

  leave(): void {
    this.#depth--;
  }

  /** commonExpr with operators of at least `min` precedence. */
  expression(min = 1): Expr {
    this.enter();
    let left = this.unary();
    for (;;) {
      const save = this.#i;
      if (!this.space()) break;
      if (this.peek() === "/") this.fail("white space is not allowed inside a path");
      const w = this.word();
      const op = w === undefined ? undefined : BINARY_OPERATORS.get(w.toLowerCase());
      if (op === undefined || op.precedence < min) {
        this.#i = save;
        break;
      }
      this.#i += w!.length;
      if (!this.space()) this.fail(`expected white space after '${w}'`);
      if (op.operator === "in") {
        left = { t: "binary", operator: "in", left, right: this.inOperand() };
        continue;
      }
      const right = this.expression(op.precedence + 1);
      left = { t: "binary", operator: op.operator, left, right };
    }
    this.leave();
    return left;
  }

  /** The right side of `in`: a parenthesized list, or an operand (a collection path or alias). */
  inOperand(): Expr {
    if (this.peek() !== "(") return this.unary();
    this.#i++;
    this.space();
    const items: Expr[] = [];
    if (this.peek() !== ")") {
      for (;;) {
        items.push(this.expression());
        this.space();
        if (this.peek() !== ",") break;
        this.#i++;
        this.space();
      }
    }
    this.expect(")");
    return { t: "list", items };
  }

  unary(): Expr {
    const c = this.peek();
    if (c === "-" && !/[0-9I]/.test(this.s[this.#i + 1] ?? "")) {
      this.#i++;
      this.space();
      return { t: "unary", operator: "-", operand: this.primary() };
    }
    const w = this.word();
    if (w !== undefined && w.toLowerCase() === "not" && (this.s[this.#i + 3] === " " || this.s[this.#i + 3] === "\t")) {
      this.#i += 3;
      this.space();
      this.enter();
      const operand = this.expression(3);
      this.leave();
      return { t: "unary", operator: "not", operand };
    }
    return this.primary();
  }

  primary(): Expr {
    const c = this.peek();
    if (c === undefined) this.fail("expected an operand");
    if (c === "/") this.fail("unexpected '/'");
    if (c === "(") {
      this.#i++;
      this.space();
      const inner = this.expression();
      this.space();
      this.expect(")");
      return inner;
    }
    if (c === "%") this.fail("'%' is not allowed outside a string literal (the value is decoded once)");
    if (c === "@") {
      this.#i++;
      return { t: "alias", name: `@${this.identifier("a parameter alias name")}` };
    }
    if (c === "$") return this.member();
    let read;
    try {
      read = readLiteral(this.s, this.#i, this.dialect);
    } catch (error) {
      if (error instanceof LiteralError) this.fail(error.message);
      throw error;
    }
    if (read !== undefined) {
      if (read.literal.kind === "string" && /%[0-9A-Fa-f]{2}/.test(read.literal.value)) {
        this.fail("a string literal may not hold '%' followed by two hex digits (a back end that decodes again would read another character)");
      }
      this.#i = read.end;
      return { t: "literal", literal: read.literal };
    }
    if (!IDENTIFIER_START.test(c)) this.fail(`unexpected '${c}'`);
    return this.member();
  }

  /** A member path, a call, or a lambda on a member path. */
  member(): Expr {
    let from: "$it" | "$this" | "$root" | undefined;
    const segments: MemberSegment[] = [];
    if (this.peek() === "$") {
      const m = /\$[A-Za-z]+/y;
      m.lastIndex = this.#i;
      const word = m.exec(this.s)?.[0] ?? "$";
      if (word !== "$it" && word !== "$this" && word !== "$root") this.fail(`unexpected '${word}'`);
      this.#i += word.length;
      from = word;
      if (this.peek() !== "/") return { t: "member", from, segments };
      this.#i++;
    }
    for (;;) {
      spend(this.budget, 1);
      if (this.peek() === "$") {
        if (!this.s.startsWith("$count", this.#i) || /[\p{L}\p{Nd}_]/u.test(this.s[this.#i + 6] ?? "")) this.fail("unexpected '$'");
        this.#i += 6;
        if (this.peek() === "(") this.fail("$count with options is not supported");
        segments.push({ name: "$count" });
        if (this.peek() === "/") this.fail("$count must end a path");
        break;
      }
      const name = this.name();
      if (this.peek() === "(") {
        const lower = name.toLowerCase();
        if ((lower === "any" || lower === "all") && segments.length > 0) {
          return this.lambda(lower, { t: "member", ...(from !== undefined ? { from } : {}), segments });
        }
        // OData 4.01's `case(condition:value, …)` takes pairs; both sides are expressions.
        const args = this.arguments(segments.length === 0 && from === undefined && lower === "case");
        if (segments.length === 0 && from === undefined) {
          if (this.peek() === "/") this.fail("a path may not follow a function call");
          return { t: "call", name, args };
        }
        segments.push({ name, args });
      } else {
        segments.push({ name });
      }
      if (this.peek() !== "/") break;
      this.#i++;
      if (this.peek() === " " || this.peek() === "\t") this.fail("white space is not allowed inside a path");
    }
    return { t: "member", ...(from !== undefined ? { from } : {}), segments };
  }

  /**
   * `(arg, arg)` of a call; named arguments (`x=1`) of a call in a path are
   * read as their values; with `pairs`, each argument is `condition:value`
   * (both returned, in order).
   */
  arguments(pairs = false): Expr[] {
    this.expect("(");
    this.enter();
    this.space();
    const args: Expr[] = [];
    if (this.peek() !== ")") {
      for (;;) {
        // `name=value` (a function's parameters in a path): the value is what matters to the binder.
        const w = this.word();
        if (!pairs && w !== undefined && this.s[this.#i + w.length] === "=") this.#i += w.length + 1;
        args.push(this.expression());
        this.space();
        if (pairs) {
          this.expect(":");
          this.space();
          args.push(this.expression());
          this.space();
        }
        if (this.peek() !== ",") break;
        this.#i++;
        this.space();
      }
    }
    this.expect(")");
    this.leave();
    return args;
  }

  lambda(operator: "any" | "all", collection: Extract<Expr, { t: "member" }>): Expr {
    this.expect("(");
    this.enter();
    this.space();
    if (this.peek() === ")") {
      this.#i++;
      this.leave();
      if (operator === "all") this.fail("all() needs a lambda variable and a predicate");
      return { t: "lambda", operator, collection };
    }
    const variable = this.identifier("a lambda variable");
    this.space();
    this.expect(":");
    this.space();
    const body = this.expression();
    this.space();
    this.expect(")");
    this.leave();
    if (this.peek() === "/") this.fail("a path may not follow a lambda");
    return { t: "lambda", operator, collection, variable, body };
  }
}

/** Parses a whole `commonExpr` (a `$filter`, an alias value, a `$compute` expression). */
export function parseExpression(text: string, what: string, dialect: Dialect, budget: Budget): Expr {
  const p = new Parser(text, what, dialect, budget);
  p.space();
  const expr = p.expression();
  p.space();
  if (!p.done) p.fail("unexpected text");
  return expr;
}

/** Parses `$orderby`: `expr [asc|desc]` items separated by commas. */
export function parseOrderBy(text: string, what: string, dialect: Dialect, budget: Budget): OrderItem[] {
  const p = new Parser(text, what, dialect, budget);
  const items: OrderItem[] = [];
  for (;;) {
    p.space();
    const expr = p.expression();
    let direction: "asc" | "desc" = "asc";
    const save = p.space();
    const w = save ? p.word()?.toLowerCase() : undefined;
    if (w === "asc" || w === "desc") {
      p.identifier("a direction");
      direction = w;
      p.space();
    }
    items.push({ expr, direction });
    if (p.done) return items;
    p.expect(",");
  }
}

/** Parses `$compute`: `expr as Name` items separated by commas. */
export function parseCompute(text: string, what: string, dialect: Dialect, budget: Budget): ComputeItem[] {
  const p = new Parser(text, what, dialect, budget);
  const items: ComputeItem[] = [];
  for (;;) {
    p.space();
    const expr = p.expression();
    if (!p.space() || p.word()?.toLowerCase() !== "as") p.fail("expected 'as' and a name");
    p.identifier("'as'");
    if (!p.space()) p.fail("expected white space after 'as'");
    const alias = p.identifier("the computed property's name");
    p.space();
    items.push({ expr, alias });
    if (p.done) return items;
    p.expect(",");
  }
}

/** One item of a `$apply` `aggregate(…)` transformation. */
export type AggregateItem =
  /** `$count as Alias`: the number of input instances. */
  | { readonly t: "count"; readonly alias: string }
  /**
   * `expr with method as Alias` (with `from path [with method]` steps before
   * `as`), or `path/$count as Alias` (`method` absent).
   */
  | {
      readonly t: "expr";
      readonly expr: Expr;
      readonly method?: string;
      readonly from: readonly { readonly path: Expr; readonly method?: string }[];
      readonly alias: string;
    };

/**
 * Parses the argument of `aggregate(…)` in `$apply`: items separated by
 * commas, each `$count as A`, `path/$count as A`, or `expr with method
 * [from path [with method]]… as A`. The words `with`, `from` and `as` are
 * matched in lower case only, as the Data Aggregation ABNF writes them.
 */
export function parseAggregate(text: string, what: string, dialect: Dialect, budget: Budget): AggregateItem[] {
  const p = new Parser(text, what, dialect, budget);
  const items: AggregateItem[] = [];
  const keyword = (word: string): boolean => {
    if (p.word() !== word) return false;
    p.identifier(`'${word}'`);
    if (!p.space()) p.fail(`expected white space after '${word}'`);
    return true;
  };
  const alias = (): string => {
    if (!p.space() || !keyword("as")) p.fail("expected 'as' and an alias");
    return p.identifier("an alias");
  };
  for (;;) {
    p.space();
    if (p.peek() === "$" && p.s.startsWith("$count", p.position) && !/[\p{L}\p{Nd}_/]/u.test(p.s[p.position + 6] ?? "")) {
      p.skip(6);
      items.push({ t: "count", alias: alias() });
    } else {
      const expr = p.expression();
      const endsInCount = expr.t === "member" && expr.segments[expr.segments.length - 1]?.name === "$count";
      let method: string | undefined;
      const from: { path: Expr; method?: string }[] = [];
      if (!endsInCount) {
        if (!p.space() || !keyword("with")) p.fail("expected 'with' and an aggregation method");
        method = p.name();
        for (;;) {
          const save = p.position;
          if (!p.space() || p.word() !== "from") {
            p.skip(save - p.position);
            break;
          }
          keyword("from");
          const path = p.expression(7);
          const step: { path: Expr; method?: string } = { path };
          const afterPath = p.position;
          if (p.space() && p.word() === "with") {
            keyword("with");
            step.method = p.name();
          } else p.skip(afterPath - p.position);
          from.push(step);
        }
      }
      items.push({ t: "expr", expr, ...(method !== undefined ? { method } : {}), from, alias: alias() });
    }
    p.space();
    if (p.done) return items;
    p.expect(",");
  }
}

/** Calls `visit` on every node of `expr`, depth first (arguments, operands, lambda bodies). */
export function walkExpression(expr: Expr, visit: (node: Expr) => void): void {
  visit(expr);
  switch (expr.t) {
    case "member":
      for (const s of expr.segments) for (const a of s.args ?? []) walkExpression(a, visit);
      return;
    case "call":
      for (const a of expr.args) walkExpression(a, visit);
      return;
    case "lambda":
      walkExpression(expr.collection, visit);
      if (expr.body !== undefined) walkExpression(expr.body, visit);
      return;
    case "unary":
      walkExpression(expr.operand, visit);
      return;
    case "binary":
      walkExpression(expr.left, visit);
      walkExpression(expr.right, visit);
      return;
    case "list":
      for (const item of expr.items) walkExpression(item, visit);
      return;
    default:
      return;
  }
}
