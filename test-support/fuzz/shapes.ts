/**
 * Request shapes of the forwarding fuzzer beside the hostile mix of
 * ./generators.ts (`legacy`), each with its own share of the cases
 * (`SHAPE_WEIGHTS`) and each built against the model and the key's grants
 * (./model.ts), most of them well-formed so that erplink forwards them and
 * the back end's effects are judged, the rest near misses it must refuse:
 *
 * - `clean`: a request the key's grants allow, written as a careful client
 *   writes it (an entity set's list with `$filter`/`$select`/`$orderby`/
 *   `$expand`/`$top`, an entity by a key that exists, a create, an update,
 *   a delete, a granted operation's call): what makes the end-to-end shares
 *   reach the back end.
 * - `typed-key`: key predicates of every EDM type a key can have
 *   (./literals.ts: typed and untyped, V2 and V4 forms, valid and invalid
 *   for the property's type, over-long strings, `aggregation'…'` typed and
 *   quoted), named, positional, in reverse order, mixed, as a segment, on
 *   the path's first segment and after a navigation.
 * - `link`: link reads, adds, sets and removals (V4 `…/Nav/$ref`, with a key
 *   or `$id`; V2 `…/$links/Nav`), on compositions and plain navigations,
 *   tunnelled (`X-HTTP-Method`), and (in a `$batch`) in change sets.
 * - `composition-ref`: references inside compositions in bodies
 *   (`{"Items": [{"@odata.id": …}]}`, V2 `{"__metadata": {"uri": …}}` and
 *   `{"results": […]}`), binds, a single-valued composition replaced, set to
 *   null or emptied, mixed deep inserts, references with data beside.
 * - `operation`: bound and unbound functions and actions in paths (with and
 *   without parentheses, qualified or not, typed and mistyped parameters,
 *   the wrong method; V2 function imports with their parameters as query
 *   options), and operations named in expressions and lambda bodies
 *   (`Items/any(o:NS.Total gt 1)`, bare names).
 * - `percent`: percent sequences left after one decoding (`%2520`, `%2528`,
 *   `%2529`, `%252C`, `%2527`, `%253A`) in and out of string literals, in
 *   `$filter`, `$orderby`, `$select`, `$expand` and key predicates, beside
 *   singly encoded ones that decode to what they mean.
 *
 * A shape that has nothing to work on in a service (no operations, no
 * grants) falls back to `clean`, then to the hostile mix.
 */
import type { NavDef, OpDef, PropKind, TypeDef } from "./model.js";
import { grantName, opsOf } from "./model.js";
import { jsonValue, typedLiteral } from "./literals.js";
import { encodeText, hostileUrl, pick, type Built, type LiteralSeed, type TypeIndex, type UrlAims, type UrlSeed } from "./generators.js";

/** The shapes, by index in a case seed (0 is the hostile mix of ./generators.ts). */
export const SHAPES = ["legacy", "clean", "typed-key", "link", "composition-ref", "operation", "percent"] as const;
export type ShapeName = (typeof SHAPES)[number];

/** Each shape's weight among the cases (out of 100). */
export const SHAPE_WEIGHTS: Readonly<Record<ShapeName, number>> = {
  legacy: 30,
  clean: 26,
  "typed-key": 12,
  link: 10,
  "composition-ref": 7,
  operation: 9,
  percent: 6,
};

/** The numbers a shape is built from. */
export interface SpecialSeed {
  /** Which candidate (entity set, navigation, operation, grant). */
  readonly pick: number;
  /** Which form of the shape. */
  readonly form: number;
  /** Well-formed within the key's grants (most), or a near miss. */
  readonly valid: boolean;
  /** Four small numbers for the rest (keys, options, methods, URL forms). */
  readonly nums: readonly number[];
  readonly lit: LiteralSeed;
  /** A hostile URL for the near misses' bodies and `$id`. */
  readonly url: UrlSeed;
}

/** Texts of string key values and literals: plain, with a quote, a digit string. */
const TEXTS: readonly string[] = ["C1", "1000001", "x", "O'N", "A1", "42"];

// ---------------------------------------------------------------- the model, for shapes

function typeOfSet(idx: TypeIndex, set: string): TypeDef | undefined {
  const name = idx.def.sets[set];
  return name === undefined ? undefined : idx.types.get(name);
}

/** Entity sets of type `type` (an operation bound to `type` applies to their entities). */
function setsOfType(idx: TypeIndex, type: string): string[] {
  return Object.entries(idx.def.sets)
    .filter(([, t]) => t === type && idx.types.has(t))
    .map(([s]) => s);
}

const may = (idx: TypeIndex, name: string, op: string): boolean => idx.grants[name]?.includes(op) ?? false;

function maxLengthOf(idx: TypeIndex, t: TypeDef, prop: string): number | undefined {
  for (let at: TypeDef | undefined = t; at !== undefined; at = at.base ? idx.types.get(at.base) : undefined) {
    const m = at.maxLength?.[prop];
    if (m !== undefined) return m;
  }
  return undefined;
}

/** Primitive properties of a type (what a filter, an order or an update may name), keys last. */
function primitives(idx: TypeIndex, t: TypeDef): [string, PropKind][] {
  const { props, key } = idx.members(t);
  const prims = (props as [string, PropKind][]).filter(([, k]) => k !== "address" && k !== "strings");
  return [...prims.filter(([n]) => !key.includes(n)), ...prims.filter(([n]) => key.includes(n))];
}

/** Navigations of a type whose target is an entity set of the service. */
function navsOf(idx: TypeIndex, t: TypeDef): [string, NavDef][] {
  return idx.members(t).navs.filter(([, n]) => idx.def.sets[n.target] !== undefined && idx.types.has(n.type));
}

/** Entity sets of the service whose type this version serves. */
function setsServed(idx: TypeIndex): string[] {
  return Object.keys(idx.def.sets).filter((s) => typeOfSet(idx, s) !== undefined);
}

/** Items `weight` times each (weights: how much more often a candidate comes up). */
function weighted<T>(items: readonly T[], weight: (item: T) => number): T[] {
  return items.flatMap((item) => Array.from({ length: weight(item) }, () => item));
}

/**
 * A key predicate for one entity of `set`, with its parentheses: a key that
 * exists (the service's samples) or typed literals, valid for the key's
 * types when `valid`, else with one value a near miss or the form mixed;
 * single keys unnamed or named, composite ones named in order or reversed.
 */
export function keyPredicate(idx: TypeIndex, set: string, valid: boolean, n: number): string {
  const t = typeOfSet(idx, set)!;
  const { props, key } = idx.members(t);
  const kinds = key.map((k) => (props.find(([p]) => p === k)?.[1] ?? "string") as PropKind);
  const text = pick(TEXTS, n >> 2);
  const sample = idx.def.samples?.[set];
  let values: string[];
  if (sample !== undefined && sample.length > 0 && n % 3 !== 2) values = [...pick(sample, n >> 1)];
  else values = key.map((k, i) => typedLiteral(idx.def, kinds[i]!, idx.version, true, n + i, text, maxLengthOf(idx, t, k)));
  if (!valid && n % 6 !== 5) {
    const bad = n % key.length;
    values[bad] = typedLiteral(idx.def, kinds[bad]!, idx.version, false, (n >> 1) + bad, text, maxLengthOf(idx, t, key[bad]!));
  }
  values = values.map((v) => encodeText(v, 0));
  const form = (n >> 3) % 4;
  if (key.length === 1) return form === 1 ? `(${key[0]}=${values[0]})` : `(${values[0]})`;
  const pairs = key.map((k, i) => `${k}=${values[i]}`);
  if (!valid && n % 6 === 5) {
    // The forms a composite key may not take: positional, or named and positional mixed, or a name missing.
    return pick([`(${values.join(",")})`, `(${pairs[0]},${values.slice(1).join(",")})`, `(${pairs.slice(1).join(",")})`, `(${pairs.join(",")},${pairs[0]})`], n >> 3);
  }
  return `(${(form === 2 ? [...pairs].reverse() : pairs).join(",")})`;
}

/** A literal for a filter or parameter of `kind`, valid or not. */
function literalOf(idx: TypeIndex, kind: PropKind, valid: boolean, n: number, max?: number): string {
  return encodeText(typedLiteral(idx.def, kind, idx.version, valid, n, pick(TEXTS, n >> 2), max), 0);
}

/** A body's JSON members for a new entity of `t`: its key properties and one more. */
function createMembers(idx: TypeIndex, t: TypeDef, n: number): string[] {
  const { key } = idx.members(t);
  const prims = primitives(idx, t);
  const members = key.map((k) => {
    const kind = (prims.find(([p]) => p === k)?.[1] ?? "string") as PropKind;
    return `"${k}":${jsonValue(kind, idx.version, n + 7, maxLengthOf(idx, t, k))}`;
  });
  const data = prims.find(([p]) => !key.includes(p));
  if (data !== undefined) members.push(`"${data[0]}":${jsonValue(data[1], idx.version, n, maxLengthOf(idx, t, data[0]))}`);
  return members;
}

/** A body's JSON member changing one non-key property of `t` (none when it has none). */
function updateMember(idx: TypeIndex, t: TypeDef, n: number): string[] {
  const { key } = idx.members(t);
  const data = primitives(idx, t).filter(([p]) => !key.includes(p));
  if (data.length === 0) return [];
  const [p, kind] = pick(data, n);
  return [`"${p}":${jsonValue(kind, idx.version, n, maxLengthOf(idx, t, p))}`];
}

const json = (members: readonly string[]) => `{${members.join(",")}}`;
const JSON_TYPE: [string, string] = ["Content-Type", "application/json"];

function built(path: string, method: string, options: { pairs?: string[]; headers?: [string, string][]; body?: string; type?: TypeDef; shape?: Built["shape"] } = {}): Built {
  return {
    path,
    pairs: options.pairs ?? [],
    method,
    headers: options.headers ?? (options.body !== undefined ? [JSON_TYPE] : []),
    ...(options.body !== undefined ? { body: Buffer.from(options.body, "utf8") } : {}),
    type: options.type,
    shape: options.shape ?? "other",
  };
}

/** The update methods of a version: V4 PATCH (and PUT), V2 MERGE (and PATCH, PUT), each with `If-Match: *` most of the time. */
function updateMethod(idx: TypeIndex, n: number): { method: string; headers: [string, string][] } {
  const methods = idx.version === "2.0" ? ["MERGE", "MERGE", "PATCH", "PUT"] : ["PATCH", "PATCH", "PUT"];
  const method = pick(methods, n);
  return { method, headers: [JSON_TYPE, ...(n % 4 !== 3 ? ([["If-Match", "*"]] as [string, string][]) : [])] };
}

// ---------------------------------------------------------------- clean: within the grants

/** Query options a careful client writes for a read of `t` (one entity when `single`). */
function cleanOptions(idx: TypeIndex, t: TypeDef, single: boolean, nums: readonly number[]): string[] {
  const prims = primitives(idx, t);
  const readable = navsOf(idx, t).filter(([, n]) => may(idx, n.target, n.many ? "list" : "get"));
  const kinds: (() => string | undefined)[] = [
    () => (prims.length > 0 ? `$select=${pick(prims, nums[0]!)[0]}` : undefined),
    () => (readable.length > 0 ? `$expand=${pick(readable, nums[1]!)[0]}` : undefined),
  ];
  if (!single) {
    kinds.push(
      () => `$top=${1 + (nums[0]! % 5)}`,
      () => (prims.length > 0 ? `$filter=${encodeText(`${pick(prims, nums[1]!)[0]} eq `, 0)}${literalOf(idx, pick(prims, nums[1]!)[1], true, nums[2]!, maxLengthOf(idx, t, pick(prims, nums[1]!)[0]))}` : undefined),
      () => (prims.length > 0 ? `$orderby=${pick(prims, nums[2]!)[0]}${nums[3]! % 2 === 0 ? "%20desc" : ""}` : undefined),
      () => (idx.version === "2.0" ? "$inlinecount=allpages" : "$count=true"),
      () => "$skip=1",
    );
  }
  const count = nums[3]! % 3;
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const option = pick(kinds, nums[i]! + i * 3)();
    if (option !== undefined && !out.some((o) => o.split("=")[0] === option.split("=")[0])) out.push(option);
  }
  return out;
}

/** A call of `op` as its kind and version write it: `valid` parameters or a mistyped one. */
function operationCall(idx: TypeIndex, op: OpDef, valid: boolean, n: number): Built | undefined {
  const ns = idx.def.namespace;
  const params = Object.entries(op.params ?? {}) as [string, PropKind][];
  const bad = valid ? -1 : n % Math.max(1, params.length);
  const value = (kind: PropKind, i: number) => literalOf(idx, kind, i !== bad, n + i);
  const jsonParams = json(params.map(([p, kind], i) => `"${p}":${i === bad ? '"x"' : jsonValue(kind, "4.0", n + i)}`));
  if (op.binding !== undefined) {
    const sets = setsOfType(idx, op.binding);
    if (sets.length === 0) return undefined;
    const set = pick(sets, n);
    const base = op.collection ? set : `${set}${keyPredicate(idx, set, true, n)}`;
    if (op.kind === "function") return built(`${base}/${ns}.${op.name}(${params.map(([p, k], i) => `${p}=${value(k, i)}`).join(",")})`, "GET");
    return built(`${base}/${ns}.${op.name}`, "POST", { body: jsonParams });
  }
  if (idx.version === "2.0") {
    const pairs = params.map(([p, k], i) => `${p}=${value(k, i)}`);
    return built(op.name, op.kind === "function" ? "GET" : "POST", { pairs });
  }
  if (op.kind === "function") return built(`${op.name}(${params.map(([p, k], i) => `${p}=${value(k, i)}`).join(",")})`, "GET");
  return built(op.name, "POST", { body: jsonParams });
}

/** A request the key's grants allow (see the module comment); undefined when the service grants nothing. */
function clean(idx: TypeIndex, s: SpecialSeed): Built | undefined {
  const candidates: { set?: string; op: string; operation?: OpDef }[] = [];
  for (const set of setsServed(idx)) {
    for (const op of idx.grants[set] ?? []) if (["list", "get", "create", "update", "delete"].includes(op)) candidates.push({ set, op });
  }
  for (const op of opsOf(idx.def, idx.version)) if (may(idx, grantName(idx.def, op), "invoke")) candidates.push({ op: "invoke", operation: op });
  if (candidates.length === 0) return undefined;
  // Reads twice as often as writes: most of what clients send.
  const c = pick(weighted(candidates, (x) => (x.op === "list" || x.op === "get" ? 2 : 1)), s.pick);
  const [n0, n1] = s.nums as [number, number, number, number];
  if (c.operation !== undefined) return operationCall(idx, c.operation, true, n0);
  const set = c.set!;
  const t = typeOfSet(idx, set)!;
  switch (c.op) {
    case "list":
      return built(set, "GET", { pairs: cleanOptions(idx, t, false, s.nums), type: t, shape: "collection" });
    case "get": {
      const entity = `${set}${keyPredicate(idx, set, true, n0)}`;
      // Now and then on to a navigation the key may read.
      const navs = navsOf(idx, t).filter(([, n]) => may(idx, n.target, n.many ? "list" : "get"));
      if (navs.length > 0 && n1 % 4 === 3) {
        const [name, nav] = pick(navs, n1 >> 2);
        return built(`${entity}/${name}`, "GET", { type: idx.types.get(nav.type), shape: nav.many ? "collection" : "entity" });
      }
      return built(entity, "GET", { pairs: cleanOptions(idx, t, true, s.nums), type: t, shape: "entity" });
    }
    case "create":
      return built(set, "POST", { body: json(createMembers(idx, t, n0)), type: t, shape: "collection" });
    case "update": {
      const { method, headers } = updateMethod(idx, n1);
      return built(`${set}${keyPredicate(idx, set, true, n0)}`, method, { headers, body: json(updateMember(idx, t, n0)), type: t, shape: "entity" });
    }
    default:
      return built(`${set}${keyPredicate(idx, set, true, n0)}`, "DELETE", { type: t, shape: "entity" });
  }
}

// ---------------------------------------------------------------- typed keys

function typedKey(idx: TypeIndex, s: SpecialSeed): Built | undefined {
  const sets = setsServed(idx);
  if (sets.length === 0) return undefined;
  const typed = (set: string) => idx.members(typeOfSet(idx, set)!).key.some((k) => idx.members(typeOfSet(idx, set)!).props.find(([p]) => p === k)?.[1] !== "string");
  const set = pick(weighted(sets, (x) => (idx.grants[x] !== undefined ? 3 : 1) * (typed(x) ? 3 : 1)), s.pick);
  const t = typeOfSet(idx, set)!;
  const [n0, n1, n2] = s.nums as [number, number, number, number];
  const key = keyPredicate(idx, set, s.valid, n0);
  let path = `${set}${key}`;
  let type = t;
  const form = s.form % 8;
  if (form === 5 && idx.version === "4.0" && idx.members(t).key.length === 1) {
    // Key as segment (OData 4.01): the value without parentheses (a string unquoted).
    path = `${set}/${key.slice(1, -1).replace(/^[A-Za-z0-9_]+=/, "").replace(/^'(.*)'$/, "$1")}`;
  } else if (form === 6) {
    // The key of a navigation's target after the first segment's.
    const many = navsOf(idx, t).filter(([, n]) => n.many);
    if (many.length > 0) {
      const [name, nav] = pick(many, n1);
      path = `${set}${keyPredicate(idx, set, true, n1)}/${name}${keyPredicate(idx, nav.target, s.valid, n0)}`;
      type = idx.types.get(nav.type)!;
    }
  }
  const writable = (op: string) => type === t && may(idx, set, op);
  if (form === 7 && writable("delete")) return built(path, "DELETE", { type, shape: "entity" });
  if (form === 4 && writable("update")) {
    const { method, headers } = updateMethod(idx, n2);
    return built(path, method, { headers, body: json(updateMember(idx, type, n2)), type, shape: "entity" });
  }
  const pairs = n2 % 3 === 0 && primitives(idx, type).length > 0 ? [`$select=${pick(primitives(idx, type), n2)[0]}`] : [];
  return built(path, n2 % 11 === 10 ? "HEAD" : "GET", { pairs, type, shape: "entity" });
}

// ---------------------------------------------------------------- links

/** Where a body or `$id` names an entity: relative, below erplink's root of the service, an absolute URL. */
function entityUrl(aims: UrlAims, ref: string, n: number): string {
  return pick([ref, ref, `${aims.client}/${ref}`, `http://localhost${aims.client}/${ref}`], n);
}

/** What a link change needs (as erplink's access table says, the side holding the foreign key unknown: both updated). */
function linkGrants(idx: TypeIndex, set: string, nav: NavDef): { read: boolean; remove: boolean; change: boolean } {
  const m = (s: string, op: string) => may(idx, s, op);
  const children = (type: string, seen = new Set<string>()): string[] => {
    if (seen.has(type)) return [];
    seen.add(type);
    const t = idx.types.get(type);
    return t === undefined ? [] : navsOf(idx, t).filter(([, n]) => n.composition).flatMap(([, n]) => [n.target, ...children(n.type, seen)]);
  };
  const composition = nav.composition === true;
  return {
    read: m(set, "list") && m(nav.target, "list"),
    remove: m(set, "delete") && (composition ? m(nav.target, "delete") && children(nav.type).every((c) => m(c, "delete")) : m(set, "update") && m(nav.target, "update") && m(nav.target, "get")),
    change: m(set, "update") && m(nav.target, "update") && m(nav.target, "get") && (!composition || m(nav.target, "create")),
  };
}

function linkCandidates(idx: TypeIndex): { set: string; nav: [string, NavDef]; weight: number }[] {
  const out: { set: string; nav: [string, NavDef]; weight: number }[] = [];
  for (const set of setsServed(idx)) {
    for (const nav of navsOf(idx, typeOfSet(idx, set)!)) out.push({ set, nav, weight: (idx.grants[set] !== undefined ? 3 : 1) * (nav[1].composition ? 2 : 1) });
  }
  return out;
}

function link(idx: TypeIndex, aims: UrlAims, s: SpecialSeed): Built | undefined {
  const all = linkCandidates(idx);
  if (all.length === 0) return undefined;
  // Well-formed ones mostly where the grants allow some link operation (most of those then reach the back end).
  const allowed = all.filter((c) => Object.values(linkGrants(idx, c.set, c.nav[1])).some(Boolean));
  const candidates = s.valid && allowed.length > 0 && s.nums[3]! % 4 !== 0 ? allowed : all;
  const c = pick(weighted(candidates, (x) => x.weight), s.pick);
  const [navName, nav] = c.nav;
  const [n0, n1, n2, n3] = s.nums as [number, number, number, number];
  const source = `${c.set}${keyPredicate(idx, c.set, s.valid || n3 % 2 === 0, n0)}`;
  const targetKey = keyPredicate(idx, nav.target, s.valid || n3 % 2 === 1, n1);
  const targetRef = `${nav.target}${targetKey}`;
  const url = !s.valid && n2 % 2 === 1 ? hostileUrl(idx, aims, s.url, targetRef) : entityUrl(aims, targetRef, n2);
  const v2 = idx.version === "2.0";
  const linkPath = v2 ? `${source}/$links/${navName}` : `${source}/${navName}/$ref`;
  const deletePath = nav.many ? (v2 ? `${source}/$links/${navName}${targetKey}` : `${source}/${navName}${targetKey}/$ref`) : linkPath;
  const body = JSON.stringify(v2 ? { uri: url } : { "@odata.id": url });
  const tunnel = (method: string): [string, string] => [n3 % 2 === 0 ? "X-HTTP-Method" : "X-HTTP-Method-Override", method];
  const ifMatch: [string, string][] = n3 % 3 === 0 ? [["If-Match", "*"]] : [];
  const forms: (() => Built)[] = [
    () => built(linkPath, "GET"),
    () => built(deletePath, "DELETE"),
    () =>
      nav.many && !v2
        ? built(linkPath, "DELETE", { pairs: [`$id=${encodeText(url, 0)}`] })
        : built(deletePath, "POST", { headers: [tunnel("DELETE")] }),
    () => built(linkPath, nav.many ? "POST" : "PUT", { headers: [JSON_TYPE, ...ifMatch], body }),
    () => (nav.many ? built(deletePath, "POST", { headers: [tunnel("DELETE")] }) : built(linkPath, "POST", { headers: [JSON_TYPE, tunnel("PUT"), ...ifMatch], body })),
  ];
  const hostile: (() => Built)[] = [
    // The other version's form, a link without a navigation, a link through a property, `$id` elsewhere.
    () => built(v2 ? `${source}/${navName}/$ref` : `${source}/$links/${navName}`, pick(["GET", "DELETE", "POST"], n0), { headers: [JSON_TYPE], body }),
    () => built(`${source}/$ref`, pick(["DELETE", "PUT", "GET"], n0), { headers: [JSON_TYPE], body }),
    () => built(`${c.set}/$ref`, pick(["DELETE", "GET"], n0), { pairs: [`$id=${encodeText(url, 0)}`] }),
    () => built(`${linkPath}`, nav.many ? "PUT" : "POST", { headers: [JSON_TYPE], body }),
    () => built(`${linkPath}`, "DELETE", { pairs: [`$id=${encodeText(entityUrl(aims, `${pick(setsServed(idx), n1)}${keyPredicate(idx, pick(setsServed(idx), n1), true, n1)}`, n2), 0)}`] }),
    () => built(`${linkPath}`, "PATCH", { headers: [JSON_TYPE], body }),
  ];
  if (!s.valid) return pick([...forms, ...hostile], s.form)();
  // The forms the grants allow, when there are any.
  const g = linkGrants(idx, c.set, nav);
  const fitting = forms.filter((_, i) => (i === 0 ? g.read : i === 3 ? g.change : i === 1 || i === 2 ? g.remove : nav.many ? g.remove : g.change));
  return pick(fitting.length > 0 && s.nums[3]! % 4 !== 0 ? fitting : forms, s.form)();
}

// ---------------------------------------------------------------- references inside compositions

function compositionRef(idx: TypeIndex, aims: UrlAims, s: SpecialSeed): Built | undefined {
  const all = linkCandidates(idx).map((c) => ({ ...c, weight: (c.nav[1].composition ? 3 : 1) * (idx.grants[c.set] !== undefined ? 2 : 1) }));
  if (all.length === 0) return undefined;
  // Well-formed ones mostly where the key may write the parent and read (and, in a composition, create) the children.
  const allowed = all.filter((c) => (may(idx, c.set, "create") || may(idx, c.set, "update")) && may(idx, c.nav[1].target, "get") && (!c.nav[1].composition || may(idx, c.nav[1].target, "create")));
  const candidates = s.valid && allowed.length > 0 && s.nums[3]! % 4 !== 0 ? allowed : all;
  const c = pick(weighted(candidates, (x) => x.weight), s.pick);
  const t = typeOfSet(idx, c.set)!;
  const [navName, nav] = c.nav;
  const child = idx.types.get(nav.type)!;
  const [n0, n1, n2, n3] = s.nums as [number, number, number, number];
  const v2 = idx.version === "2.0";
  const childRef = `${nav.target}${keyPredicate(idx, nav.target, s.valid, n1)}`;
  const url = !s.valid && n2 % 2 === 1 ? hostileUrl(idx, aims, s.url, childRef) : entityUrl(aims, childRef, n2);
  const ref = v2 ? { __metadata: { uri: url } } : { "@odata.id": url };
  const data = JSON.parse(json(createMembers(idx, child, n3))) as Record<string, unknown>;
  const many = (items: unknown[]): unknown => (nav.many ? (v2 && n3 % 2 === 0 ? { results: items } : items) : items[0]);
  const entity = `${c.set}${keyPredicate(idx, c.set, true, n0)}`;
  const create = (members: Record<string, unknown>) => built(c.set, "POST", { body: json([...createMembers(idx, t, n0), JSON.stringify(members).slice(1, -1)].filter((m) => m !== "")), type: t, shape: "collection" });
  const update = (members: Record<string, unknown>) => {
    const { method, headers } = updateMethod(idx, n3);
    return built(entity, method, { headers, body: JSON.stringify(members), type: t, shape: "entity" });
  };
  const forms: (() => Built)[] = [
    () => create({ [navName]: many([ref]) }),
    () => update({ [navName]: many([ref]) }),
    () => {
      const bind = v2 ? { [navName]: many([ref]) } : { [`${navName}@odata.bind`]: nav.many ? [url] : url };
      return n1 % 2 === 0 ? create(bind) : update(bind);
    },
    // A single-valued composition replaced by a new child (the old one goes), or the collection by new ones.
    () => update({ [navName]: many([data]) }),
    () => update({ [navName]: nav.many ? [] : null }),
    () => create({ [navName]: many([data, ref]) }),
    () => (n1 % 2 === 0 ? create : update)({ [navName]: many([{ ...ref, ...data }]) }),
    () => update({ [navName]: many([ref, ref]) }),
  ];
  return pick(forms, s.form)();
}

// ---------------------------------------------------------------- operations

function operation(idx: TypeIndex, s: SpecialSeed): Built | undefined {
  const ns = idx.def.namespace;
  const ops = opsOf(idx.def, idx.version).filter((o) => o.binding === undefined || setsOfType(idx, o.binding).length > 0);
  if (ops.length === 0) return undefined;
  const op = pick(weighted(ops, (o) => (may(idx, grantName(idx.def, o), "invoke") ? 3 : 1)), s.pick);
  const [n0, n1, n2] = s.nums as [number, number, number, number];
  const params = Object.entries(op.params ?? {}) as [string, PropKind][];
  const args = (valid: boolean) => params.map(([p, k], i) => `${p}=${literalOf(idx, k, valid || i !== n1 % params.length, n0 + i)}`).join(",");
  const readable = setsServed(idx).filter((set) => may(idx, set, "list"));
  const expressionSets = op.binding !== undefined ? setsOfType(idx, op.binding) : readable.length > 0 ? readable : setsServed(idx);
  const exprSet = pick(expressionSets, n1);
  const exprType = typeOfSet(idx, exprSet)!;
  const qualified = op.binding !== undefined ? `${ns}.${op.name}` : op.name;
  const call = operationCall(idx, op, true, n0)!;
  const entity = op.binding !== undefined ? call.path.slice(0, call.path.lastIndexOf("/")) : "";
  const paths: (() => Built)[] = [
    () => call,
    () => operationCall(idx, op, false, n0)!,
  ];
  if (op.binding !== undefined) {
    paths.push(
      // Unqualified (OData 4.01 lets services bind it so), without or with parentheses, the other method.
      () => built(`${entity}/${op.name}${op.kind === "function" ? `(${args(true)})` : ""}`, call.method, { ...(call.body ? { body: call.body.toString("utf8") } : {}) }),
      () => built(`${entity}/${qualified}${op.kind === "function" ? "" : "()"}`, call.method, { ...(call.body ? { body: call.body.toString("utf8") } : {}) }),
      () => built(call.path, call.method === "GET" ? "POST" : "GET", { ...(call.method === "GET" ? { headers: [JSON_TYPE], body: "{}" } : {}) }),
      () => built(`${entity}/${qualified}${op.kind === "function" ? "()" : ""}`, call.method, { ...(call.body ? { body: "{}" } : {}) }),
      () => built(`${call.path}/${pick(["$count", "$value", "Name", "$ref"], n2)}`, "GET"),
    );
  } else if (idx.version === "2.0") {
    paths.push(
      () => built(`${op.name}(${args(true)})`, call.method),
      () => built(op.name, call.method === "GET" ? "POST" : "GET", { pairs: call.pairs }),
      () => built(op.name, call.method),
      () => built(`${op.name}()`, call.method, { pairs: call.pairs }),
    );
  } else {
    paths.push(
      () => built(op.kind === "function" ? op.name : `${op.name}()`, call.method, { ...(call.body ? { body: call.body.toString("utf8") } : {}) }),
      () => built(`${ns}.${call.path}`, call.method, { ...(call.body ? { body: call.body.toString("utf8") } : {}) }),
      () => built(call.path, call.method === "GET" ? "POST" : "GET"),
      () => built(`${call.path}/${pick(["$count", "$value", "Name"], n2)}`, call.method),
    );
  }
  // In expressions and lambda bodies: called, named without parentheses, unqualified.
  const lambdaHosts = setsServed(idx).flatMap((set) => navsOf(idx, typeOfSet(idx, set)!).filter(([, n]) => n.many && (op.binding === undefined || n.type === op.binding)).map(([name]) => ({ set, name })));
  const expressions: (() => Built)[] = [
    () => built(exprSet, "GET", { pairs: [`$filter=${encodeText(`${qualified}(${args(true)}) gt 1`, 0)}`], type: exprType, shape: "collection" }),
    () => built(exprSet, "GET", { pairs: [`$filter=${encodeText(`${pick([qualified, op.name], n2)} gt 1`, 0)}`], type: exprType, shape: "collection" }),
    () => built(exprSet, "GET", { pairs: [`$orderby=${pick([qualified, op.name, `${qualified}()`], n2)}%20desc`], type: exprType, shape: "collection" }),
    () => built(exprSet, "GET", { pairs: [`$select=${pick([qualified, op.name], n2)}`], type: exprType, shape: "collection" }),
  ];
  if (lambdaHosts.length > 0) {
    const h = pick(lambdaHosts, n2);
    const body = pick([`${qualified} gt 1`, `o/${qualified} gt 1`, `o/${qualified}() gt 1`, `${op.name} gt 1`, `o/${op.name} eq null`, `${qualified}(${args(true)}) gt 1`], n0);
    expressions.push(() => built(h.set, "GET", { pairs: [`$filter=${encodeText(`${h.name}/any(o:${body})`, 0)}`], type: typeOfSet(idx, h.set), shape: "collection" }));
    expressions.push(() => built(h.set, "GET", { pairs: [`$expand=${h.name}(${encodeText(`$filter=${pick([qualified, op.name], n0)} gt 1`, 0)})`], type: typeOfSet(idx, h.set), shape: "collection" }));
  }
  // Well-formed calls most of the time (paths 0 and the unqualified one), the rest spread over the near misses.
  const valid = [paths[0]!, paths[0]!, paths[0]!, ...(op.binding !== undefined ? [paths[2]!] : []), ...expressions.slice(0, 2)];
  return pick(s.valid ? valid : [...paths.slice(1), ...expressions], s.form)();
}

// ---------------------------------------------------------------- percent sequences left after decoding

function percent(idx: TypeIndex, s: SpecialSeed): Built | undefined {
  const readable = setsServed(idx).filter((set) => may(idx, set, "list") || may(idx, set, "get"));
  const sets = readable.length > 0 ? readable : setsServed(idx);
  if (sets.length === 0) return undefined;
  const set = pick(sets, s.pick);
  const t = typeOfSet(idx, set)!;
  const prims = primitives(idx, t);
  if (prims.length === 0) return undefined;
  const [n0, n1, n2] = s.nums as [number, number, number, number];
  const strings = prims.filter(([, k]) => k === "string");
  const [p] = pick(strings.length > 0 ? strings : prims, n0);
  const [q] = pick(prims, n1);
  const navs = navsOf(idx, t);
  const seq = pick(["%2520", "%2528", "%2529", "%252C", "%2527", "%253A", "%2525", "%25"], n2);
  const list = (option: string) => built(set, "GET", { pairs: [option], type: t, shape: "collection" });
  const key = idx.members(t).key;
  const stringKey = key.length === 1 && idx.members(t).props.find(([n]) => n === key[0])?.[1] === "string";
  const forms: (() => Built)[] = [
    () => list(`$filter=${p}%2520eq%2520'x'`),
    () => list(`$filter=${p}%20eq%20'a${seq}b'`),
    () => list(`$filter=${p}%20eq%20'a%2527b'`),
    () => list(`$filter=(${p}%20eq%20'x')%2520or%2520(${p}%20eq%20'y')`),
    () => list(`$filter=contains(${p}%252C'x')`),
    () => list(`$filter=%2528${p}%20eq%20'x'%2529`),
    () => list(`$orderby=${p}%2520desc`),
    () => list(`$select=${p}%252C${q}`),
    () => built(stringKey ? `${set}('${pick(["a%2527b", "1000001%2520", "x%2528", "%2527", "a%25b"], n1)}')` : `${set}(${pick(["1%2520", "%2527x%2527", "1%252C2"], n1)})`, "GET", { type: t, shape: "entity" }),
    () => list(`$filter=${p}%20eq%20'x'${seq}`),
    () => list(`$filter=${p}${seq}eq%20'x'`),
    () => list(navs.length > 0 ? `$expand=${pick(navs, n1)[0]}%2528$select=${p}%2529` : `$select=${p}${seq}`),
    // Singly encoded: what it decodes to is what it means (a space, a quote doubled inside the literal).
    () => list(`$filter=${p}%20eq%20'a%20b'`),
    () => list(`$filter=${p}%20eq%20'a%27%27b'`),
  ];
  return pick(forms, s.form)();
}

/** Builds a request of `shape` (not `legacy`); undefined when the service gives the shape nothing to work on. */
export function shapeRequest(shape: ShapeName, idx: TypeIndex, aims: UrlAims, s: SpecialSeed): Built | undefined {
  switch (shape) {
    case "clean":
      return clean(idx, s);
    case "typed-key":
      return typedKey(idx, s) ?? clean(idx, s);
    case "link":
      return link(idx, aims, s) ?? clean(idx, s);
    case "composition-ref":
      return compositionRef(idx, aims, s) ?? clean(idx, s);
    case "operation":
      return operation(idx, s) ?? clean(idx, s);
    case "percent":
      return percent(idx, s) ?? clean(idx, s);
    default:
      return undefined;
  }
}
