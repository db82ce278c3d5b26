/**
 * A back end's own `$metadata` (EDMX: V4 4.0, V2 1.0) turned into the
 * fuzzer's plain model (./model.ts `ServiceDef`): entity types with their
 * keys, properties (as property kinds, with `MaxLength`), navigations with
 * the entity set each leads to and whether it is a composition (`OnDelete
 * Action="Cascade"`, V4 on the navigation, V2 on the association's source
 * end), enumeration types, and operations (V4 bound functions and actions,
 * function and action imports; V2 function imports with `m:HttpMethod`).
 *
 * Read here with fast-xml-parser, never with erplink's own `$metadata`
 * reader (src/gateway/odata/metadata.ts): the oracle must not share its
 * reading of the document with what it judges. What the fuzzer does not
 * need is left out: a navigation whose entity set the document does not name
 * (TripPin's `Person/Trips`) is dropped (erplink reads it as an access on
 * `*`, which test/e2e/unbound-navigation-by-effect.test.ts judges by effect;
 * a name the model does not know is read by the oracle as unresolved text), complex
 * properties are all `address` (walked as a complex value), collections
 * `strings`.
 */
import { XMLParser } from "fast-xml-parser";
import type { NavDef, OpDef, PropKind, ServiceDef, TypeDef, Version } from "./model.js";

type Node = Record<string, unknown>;

const ARRAYS = new Set([
  "Schema", "EntityType", "ComplexType", "EnumType", "Member", "Property", "PropertyRef", "NavigationProperty", "Association", "End",
  "AssociationSet", "EntitySet", "Singleton", "FunctionImport", "ActionImport", "Function", "Action", "Parameter", "NavigationPropertyBinding",
  "OnDelete", "EntityContainer",
]);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@",
  removeNSPrefix: true,
  isArray: (name, _path, _leaf, isAttribute) => !isAttribute && ARRAYS.has(name),
});

const list = (n: unknown, name: string): Node[] => ((n as Node | undefined)?.[name] as Node[] | undefined) ?? [];
const attr = (n: Node, name: string): string | undefined => (typeof n[`@${name}`] === "string" ? (n[`@${name}`] as string) : undefined);
const local = (qualified: string): string => qualified.slice(qualified.lastIndexOf(".") + 1);

const PRIMITIVES: Readonly<Record<string, PropKind>> = {
  "Edm.String": "string",
  "Edm.Int32": "int",
  "Edm.Int16": "int16",
  "Edm.Int64": "int64",
  "Edm.Byte": "byte",
  "Edm.SByte": "sbyte",
  "Edm.Decimal": "decimal",
  "Edm.Double": "double",
  "Edm.Single": "single",
  "Edm.Guid": "guid",
  "Edm.Boolean": "boolean",
  "Edm.Binary": "binary",
  "Edm.Date": "date",
  "Edm.DateTime": "datetime",
  "Edm.DateTimeOffset": "datetimeoffset",
  "Edm.Time": "time",
  "Edm.TimeOfDay": "timeofday",
  "Edm.Duration": "duration",
};

/** A service's model from its `$metadata` document; `name` is the service's name in the universe. */
export function serviceFromEdmx(name: string, xml: string): { def: ServiceDef; version: Version } {
  const doc = parser.parse(xml) as Node;
  const edmx = doc.Edmx as Node;
  const version: Version = attr(edmx, "Version") === "4.0" || attr(edmx, "Version") === "4.01" ? "4.0" : "2.0";
  const schemas = list(edmx.DataServices, "Schema");
  const namespace = attr(schemas.find((s) => list(s, "EntityType").length > 0) ?? schemas[0]!, "Namespace")!;
  const all = <T extends string>(element: T): Node[] => schemas.flatMap((s) => list(s, element));
  const enums = new Map(all("EnumType").map((e) => [attr(e, "Name")!, { members: list(e, "Member").map((m) => attr(m, "Name")!), flags: attr(e, "IsFlags") === "true" }]));
  const complex = new Set(all("ComplexType").map((c) => attr(c, "Name")!));
  const kindOf = (type: string): PropKind => {
    if (/^Collection\(/.test(type)) return "strings";
    const primitive = PRIMITIVES[type];
    if (primitive !== undefined) return primitive;
    if (enums.has(local(type))) return `enum:${local(type)}`;
    if (complex.has(local(type))) return "address";
    return "string";
  };
  const containers = schemas.flatMap((s) => list(s, "EntityContainer"));
  const entitySets = containers.flatMap((c) => list(c, "EntitySet"));
  const sets: Record<string, string> = {};
  for (const s of entitySets) sets[attr(s, "Name")!] = local(attr(s, "EntityType")!);
  const setsOfType = (type: string) => Object.entries(sets).filter(([, t]) => t === type).map(([s]) => s);

  // V2: association ends (multiplicity, cascade) and association sets (from set, role -> set).
  const associations = new Map(
    all("Association").map((a) => [
      attr(a, "Name")!,
      new Map(list(a, "End").map((e) => [attr(e, "Role")!, { many: attr(e, "Multiplicity") === "*", cascade: list(e, "OnDelete").some((o) => attr(o, "Action") === "Cascade") }])),
    ]),
  );
  const associationSets = containers.flatMap((c) => list(c, "AssociationSet")).map((s) => ({
    association: local(attr(s, "Association")!),
    ends: new Map(list(s, "End").map((e) => [attr(e, "Role")!, attr(e, "EntitySet")!])),
  }));

  const types: TypeDef[] = all("EntityType").map((t) => {
    const typeName = attr(t, "Name")!;
    const base = attr(t, "BaseType");
    const props: Record<string, PropKind> = {};
    const maxLength: Record<string, number> = {};
    for (const p of list(t, "Property")) {
      const pn = attr(p, "Name")!;
      props[pn] = kindOf(attr(p, "Type")!);
      const max = attr(p, "MaxLength");
      if (max !== undefined && /^[0-9]+$/.test(max)) maxLength[pn] = Number(max);
    }
    const navs: Record<string, NavDef> = {};
    for (const n of list(t, "NavigationProperty")) {
      const nn = attr(n, "Name")!;
      let nav: NavDef | undefined;
      if (version === "4.0") {
        const type = attr(n, "Type")!;
        const many = /^Collection\(/.test(type);
        const target = local(type.replace(/^Collection\((.*)\)$/, "$1"));
        // The binding of the first set of this type (or of its base type) that has one for the path.
        const path = base === undefined ? nn : undefined;
        let bound: string | undefined;
        for (const s of entitySets) {
          const setType = local(attr(s, "EntityType")!);
          if (setType !== typeName && (base === undefined || setType !== local(base))) continue;
          for (const b of list(s, "NavigationPropertyBinding")) {
            const p = attr(b, "Path")!;
            if (p === nn || p === path || p.endsWith(`/${nn}`)) bound = attr(b, "Target")!;
          }
        }
        if (bound !== undefined) nav = { type: target, many, target: bound, ...(list(n, "OnDelete").some((o) => attr(o, "Action") === "Cascade") ? { composition: true } : {}) };
      } else {
        const assoc = local(attr(n, "Relationship")!);
        const from = attr(n, "FromRole")!;
        const to = attr(n, "ToRole")!;
        const ends = associations.get(assoc);
        const fromSets = setsOfType(typeName);
        const targets = associationSets.filter((s) => s.association === assoc && fromSets.includes(s.ends.get(from) ?? "")).map((s) => s.ends.get(to)!);
        if (ends !== undefined && targets.length === 1) {
          nav = { type: sets[targets[0]!]!, many: ends.get(to)?.many ?? false, target: targets[0]!, ...(ends.get(from)?.cascade ? { composition: true } : {}) };
        }
      }
      if (nav !== undefined) navs[nn] = nav;
    }
    const key = list(t.Key, "PropertyRef").map((r) => attr(r, "Name")!);
    return {
      name: typeName,
      ...(base !== undefined ? { base: local(base) } : {}),
      key,
      props,
      navs,
      ...(Object.keys(maxLength).length > 0 ? { maxLength } : {}),
      ...(attr(t, "HasStream") === "true" ? { stream: true } : {}),
    };
  });

  const ops: OpDef[] = [];
  const returnsOf = (type: string | undefined, entitySet: string | undefined, bindingSet?: string, entitySetPath?: string): OpDef["returns"] => {
    if (type === undefined) return undefined;
    const many = /^Collection\(/.test(type);
    const inner = type.replace(/^Collection\((.*)\)$/, "$1");
    if (!types.some((t) => t.name === local(inner))) return { kind: kindOf(inner) };
    if (entitySet !== undefined) return { set: local(entitySet.split("/").pop()!), many };
    if (entitySetPath !== undefined && bindingSet !== undefined && !entitySetPath.includes("/")) return { set: bindingSet, many };
    const candidates = setsOfType(local(inner));
    // An entity result the document places in no (single) entity set: erplink cannot authorize it.
    return { set: candidates.length === 1 ? candidates[0]! : `(${local(inner)})`, many };
  };
  const params = (nodes: Node[]): Record<string, PropKind> => Object.fromEntries(nodes.map((p) => [attr(p, "Name")!, kindOf(attr(p, "Type")!)]));
  if (version === "2.0") {
    for (const fi of containers.flatMap((c) => list(c, "FunctionImport"))) {
      const post = attr(fi, "HttpMethod")?.toUpperCase() === "POST";
      const returns = returnsOf(attr(fi, "ReturnType"), attr(fi, "EntitySet"));
      ops.push({ name: attr(fi, "Name")!, kind: post ? "action" : "function", params: params(list(fi, "Parameter")), ...(returns !== undefined ? { returns } : {}) });
    }
  } else {
    for (const [element, kind] of [
      ["Function", "function"],
      ["Action", "action"],
    ] as const) {
      for (const f of all(element)) {
        const name = attr(f, "Name")!;
        const ps = list(f, "Parameter");
        const returnType = attr((f.ReturnType as Node | undefined) ?? {}, "Type");
        if (attr(f, "IsBound") === "true") {
          const binding = attr(ps[0]!, "Type")!;
          const collection = /^Collection\(/.test(binding);
          const bindingType = local(binding.replace(/^Collection\((.*)\)$/, "$1"));
          const returns = returnsOf(returnType, undefined, setsOfType(bindingType)[0], attr(f, "EntitySetPath"));
          ops.push({ name, kind, binding: bindingType, collection, params: params(ps.slice(1)), ...(returns !== undefined ? { returns } : {}) });
          continue;
        }
        const importNode = containers.flatMap((c) => list(c, kind === "function" ? "FunctionImport" : "ActionImport")).find((i) => local(attr(i, kind === "function" ? "Function" : "Action")!) === name);
        if (importNode === undefined) continue;
        const returns = returnsOf(returnType, attr(importNode, "EntitySet"));
        ops.push({ name: attr(importNode, "Name")!, kind, params: params(ps), ...(returns !== undefined ? { returns } : {}) });
      }
    }
  }
  const def: ServiceDef = {
    name,
    namespace,
    types,
    sets,
    ops,
    ...(enums.size > 0 ? { enums: Object.fromEntries(enums) } : {}),
    documents: { [version]: xml },
  };
  return { def, version };
}
