/**
 * Request generators of the forwarding fuzzer (fast-check arbitraries).
 *
 * A request is drawn as a *seed* of small numbers and strings, then built
 * against the model (./model.ts): every number picks among what is valid at
 * that point (an entity set, a navigation of the type reached, a key
 * property, a query option that fits the type), so that most requests are
 * well-formed OData that erplink would forward, and shrinking a number to 0
 * means "the first, simplest choice". Adversarial material comes in three
 * ways, anywhere in the request: inside string literals (keys, filter
 * values), in the spelling and encoding of option names and values, and as
 * raw fragments inserted into the finished target (`mutations`).
 *
 * Also `$batch` requests (multipart, with change sets, and JSON) whose part
 * URLs come from the same generators, and hostile JSON texts for the JSON
 * parser differential.
 *
 * That is the `legacy` shape, the hostile mix (30% of the cases). The other
 * shapes (./shapes.ts: `clean` requests within the key's grants, typed key
 * literals, link changes, references inside compositions, operations,
 * percent sequences left after decoding) have their own shares; a case's
 * `$batch` parts are built in the case's shape.
 */
import fc from "fast-check";
import type { NavDef, PropKind, ServiceDef, TypeDef, Universe, Version } from "./model.js";
import { opsOf, rootPath, typesOf } from "./model.js";
import { typedLiteral } from "./literals.js";
import { SHAPES, SHAPE_WEIGHTS, shapeRequest, type ShapeName, type SpecialSeed } from "./shapes.js";

/** A request ready for the wire, with what the generator meant. */
export interface FuzzCase {
  readonly kind: "plain" | "batch-multipart" | "batch-json";
  /** The shape it was built as (./shapes.ts; `legacy`: the hostile mix of this module). */
  readonly shape?: ShapeName;
  readonly instance: string;
  readonly service: string;
  readonly method: string;
  /** The full request-target, raw (may hold anything the generators chose). */
  readonly target: string;
  /** Extra request headers (the harness adds the credentials and a request id). */
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: Buffer;
}

// ---------------------------------------------------------------- alphabets

/** Raw fragments inserted anywhere in a target or literal. */
export const ADVERSARIAL: readonly string[] = [
  "\\", "#", "?", "%2F", "%2f", "%252F", "%2e%2e", "%2E%2E", "%5C", "%5c", "%255C", "%23", "%3F", "%26", "%3B", "%3D", "%00", "%25", "%2", "%",
  "..", ".", "/..", "/../", "/./", "\\..\\", "..\\", "%2e%2e%2f", "..%2F", "..%5C", "%2e%2e%5c", "..;/", ".%2e/", "//", "/",
  ";", "&", "&&", "+", "=", ",", " ", "%20", "\t", "%09", "\u00a0", "%C2%A0", "%A0", "\u3000", "%E3%80%80", "\u2028", "%E2%80%A8", "\ufeff", "%EF%BB%BF",
  "'", "''", "%27", "%2527", '"', "(", ")", "%28", "%29", "@p", "@", "$", "*", "%24", "\u0001", "%01", "%7F", "%0D%0A", "é", "%C3%A9", "%C0%AF", "%FF",
  "~", "!", "$count", "$value", "$ref", "$batch", "$metadata", "$root", "$crossjoin", "$all", "$entity", "$apply",
];

/** Characters that may stand inside a quoted literal as written by a client. */
const LITERAL_PIECES: readonly string[] = ["a", "b", "1", "x", "O", "Neil", "EUR", "C1", " ", "-", "_"];

/** Entity sets, navigations and other services' roots of a universe: what an attack would aim at. */
function aims(u: Universe): { sets: string[]; navs: string[]; roots: string[] } {
  const sets = new Set<string>();
  const navs = new Set<string>();
  for (const def of Object.values(u.services)) {
    for (const s of Object.keys(def.sets)) sets.add(s);
    for (const t of def.types) for (const n of Object.keys(t.navs)) navs.add(n);
  }
  const roots = new Set<string>();
  for (const i of u.instances) for (const s of Object.values(i.services)) roots.add(s.path);
  return { sets: [...sets], navs: [...navs], roots: [...roots] };
}

/** Attack snippets aimed at the universe's names: walks out of the key, out of the service, into the query. */
export function snippets(u: Universe): string[] {
  const { sets, navs, roots } = aims(u);
  const out: string[] = [];
  for (const s of sets) {
    // `$id` names an entity (of any set) outside the path: only a `$ref` delete may carry it.
    out.push(`&$id=${s}(1)`, `?id=${s}('x')`, `\\..\\${s}#`, `\\..\\${s}`, `/../${s}`, `%2F..%2F${s}`, `%5C..%5C${s}`, `/..%2F${s}`, `#/../${s}`, `%2e%2e/${s}`, `..%5C${s}%23`);
    for (const r of roots) out.push(`\\..\\..\\${r}\\${s}#`, `%5C..%5C..%5C${r}%5C${s}%23`, `/../../${r}/${s}`, `%2F..%2F..%2F${r}%2F${s}`);
  }
  for (const n of navs) {
    out.push(
      `?$expand=${n}`, `&$expand=${n}`, `;$expand=${n}`, `%26$expand=${n}`, `&%20$expand=${n}`, `&expand=${n}`, `&$EXPAND=${n}`,
      `&%24expand=${n}`, `&\u00a0$expand=${n}`, `&%C2%A0$expand=${n}`, `&$expand%20=${n}`, `&+$expand=${n}`, `#&$expand=${n}`, `&%E3%80%80expand=${n}`,
      `&$filter=${n}/any()`, `&$select=${n}`, `/${n}`, `%2F${n}`, `\\${n}`, `&$expand=*`, `;$expand=*`, `&%20$expand=*`,
      // Tokens SAP CAP ends without regard to quotes (after decoding the whole URL): JSON objects, lists, nested $search.
      `{'}%26$expand%3D${n}%26x%3D'}`, `[']%26$expand%3D${n}%26x%3D']`, `"%26$expand%3D${n}%26x%3D"`, `'%26$expand%3D${n}%26x%3D'`,
      `($search=x';$expand=${n};$search=')`, `($search="x;$expand=${n};$search=")`, `($search=[;$expand=${n};$search=])`, `$root/${n}`,
      // The same inside expressions: text another reader takes for a literal, CAP for a JSON object, a list, names with '"', a nested $search.
      `"} or ${n}/any() or ID eq {"`, `'"} or ${n}/any() or ID eq {"'`, `'] or ${n}/any() or ID eq ['`, `"),${n}($search="`, `'),${n}($search='`,
      `@a" or ${n}/any() or ID eq @b"`, `\\' or ${n}/any() or ID eq \\'`,
    );
  }
  return out;
}

// ---------------------------------------------------------------- seeds

/** A literal's text and how it is written into the URL. */
export interface LiteralSeed {
  readonly text: string;
  /** 0 minimal, 1 `+` for spaces, 2 encodeURIComponent, 3 raw, 4 double-encoded. */
  readonly enc: number;
}

interface KeySeed {
  /** 0 unnamed, 1 named, 2 named in reverse order, 3 key as segment, 4 parameter alias. */
  readonly form: number;
  readonly values: readonly LiteralSeed[];
}

interface StepSeed {
  readonly pick: number;
  readonly key: KeySeed | null;
}

interface PathSeed {
  readonly set: number;
  readonly key: KeySeed | null;
  readonly steps: readonly StepSeed[];
  /** 0 as declared, 1 lower case, 2 upper case (only the first segment). */
  readonly caseVariant: number;
}

interface OptionSeed {
  readonly kind: number;
  readonly picks: readonly number[];
  /** Index into NAME_VARIANTS. */
  readonly name: number;
  /** 0 minimal, 1 `+` for spaces, 2 encodeURIComponent, 3 raw, 4 double-encoded. */
  readonly enc: number;
  readonly literal: LiteralSeed;
}

interface MutationSeed {
  /** 0 path, 1 query, 2 anywhere after the service, 3 anywhere (service segment included). */
  readonly zone: number;
  readonly at: number;
  readonly fragment: string;
  /** 0 insert, 1 replace one character, 2 percent-encode the character there (3 twice). */
  readonly mode: number;
}

interface BodySeed {
  /** 0 none, 1 entity, 2 deep insert, 3 URLs (binds, ids, V2 uris, a context; a link change's body), 4 hostile JSON, 5 media bytes, 6 Atom/XML, 7 JSON-looking text. */
  readonly kind: number;
  readonly pick: number;
  /** Index into CONTENT_TYPES. */
  readonly contentType: number;
  readonly literal: LiteralSeed;
  /** Which member holds the URLs (kind 3): index into REFERENCE_FORMS. */
  readonly form: number;
  /** The URLs of kind 3. */
  readonly urls: readonly UrlSeed[];
}

/**
 * A URL written into a body (`Nav@odata.bind`, `@odata.id`, V2
 * `__metadata.uri`, `@odata.context`) or into a batch part's request line:
 * an entity reference behind a prefix and along a walk, each spelled many
 * ways (see `hostileUrl`).
 */
export interface UrlSeed {
  /** How it starts: index into URL_PREFIXES (relative, absolute path, absolute URLs of many schemes, hosts and spellings, network paths, other roots), or CONTENT_ID (`$<id>` of an earlier batch part). */
  readonly prefix: number;
  /** The way from there to the entity: index into URL_WALKS (straight, or through dot segments, fragments, queries, matrix parameters, empty segments, other roots). */
  readonly walk: number;
  /** Spellings of `..` (DOT_DOTS), `.` (DOTS) and `/` (SLASHES) along the walk. */
  readonly dots: number;
  readonly dot: number;
  readonly slash: number;
  /** The other entity a detour passes (of this service, or another service's for walks into its root), the navigation or query a tail names. */
  readonly other: number;
  readonly key: LiteralSeed;
  /** Raw fragments inserted anywhere in the finished URL. */
  readonly mutations: readonly MutationSeed[];
}

/**
 * A write the key may do, with URLs in its body: what makes erplink check
 * those URLs and forward the body as written (an update or create the
 * grants allow, binding a navigation whose target the key may read), so
 * that the URLs' many spellings reach the back end whenever erplink lets
 * them through.
 */
interface FocusSeed {
  /** Which (entity set, granted write, navigation) of the service. */
  readonly pick: number;
  /** How an update is sent: index into UPDATE_METHODS. */
  readonly method: number;
  readonly key: KeySeed;
  /** Which member holds the URLs: index into REFERENCE_FORMS. */
  readonly form: number;
  readonly urls: readonly UrlSeed[];
  /** Whether a primitive property is written beside the references. */
  readonly withData: boolean;
}

interface RequestSeed {
  readonly path: PathSeed;
  readonly options: readonly OptionSeed[];
  /** 0 `&`, 1 `;`, 2 `&&`. */
  readonly separator: number;
  readonly method: number;
  readonly body: BodySeed;
  readonly headers: readonly number[];
  readonly mutations: readonly MutationSeed[];
  /** When set, the request is this write (path, method, body) instead: options and mutations still apply. */
  readonly focus: FocusSeed | null;
  /** What a shape other than the hostile mix is built from (./shapes.ts). */
  readonly special: SpecialSeed;
}

interface BatchSeed {
  /** 0 multipart, 1 multipart with a change set for writes, 2 JSON. */
  readonly format: number;
  readonly parts: readonly RequestSeed[];
  /** Per part: 0 relative, 1 absolute path, 2 absolute URL, 3 `$<id>` reference to the previous part, 4 a hostile URL (`urls`). */
  readonly urlForms: readonly number[];
  /** Per part, the hostile URL of form 4. */
  readonly urls: readonly UrlSeed[];
  /** Mutations of the outer `$batch` target. */
  readonly outer: readonly MutationSeed[];
}

/** A whole case: instance, service and either a plain request or a batch. */
export interface CaseSeed {
  readonly instance: number;
  /** 0..7 a service the key may use, 8 another (one it may not, if there is one). */
  readonly service: number;
  /** Index into SHAPES: 0 the hostile mix, else a shape of ./shapes.ts (the request and a batch's parts are built so). */
  readonly shape: number;
  readonly request: RequestSeed;
  readonly batch: BatchSeed | null;
}

const NAME_VARIANTS: readonly ((n: string) => string)[] = [
  (n) => `$${n}`,
  (n) => `$${n}`,
  (n) => `$${n}`,
  (n) => `$${n.toUpperCase()}`,
  (n) => n,
  (n) => `%24${n}`,
  (n) => `%20$${n}`,
  (n) => `$${n}%20`,
  (n) => `+$${n}`,
  (n) => ` $${n}`,
  (n) => `%C2%A0$${n}`,
  (n) => `\u00a0$${n}`,
  (n) => `%E3%80%80$${n}`,
  (n) => `%E2%80%A8$${n}`,
  (n) => `%09$${n}`,
  (n) => `%EF%BB%BF$${n}`,
  (n) => `$${n.slice(0, -1)}%${n.charCodeAt(n.length - 1).toString(16)}`,
  (n) => `$${n[0]!.toUpperCase()}${n.slice(1)}`,
  (n) => `%2524${n}`,
  (n) => `${n.toUpperCase()}%00`,
];

/** Custom query options: harmless ones, and SAP's tenant, debug and session switches. */
const CUSTOM_NAMES: readonly string[] = ["foo", "sap-language", "x", "sap-client", "sap-client", "sap-ds-debug", "sap-contextid-accept"];
const CUSTOM_VALUES: readonly (string | undefined)[] = [undefined, "100", "200", "true", "header"];
const CUSTOM_NAME_VARIANTS: readonly ((n: string) => string)[] = [
  (n) => n,
  (n) => n,
  (n) => n.toUpperCase(),
  (n) => `%20${n}`,
  (n) => `${n}%20`,
  (n) => `+${n}`,
  (n) => `%C2%A0${n}`,
  (n) => n.replace("-", "%2D"),
  (n) => `$${n}`,
  (n) => `${n}%00`,
];

const CONTENT_TYPES: readonly (string | undefined)[] = [
  "application/json",
  "application/json",
  "application/json;charset=utf-8",
  "application/json;odata.metadata=minimal",
  undefined,
  "text/plain",
  "application/octet-stream",
  "application/atom+xml",
  "application/json; charset=utf-7",
  "application/x-www-form-urlencoded",
];

/** How text is written into the URL: mostly as a careful client would, sometimes encoded more, rarely raw or twice. */
const encoding = fc.oneof(
  { withCrossShrink: true },
  { weight: 12, arbitrary: fc.constant(0) },
  { weight: 2, arbitrary: fc.constant(1) },
  { weight: 3, arbitrary: fc.constant(2) },
  { weight: 1, arbitrary: fc.constant(3) },
  { weight: 2, arbitrary: fc.constant(4) },
);

/**
 * A few of something, mostly none or one: up to `max` slots, each empty with
 * weight `empty` against 1. Shrinking empties slots one by one (and drops them).
 */
function few<T>(arb: fc.Arbitrary<T>, max: number, empty = 1): fc.Arbitrary<T[]> {
  return fc
    .array(fc.oneof({ withCrossShrink: true }, { weight: empty, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb }), { maxLength: max })
    .map((items) => items.filter((x): x is Exclude<typeof x, null> => x !== null) as T[]);
}

const literalText = fc
  .array(
    fc.oneof(
      { withCrossShrink: true },
      { weight: 6, arbitrary: fc.constantFrom(...LITERAL_PIECES) },
      { weight: 3, arbitrary: fc.constantFrom(...ADVERSARIAL) },
    ),
    { maxLength: 4 },
  )
  .map((a) => a.join(""));

function literalSeed(u: Universe): fc.Arbitrary<LiteralSeed> {
  const snip = snippets(u);
  return fc.record({
    text: fc.oneof({ withCrossShrink: true }, { weight: 5, arbitrary: literalText }, { weight: 2, arbitrary: fc.constantFrom(...snip) }),
    enc: encoding,
  });
}

function mutationSeed(u: Universe): fc.Arbitrary<MutationSeed> {
  const snip = snippets(u);
  return fc.record({
    zone: fc.oneof({ withCrossShrink: true }, { weight: 10, arbitrary: fc.nat(2) }, { weight: 1, arbitrary: fc.constant(3) }),
    at: fc.nat(200),
    fragment: fc.oneof({ withCrossShrink: true }, { weight: 3, arbitrary: fc.constantFrom(...ADVERSARIAL) }, { weight: 2, arbitrary: fc.constantFrom(...snip) }),
    mode: fc.oneof({ withCrossShrink: true }, { weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }, { weight: 2, arbitrary: fc.constantFrom(2, 3) }),
  });
}

function keySeed(u: Universe): fc.Arbitrary<KeySeed> {
  return fc.record({
    form: fc.oneof({ withCrossShrink: true }, { weight: 6, arbitrary: fc.constantFrom(0, 1) }, { weight: 2, arbitrary: fc.constantFrom(2, 3, 4) }),
    values: fc.array(literalSeed(u), { minLength: 2, maxLength: 2 }),
  });
}

/** Mostly the first (plain) choice of a table, else any of its entries. */
function mostly(first: number, weightFirst: number, length: number, weightAny = 10): fc.Arbitrary<number> {
  return fc.oneof({ withCrossShrink: true }, { weight: weightFirst, arbitrary: fc.constant(first) }, { weight: weightAny, arbitrary: fc.nat(length - 1) });
}

function urlSeed(u: Universe): fc.Arbitrary<UrlSeed> {
  return fc.record({
    prefix: fc.oneof(
      { withCrossShrink: true },
      { weight: 4, arbitrary: fc.constant(0) },
      { weight: 2, arbitrary: fc.constantFrom(1, 2) },
      { weight: 1, arbitrary: fc.constant(CONTENT_ID) },
      { weight: 8, arbitrary: fc.nat(URL_PREFIXES.length - 1) },
    ),
    walk: mostly(0, 3, URL_WALKS.length),
    dots: mostly(0, 3, DOT_DOTS.length),
    dot: mostly(0, 3, DOTS.length),
    slash: mostly(0, 12, SLASHES.length),
    other: fc.nat(99),
    key: literalSeed(u),
    mutations: few(mutationSeed(u), 2, 6),
  });
}

function requestSeed(u: Universe, batchPart = false): fc.Arbitrary<RequestSeed> {
  return fc.record({
    path: fc.record({
      set: fc.nat(99),
      key: fc.option(keySeed(u), { freq: 2 }),
      steps: fc.array(fc.record({ pick: fc.nat(99), key: fc.option(keySeed(u), { freq: 3 }) }), { maxLength: 3 }),
      caseVariant: fc.oneof({ withCrossShrink: true }, { weight: 12, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(1, 2) }),
    }),
    options: few(
      fc.record({
        kind: fc.nat(99),
        picks: fc.array(fc.nat(99), { minLength: 4, maxLength: 4 }),
        name: fc.oneof({ withCrossShrink: true }, { weight: 10, arbitrary: fc.constant(0) }, { weight: 6, arbitrary: fc.nat(NAME_VARIANTS.length - 1) }),
        enc: encoding,
        literal: literalSeed(u),
      }),
      4,
    ),
    separator: fc.oneof({ withCrossShrink: true }, { weight: 12, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(1, 2) }),
    method: fc.nat(99),
    body: fc.record({
      kind: fc.oneof(
        { withCrossShrink: true },
        { weight: 1, arbitrary: fc.constant(0) },
        { weight: 6, arbitrary: fc.constant(1) },
        { weight: 1, arbitrary: fc.constant(2) },
        { weight: 2, arbitrary: fc.constant(3) },
        { weight: 2, arbitrary: fc.constantFrom(4, 5, 6, 7) },
      ),
      pick: fc.nat(99),
      contentType: fc.oneof({ withCrossShrink: true }, { weight: 8, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.nat(CONTENT_TYPES.length - 1) }),
      literal: literalSeed(u),
      form: fc.nat(99),
      urls: fc.array(urlSeed(u), { minLength: 2, maxLength: 2 }),
    }),
    headers: few(fc.nat(99), 2, 2),
    mutations: few(mutationSeed(u), batchPart ? 2 : 3, 3),
    // About one request in six is a write the key may do with URLs in its body.
    focus: fc.oneof(
      { withCrossShrink: true },
      { weight: 5, arbitrary: fc.constant(null) },
      {
        weight: 1,
        arbitrary: fc.record({
          pick: fc.nat(99),
          method: fc.nat(99),
          key: keySeed(u),
          form: fc.nat(99),
          urls: fc.array(urlSeed(u), { minLength: 2, maxLength: 2 }),
          withData: fc.boolean(),
        }),
      },
    ),
    special: fc.record({
      pick: fc.nat(999),
      form: fc.nat(99),
      valid: fc.oneof({ withCrossShrink: true }, { weight: 7, arbitrary: fc.constant(true) }, { weight: 3, arbitrary: fc.constant(false) }),
      nums: fc.array(fc.nat(999), { minLength: 4, maxLength: 4 }),
      lit: literalSeed(u),
      url: urlSeed(u),
    }),
  });
}

/** Seeds of whole cases: mostly plain requests, about one in eight a `$batch`. */
export function caseSeed(u: Universe): fc.Arbitrary<CaseSeed> {
  return fc.record({
    instance: fc.nat(u.instances.length - 1),
    service: fc.oneof({ withCrossShrink: true }, { weight: 40, arbitrary: fc.nat(7) }, { weight: 1, arbitrary: fc.constant(8) }),
    shape: fc.oneof({ withCrossShrink: true }, ...SHAPES.map((name, i) => ({ weight: SHAPE_WEIGHTS[name], arbitrary: fc.constant(i) }))),
    request: requestSeed(u),
    batch: fc.oneof(
      { withCrossShrink: true },
      { weight: 7, arbitrary: fc.constant(null) },
      {
        weight: 1,
        arbitrary: fc.record({
          format: fc.nat(2),
          parts: fc.array(requestSeed(u, true), { minLength: 1, maxLength: 3 }),
          urlForms: fc.array(fc.nat(4), { minLength: 3, maxLength: 3 }),
          urls: fc.array(urlSeed(u), { minLength: 3, maxLength: 3 }),
          outer: fc.array(mutationSeed(u), { maxLength: 1 }),
        }),
      },
    ),
  });
}

// ---------------------------------------------------------------- building

/** The types of a service as a version serves them, with helpers. */
export class TypeIndex {
  readonly types = new Map<string, TypeDef>();
  constructor(
    readonly def: ServiceDef,
    readonly version: Version,
    readonly granted: ReadonlySet<string>,
    /** What the key may do on each entity set (set -> operations). */
    readonly grants: Readonly<Record<string, readonly string[]>> = {},
  ) {
    for (const t of typesOf(def, version)) this.types.set(t.name, t);
  }
  members(t: TypeDef): { props: [string, string][]; navs: [string, NavDef][]; key: readonly string[] } {
    const props: [string, string][] = [];
    const navs: [string, NavDef][] = [];
    let key: readonly string[] = [];
    for (let at: TypeDef | undefined = t; at !== undefined; at = at.base ? this.types.get(at.base) : undefined) {
      props.push(...Object.entries(at.props).filter(([, k]) => this.version === "4.0" || k !== "strings"));
      navs.push(...Object.entries(at.navs));
      if (key.length === 0) key = at.key;
    }
    return { props, navs, key };
  }
  derived(t: TypeDef): TypeDef[] {
    return [...this.types.values()].filter((x) => x.base === t.name);
  }
}

export const pick = <T>(items: readonly T[], n: number): T => items[n % items.length]!;

/** The primitive properties among `props` (strings, integers and decimals first, as the hostile mix has always used them); at least a placeholder. */
function primitiveProps(props: readonly [string, string][]): [string, string][] {
  const plain = props.filter(([, k]) => k === "string" || k === "int" || k === "decimal");
  const other = props.filter(([, k]) => k !== "string" && k !== "int" && k !== "decimal" && k !== "address" && k !== "strings");
  const all = [...plain, ...other];
  return all.length > 0 ? all : [["Note", "string"]];
}

/** Writes text into a URL the way `enc` says. */
export function encodeText(text: string, enc: number): string {
  switch (enc % 5) {
    case 0:
      // What a careful client writes: only what cannot stand raw is encoded.
      return text.replace(/[^A-Za-z0-9\-._~!$'()*,;:@/?=+&%\\#]/gu, (c) => encodeURIComponent(c)).replace(/[ #&+]/g, (c) => encodeURIComponent(c));
    case 1:
      return encodeURIComponent(text).replace(/%20/g, "+").replace(/%27/g, "'").replace(/%28/g, "(").replace(/%29/g, ")");
    case 2:
      return encodeURIComponent(text);
    case 3:
      return text;
    default:
      return encodeURIComponent(encodeURIComponent(text));
  }
}

function literal(kind: string, seed: LiteralSeed, idx?: TypeIndex): string {
  if (kind === "int") {
    const digits = seed.text.replace(/[^0-9]/g, "");
    return digits === "" ? String(seed.text.length + 1) : digits.slice(0, 6);
  }
  if (kind === "decimal") return `${seed.text.length}.5`;
  if (kind !== "string" && idx !== undefined) {
    // Another EDM type: mostly a literal of it in the version's form, now and then a near miss.
    return encodeText(typedLiteral(idx.def, kind as PropKind, idx.version, seed.text.length % 4 !== 3, seed.text.length + seed.enc), 0);
  }
  return `'${encodeText(seed.text.replaceAll("'", "''"), seed.enc)}'`;
}

function samplesOf(def: ServiceDef, set: string): readonly (readonly string[])[] | undefined {
  return def.samples?.[set];
}

/** A key predicate (or key segment) for a type, written as a path suffix. */
function keyText(idx: TypeIndex, t: TypeDef, set: string, seed: KeySeed, aliases: string[]): { suffix: string; segment?: string } {
  const { props, key } = idx.members(t);
  const kinds = key.map((k) => props.find(([n]) => n === k)?.[1] ?? "string");
  const sample = samplesOf(idx.def, set);
  const values = key.map((_, i) => {
    const lit = seed.values[i % seed.values.length]!;
    // A known key half of the time (real back ends then answer 200), else a generated one.
    if (sample !== undefined && lit.text.length % 2 === 0) return sample[lit.enc % sample.length]![i]!;
    return literal(kinds[i]!, lit, idx);
  });
  switch (seed.form % 5) {
    case 0:
      return { suffix: key.length === 1 ? `(${values[0]})` : `(${key.map((k, i) => `${k}=${values[i]}`).join(",")})` };
    case 1:
      return { suffix: `(${key.map((k, i) => `${k}=${values[i]}`).join(",")})` };
    case 2:
      return { suffix: `(${key.map((k, i) => `${k}=${values[i]}`).reverse().join(",")})` };
    case 3:
      return key.length === 1 ? { suffix: "", segment: values[0]!.replace(/^'(.*)'$/, "$1") } : { suffix: `(${key.map((k, i) => `${k}=${values[i]}`).join(",")})` };
    default: {
      const names = key.map((k, i) => `@k${aliases.length + i}`);
      key.forEach((_, i) => aliases.push(`${names[i]}=${values[i]}`));
      return { suffix: key.length === 1 ? `(${names[0]})` : `(${key.map((k, i) => `${k}=${names[i]}`).join(",")})` };
    }
  }
}

export interface Built {
  /** Path below the service root, no leading slash. */
  path: string;
  /** Query pairs, each already written `name=value` (or `name`). */
  pairs: string[];
  method: string;
  headers: [string, string][];
  body?: Buffer;
  /** The entity type reached (for bodies). */
  type: TypeDef | undefined;
  shape: "collection" | "entity" | "other";
}

const METHODS: readonly (readonly [string, string | undefined])[] = [
  ...Array.from({ length: 14 }, () => ["GET", undefined] as const),
  ["HEAD", undefined],
  ["POST", undefined],
  ["POST", undefined],
  ["PATCH", undefined],
  ["PATCH", undefined],
  ["PUT", undefined],
  ["DELETE", undefined],
  ["DELETE", undefined],
  ["MERGE", undefined],
  ["POST", "PATCH"],
  ["POST", "MERGE"],
  ["POST", "DELETE"],
  ["POST", "PUT"],
  ["OPTIONS", undefined],
  ["GET", "DELETE"],
];

function buildPath(idx: TypeIndex, seed: PathSeed, aliases: string[]): { path: string; type: TypeDef | undefined; shape: Built["shape"]; set: string } {
  // Sets the key may use come up three times as often: their requests are the ones erplink forwards.
  const sets = Object.keys(idx.def.sets).flatMap((s) => (idx.granted.has(s) ? [s, s, s] : [s]));
  const set = pick(sets, seed.set);
  let type = idx.types.get(idx.def.sets[set]!)!;
  let first = seed.caseVariant === 1 ? set.toLowerCase() : seed.caseVariant === 2 ? set.toUpperCase() : set;
  const segments: string[] = [];
  const st: { shape: Built["shape"] } = { shape: "collection" };
  let currentSet = set;
  if (seed.key !== null) {
    const k = keyText(idx, type, set, seed.key, aliases);
    first += k.suffix;
    segments.push(first);
    if (k.segment !== undefined) segments.push(k.segment);
    st.shape = "entity";
  } else {
    segments.push(first);
  }
  for (const step of seed.steps) {
    if (st.shape === "other") break;
    const { props, navs } = idx.members(type);
    const options: (() => void)[] = [];
    if (st.shape === "collection") {
      options.push(() => {
        segments.push("$count");
        st.shape = "other";
      });
      if (step.key !== null) {
        options.push(() => {
          const k = keyText(idx, type, currentSet, step.key!, aliases);
          if (k.suffix === "") segments.push(k.segment!);
          else segments[segments.length - 1] += k.suffix;
          st.shape = "entity";
        });
      }
      if (idx.version === "4.0") {
        for (const op of opsOf(idx.def, idx.version).filter((o) => o.collection && o.binding === type.name)) {
          options.push(() => {
            segments.push(`${idx.def.namespace}.${op.name}()`);
            st.shape = "other";
          });
        }
      }
    } else {
      for (const [name, nav] of navs) {
        options.push(() => {
          segments.push(name + (nav.many && step.key !== null ? keyText(idx, idx.types.get(nav.type)!, nav.target, step.key, aliases).suffix : ""));
          type = idx.types.get(nav.type)!;
          currentSet = nav.target;
          st.shape = nav.many && step.key === null ? "collection" : "entity";
        });
      }
      for (const [name, kind] of props) {
        options.push(() => {
          segments.push(name);
          if (kind === "address") segments.push("City");
          if (kind !== "strings" && step.pick % 3 === 0) segments.push("$value");
          st.shape = "other";
        });
      }
      options.push(() => {
        segments.push("$ref");
        st.shape = "other";
      });
      options.push(() => {
        segments.push(step.pick % 2 === 0 ? "$value" : "$count");
        st.shape = "other";
      });
      if (idx.version === "2.0") {
        for (const [name] of navs) {
          options.push(() => {
            segments.push("$links", name);
            st.shape = "other";
          });
        }
      } else {
        for (const op of opsOf(idx.def, idx.version).filter((o) => o.binding !== undefined && !o.collection && o.binding === type.name)) {
          options.push(() => {
            segments.push(`${idx.def.namespace}.${op.name}${op.kind === "function" ? "()" : ""}`);
            st.shape = "other";
          });
        }
      }
    }
    for (const d of idx.derived(type)) {
      options.push(() => {
        segments.push(`${idx.def.namespace}.${d.name}`);
        type = d;
      });
    }
    pick(options, step.pick)();
  }
  return { path: segments.join("/"), type, shape: st.shape, set: currentSet };
}

function expressionText(idx: TypeIndex, t: TypeDef, picks: readonly number[], lit: LiteralSeed, aliases: string[]): string {
  const { props, navs } = idx.members(t);
  const prims = primitiveProps(props);
  const [pn, pk] = pick(prims, picks[1]!);
  const value = literal(pk, lit, idx);
  const one = navs.filter(([, n]) => !n.many);
  const many = navs.filter(([, n]) => n.many);
  const forms: (() => string)[] = [
    () => `${pn} eq ${value}`,
    () => `${pn} ne ${value} and ${pn} eq ${value}`,
    () => `contains(${pn},${value.startsWith("'") ? value : `'${value}'`})`,
    () => {
      aliases.push(`@a${aliases.length}=${value}`);
      return `${pn} eq @a${aliases.length - 1}`;
    },
  ];
  for (const [nn, nav] of one) {
    const target = idx.types.get(nav.type)!;
    const [tp] = pick(idx.members(target).props, picks[2]!);
    forms.push(() => `${nn}/${tp} eq ${value}`);
  }
  for (const [nn, nav] of many) {
    const target = idx.types.get(nav.type)!;
    const [tp] = pick(idx.members(target).props, picks[2]!);
    forms.push(() => `${nn}/any(d:d/${tp} eq ${value})`);
    forms.push(() => `${nn}/$count gt 0`);
  }
  // Calls no key's grants cover: the model's functions and actions, qualified or not, bound or not,
  // beside built-ins in other spellings.
  for (const op of idx.def.ops) {
    forms.push(() => `${idx.def.namespace}.${op.name}() gt ${value}`);
    forms.push(() => `${op.name}(${pn}) ne null`);
    forms.push(() => `${idx.def.namespace}.${op.name} gt ${value}`);
  }
  forms.push(() => `TOLOWER(${pn}) eq ${value}`);
  // One slot (of 5 to 9) for SAP CAP's own grammar.
  forms.push(() => capExpressionText(idx, t, picks, lit, aliases));
  return pick(forms, picks[0]!)();
}

/** What another reader may pair as quotes across CAP's closers: single and double quotes, braces, brackets, backslashes. */
const CAP_QUOTES: readonly string[] = ["'", "", '"', "}", "]", "\\", "')", "\\'", "'\"", "{'"];

/** A navigation written into a condition, as the payload of the forms below: one hop, two hops, `any()` over a collection. */
function navPayload(idx: TypeIndex, t: TypeDef, n: number, value: string): string {
  const out: string[] = [];
  for (const [nn, nav] of idx.members(t).navs) {
    const target = idx.types.get(nav.type)!;
    const { props, navs } = idx.members(target);
    if (nav.many) out.push(`${nn}/any()`);
    else out.push(`${nn}/${pick(props, n)[0]} eq ${value}`);
    for (const [n2, nav2] of navs) {
      const t2 = idx.types.get(nav2.type)!;
      out.push(nav2.many ? `${nn}/${n2}/any()` : `${nn}/${n2}/${pick(idx.members(t2).props, n)[0]} eq ${value}`);
    }
  }
  return out.length > 0 ? pick(out, n) : `${pick(idx.members(t).props, n)[0]} eq ${value}`;
}

/**
 * Expressions aimed at SAP CAP's grammar (libx/odata/parse/grammar.peggy),
 * with a navigation where another reader may see a literal: CAP ends a JSON
 * object at its first `}` and a list at its first `]` whatever quotes lie
 * between; its names may hold `"` (`@a"` is one alias); a backslash escapes
 * nothing in its `'…'` literals. And lambdas as CAP scopes them: a path
 * without the variable is read from the lambda's collection, an outer
 * variable in a nested lambda from the innermost collection (CAP strips only
 * the innermost variable), a variable may be named like a navigation.
 */
function capExpressionText(idx: TypeIndex, t: TypeDef, seedPicks: readonly number[], lit: LiteralSeed, aliases: string[]): string {
  // A nested $filter passes three picks.
  const picks = [seedPicks[0]!, seedPicks[1]!, seedPicks[2]!, seedPicks[3] ?? seedPicks[0]! + seedPicks[2]!];
  const { props, navs } = idx.members(t);
  const prims = primitiveProps(props);
  const [pn, pk] = pick(prims, picks[1]!);
  const value = literal(pk, lit, idx);
  const payload = navPayload(idx, t, picks[2]!, value);
  const q = pick(CAP_QUOTES, picks[0]! + picks[1]!);
  const quote = picks[2]! % 3 === 0 ? "%22" : '"';
  const forms: (() => string)[] = [
    () => `${pn} eq {"x":"${q}"} or ${payload} or ${pn} eq {"y":"${q}"}`,
    () => `${pn} eq {"x":"} or ${payload} or ${pn} eq {"}`,
    () => `${pn} eq [${q}] or ${payload} or ${pn} eq [${q}]`,
    () => `${pn} in ["${q}"] or ${payload} or ${pn} in [{"${q}":1}]`,
    () => `${pn} eq "${q}" or ${payload} or ${pn} eq "${q}"`,
    () => `${pn} eq '${q}\\' or ${payload} or ${pn} eq '\\${q}'`,
    () => {
      const a = `@a${aliases.length}`;
      aliases.push(`${a}${quote}=${value}`, `${a}x${quote}=${value}`);
      return `${pn} eq ${a}" or ${payload} or ${pn} eq ${a}x"`;
    },
  ];
  for (const [mn, nav] of navs.filter(([, n]) => n.many)) {
    const inner = idx.types.get(nav.type)!;
    const im = idx.members(inner);
    const [ip, ik] = pick(im.props.filter(([, k]) => k !== "strings" && k !== "address"), picks[1]!);
    const iv = literal(ik, lit, idx);
    const outerNav = navPayload(idx, t, picks[2]!, value);
    const innerNav = navPayload(idx, inner, picks[2]!, iv);
    // A variable named like a navigation of the collection: stripped from paths that start with it, read as the navigation elsewhere.
    const v = im.navs.length > 0 && picks[3]! % 3 === 0 ? pick(im.navs, picks[3]!)[0] : "d";
    forms.push(
      () => `${mn}/any(${v}:${ip} eq ${iv})`,
      () => `${mn}/any(${v}:${innerNav})`,
      () => `${mn}/any(${v}:${outerNav})`,
      () => `${mn}/any(${v}:$it/${outerNav})`,
      () => `${mn}/any(${v}:${pick(im.navs.length > 0 ? im.navs : navs, picks[2]!)[0]} ne null)`,
      () => `${mn}/all(${v}:${v}/${ip} eq ${iv} or ${innerNav})`,
    );
    for (const [mn2, nav2] of im.navs.filter(([, n]) => n.many)) {
      const inner2 = idx.types.get(nav2.type)!;
      const deepNav = navPayload(idx, inner2, picks[3]!, iv);
      forms.push(
        () => `${mn}/any(${v}:${v}/${mn2}/any(e:${v}/${innerNav}))`,
        () => `${mn}/any(${v}:${v}/${mn2}/any(e:${deepNav}))`,
        () => `${mn}/any(${v}:${v}/${mn2}/any(e:e/${deepNav} and ${v}/${ip} eq ${iv}))`,
      );
    }
  }
  return pick(forms, picks[3]!)();
}

function expandText(idx: TypeIndex, t: TypeDef, picks: readonly number[], lit: LiteralSeed, aliases: string[], depth = 0): string {
  const { navs, props } = idx.members(t);
  if (navs.length === 0) return "*";
  const [nn, nav] = pick(navs, picks[0]!);
  const target = idx.types.get(nav.type)!;
  const forms: (() => string)[] = [
    () => nn,
    () => "*",
    () => `${nn}/$ref`,
    () => `${nn}($select=${pick(idx.members(target).props, picks[1]!)[0]})`,
    () => `${nn}($levels=${picks[1]! % 2 === 0 ? "2" : "max"})`,
    () => `${nn}($filter=${expressionText(idx, target, picks.slice(1), lit, aliases)})`,
    () => `${nn}($top=1;$expand=${depth < 2 ? expandText(idx, target, [picks[1]!, picks[2]!, picks[3]!, picks[0]!], lit, aliases, depth + 1) : "*"})`,
    () => `${nn},${pick(navs, picks[1]!)[0]}`,
  ];
  if (idx.version === "2.0") {
    const [n2] = pick(idx.members(target).navs.length > 0 ? idx.members(target).navs : [[pick(props, 0)[0], nav] as [string, NavDef]], picks[1]!);
    forms.push(() => `${nn}/${n2}`);
  }
  for (const d of idx.derived(t)) {
    const dn = Object.keys(d.navs);
    if (dn.length > 0) forms.push(() => `${idx.def.namespace}.${d.name}/${pick(dn, picks[1]!)}`);
  }
  // One slot (of 9 to 11) for SAP CAP's own grammar.
  forms.push(() => capExpandText(idx, t, picks, lit, aliases));
  return pick(forms, picks[2]!)();
}

/** What may open a nested `$search` value that CAP ends at the first `)` or `;` whatever it holds. */
const CAP_SEARCH_OPENERS: readonly string[] = ['"', "'", "[", "{", "(", '\\"', '"\\', "", "%22", "%27"];

/**
 * `$expand` items aimed at SAP CAP's grammar: a nested `$search` ends at its
 * first `)` or `;` whatever quotes, brackets or parentheses it holds, so what
 * another reader keeps inside it CAP reads as further items or options.
 */
function capExpandText(idx: TypeIndex, t: TypeDef, picks: readonly number[], lit: LiteralSeed, aliases: string[]): string {
  const { navs } = idx.members(t);
  const [nn, nav] = pick(navs, picks[0]!);
  const [other] = pick(navs, picks[1]! + 1);
  const target = idx.types.get(nav.type)!;
  const tn = idx.members(target).navs;
  const inner = tn.length > 0 ? pick(tn, picks[3]!)[0] : "*";
  const q = pick(CAP_SEARCH_OPENERS, picks[1]! + picks[3]!);
  const close = q === "(" ? ")" : q === "[" ? "]" : q === "{" ? "}" : q.replace("\\", "");
  const forms: (() => string)[] = [
    () => `${nn}($search=${q}x),${other}($search=${close})`,
    () => `${nn}($search=${q}x;$expand=${inner};$search=${close})`,
    () => `${nn}($select=${pick(idx.members(target).props, picks[3]!)[0]};$search=${q}x),${other}($search=${close})`,
    () => `${nn}($search=${q}x)),${other}($search=${close}`,
    () => `${nn}($filter=${capExpressionText(idx, target, picks.slice(1).concat(picks[0]!), lit, aliases)})`,
  ];
  return pick(forms, picks[2]!)();
}

function selectText(idx: TypeIndex, t: TypeDef, picks: readonly number[]): string {
  const { props, navs } = idx.members(t);
  const forms: (() => string)[] = [() => pick(props, picks[0]!)[0], () => `${pick(props, picks[0]!)[0]},${pick(props, picks[1]!)[0]}`, () => "*"];
  for (const [nn, nav] of navs) {
    forms.push(() => nn);
    forms.push(() => `${nn}/${pick(idx.members(idx.types.get(nav.type)!).props, picks[1]!)[0]}`);
  }
  return pick(forms, picks[2]!)();
}

function optionPair(idx: TypeIndex, t: TypeDef | undefined, seed: OptionSeed, aliases: string[]): string {
  const named = (name: string, value: string) => `${pick(NAME_VARIANTS, seed.name)(name)}=${encodeText(value, seed.enc)}`;
  const kinds: (() => string)[] = [];
  if (t !== undefined) {
    kinds.push(
      () => named("expand", expandText(idx, t, seed.picks, seed.literal, aliases)),
      () => named("expand", expandText(idx, t, seed.picks, seed.literal, aliases)),
      () => named("filter", expressionText(idx, t, seed.picks, seed.literal, aliases)),
      () => named("filter", expressionText(idx, t, seed.picks, seed.literal, aliases)),
      () => named("select", selectText(idx, t, seed.picks)),
      () => named("orderby", `${selectText(idx, t, seed.picks).split(",")[0]}${seed.picks[3]! % 2 === 0 ? " desc" : ""}`),
    );
  }
  kinds.push(
    () => named("top", String(seed.picks[0]! % 5)),
    () => named("skip", String(seed.picks[0]! % 3)),
    () => named(idx.version === "2.0" ? "inlinecount" : "count", idx.version === "2.0" ? "allpages" : "true"),
    () => named("format", "json"),
    () => named("search", seed.literal.text),
    () => `${pick(CUSTOM_NAME_VARIANTS, seed.name)(pick(CUSTOM_NAMES, seed.picks[0]!))}=${encodeText(pick(CUSTOM_VALUES, seed.picks[1]!) ?? seed.literal.text, seed.enc)}`,
    () => `@p=${encodeText(`'${seed.literal.text.replaceAll("'", "''")}'`, seed.enc)}`,
  );
  return pick(kinds, seed.kind)();
}

function entityBody(idx: TypeIndex, aims: UrlAims, t: TypeDef | undefined, seed: BodySeed): string | Buffer | undefined {
  const members = t === undefined ? { props: [["Note", "string"]] as [string, string][], navs: [] as [string, NavDef][] } : idx.members(t);
  const prims = primitiveProps(members.props);
  const [pn, pk] = prims.length > 0 ? pick(prims, seed.pick) : ["Note", "string"];
  const value = pk === "string" ? JSON.stringify(seed.literal.text) : String(seed.literal.text.length);
  const nav = members.navs.length > 0 ? pick(members.navs, seed.pick) : undefined;
  switch (seed.kind % 8) {
    case 0:
      return undefined;
    case 1:
      return `{"${pn}":${value}}`;
    case 2:
      if (nav === undefined) return `{"${pn}":${value}}`;
      return nav[1].many ? `{"${pn}":${value},"${nav[0]}":[{"${pn}":${value}}]}` : `{"${nav[0]}":{"${pn}":${value}}}`;
    case 3: {
      if (nav === undefined || t === undefined) return `{"${pn}":${value}}`;
      return referenceBody(idx, aims, t, nav, seed.form, seed.urls, seed.literal, seed.pick % 2 === 0 ? `"${pn}":${value}` : undefined);
    }
    case 4:
      return pick(
        [
          `{"${pn}":${value},"${pn}":${value}}`,
          `\ufeff{"${pn}":${value}}`,
          `\ufeff{"${nav?.[0] ?? pn}":{"${pn}":${value}}}`,
          `{"__proto__":{"${nav?.[0] ?? pn}":{}},"${pn}":${value}}`,
          `{"${pn}":${value}} {"${nav?.[0] ?? pn}":{}}`,
          `{"${pn}":"\\ud800"}`,
          `{"${nav?.[0] ?? pn}":${"[".repeat(70)}${"]".repeat(70)}}`,
          `{"${pn}":1e999}`,
          `{"${pn}\\u0000":1}`,
        ],
        seed.pick,
      );
    case 5:
      return Buffer.from([0x25, 0x50, 0x44, 0x46, 0x2d, 0x31, 0x0a, 0x00, 0xff, seed.pick]);
    case 6:
      return `<entry xmlns="http://www.w3.org/2005/Atom"><link rel="http://schemas.microsoft.com/ado/2007/08/dataservices/related/${nav?.[0] ?? "X"}"/><content/></entry>`;
    default:
      // JSON behind a prefix a back end may skip and a content sniffer may not (white space, a BOM, Unicode spaces).
      return `${pick(JSON_PREFIXES, seed.literal.text.length)}{"${nav?.[0] ?? pn}":{"${pn}":${value}}}`;
  }
}

const JSON_PREFIXES: readonly string[] = [" ", "\ufeff", "\t\n", "\u00a0", "\u2028", "\r\n", "", "\u3000", "\ufeff "];

/** Content types of bodies that are not declared JSON (media, Atom, JSON-looking text). */
const UNDECLARED_TYPES: readonly (string | undefined)[] = [
  "text/plain",
  "application/octet-stream",
  "image/png",
  undefined,
  "application/atom+xml",
  "application/jsonx",
  "text/json",
];

const EXTRA_HEADERS: readonly (readonly [string, string])[] = [
  ["If-Match", "*"],
  ["If-Match", ""],
  ["If-None-Match", "*"],
  ["Prefer", "return=minimal"],
  ["Accept", "application/json"],
  ["Content-ID", "1"],
  ["OData-Version", "4.01"],
  ["sap-client", "200"],
  ["SAP-Client", "100"],
  ["sap-contextid-accept", "header"],
  // Named like Object's own properties: a plain object of headers loses or misreads them (Envoy's check did).
  ["__proto__", "x"],
  ["constructor", "y"],
];

// ---------------------------------------------------------------- URLs in bodies and part URLs

/** What URLs written into a request may aim at. */
export interface UrlAims {
  /** This service's root on erplink, e.g. `/odata/prod/SALES`. */
  readonly client: string;
  /** Other roots: this and other services on other instances, every service's root on the upstream, other erplink paths. */
  readonly roots: readonly string[];
  /** The last segments of other services' roots (`MASTER`, `master`): what a `../` walks into. */
  readonly siblings: readonly string[];
  /** Entity references of other services (`BusinessPartners('1')`). */
  readonly foreign: readonly string[];
  /** Content-IDs of the earlier parts of a batch (none outside one). */
  readonly ids: readonly string[];
}

/** How a URL starts: relative, this service's root in many spellings, other roots. `/` ends each. */
const URL_PREFIXES: readonly ((a: UrlAims, n: number) => string)[] = [
  () => "",
  (a) => `${a.client}/`,
  (a) => `http://localhost${a.client}/`,
  (a) => `https://localhost:8443${a.client}/`,
  (a) => `HTTP://LocalHost${a.client}/`,
  (a) => `http://user:secret@localhost${a.client}/`,
  (a) => `http://evil.example:8080${a.client}/`,
  (a) => `http://localhost@evil.example${a.client}/`,
  (a) => `http://localhost:80@evil.example:81${a.client}/`,
  (a) => `http://[::1]:80${a.client}/`,
  (a) => `//localhost${a.client}/`,
  (a) => `/${a.client}/`,
  (a) => `urn:${a.client.slice(1)}/`,
  (a) => `javascript:${a.client}/`,
  (a) => `ftp://localhost${a.client}/`,
  (a) => `file://${a.client}/`,
  (a) => `http:${a.client}/`,
  (a) => `http:/${a.client}/`,
  (a) => `http:\\\\localhost${a.client}/`,
  (a) => `\\\\localhost${a.client}/`,
  (a) => `http://localhost${a.client.replaceAll("/", "\\")}\\`,
  (a) => `${a.client.toUpperCase()}/`,
  (a) => `${a.client}//`,
  (a) => `${a.client}/./`,
  (a) => `${a.client}/%2e/`,
  (a) => `${a.client};v=1/`,
  (a) => `${a.client}%2F`,
  (a) => `${a.client.replaceAll("/", "%2F")}%2F`,
  (a) => `${a.client}?x=1/`,
  (a) => `${a.client}#/`,
  (a) => "./",
  (a) => `../${a.client.split("/").pop()}/`,
  (a) => "#",
  (a) => "?",
  (a, n) => `${pick(a.roots, n)}/`,
  (a, n) => `http://localhost${pick(a.roots, n)}/`,
  (a, n) => `${pick(a.roots, n)}/../${a.client.split("/").pop()}/`,
  (a, n) => `http://localhost${a.client}/../../${pick(a.siblings, n)}/`,
];

/** The prefix slot of a `$<id>` reference (to an earlier part of a batch; relative outside one). */
const CONTENT_ID = URL_PREFIXES.length;

/** Spellings of a `..` segment: plain, percent-encoded in any case and half, with matrix parameters, and near misses. */
const DOT_DOTS: readonly string[] = [
  "..", "%2e%2e", "%2E%2E", "%2E%2e", "%2e%2E", ".%2e", "%2e.", ".%2E", "%2E.", "..;", "..;x=1", "%2e%2e;", "..%2F", "..%5C", "..\\", "..%00", "...",
  "..%20", "%252e%252e", "%c0%ae%c0%ae",
];
/** Spellings of a `.` segment. */
const DOTS: readonly string[] = [".", "%2e", "%2E", ".;", ".;x=1", "%252e"];
/** Spellings of the `/` between segments. */
const SLASHES: readonly string[] = ["/", "%2F", "%2f", "\\", "%5C", "//", "/./", "%252F", ";/"];

/** The pieces a walk is made of. */
interface Walk {
  /** The entity aimed at. */
  readonly T: string;
  /** Another entity of this service. */
  readonly O: string;
  /** An entity of another service, and that service's root segment. */
  readonly F: string;
  readonly sib: string;
  /** The last segment of this service's root (`SALES`). */
  readonly root: string;
  /** Another root (absolute path). */
  readonly other: string;
  readonly D: string;
  readonly S: string;
  readonly P: string;
  /** A navigation name and a query. */
  readonly nav: string;
  readonly q: string;
}

/** Ways from a prefix to the entity: straight, through dot segments (back, out and in again, into other roots), fragments, queries, matrix parameters, empty segments. */
const URL_WALKS: readonly ((w: Walk) => string)[] = [
  (w) => w.T,
  (w) => `${w.O}${w.P}${w.D}${w.P}${w.T}`,
  (w) => `${w.T}${w.P}${w.D}${w.P}${w.O}`,
  (w) => `${w.T}${w.P}${w.D}`,
  (w) => `${w.T}${w.P}${w.D}${w.P}`,
  (w) => `${w.S}${w.P}${w.T}`,
  (w) => `${w.T}${w.P}${w.S}`,
  (w) => `${w.T}#${w.P}${w.D}${w.P}${w.O}`,
  (w) => `${w.T}#`,
  (w) => `${w.T}%23${w.P}${w.D}${w.P}${w.O}`,
  (w) => `${w.O}${w.P}${w.D}${w.P}${w.D}${w.P}${w.root}${w.P}${w.T}`,
  (w) => `${w.D}${w.P}${w.sib}${w.P}${w.F}`,
  (w) => `${w.T}${w.P}${w.D}${w.P}${w.D}${w.P}${w.sib}${w.P}${w.F}`,
  (w) => `${w.T}${w.P}${w.D}${w.P}${w.D}${w.P}${w.sib}${w.P}${w.T}`,
  (w) => `${w.D}${w.P}${w.D}${w.P}${w.D}${w.P}${w.D}${w.P}${w.D}${w.other}${w.P}${w.F}`,
  (w) => `${w.T}?${w.q}`,
  (w) => `?${w.q}`,
  (w) => `${w.T};x=1`,
  (w) => `${w.O};x=1${w.P}..;x=1${w.P}${w.T}`,
  (w) => `${w.P}${w.T}`,
  (w) => `${w.T}${w.P}${w.P}`,
  (w) => `${w.O}${w.P}${w.P}${w.D}${w.P}${w.T}`,
  (w) => `${w.P}${w.P}${w.T}`,
  (w) => `${w.T}${w.P}${w.nav}`,
  (w) => `${w.O}${w.P}${w.D}${w.P}${w.O}${w.P}${w.D}${w.P}${w.T}`,
  (w) => `${w.T}${w.P}${w.D}${w.P}${w.D}${w.P}${w.root}${w.P}${w.O}`,
];

/** What may follow a `$<id>` reference. */
const CONTENT_ID_TAILS: readonly ((w: Walk) => string)[] = [
  () => "",
  (w) => `${w.P}${w.D}${w.P}${w.O}`,
  (w) => `${w.P}${w.D}`,
  (w) => `#${w.P}${w.D}${w.P}${w.O}`,
  (w) => `${w.P}${w.D}${w.P}${w.D}${w.P}${w.sib}${w.P}${w.F}`,
  (w) => `${w.P}${w.nav}`,
  (w) => `${w.P}${w.S}`,
  (w) => `?${w.q}`,
];

/** A plain key literal: most references name an entity plainly, so that what surrounds them decides. */
const PLAIN_KEY: LiteralSeed = { text: "C1", enc: 0 };

/** A reference to one entity of `set` (key predicate form 0 or 1, no aliases: bodies have none). */
function entityRef(idx: TypeIndex, set: string, lit: LiteralSeed): string {
  const type = idx.types.get(idx.def.sets[set]!)!;
  return `${set}${keyText(idx, type, set, { form: lit.enc % 2, values: [lit, { text: `${lit.text}1`, enc: lit.enc }] }, []).suffix}`;
}

/** A URL naming `target` (an entity reference, or `$metadata`) as `seed` says (see UrlSeed). */
export function hostileUrl(idx: TypeIndex, aims: UrlAims, seed: UrlSeed, target: string): string {
  const sets = Object.keys(idx.def.sets);
  const navs = [...new Set(typesOf(idx.def, idx.version).flatMap((t) => Object.keys(t.navs)))];
  const w: Walk = {
    T: target,
    O: entityRef(idx, pick(sets, seed.other), seed.other % 5 === 0 ? seed.key : PLAIN_KEY),
    F: aims.foreign.length > 0 ? pick(aims.foreign, seed.other) : entityRef(idx, pick(sets, seed.other + 1), PLAIN_KEY),
    sib: aims.siblings.length > 0 ? pick(aims.siblings, seed.other) : "x",
    root: aims.client.split("/").pop()!,
    other: aims.roots.length > 0 ? pick(aims.roots, seed.other) : aims.client,
    D: pick(DOT_DOTS, seed.dots),
    S: pick(DOTS, seed.dot),
    P: pick(SLASHES, seed.slash),
    nav: navs.length > 0 ? pick(navs, seed.other) : "x",
    q: pick([`$expand=${navs.length > 0 ? pick(navs, seed.other) : "*"}`, "$expand=*", "$select=ID", "sap-client=200", "x=1", `$filter=ID eq ${target}`], seed.other),
  };
  let url: string;
  if (seed.prefix >= CONTENT_ID && aims.ids.length > 0) {
    url = `$${pick(aims.ids, seed.other)}${pick(CONTENT_ID_TAILS, seed.walk)(w)}`;
  } else {
    url = `${pick(URL_PREFIXES, seed.prefix)(aims, seed.other)}${pick(URL_WALKS, seed.walk)(w)}`;
  }
  return mutate(url, { path: [0, url.length], query: [0, url.length], after: 0 }, seed.mutations);
}

/** Members holding URLs: a bind (V4 and 4.01 spelling), a nested `@odata.id`, a V2 `__metadata.uri`, a context and a bind, a nested entity with a bind of its own. */
const REFERENCE_FORMS = ["bind", "bind", "bind401", "id", "id", "uri", "context", "nested"] as const;

/**
 * A JSON body whose navigation `nav` of `type` is given by URL(s) to
 * entities of its target, in the form `form` says; with a primitive
 * property when `data` is set.
 */
function referenceBody(idx: TypeIndex, aims: UrlAims, type: TypeDef, nav: [string, NavDef], form: number, urls: readonly UrlSeed[], lit: LiteralSeed, data: string | undefined): string {
  const [name, def] = nav;
  const target = entityRef(idx, def.target, urls[0]!.other % 4 === 0 ? lit : PLAIN_KEY);
  const [u1, u2] = urls.map((seed) => hostileUrl(idx, aims, seed, target)) as [string, string];
  const many = (one: unknown, two: unknown) => (def.many ? (urls[0]!.other % 3 === 0 ? [one] : [one, two]) : one);
  const members: Record<string, unknown> = {};
  const kind = pick(REFERENCE_FORMS, form);
  switch (kind) {
    case "bind":
      members[`${name}@odata.bind`] = many(u1, u2);
      break;
    case "bind401":
      members[`${name}@bind`] = many(u1, u2);
      break;
    case "id":
      members[name] = many({ "@odata.id": u1 }, { "@odata.id": u2 });
      break;
    case "uri":
      // V2's link; V4's 4.01 spelling of one (a V2 `__metadata` in a V4 body is just an undeclared member).
      members[name] = idx.version === "2.0" ? many({ __metadata: { uri: u1 } }, { __metadata: { uri: u2 } }) : many({ "@id": u1 }, { "@id": u2 });
      break;
    case "context": {
      const context = hostileUrl(idx, aims, urls[1]!, "$metadata");
      members["@odata.context"] = context.includes("#") ? context : `${context}#${def.target}/$entity`;
      members[`${name}@odata.bind`] = def.many ? [u1] : u1;
      break;
    }
    case "nested": {
      // A deep insert whose nested entity binds one of its own navigations.
      const inner = idx.types.get(def.type)!;
      const innerNavs = idx.members(inner).navs;
      if (innerNavs.length === 0) {
        members[`${name}@odata.bind`] = many(u1, u2);
        break;
      }
      const [innerName, innerDef] = pick(innerNavs, form);
      const innerUrl = hostileUrl(idx, aims, urls[0]!, entityRef(idx, innerDef.target, urls[0]!.other % 4 === 0 ? lit : PLAIN_KEY));
      const entity = { [`${innerName}@odata.bind`]: innerDef.many ? [innerUrl] : innerUrl };
      members[name] = def.many ? [entity] : entity;
      break;
    }
  }
  const text = JSON.stringify(members);
  return data === undefined ? text : `{${data},${text.slice(1)}`;
}

/** A link change's body: the URL of the entity linked (`@odata.id`, V2 `uri`). */
function linkBody(idx: TypeIndex, aims: UrlAims, set: string, urls: readonly UrlSeed[], lit: LiteralSeed): string {
  const url = hostileUrl(idx, aims, urls[0]!, entityRef(idx, set, urls[0]!.other % 4 === 0 ? lit : PLAIN_KEY));
  return JSON.stringify(idx.version === "2.0" ? { uri: url } : { "@odata.id": url });
}

/** How an update with URLs in its body is sent: method, tunnel, `If-Match` (without one, PUT and PATCH are upserts: a create too). */
const UPDATE_METHODS: readonly (readonly [string, string | undefined, boolean])[] = [
  ["MERGE", undefined, false],
  ["PATCH", undefined, true],
  ["PUT", undefined, true],
  ["POST", "MERGE", false],
  ["POST", "PATCH", true],
  ["PATCH", undefined, false],
];

/**
 * Writes with URLs in their bodies that the grants allow (else any update),
 * each with a navigation; creates and updates whose target the key may read
 * three times (only they can be forwarded: the others test the refusal).
 */
function focusCandidates(idx: TypeIndex): { set: string; write: "create" | "update" | "link"; nav: [string, NavDef] }[] {
  const out: { set: string; write: "create" | "update" | "link"; nav: [string, NavDef] }[] = [];
  for (const set of Object.keys(idx.def.sets)) {
    const ops = idx.grants[set] ?? [];
    const navs = idx.members(idx.types.get(idx.def.sets[set]!)!).navs;
    for (const nav of navs) {
      const times = (idx.grants[nav[1].target] ?? []).includes("get") ? 3 : 1;
      for (let i = 0; i < times; i++) {
        if (ops.includes("create")) out.push({ set, write: "create", nav });
        if (ops.includes("update")) out.push({ set, write: "update", nav });
      }
      // A link change also reads its source (the path navigates through it).
      if (ops.includes("update")) out.push({ set, write: "link", nav });
    }
  }
  if (out.length > 0) return out;
  for (const set of Object.keys(idx.def.sets)) for (const nav of idx.members(idx.types.get(idx.def.sets[set]!)!).navs) out.push({ set, write: "update", nav });
  return out;
}

/** The focused write of a seed: path, method, headers and body. */
function focusRequest(idx: TypeIndex, aims: UrlAims, focus: FocusSeed, lit: LiteralSeed): Omit<Built, "pairs"> {
  const candidates = focusCandidates(idx);
  const c = pick(candidates, focus.pick);
  const type = idx.types.get(idx.def.sets[c.set]!)!;
  const prims = primitiveProps(idx.members(type).props);
  const [pn, pk] = prims.length > 0 ? pick(prims, focus.pick) : ["Note", "string"];
  const data = focus.withData ? `"${pn}":${pk === "string" ? JSON.stringify(lit.text) : String(lit.text.length)}` : undefined;
  const headers: [string, string][] = [["Content-Type", "application/json"]];
  const key = keyText(idx, type, c.set, { ...focus.key, form: focus.key.form % 3 }, []).suffix;
  if (c.write === "create") {
    const body = referenceBody(idx, aims, type, c.nav, focus.form, focus.urls, lit, data);
    return { path: c.set, method: "POST", headers, body: Buffer.from(body, "utf8"), type, shape: "collection" };
  }
  if (c.write === "link") {
    const [navName, nav] = c.nav;
    // POST adds to a collection, PUT sets a single-valued navigation.
    const method = nav.many ? "POST" : "PUT";
    if (focus.method % 3 === 0) headers.push(["If-Match", "*"]);
    const path = idx.version === "2.0" ? `${c.set}${key}/$links/${navName}` : `${c.set}${key}/${navName}/$ref`;
    return { path, method, headers, body: Buffer.from(linkBody(idx, aims, nav.target, focus.urls, lit), "utf8"), type: undefined, shape: "other" };
  }
  const [method, tunnel, ifMatch] = pick(UPDATE_METHODS, focus.method);
  if (tunnel !== undefined) headers.push([focus.method % 2 === 0 ? "X-HTTP-Method" : "X-HTTP-Method-Override", tunnel]);
  if (ifMatch) headers.push(["If-Match", "*"]);
  const body = referenceBody(idx, aims, type, c.nav, focus.form, focus.urls, lit, data);
  return { path: `${c.set}${key}`, method, headers, body: Buffer.from(body, "utf8"), type, shape: "entity" };
}

/** What URLs in a case's requests may aim at, for a service root of the universe. */
function aimsOf(u: Universe, instanceName: string, service: string): UrlAims {
  const client = `/odata/${instanceName}/${service}`;
  const roots = new Set<string>();
  const siblings = new Set<string>();
  const foreign: string[] = [];
  for (const i of u.instances) {
    for (const [name, s] of Object.entries(i.services)) {
      roots.add(`/odata/${i.name}/${name}`);
      roots.add(rootPath(i, name));
      if (name !== service) {
        siblings.add(name);
        siblings.add(s.path);
      }
    }
    roots.add(`/odata/${i.name}`);
  }
  roots.delete(client);
  roots.add("/admin");
  roots.add(`/odata/${instanceName}/${service.toLowerCase()}`);
  for (const [name, def] of Object.entries(u.services)) {
    if (name === service) continue;
    for (const [set, typeName] of Object.entries(def.sets)) {
      const key = def.types.find((t) => t.name === typeName)?.key ?? [];
      foreign.push(`${set}(${key.length <= 1 ? "'1'" : key.map((k) => `${k}='1'`).join(",")})`);
    }
  }
  return { client, roots: [...roots], siblings: [...siblings], foreign, ids: [] };
}

/** Builds one request (below the service root) from its seed, as `shape` says. */
function buildRequest(idx: TypeIndex, seed: RequestSeed, aims: UrlAims, shape: ShapeName = "legacy"): Built {
  if (shape !== "legacy") {
    const b = shapeRequest(shape, idx, aims, seed.special);
    if (b !== undefined) return b;
  }
  const aliases: string[] = [];
  if (seed.focus !== null) {
    // A write the key may do with URLs in its body; options now and then (they do not change what the body means).
    const f = focusRequest(idx, aims, seed.focus, seed.body.literal);
    const optionType = f.shape === "other" ? undefined : f.type;
    const pairs = seed.options.slice(0, seed.focus.pick % 8 === 0 ? 1 : 0).map((o) => optionPair(idx, optionType, o, aliases));
    return { ...f, pairs: [...pairs, ...aliases] };
  }
  const p = buildPath(idx, seed.path, aliases);
  const [method, tunnel] = pick(METHODS, seed.method);
  const headers: [string, string][] = [];
  if (tunnel !== undefined) headers.push([seed.method % 2 === 0 ? "X-HTTP-Method" : "X-HTTP-Method-Override", tunnel]);
  for (const h of seed.headers) {
    const header = pick(EXTRA_HEADERS, h);
    if (!headers.some(([n]) => n.toLowerCase() === header[0].toLowerCase())) headers.push([header[0], header[1]]);
  }
  const optionType = p.shape === "other" && !p.path.endsWith("$count") ? undefined : p.type;
  const pairs = seed.options.map((o) => optionPair(idx, optionType, o, aliases));
  pairs.push(...aliases);
  const writes = method !== "GET" && method !== "HEAD" && method !== "DELETE" && method !== "OPTIONS";
  // Reads and deletes rarely carry a body; writes usually do.
  const wantBody = writes ? seed.body.kind !== 0 : seed.body.kind === 7 && seed.body.pick % 3 === 0;
  let body: Buffer | undefined;
  if (wantBody) {
    const b = p.path.endsWith("$ref") && seed.body.kind === 3 ? linkBody(idx, aims, p.set, seed.body.urls, seed.body.literal) : entityBody(idx, aims, p.type, seed.body);
    if (b !== undefined) {
      body = typeof b === "string" ? Buffer.from(b, "utf8") : b;
      // Media, Atom and JSON-looking bodies mostly come undeclared; the rest mostly as JSON.
      const ct = seed.body.kind % 8 >= 5 && seed.body.contentType % 3 !== 2 ? pick(UNDECLARED_TYPES, seed.body.pick) : pick(CONTENT_TYPES, seed.body.contentType);
      if (ct !== undefined) headers.push(["Content-Type", ct]);
    }
  }
  return { path: p.path, pairs, method, headers, ...(body ? { body } : {}), type: p.type, shape: p.shape };
}

/** Applies mutations to a target (positions taken modulo the zone's length). */
function mutate(target: string, zones: { path: [number, number]; query: [number, number]; after: number }, mutations: readonly MutationSeed[]): string {
  let out = target;
  for (const m of mutations) {
    const [from, to] =
      m.zone === 0 ? zones.path : m.zone === 1 ? zones.query : m.zone === 2 ? [zones.after, out.length] : [0, out.length];
    const lo = Math.min(from, out.length);
    const hi = Math.max(lo, Math.min(to + (out.length - target.length), out.length));
    const at = lo + (m.at % (hi - lo + 1));
    switch (m.mode) {
      case 0:
        out = out.slice(0, at) + m.fragment + out.slice(at);
        break;
      case 1:
        out = out.slice(0, at) + m.fragment + out.slice(at + 1);
        break;
      default: {
        const c = out[at];
        if (c === undefined) break;
        const once = `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`;
        const code = c.charCodeAt(0) < 0x80 ? (m.mode === 3 ? `%25${once.slice(1)}` : once) : encodeURIComponent(c);
        out = out.slice(0, at) + code + out.slice(at + 1);
      }
    }
  }
  return out;
}

const SEPARATORS = ["&", ";", "&&"];

/** Builds a case from its seed. */
export function buildCase(u: Universe, seed: CaseSeed): FuzzCase {
  const instance = pick(u.instances, seed.instance);
  const serviceNames = Object.keys(instance.services);
  // Mostly a service the key may use (each alike), now and then another (one it may not, if the instance has one).
  const granted = serviceNames.filter((n) => Object.keys(u.grants[n] ?? {}).length > 0);
  const others = serviceNames.filter((n) => !granted.includes(n));
  const service =
    seed.service >= 8 ? (others.length > 0 ? others[0]! : serviceNames[serviceNames.length > 1 ? 1 : 0]!) : granted.length > 0 ? pick(granted, seed.service) : serviceNames[0]!;
  const idx = new TypeIndex(u.services[service]!, instance.services[service]!.version, new Set(Object.keys(u.grants[service] ?? {})), u.grants[service] ?? {});
  const prefix = `/odata/${instance.name}/${service}/`;
  const aims = aimsOf(u, instance.name, service);
  const shape = SHAPES[seed.shape] ?? "legacy";
  // The shapes' hostility is in what they build (and in their near misses, now and then mutated too).
  const mutated = (special: SpecialSeed) => shape === "legacy" || (!special.valid && special.form % 4 === 0);

  if (seed.batch === null) {
    const b = buildRequest(idx, seed.request, aims, shape);
    const query = b.pairs.length > 0 ? `?${b.pairs.join(pick(SEPARATORS, seed.request.separator))}` : "";
    const plain = `${prefix}${b.path}${query}`;
    // A focused write's hostility is in its body: its target is mostly left as built.
    const focus = seed.request.focus;
    const target = mutate(
      plain,
      { path: [prefix.length, prefix.length + b.path.length], query: [prefix.length + b.path.length, plain.length], after: prefix.length },
      mutated(seed.request.special) && (shape !== "legacy" || focus === null || focus.pick % 8 === 1) ? seed.request.mutations : [],
    );
    return { kind: "plain", shape, instance: instance.name, service, method: b.method, target, headers: b.headers, ...(b.body ? { body: b.body } : {}) };
  }

  const batch = seed.batch;
  const clientRoot = `/odata/${instance.name}/${service}`;
  const parts = batch.parts.map((p, i) => {
    // URLs in a part's body may refer to the parts before it.
    const partAims = { ...aims, ids: Array.from({ length: i }, (_, j) => String(j + 1)) };
    const b = buildRequest(idx, p, partAims, shape);
    const query = b.pairs.length > 0 ? `?${b.pairs.join(pick(SEPARATORS, p.separator))}` : "";
    let url = mutate(`${b.path}${query}`, { path: [0, b.path.length], query: [b.path.length, b.path.length + query.length], after: 0 }, mutated(p.special) ? p.mutations : []);
    // A well-formed shape's part URL is relative, an absolute path or an absolute URL below the service root.
    switch (pick(batch.urlForms, i) % (mutated(p.special) ? 5 : 3)) {
      case 1:
        url = `${clientRoot}/${url}`;
        break;
      case 2:
        url = `http://localhost${clientRoot}/${url}`;
        break;
      case 3:
        if (i > 0) url = `$${i}/${url.replace(/^[^/?]*\/?/, "")}`;
        break;
      case 4:
        url = `${hostileUrl(idx, partAims, pick(batch.urls, i), b.path)}${query}`;
        break;
    }
    const method = b.method === "OPTIONS" ? "GET" : b.method;
    return { ...b, method, url, id: String(i + 1) };
  });
  const outerTarget = mutate(`${clientRoot}/$batch`, { path: [clientRoot.length, clientRoot.length + 7], query: [clientRoot.length + 7, clientRoot.length + 7], after: clientRoot.length }, batch.outer);
  // Link changes mostly in change sets.
  const format = shape === "link" && batch.format === 0 ? 1 : batch.format;
  if (format === 2) {
    const requests = parts.map((p) => {
      const headers: Record<string, string> = {};
      for (const [n, v] of p.headers) headers[n.toLowerCase()] = v;
      const r: Record<string, unknown> = { id: p.id, method: p.method, url: p.url };
      if (Object.keys(headers).length > 0) r.headers = headers;
      if (p.body !== undefined) {
        const text = p.body.toString("utf8");
        try {
          r.body = JSON.parse(text);
        } catch {
          r.body = text;
        }
      }
      if (p.url.startsWith("$")) r.dependsOn = [String(Number(p.id) - 1)];
      return r;
    });
    return {
      kind: "batch-json",
      shape,
      instance: instance.name,
      service,
      method: "POST",
      target: outerTarget,
      headers: [["Content-Type", "application/json"]],
      body: Buffer.from(JSON.stringify({ requests }), "utf8"),
    };
  }
  const httpPart = (p: (typeof parts)[number], withId: boolean) => {
    const lines = ["Content-Type: application/http", "Content-Transfer-Encoding: binary", ...(withId ? [`Content-ID: ${p.id}`] : []), "", `${p.method} ${p.url} HTTP/1.1`];
    for (const [n, v] of p.headers) lines.push(`${n}: ${v}`);
    lines.push("", p.body?.toString("latin1") ?? "");
    return lines.join("\r\n");
  };
  const writes = parts.filter((p) => p.method !== "GET" && p.method !== "HEAD");
  const reads = parts.filter((p) => p.method === "GET" || p.method === "HEAD");
  const chunks: string[] = [];
  if (format === 1 && writes.length > 0) {
    for (const r of reads) chunks.push(httpPart(r, false));
    chunks.push(
      ["Content-Type: multipart/mixed; boundary=changeset_fz", "", ...writes.map((w) => `--changeset_fz\r\n${httpPart(w, true)}`), "--changeset_fz--", ""].join("\r\n"),
    );
  } else {
    for (const p of parts) chunks.push(httpPart(p, false));
  }
  const body = `${chunks.map((c) => `--batch_fz\r\n${c}\r\n`).join("")}--batch_fz--\r\n`;
  return {
    kind: "batch-multipart",
    shape,
    instance: instance.name,
    service,
    method: "POST",
    target: outerTarget,
    headers: [["Content-Type", "multipart/mixed; boundary=batch_fz"]],
    body: Buffer.from(body, "latin1"),
  };
}

/** Cases of a universe: seeds built into requests (shrinking works on the seeds). */
export function fuzzCase(u: Universe): fc.Arbitrary<{ seed: CaseSeed; case: FuzzCase }> {
  return caseSeed(u).map((seed) => ({ seed, case: buildCase(u, seed) }));
}

// ---------------------------------------------------------------- hostile JSON

/** Hostile JSON texts: duplicates, `__proto__`, deep nesting, BOM, lone surrogates, big numbers, odd white space. */
export function hostileJson(): fc.Arbitrary<string> {
  const ws = fc.constantFrom("", " ", "\t", "\n", "\r\n", "\u00a0", "\u2028", "\ufeff", "\u000b", "\u000c", "\u3000");
  const key = fc.oneof(
    fc.constantFrom("a", "b", "__proto__", "constructor", "toString", "", "\\u0061", "a\\u0000", "\\ud800", "\\udc00x", "\u00e9", "e\\u0301", "__proto__\\u0000"),
    fc.string({ maxLength: 4 }),
  );
  const number = fc.oneof(
    fc.constantFrom("0", "-0", "1e999", "-1e999", "9007199254740993", "1.0", "1E2", "0.1e-400", "01", "1.", ".5", "+1", "0x10", "NaN", "Infinity", "1e+2", "-"),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
    fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  );
  const stringLit = fc.oneof(
    fc.constantFrom('"x"', '"\\ud800"', '"\\udc00"', '"\\ud800\\udc00"', '"\ud800"', '"\\u0000"', '"\\/"', '"\\x41"', '"\t"', '"\\u00e9"', "'x'", '"a\nb"', '"\\U0041"'),
    fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      number,
      stringLit,
      fc.constantFrom("true", "false", "null", "True", "nul", "undefined"),
      fc.tuple(ws, fc.array(tie("value"), { maxLength: 3 }), ws).map(([a, items, b]) => `[${a}${items.join(",")}${b}]`),
      fc
        .tuple(ws, fc.array(fc.tuple(key, ws, tie("value")), { maxLength: 3 }), fc.boolean())
        .map(([a, members, dup]) => {
          const written = members.map(([k, w, v]) => `${JSON.stringify(k).replace(/\\\\u/g, "\\u")}${w}:${v}`);
          if (dup && written.length > 0) written.push(written[0]!);
          return `{${a}${written.join(",")}}`;
        }),
    ),
  }));
  const deep = fc.tuple(fc.integer({ min: 30, max: 140 }), fc.constantFrom("[", '{"a":')).map(([n, open]) => `${open.repeat(n)}1${(open === "[" ? "]" : "}").repeat(n)}`);
  return fc.oneof(
    { withCrossShrink: true },
    { weight: 8, arbitrary: fc.tuple(ws, value, ws).map(([a, v, b]) => `${a}${v}${b}`) },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: fc.tuple(value, fc.constantFrom("", " ", "x", ",", "}", "\u0000", "/* c */", "\n{}")).map(([v, tail]) => `${v}${tail}`) },
  );
}
