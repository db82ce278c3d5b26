/**
 * The service model the OData authorizer needs from a back end's `$metadata`
 * document: entity sets and singletons, the structure of entity and complex
 * types, and where every navigation property leads. Pure: the caller fetches
 * and caches the XML; this module only reads it.
 *
 * Both families of CSDL are read:
 * - OData V4 (EDMX 4.0 / 4.01): a navigation leads to the entity set named by
 *   the `NavigationPropertyBinding` of the entity set (or singleton) it starts
 *   from; a containment navigation (`ContainsTarget="true"`) stays in the
 *   entity set that contains it.
 * - OData V2 (EDMX 1.0, `DataServiceVersion` 1.0 to 3.0): a navigation names
 *   an association and two roles; the `AssociationSet` of that association
 *   whose `FromRole` end is the starting entity set names the target set.
 *
 * Media entity types (V4 `HasStream="true"`, V2 `m:HasStream="true"` in the
 * `…/dataservices/metadata` namespace) are recorded, inherited along
 * `BaseType`: their entities are created by posting the media itself.
 *
 * Whatever the document does not say is left unknown, never guessed: a V4
 * navigation without a binding, or a V2 one whose association set is missing
 * or ambiguous, has no target (only its type), and the request analyzer
 * reads it as an access on every entity set (`./bind/unbound.ts`).
 */
import { XMLParser, XMLValidator } from "fast-xml-parser";

/**
 * Largest `$metadata` document accepted, in UTF-16 code units (about 16 MB of
 * ASCII XML). The largest SAP S/4HANA service documents are a few megabytes;
 * parsing one of this size takes well under a second, and anything larger is
 * refused before any parsing work is done.
 */
export const MAX_METADATA_LENGTH = 16 * 1024 * 1024;

/** Deepest element nesting accepted; CSDL needs about 12 even with deep annotations. */
const MAX_NESTED_TAGS = 100;

/** Longest base-type chain followed; longer chains are treated as a cycle. */
const MAX_TYPE_DEPTH = 32;

/** Why a `$metadata` document could not be turned into a {@link ServiceModel}. */
export class MetadataError extends Error {
  override readonly name = "MetadataError";
}

/**
 * Where a path stands in the model: the entity set whose permissions apply,
 * the structured type reached, and whether it is a collection.
 *
 * Inside a containment navigation or a complex property, `entitySet` stays
 * the entity set the path started from (contained entities have no entity set
 * of their own) and `bindingPath` records the way in from it, which is how V4
 * `NavigationPropertyBinding` paths are written.
 */
export interface Position {
  /** The entity set (or singleton) whose permissions apply here. */
  readonly entitySet: string;
  /** Qualified name of the entity or complex type reached. */
  readonly type: string;
  /** Path from `entitySet` to here, through containment, complex properties and casts. */
  readonly bindingPath: readonly string[];
  /** Whether this addresses a collection (of entities or complex values). */
  readonly collection: boolean;
  /** Whether `type` is a complex type (no key, not an entity). */
  readonly complex: boolean;
}

/** What a name means at a {@link Position}, as answered by {@link ServiceModel.step}. */
export type Step =
  /** A structural property; `position` is set when its type is complex. */
  | {
      readonly kind: "property";
      readonly name: string;
      /** Qualified name of its type (`Edm.String`, `Sales.Address`, an enum type); `""` for a dynamic property. */
      readonly type: string;
      readonly collection: boolean;
      readonly position?: Position;
      /** A dynamic property of an open type, not declared in the document. */
      readonly dynamic?: true;
    }
  /**
   * A navigation property; `target` is undefined when the document does not
   * say which entity set it leads to.
   */
  | {
      readonly kind: "navigation";
      readonly name: string;
      readonly collection: boolean;
      readonly contained: boolean;
      /** Deleting the source deletes the related entities (`OnDelete Action="Cascade"`). */
      readonly cascade: boolean;
      readonly target: Position | undefined;
      /**
       * Qualified name of the entity type it leads to, also when `target` is
       * undefined; undefined when the document does not say (a V2 navigation
       * whose association is missing).
       */
      readonly targetType: string | undefined;
    }
  /** A type cast to the named (derived) type. */
  | { readonly kind: "cast"; readonly name: string; readonly position: Position }
  /** A bound function or action applicable here, by its qualified name, with the overloads that bind here. */
  | { readonly kind: "function" | "action"; readonly name: string; readonly operation: OperationInfo; readonly overloads: readonly Overload[] }
  /**
   * Nothing of that name exists here. `derivedNavigation` is set when the
   * name is a navigation property of a type derived from the one here
   * (`Fz.RushOrder/Courier` for `Courier` on `Fz.Order`): OData needs the
   * cast first, but a lenient back end may follow it without one, so no
   * caller may pass such a name as harmless.
   */
  | { readonly kind: "unknown"; readonly derivedNavigation?: string };

/** What the first segment of a resource path names, as answered by {@link ServiceModel.root}. */
export type Root =
  | { readonly kind: "entitySet" | "singleton"; readonly name: string; readonly position: Position }
  | { readonly kind: "functionImport" | "actionImport"; readonly name: string; readonly operation: OperationInfo };

/** A bound function or action, as answered by {@link ServiceModel.boundOperation}. */
export interface BoundOperation {
  readonly kind: "function" | "action";
  /** Namespace-qualified name. */
  readonly name: string;
  /** The binding parameter types of every overload. */
  readonly bindings: readonly { readonly type: string; readonly collection: boolean }[];
}

/** A parameter of a function or action (the binding parameter excluded). */
export interface Parameter {
  readonly name: string;
  /** Qualified type name (`Edm.String`, an enum, complex or entity type), without `Collection(…)`. */
  readonly type: string;
  readonly collection: boolean;
  readonly nullable: boolean;
}

/** One overload of a function or action. */
export interface Overload {
  /** The binding parameter (bound operations only). */
  readonly binding?: { readonly name: string; readonly type: string; readonly collection: boolean };
  /** The parameters after the binding parameter. */
  readonly parameters: readonly Parameter[];
  /** The return type, when there is one. */
  readonly returns?: { readonly type: string; readonly collection: boolean };
  /** `EntitySetPath`, split at `/` (it starts with the binding parameter's name: `["order", "Items"]`). */
  readonly entitySetPath?: readonly string[];
}

/**
 * A function or action a request may invoke: a function or action import
 * (V4), a V2 function import, or a bound function or action. What a key's
 * permissions grant it by is {@link OperationInfo.name}.
 */
export interface OperationInfo {
  /** `function` (no side effects, called with GET) or `action` (V4 actions; V2 function imports called with POST). */
  readonly kind: "function" | "action";
  /**
   * The name a key's permissions grant it by: an import's name in the
   * entity container (`releaseApprovalRequest`), a bound operation's
   * namespace-qualified name (`Sales.Approve`).
   */
  readonly name: string;
  /** The function's or action's qualified name (for a V2 function import, its own name). */
  readonly qualifiedName: string;
  readonly bound: boolean;
  readonly overloads: readonly Overload[];
  /** An import's `EntitySet` as written: the entity set its result lies in (`Set` or `Namespace.Container/Set`). */
  readonly entitySet?: string;
  /** A V2 function import's `m:HttpMethod` (GET when absent). */
  readonly httpMethod?: "GET" | "POST";
}

/** A key property and its type, as {@link ServiceModel.keyTypes} answers. */
export interface KeyProperty {
  readonly name: string;
  /** Qualified type name, type definitions resolved; `""` when the document does not declare it. */
  readonly type: string;
  readonly maxLength?: number;
}

/** An enumeration type: its members' names. */
export interface EnumInfo {
  readonly name: string;
  readonly members: readonly string[];
  readonly flags: boolean;
}

/**
 * A parsed `$metadata` document. Names are looked up exactly as the
 * document spells them (see `findName`).
 */
export interface ServiceModel {
  /** Protocol family: `"4.0"` for EDMX 4.0/4.01, `"2.0"` for EDMX 1.0 (OData V1 to V3). */
  readonly version: "2.0" | "4.0";
  /** Entity set names of the service's entity container, in document order. */
  readonly entitySets: readonly string[];
  /** Singleton names (V4), in document order. */
  readonly singletons: readonly string[];
  /** Function import names (V2: every function import), in document order. */
  readonly functionImports: readonly string[];
  /** Action import names (V4), in document order. */
  readonly actionImports: readonly string[];
  /** What the first segment of a resource path names, if anything. */
  root(name: string): Root | undefined;
  /** What `name` means at `position`. */
  step(position: Position, name: string): Step;
  /**
   * Every navigation reachable from `position` without passing another
   * entity: those of the type and its base types, and those inside its
   * complex properties (nested up to four levels). Each as a path of names.
   */
  navigationPaths(position: Position): readonly (readonly string[])[];
  /**
   * The navigation properties declared on types derived from the type at
   * `position` (not on it or its base types), as `<derived type>/<name>`,
   * by lower-case name.
   */
  derivedNavigations(position: Position): ReadonlyMap<string, string>;
  /**
   * The navigations only types derived from the type at `position` declare
   * (and those of complex properties, of any type reached, whose derived
   * complex types declare them), each as a path with the casts written
   * (`Fz.RushOrder/Courier`, `Addr/Fz.ExtAddress/Owner`): what a back end
   * may expand for `$expand=*` on an entity of a derived type.
   */
  derivedNavigationPaths(position: Position): readonly (readonly string[])[];
  /** Key property names of the type at `position` (empty for complex types). */
  keyOf(position: Position): readonly string[];
  /**
   * What deleting the entity at `position` deletes too: the targets of its
   * navigations declared `OnDelete Action="Cascade"` (V4 on the navigation,
   * V2 on the association end), and theirs in turn, each with the path
   * that leads there. A target the document does not name is `undefined`.
   */
  cascades(position: Position): readonly { readonly path: string; readonly target: Position | undefined }[];
  /**
   * Whether the type at `position` is a media entity type (`HasStream`, V2
   * `m:HasStream`, on it or a base type); false for complex types and types
   * the document does not declare.
   */
  hasStream(position: Position): boolean;
  /**
   * Where the navigation path `navPath` (navigation and complex property
   * names, casts allowed) leads from `entitySet`, or undefined when it does
   * not end in a navigation or its target is unknown.
   */
  navigationTarget(entitySet: string, navPath: readonly string[]): { entitySet: string; collection: boolean } | undefined;
  /** Whether `name` is a structural property of the entity type of `entitySet`. */
  isProperty(entitySet: string, name: string): boolean;
  /** Key property names of the entity type of `entitySet`, or undefined when there is no such set. */
  keyProperties(entitySet: string): readonly string[] | undefined;
  /** A bound function or action by qualified (namespace or alias) or, if unique, unqualified name. */
  boundOperation(name: string): BoundOperation | undefined;
  /** Every operation a request may invoke: the imports in document order, then the bound operations. */
  readonly operations: readonly OperationInfo[];
  /**
   * The key properties of the type at `position` with their types, type
   * definitions resolved to their underlying primitive type (enum types
   * stay qualified): what a key predicate's values must be literals of.
   */
  keyTypes(position: Position): readonly KeyProperty[];
  /** An enumeration type by qualified (namespace or alias) name. */
  enumType(name: string): EnumInfo | undefined;
  /** A type definition's underlying type, or the name itself (qualified) for any other type. */
  underlyingType(name: string): string;
  /** Whether `name` (qualified, alias allowed) names a structured (entity or complex) type. */
  isStructuredType(name: string): boolean;
  /**
   * The entity sets (or singletons) the result of an overload of `operation`
   * lies in, each with whether it is a collection: an import's `EntitySet`,
   * a bound operation's `EntitySetPath` followed from `binding` (the bound
   * position), or else every entity set of the returned entity type. Empty
   * when the result is no entity; undefined when the document does not say
   * where an entity result lies.
   */
  returnedSets(operation: OperationInfo, overload: Overload, binding?: Position): readonly { readonly entitySet: string; readonly collection: boolean }[] | undefined;
  /**
   * Which side of the navigation `name` at `position` holds the foreign key a
   * link change writes: `source` when the navigation declares a referential
   * constraint, `target` when its partner (V4) or the association's
   * dependent end (V2) does, undefined when the document does not say.
   */
  linkHolder(position: Position, name: string): "source" | "target" | undefined;
}

interface PropertyDef {
  readonly type: string;
  readonly collection: boolean;
  /** The `MaxLength` facet, when it is a number. */
  readonly maxLength?: number;
}

interface NavigationDef {
  readonly type: string;
  readonly collection: boolean;
  readonly containsTarget: boolean;
  /** V4: `<OnDelete Action="Cascade"/>` on the navigation. */
  readonly cascade?: boolean;
  /** V4: the navigation declares a `ReferentialConstraint` (its source holds the foreign key). */
  readonly constrained?: boolean;
  /** V4: the partner navigation's name on the target type. */
  readonly partner?: string;
  // V2 only.
  readonly relationship?: string;
  readonly fromRole?: string;
  readonly toRole?: string;
}

interface StructuredType {
  readonly name: string;
  readonly kind: "entity" | "complex";
  readonly baseType?: string;
  readonly open: boolean;
  /** Declared a media entity type here (not inherited). */
  readonly hasStream: boolean;
  readonly keys?: readonly string[];
  readonly properties: Map<string, PropertyDef>;
  readonly navigations: Map<string, NavigationDef>;
}

interface SetDef {
  readonly name: string;
  readonly type: string;
  readonly singleton: boolean;
  /** V4 NavigationPropertyBinding: path -> target, exactly as written. */
  readonly bindings: Map<string, string>;
  /** Same, keyed by the path without its type casts; several targets = ambiguous. */
  readonly looseBindings: Map<string, Set<string>>;
}

/** A V2 association end, by role. */
interface AssociationEnd {
  readonly type: string;
  readonly many: boolean;
  /** Deleting the entity at this end deletes those at the other (`OnDelete Action="Cascade"`). */
  readonly cascade: boolean;
  /** This end is the dependent of the association's `ReferentialConstraint` (it holds the foreign key). */
  readonly dependent: boolean;
}

/** An import (V4 function or action import, V2 function import) before its operation is resolved. */
interface ImportDef {
  readonly name: string;
  readonly kind: "functionImport" | "actionImport";
  /** V4: the qualified function or action it imports. */
  readonly operation?: string;
  /** V2: the function import's own definition. */
  readonly inline?: OperationInfo;
  readonly entitySet?: string;
}

interface AssociationSetDef {
  readonly association: string;
  readonly ends: Map<string, string>; // role -> entity set
}

type XNode = { readonly "@"?: Record<string, string> } & { readonly [child: string]: unknown };

function children(node: XNode, name: string): XNode[] {
  const value = node[name];
  return Array.isArray(value) ? (value as XNode[]) : [];
}

function attr(node: XNode, name: string): string | undefined {
  const attrs = node["@"];
  return attrs !== undefined && Object.hasOwn(attrs, name) ? attrs[name] : undefined;
}

function requiredAttr(node: XNode, name: string, element: string): string {
  const value = attr(node, name);
  if (value === undefined || value === "") throw new MetadataError(`${element} without ${name}`);
  return value;
}

/** `Collection(NS.T)` -> { type: "NS.T", collection: true } */
function splitCollection(type: string): { type: string; collection: boolean } {
  const m = /^Collection\((.+)\)$/.exec(type);
  return m ? { type: m[1], collection: true } : { type, collection: false };
}

/**
 * Exact lookup. Names are never matched in another case: a back end that
 * matches exactly (SAP's mock server, SAP Gateway) reads a name in another
 * case as no name at all, and acts on what stands before it (SAP's mock
 * server reads the whole entity set there, or deletes the entity a path
 * starts from), so a spelling erplink read as a member would be another
 * request there. A name that is not the model's is refused.
 */
function findName<T>(map: ReadonlyMap<string, T>, name: string): [string, T] | undefined {
  const exact = map.get(name);
  return exact === undefined ? undefined : [name, exact];
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributesGroupName: "@",
  attributeNamePrefix: "",
  removeNSPrefix: true,
  // No entity of any kind is expanded: CSDL names never need one, and a DTD
  // is refused before parsing anyway.
  processEntities: false,
  htmlEntities: false,
  parseAttributeValue: false,
  parseTagValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: MAX_NESTED_TAGS,
  isArray: (_name: string, _path: unknown, _leaf: boolean, isAttribute: boolean) => !isAttribute,
});

/**
 * Parses a `$metadata` document (OData V4 EDMX 4.0/4.01, or V2 EDMX 1.0).
 *
 * Refuses, with a {@link MetadataError}: documents longer than
 * {@link MAX_METADATA_LENGTH}; any document type declaration (`<!DOCTYPE`),
 * so that no entity is ever declared, expanded or fetched (XXE, "billion
 * laughs"); XML that is not well-formed; and EDMX versions other than those
 * above. Predefined entities such as `&amp;` are not decoded either; CSDL
 * names and paths never contain them.
 *
 * @throws MetadataError when the document is refused.
 */
export function parseMetadata(xml: string): ServiceModel {
  if (xml.length > MAX_METADATA_LENGTH) {
    throw new MetadataError(`metadata document is larger than ${MAX_METADATA_LENGTH} characters`);
  }
  if (/<!DOCTYPE/i.test(xml) || /<!ENTITY/i.test(xml)) {
    throw new MetadataError("metadata document contains a document type declaration, which is not accepted");
  }
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new MetadataError(`metadata document is not well-formed XML (line ${valid.err.line}: ${valid.err.msg})`);
  }
  let doc: XNode;
  try {
    doc = parser.parse(xml) as XNode;
  } catch (cause) {
    throw new MetadataError(`metadata document could not be parsed: ${(cause as Error).message}`);
  }
  const edmx = children(doc, "Edmx")[0];
  if (edmx === undefined) throw new MetadataError("metadata document has no Edmx root element");
  const edmxVersion = attr(edmx, "Version");
  let version: "2.0" | "4.0";
  if (edmxVersion === "4.0" || edmxVersion === "4.01") version = "4.0";
  else if (edmxVersion === "1.0") version = "2.0";
  else throw new MetadataError(`unsupported EDMX version '${edmxVersion ?? ""}'`);
  const schemas = children(edmx, "DataServices").flatMap((ds) => children(ds, "Schema"));
  if (schemas.length === 0) throw new MetadataError("metadata document has no Schema");
  return new Model(version, schemas);
}

class Model implements ServiceModel {
  readonly version: "2.0" | "4.0";
  readonly entitySets: string[] = [];
  readonly singletons: string[] = [];
  readonly functionImports: string[] = [];
  readonly actionImports: string[] = [];

  readonly #aliases = new Map<string, string>(); // alias -> namespace
  readonly #types = new Map<string, StructuredType>();
  readonly #sets = new Map<string, SetDef>();
  readonly #operations = new Map<string, BoundOperation>();
  /** Every function and action of the schemas, bound or not, by qualified name. */
  readonly #definitions = new Map<string, { kind: "function" | "action"; overloads: Overload[]; bound: boolean }>();
  readonly #importDefs = new Map<string, ImportDef>();
  readonly #importInfos = new Map<string, OperationInfo>();
  readonly #enums = new Map<string, EnumInfo>();
  /** V4 type definitions: qualified name -> underlying type. */
  readonly #typeDefinitions = new Map<string, string>();
  readonly operations: OperationInfo[] = [];
  /** The bound entries of `operations`, by qualified name. */
  readonly #boundInfos = new Map<string, OperationInfo>();
  /** V2 associations: role -> end. */
  readonly #associations = new Map<string, Map<string, AssociationEnd>>();
  readonly #associationSets: AssociationSetDef[] = [];
  /** Qualified names of the entity container (V4: targets may be `Container/Set`). */
  readonly #containerNames = new Set<string>();

  constructor(version: "2.0" | "4.0", schemas: XNode[]) {
    this.version = version;
    for (const schema of schemas) {
      const namespace = requiredAttr(schema, "Namespace", "Schema");
      const alias = attr(schema, "Alias");
      if (alias !== undefined) this.#aliases.set(alias, namespace);
    }
    for (const schema of schemas) this.#readSchema(schema);
    for (const schema of schemas) {
      const namespace = requiredAttr(schema, "Namespace", "Schema");
      for (const container of children(schema, "EntityContainer")) this.#readContainer(namespace, container);
    }
    for (const def of this.#importDefs.values()) {
      const info = this.#importInfo(def);
      if (info !== undefined) {
        this.#importInfos.set(def.name, info);
        this.operations.push(info);
      }
    }
    for (const [qualifiedName, def] of this.#definitions) {
      if (!def.bound) continue;
      const info: OperationInfo = { kind: def.kind, name: qualifiedName, qualifiedName, bound: true, overloads: def.overloads };
      this.#boundInfos.set(qualifiedName, info);
      this.operations.push(info);
    }
  }

  /** The operation an import stands for; undefined when its function or action is not declared. */
  #importInfo(def: ImportDef): OperationInfo | undefined {
    if (def.inline !== undefined) return def.inline;
    const target = def.operation === undefined ? undefined : this.#definitions.get(def.operation);
    if (target === undefined || target.bound) return undefined;
    return {
      kind: target.kind,
      name: def.name,
      qualifiedName: def.operation!,
      bound: false,
      overloads: target.overloads,
      ...(def.entitySet !== undefined ? { entitySet: def.entitySet } : {}),
    };
  }

  /** Replaces a leading schema alias with its namespace. */
  #qualify(name: string): string {
    const dot = name.lastIndexOf(".");
    if (dot <= 0) return name;
    const prefix = name.slice(0, dot);
    const namespace = this.#aliases.get(prefix);
    return namespace === undefined ? name : `${namespace}${name.slice(dot)}`;
  }

  #readSchema(schema: XNode): void {
    const namespace = requiredAttr(schema, "Namespace", "Schema");
    for (const [element, kind] of [
      ["EntityType", "entity"],
      ["ComplexType", "complex"],
    ] as const) {
      for (const node of children(schema, element)) {
        const name = `${namespace}.${requiredAttr(node, "Name", element)}`;
        const keyNode = children(node, "Key")[0];
        const keys = keyNode
          ? children(keyNode, "PropertyRef").map((ref) => requiredAttr(ref, "Name", "PropertyRef"))
          : undefined;
        const properties = new Map<string, PropertyDef>();
        for (const p of children(node, "Property")) {
          const maxLength = attr(p, "MaxLength");
          properties.set(requiredAttr(p, "Name", "Property"), {
            ...splitCollection(this.#qualifyType(requiredAttr(p, "Type", "Property"))),
            ...(maxLength !== undefined && /^[0-9]{1,9}$/.test(maxLength) ? { maxLength: Number(maxLength) } : {}),
          });
        }
        const navigations = new Map<string, NavigationDef>();
        for (const n of children(node, "NavigationProperty")) {
          const navName = requiredAttr(n, "Name", "NavigationProperty");
          const relationship = attr(n, "Relationship");
          if (relationship !== undefined) {
            navigations.set(navName, {
              type: "",
              collection: false,
              containsTarget: false,
              relationship: this.#qualify(relationship),
              fromRole: requiredAttr(n, "FromRole", "NavigationProperty"),
              toRole: requiredAttr(n, "ToRole", "NavigationProperty"),
            });
          } else {
            const t = splitCollection(this.#qualifyType(requiredAttr(n, "Type", "NavigationProperty")));
            const cascade = children(n, "OnDelete").some((d) => attr(d, "Action") === "Cascade");
            const partner = attr(n, "Partner");
            navigations.set(navName, {
              ...t,
              containsTarget: attr(n, "ContainsTarget") === "true",
              cascade,
              constrained: children(n, "ReferentialConstraint").length > 0,
              ...(partner !== undefined ? { partner } : {}),
            });
          }
        }
        const baseType = attr(node, "BaseType");
        this.#types.set(name, {
          name,
          kind,
          ...(baseType !== undefined ? { baseType: this.#qualify(baseType) } : {}),
          open: attr(node, "OpenType") === "true",
          // V2 writes `m:HasStream`; the parser drops namespace prefixes, so both read as `HasStream`.
          hasStream: kind === "entity" && attr(node, "HasStream") === "true",
          ...(keys !== undefined ? { keys } : {}),
          properties,
          navigations,
        });
      }
    }
    for (const [element, kind] of [
      ["Function", "function"],
      ["Action", "action"],
    ] as const) {
      for (const node of children(schema, element)) {
        const name = `${namespace}.${requiredAttr(node, "Name", element)}`;
        const bound = attr(node, "IsBound") === "true";
        const params = children(node, "Parameter").map((p) => this.#parameter(p));
        const returnNode = children(node, "ReturnType")[0];
        const returns = returnNode === undefined ? undefined : splitCollection(this.#qualifyType(requiredAttr(returnNode, "Type", "ReturnType")));
        const existing = this.#definitions.get(name);
        if (existing !== undefined && (existing.kind !== kind || existing.bound !== bound)) {
          throw new MetadataError(`'${name}' is declared both as ${existing.kind === kind ? "bound and unbound" : "a function and an action"}`);
        }
        let overload: Overload;
        if (bound) {
          const [first, ...rest] = params;
          if (first === undefined) continue; // malformed: a bound operation needs its binding parameter
          const path = attr(node, "EntitySetPath");
          const pathSegments = path === undefined ? undefined : path.split("/");
          overload = {
            binding: { name: first.name, type: first.type, collection: first.collection },
            parameters: rest,
            ...(returns !== undefined ? { returns } : {}),
            ...(pathSegments !== undefined ? { entitySetPath: pathSegments } : {}),
          };
          const binding = { type: first.type, collection: first.collection };
          const known = this.#operations.get(name);
          this.#operations.set(name, { kind, name, bindings: [...(known?.bindings ?? []), binding] });
        } else {
          overload = { parameters: params, ...(returns !== undefined ? { returns } : {}) };
        }
        if (existing !== undefined) existing.overloads.push(overload);
        else this.#definitions.set(name, { kind, overloads: [overload], bound });
      }
    }
    for (const node of children(schema, "EnumType")) {
      const name = `${namespace}.${requiredAttr(node, "Name", "EnumType")}`;
      const members = children(node, "Member").map((m) => requiredAttr(m, "Name", "Member"));
      this.#enums.set(name, { name, members, flags: attr(node, "IsFlags") === "true" });
    }
    for (const node of children(schema, "TypeDefinition")) {
      const name = `${namespace}.${requiredAttr(node, "Name", "TypeDefinition")}`;
      this.#typeDefinitions.set(name, this.#qualify(requiredAttr(node, "UnderlyingType", "TypeDefinition")));
    }
    for (const node of children(schema, "Association")) {
      const name = `${namespace}.${requiredAttr(node, "Name", "Association")}`;
      const constraint = children(node, "ReferentialConstraint")[0];
      const dependentRole = constraint === undefined ? undefined : attr(children(constraint, "Dependent")[0] ?? {}, "Role");
      const ends = new Map<string, AssociationEnd>();
      for (const end of children(node, "End")) {
        const role = requiredAttr(end, "Role", "End");
        ends.set(role, {
          type: this.#qualify(requiredAttr(end, "Type", "End")),
          many: attr(end, "Multiplicity") === "*",
          cascade: children(end, "OnDelete").some((d) => attr(d, "Action") === "Cascade"),
          dependent: role === dependentRole,
        });
      }
      this.#associations.set(name, ends);
    }
  }

  #parameter(node: XNode): Parameter {
    const t = splitCollection(this.#qualifyType(requiredAttr(node, "Type", "Parameter")));
    return { name: requiredAttr(node, "Name", "Parameter"), type: t.type, collection: t.collection, nullable: attr(node, "Nullable") !== "false" };
  }

  #qualifyType(type: string): string {
    const t = splitCollection(type);
    const q = this.#qualify(t.type);
    return t.collection ? `Collection(${q})` : q;
  }

  #readContainer(namespace: string, container: XNode): void {
    const containerName = requiredAttr(container, "Name", "EntityContainer");
    this.#containerNames.add(`${namespace}.${containerName}`);
    for (const [alias, ns] of this.#aliases) if (ns === namespace) this.#containerNames.add(`${alias}.${containerName}`);
    for (const [element, singleton] of [
      ["EntitySet", false],
      ["Singleton", true],
    ] as const) {
      for (const node of children(container, element)) {
        const name = requiredAttr(node, "Name", element);
        if (this.#sets.has(name)) throw new MetadataError(`entity set '${name}' is declared twice`);
        const type = this.#qualify(requiredAttr(node, singleton ? "Type" : "EntityType", element));
        const bindings = new Map<string, string>();
        const looseBindings = new Map<string, Set<string>>();
        for (const b of children(node, "NavigationPropertyBinding")) {
          const path = requiredAttr(b, "Path", "NavigationPropertyBinding");
          const target = requiredAttr(b, "Target", "NavigationPropertyBinding");
          bindings.set(path, target);
          const loose = withoutCasts(path.split("/")).join("/");
          let targets = looseBindings.get(loose);
          if (targets === undefined) looseBindings.set(loose, (targets = new Set()));
          targets.add(target);
        }
        this.#sets.set(name, { name, type, singleton, bindings, looseBindings });
        (singleton ? this.singletons : this.entitySets).push(name);
      }
    }
    for (const [element, kind] of [
      ["FunctionImport", "functionImport"],
      ["ActionImport", "actionImport"],
    ] as const) {
      for (const node of children(container, element)) {
        const name = requiredAttr(node, "Name", element);
        if (this.#importDefs.has(name)) throw new MetadataError(`import '${name}' is declared twice`);
        const entitySet = attr(node, "EntitySet");
        const operation = attr(node, kind === "functionImport" ? "Function" : "Action");
        if (this.version === "2.0") {
          // V2: the function import is the function; `m:HttpMethod` says how it is called.
          const method = attr(node, "HttpMethod")?.toUpperCase() === "POST" ? "POST" : "GET";
          const returnType = attr(node, "ReturnType");
          const returns = returnType === undefined ? undefined : splitCollection(this.#qualifyType(returnType));
          const inline: OperationInfo = {
            kind: method === "POST" ? "action" : "function",
            name,
            qualifiedName: name,
            bound: false,
            overloads: [{ parameters: children(node, "Parameter").map((p) => this.#parameter(p)), ...(returns !== undefined ? { returns } : {}) }],
            ...(entitySet !== undefined ? { entitySet } : {}),
            httpMethod: method,
          };
          this.#importDefs.set(name, { name, kind, inline });
        } else {
          this.#importDefs.set(name, {
            name,
            kind,
            ...(operation !== undefined ? { operation: this.#qualify(operation) } : {}),
            ...(entitySet !== undefined ? { entitySet } : {}),
          });
        }
        (kind === "functionImport" ? this.functionImports : this.actionImports).push(name);
      }
    }
    for (const node of children(container, "AssociationSet")) {
      const ends = new Map<string, string>();
      for (const end of children(node, "End")) {
        ends.set(requiredAttr(end, "Role", "End"), requiredAttr(end, "EntitySet", "End"));
      }
      this.#associationSets.push({ association: this.#qualify(requiredAttr(node, "Association", "AssociationSet")), ends });
    }
  }

  /** The type and its base types, most derived first; bounded against cycles. */
  #chain(typeName: string): StructuredType[] {
    const out: StructuredType[] = [];
    let name: string | undefined = typeName;
    while (name !== undefined && out.length < MAX_TYPE_DEPTH) {
      const t = this.#types.get(name);
      if (t === undefined || out.includes(t)) break;
      out.push(t);
      name = t.baseType;
    }
    return out;
  }

  #derivesFrom(typeName: string, ancestor: string): boolean {
    return this.#chain(typeName).some((t) => t.name === ancestor);
  }

  /** A member of the type chain by exact name. */
  #member<T>(typeName: string, pick: (t: StructuredType) => Map<string, T>, name: string): [string, T] | undefined {
    for (const t of this.#chain(typeName)) {
      const v = pick(t).get(name);
      if (v !== undefined) return [name, v];
    }
    return undefined;
  }

  #setPosition(set: SetDef): Position {
    return { entitySet: set.name, type: set.type, bindingPath: [], collection: !set.singleton, complex: false };
  }

  root(name: string): Root | undefined {
    const set = findName(this.#sets, name);
    if (set !== undefined) {
      const def = set[1];
      return { kind: def.singleton ? "singleton" : "entitySet", name: def.name, position: this.#setPosition(def) };
    }
    const imp = findName(this.#importDefs, name);
    const operation = imp === undefined ? undefined : this.#importInfos.get(imp[0]);
    if (imp === undefined || operation === undefined) return undefined;
    return { kind: imp[1].kind, name: imp[0], operation };
  }

  keyTypes(position: Position): readonly KeyProperty[] {
    const chain = this.#chain(position.type);
    return this.keyOf(position).map((name) => {
      const def = chain.map((t) => t.properties.get(name)).find((d) => d !== undefined);
      // A key property the document does not declare (or a collection) has no type a literal can match.
      if (def === undefined || def.collection) return { name, type: "" };
      return { name, type: this.underlyingType(def.type), ...(def.maxLength !== undefined ? { maxLength: def.maxLength } : {}) };
    });
  }

  enumType(name: string): EnumInfo | undefined {
    return this.#enums.get(this.#qualify(name));
  }

  underlyingType(name: string): string {
    const qualified = this.#qualify(name);
    return this.#typeDefinitions.get(qualified) ?? qualified;
  }

  isStructuredType(name: string): boolean {
    return this.#types.has(this.#qualify(name));
  }

  returnedSets(
    operation: OperationInfo,
    overload: Overload,
    binding?: Position,
  ): readonly { readonly entitySet: string; readonly collection: boolean }[] | undefined {
    const returns = overload.returns;
    if (returns === undefined || this.#types.get(returns.type)?.kind !== "entity") return [];
    const collection = returns.collection;
    const fits = (set: SetDef): boolean => this.#derivesFrom(set.type, returns.type) || this.#derivesFrom(returns.type, set.type);
    if (operation.entitySet !== undefined) {
      const parts = operation.entitySet.split("/");
      const name = parts.length === 2 && this.#containerNames.has(parts[0]!) ? parts[1]! : parts.length === 1 ? parts[0]! : undefined;
      const set = name === undefined ? undefined : this.#sets.get(name);
      return set !== undefined && fits(set) ? [{ entitySet: set.name, collection }] : undefined;
    }
    const path = overload.entitySetPath;
    if (path !== undefined && binding !== undefined && overload.binding !== undefined) {
      if (path[0] !== overload.binding.name) return undefined;
      let at: Position = { ...binding, collection: false };
      for (const name of path.slice(1)) {
        const step = this.step(at, name);
        if (step.kind === "navigation" && step.target !== undefined) at = step.target;
        else if (step.kind === "cast") at = step.position;
        else return undefined;
      }
      const set = this.#sets.get(at.entitySet);
      // A path to a set of another type says nothing true: the result lies wherever its type may.
      if (set !== undefined && (fits(set) || at.bindingPath.length > 0)) return [{ entitySet: at.entitySet, collection }];
    }
    // No set named: wherever an entity of that type may lie.
    const sets = [...this.#sets.values()].filter(fits).map((set) => ({ entitySet: set.name, collection: collection && !set.singleton }));
    return sets.length === 0 ? undefined : sets;
  }

  linkHolder(position: Position, name: string): "source" | "target" | undefined {
    const found = this.#member(position.type, (t) => t.navigations, name);
    if (found === undefined) return undefined;
    const nav = found[1];
    if (nav.relationship !== undefined) {
      const ends = this.#associations.get(nav.relationship);
      if (ends?.get(nav.fromRole ?? "")?.dependent) return "source";
      if (ends?.get(nav.toRole ?? "")?.dependent) return "target";
      return undefined;
    }
    if (nav.constrained) return "source";
    if (nav.partner !== undefined) {
      const partner = this.#member(nav.type, (t) => t.navigations, nav.partner);
      if (partner?.[1].constrained) return "target";
    }
    return undefined;
  }

  step(position: Position, name: string): Step {
    if (name.includes(".")) return this.#qualifiedStep(position, name);
    const exact = this.#memberStep(position, name);
    if (exact !== undefined) return exact;
    // A derived type's navigation (in any case): refused with a hint to cast.
    const derived = this.derivedNavigations(position).get(name.toLowerCase());
    if (derived !== undefined) return { kind: "unknown", derivedNavigation: derived };
    if (this.version === "4.0") {
      // OData 4.01 lets bound operations in a default namespace go unqualified.
      const op = this.#unqualifiedOperation(name);
      if (op !== undefined && this.#applies(op, position)) return this.#operationStep(op, position);
    }
    if (this.#chain(position.type).some((t) => t.open)) {
      return { kind: "property", name, type: "", collection: false, dynamic: true };
    }
    return { kind: "unknown" };
  }

  readonly #derivedNavigations = new Map<string, ReadonlyMap<string, string>>();

  derivedNavigations(position: Position): ReadonlyMap<string, string> {
    let found = this.#derivedNavigations.get(position.type);
    if (found === undefined) {
      // Exact names: a derived type's `Items` beside this type's `items` is another navigation.
      const own = new Set(this.#chain(position.type).flatMap((t) => [...t.navigations.keys()]));
      const map = new Map<string, string>();
      for (const t of this.#types.values()) {
        if (t.name === position.type || !this.#derivesFrom(t.name, position.type)) continue;
        for (const nav of t.navigations.keys()) {
          const lower = nav.toLowerCase();
          if (!own.has(nav) && !map.has(lower)) map.set(lower, `${t.name}/${nav}`);
        }
      }
      found = map;
      this.#derivedNavigations.set(position.type, found);
    }
    return found;
  }

  derivedNavigationPaths(position: Position): readonly (readonly string[])[] {
    const out: string[][] = [];
    const visit = (typeName: string, prefix: string[], depth: number): void => {
      const own = new Set(this.#chain(typeName).flatMap((t) => [...t.navigations.keys()]));
      for (const t of this.#types.values()) {
        if (t.name === typeName || !this.#derivesFrom(t.name, typeName)) continue;
        // Declared on `t` itself; one inherited from a type between is that type's (visited too).
        for (const nav of t.navigations.keys()) if (!own.has(nav)) out.push([...prefix, t.name, nav]);
      }
      if (depth >= 4) return;
      // Complex properties of the type and of its derived types, whose values may be of a derived complex type.
      for (const t of this.#types.values()) {
        if (!this.#derivesFrom(t.name, typeName) && !this.#derivesFrom(typeName, t.name)) continue;
        const at = this.#derivesFrom(typeName, t.name) ? prefix : [...prefix, t.name];
        for (const [propName, def] of t.properties) {
          const complex = this.#types.get(def.type);
          if (complex !== undefined && complex.kind === "complex") {
            const path = [...at, propName];
            visit(complex.name, path, depth + 1);
            // The complex type's own navigations, reached through a derived type's property.
            if (at !== prefix) for (const inner of this.navigationPaths({ ...position, type: complex.name })) out.push([...path, ...inner]);
          }
        }
      }
    };
    visit(position.type, [], 0);
    return out;
  }

  #memberStep(position: Position, name: string): Step | undefined {
    const prop = this.#member(position.type, (t) => t.properties, name);
    if (prop !== undefined) {
      const [propName, def] = prop;
      const complex = this.#types.get(def.type);
      if (complex !== undefined && complex.kind === "complex") {
        return {
          kind: "property",
          name: propName,
          type: def.type,
          collection: def.collection,
          position: {
            entitySet: position.entitySet,
            type: complex.name,
            bindingPath: [...position.bindingPath, propName],
            collection: def.collection,
            complex: true,
          },
        };
      }
      return { kind: "property", name: propName, type: def.type, collection: def.collection };
    }
    const nav = this.#member(position.type, (t) => t.navigations, name);
    return nav === undefined ? undefined : this.#navigate(position, nav[0], nav[1]);
  }

  #qualifiedStep(position: Position, name: string): Step {
    const typeName = this.#qualify(name);
    const type = this.#types.get(typeName);
    if (type !== undefined) {
      if (!this.#derivesFrom(type.name, position.type)) return { kind: "unknown" };
      return {
        kind: "cast",
        name: type.name,
        position: { ...position, type: type.name, bindingPath: [...position.bindingPath, type.name] },
      };
    }
    const op = this.boundOperation(name);
    if (op !== undefined && this.#applies(op, position)) return this.#operationStep(op, position);
    return { kind: "unknown" };
  }

  /** The step to a bound operation at `position`, with the overloads that bind there. */
  #operationStep(op: BoundOperation, position: Position): Step {
    const def = this.#definitions.get(op.name)!;
    const overloads = def.overloads.filter(
      (o) => o.binding !== undefined && o.binding.collection === position.collection && this.#derivesFrom(position.type, o.binding.type),
    );
    const operation = this.#boundInfos.get(op.name)!;
    return { kind: op.kind, name: op.name, operation, overloads };
  }

  /** Whether some overload of `op` binds to the type (or a base type) and cardinality at `position`. */
  #applies(op: BoundOperation, position: Position): boolean {
    return op.bindings.some((b) => b.collection === position.collection && this.#derivesFrom(position.type, b.type));
  }

  #unqualifiedOperation(name: string): BoundOperation | undefined {
    let found: BoundOperation | undefined;
    for (const op of this.#operations.values()) {
      if (op.name.slice(op.name.lastIndexOf(".") + 1) === name) {
        if (found !== undefined) return undefined;
        found = op;
      }
    }
    return found;
  }

  #navigate(position: Position, name: string, nav: NavigationDef): Step {
    if (nav.relationship !== undefined) return this.#navigateV2(position, name, nav);
    const path = [...position.bindingPath, name];
    if (nav.containsTarget) {
      return {
        kind: "navigation",
        name,
        collection: nav.collection,
        contained: true,
        cascade: true,
        target: { entitySet: position.entitySet, type: nav.type, bindingPath: path, collection: nav.collection, complex: false },
        targetType: nav.type,
      };
    }
    const set = this.#sets.get(position.entitySet);
    let target = set?.bindings.get(path.join("/"));
    if (target === undefined && set !== undefined) {
      const loose = set.looseBindings.get(withoutCasts(path).join("/"));
      if (loose !== undefined && loose.size === 1) target = [...loose][0];
    }
    return {
      kind: "navigation",
      name,
      collection: nav.collection,
      contained: false,
      cascade: nav.cascade === true,
      target: target === undefined ? undefined : this.#bindingTarget(target, nav),
      targetType: nav.type,
    };
  }

  /** Resolves a V4 binding target: `Set`, `Container/Set` or `Set/Contained/Path`. */
  #bindingTarget(target: string, nav: NavigationDef): Position | undefined {
    let parts = target.split("/");
    if (parts.length > 1 && parts[0].includes(".")) {
      if (!this.#containerNames.has(parts[0])) return undefined; // another service's container
      parts = parts.slice(1);
    }
    const set = this.#sets.get(parts[0]);
    if (set === undefined) return undefined;
    return { entitySet: set.name, type: nav.type, bindingPath: parts.slice(1), collection: nav.collection, complex: false };
  }

  #navigateV2(position: Position, name: string, nav: NavigationDef): Step {
    const ends = this.#associations.get(nav.relationship ?? "");
    const toEnd = ends?.get(nav.toRole ?? "");
    const collection = toEnd?.many ?? false;
    let targetSet: string | undefined;
    let matches = 0;
    for (const s of this.#associationSets) {
      if (s.association !== nav.relationship || s.ends.get(nav.fromRole ?? "") !== position.entitySet) continue;
      matches++;
      targetSet = s.ends.get(nav.toRole ?? "");
    }
    const set = matches === 1 && targetSet !== undefined ? this.#sets.get(targetSet) : undefined;
    return {
      kind: "navigation",
      name,
      collection,
      contained: false,
      cascade: ends?.get(nav.fromRole ?? "")?.cascade === true,
      target:
        set === undefined || toEnd === undefined
          ? undefined
          : { entitySet: set.name, type: toEnd.type, bindingPath: [], collection, complex: false },
      targetType: toEnd?.type,
    };
  }

  navigationPaths(position: Position): readonly (readonly string[])[] {
    const out: string[][] = [];
    const visit = (typeName: string, prefix: string[], depth: number): void => {
      for (const t of this.#chain(typeName)) {
        for (const navName of t.navigations.keys()) out.push([...prefix, navName]);
        if (depth >= 4) continue;
        for (const [propName, def] of t.properties) {
          const complex = this.#types.get(def.type);
          if (complex !== undefined && complex.kind === "complex") visit(complex.name, [...prefix, propName], depth + 1);
        }
      }
    };
    visit(position.type, [], 0);
    return out;
  }

  cascades(position: Position): readonly { readonly path: string; readonly target: Position | undefined }[] {
    const out: { path: string; target: Position | undefined }[] = [];
    const seen = new Set<string>();
    const visit = (at: Position, prefix: string): void => {
      const key = `${at.entitySet}\u0000${at.type}\u0000${at.bindingPath.join("/")}`;
      if (seen.has(key)) return;
      seen.add(key);
      for (const t of this.#chain(at.type)) {
        for (const [name, nav] of t.navigations) {
          const step = this.#navigate(at, name, nav);
          if (step.kind !== "navigation" || !step.cascade) continue;
          const path = `${prefix}${name}`;
          out.push({ path, target: step.target });
          if (step.target !== undefined) visit(step.target, `${path}/`);
        }
      }
    };
    visit(position, "");
    return out;
  }

  keyOf(position: Position): readonly string[] {
    for (const t of this.#chain(position.type)) if (t.keys !== undefined) return t.keys;
    return [];
  }

  hasStream(position: Position): boolean {
    return !position.complex && this.#chain(position.type).some((t) => t.kind === "entity" && t.hasStream);
  }

  navigationTarget(entitySet: string, navPath: readonly string[]): { entitySet: string; collection: boolean } | undefined {
    const root = this.root(entitySet);
    if (root === undefined || !("position" in root)) return undefined;
    let position = root.position;
    let last: Step | undefined;
    for (const name of navPath) {
      last = this.step(position, name);
      if (last.kind === "navigation") {
        if (last.target === undefined) return undefined;
        position = last.target;
      } else if (last.kind === "cast") {
        position = last.position;
      } else if (last.kind === "property" && last.position !== undefined) {
        position = last.position;
      } else {
        return undefined;
      }
    }
    return last?.kind === "navigation" ? { entitySet: position.entitySet, collection: last.collection } : undefined;
  }

  isProperty(entitySet: string, name: string): boolean {
    const root = this.root(entitySet);
    if (root === undefined || !("position" in root)) return false;
    const step = this.step(root.position, name);
    return step.kind === "property" && step.dynamic === undefined;
  }

  keyProperties(entitySet: string): readonly string[] | undefined {
    const root = this.root(entitySet);
    return root === undefined || !("position" in root) ? undefined : this.keyOf(root.position);
  }

  boundOperation(name: string): BoundOperation | undefined {
    if (!name.includes(".")) return this.#unqualifiedOperation(name);
    const qualified = this.#qualify(name);
    return this.#operations.get(qualified);
  }
}

/** A path without its type-cast segments (the qualified ones). */
function withoutCasts(path: readonly string[]): string[] {
  return path.filter((s) => !s.includes("."));
}
