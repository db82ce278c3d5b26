/**
 * What a real back end (CAP) says it served: the entity sets named by the
 * `@odata.context` URLs of a V4 JSON answer (the set, or the navigation
 * target, with every expanded navigation), and the entity types named by V2
 * `__metadata.type` values. The fuzzer's CAP suite checks them against the
 * key's grants: a back end's own verdict, next to the oracle's.
 */
import type { Universe } from "./model.js";
import { ServiceView } from "./oracle.js";

/** One entity set an answer shows was served, with the operation that reading it needs. */
export interface Served {
  readonly entitySet: string;
  /** `get` (one entity), `list` (a collection), or `read` (V2: either). */
  readonly operation: "get" | "list" | "read";
  readonly from: string;
}

/** Splits at top-level `sep` (outside parentheses and quotes). */
function split(s: string, sep: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === "(") depth++;
    else if (!quoted && c === ")") depth--;
    else if (!quoted && depth === 0 && c === sep) {
      out.push(s.slice(from, i));
      from = i + 1;
    }
  }
  out.push(s.slice(from));
  return out;
}

/** `name(inner)` -> name and inner (undefined without parentheses). */
function call(s: string): { name: string; inner?: string } {
  const open = s.indexOf("(");
  if (open < 0 || !s.endsWith(")")) return { name: s };
  return { name: s.slice(0, open), inner: s.slice(open + 1, -1) };
}

/** Whether parenthesized text after a name is a key predicate rather than a select/expand list. */
function isKey(inner: string): boolean {
  return /['=]/.test(inner) || /^-?\d/.test(inner.trim());
}

/** Entity sets a V4 context URL says were served. */
export function servedByContext(view: ServiceView, context: string): Served[] {
  const out: Served[] = [];
  const hash = context.indexOf("#");
  if (hash < 0) return out;
  let frag = decodeURIComponent(context.slice(hash + 1));
  let single = false;
  if (frag.endsWith("/$entity")) {
    single = true;
    frag = frag.slice(0, -"/$entity".length);
  }
  const segs = split(frag, "/");
  const first = call(segs[0]!);
  const set = view.set(first.name);
  if (set === undefined) return out;
  let type = view.typeOfSet(set)!;
  let current = set;
  let many = true;
  const expand = (inner: string, at: typeof type, where: string) => {
    for (const item of split(inner, ",")) {
      const c = call(item.trim());
      if (c.inner === undefined) continue;
      const m = view.member(at, c.name);
      if (m?.kind !== "nav") continue;
      out.push({ entitySet: m.nav.target, operation: m.nav.many ? "list" : "get", from: `${where} expanded ${m.name}` });
      const t = view.types.get(m.nav.type);
      if (t) expand(c.inner, t, `${where}/${m.name}`);
    }
  };
  if (first.inner !== undefined) {
    if (isKey(first.inner)) many = false;
    else expand(first.inner, type, set);
  }
  for (const seg of segs.slice(1)) {
    const c = call(seg);
    const m = view.member(type, c.name);
    if (m?.kind !== "nav") continue;
    out.push({ entitySet: current, operation: "get", from: `navigated from ${current}` });
    current = m.nav.target;
    type = view.types.get(m.nav.type) ?? type;
    many = m.nav.many && (c.inner === undefined || !isKey(c.inner));
    if (c.inner !== undefined && !isKey(c.inner)) expand(c.inner, type, current);
  }
  out.push({ entitySet: current, operation: single || !many ? "get" : "list", from: `context ${context}` });
  return out;
}

/** The JSON documents in an answer: the body itself, or (a batch answer) every line that parses as JSON. */
function documents(body: string): unknown[] {
  try {
    return [JSON.parse(body)];
  } catch {
    const out: unknown[] = [];
    for (const line of body.split(/\r?\n/)) {
      if (!line.startsWith("{")) continue;
      try {
        out.push(JSON.parse(line));
      } catch {
        // not JSON
      }
    }
    return out;
  }
}

/** Navigation members present in the data (expanded: an object, an array or null; not a V2 `__deferred` link). */
function servedByMembers(view: ServiceView, doc: unknown, out: Served[], depth = 0): void {
  if (depth > 64 || doc === null || typeof doc !== "object") return;
  if (Array.isArray(doc)) {
    for (const item of doc) servedByMembers(view, item, out, depth + 1);
    return;
  }
  for (const [name, value] of Object.entries(doc as Record<string, unknown>)) {
    const navs = view.navsByName.get(name.toLowerCase()) ?? [];
    const deferred = value !== null && typeof value === "object" && !Array.isArray(value) && "__deferred" in value;
    if (navs.length > 0 && !deferred && (value === null || typeof value === "object")) {
      for (const { nav } of navs) out.push({ entitySet: nav.target, operation: nav.many ? "list" : "get", from: `member ${name} in the answer` });
    }
    servedByMembers(view, value, out, depth + 1);
  }
}

/**
 * Everything an answer body says was served: every `@odata.context` (V4),
 * `__metadata.type` (V2), and every navigation member holding data
 * (expanded), anywhere in it.
 */
export function servedByAnswer(universe: Universe, service: string, version: "4.0" | "2.0", body: string): Served[] {
  const def = universe.services[service];
  if (def === undefined) return [];
  const view = new ServiceView(def, version);
  const out: Served[] = [];
  for (const doc of documents(body)) servedByMembers(view, doc, out);
  for (const m of body.matchAll(/"@odata\.context"\s*:\s*"((?:[^"\\]|\\.)*)"/g)) out.push(...servedByContext(view, JSON.parse(`"${m[1]}"`) as string));
  for (const m of body.matchAll(/"type"\s*:\s*"([A-Za-z0-9_.]+)"/g)) {
    const local = m[1]!.slice(m[1]!.lastIndexOf(".") + 1);
    for (const [set, type] of Object.entries(def.sets)) if (type === local) out.push({ entitySet: set, operation: "read", from: `__metadata.type ${m[1]}` });
  }
  return out;
}

/** The served sets the key may not read, one per (entity set, operation). */
export function unpermittedServed(universe: Universe, service: string, served: readonly Served[]): Served[] {
  const grants = universe.grants[service] ?? {};
  const seen = new Set<string>();
  return served.filter((s) => {
    const ops = grants[s.entitySet] ?? [];
    const denied = s.operation === "read" ? !ops.includes("get") && !ops.includes("list") : !ops.includes(s.operation);
    const key = `${s.entitySet}|${s.operation}`;
    if (!denied || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
