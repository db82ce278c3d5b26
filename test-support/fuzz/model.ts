/**
 * The model the forwarding fuzzer works on: two OData services (SALES and
 * MASTER) on one instance, written here as plain data so that the oracle
 * (./oracle.ts) resolves names from this description and never from
 * erplink's `$metadata` parser; the `$metadata` documents the recording
 * upstream serves are generated from the same data (V4, and V2 for SALES).
 *
 * SALES (namespace Fz):
 * - Orders (Order, key ID: Int32): Items (many -> OrderItems), Customer
 *   (one -> Customers), ShipTo (complex Address), Tags (V4: collection of
 *   strings); derived type Fz.RushOrder (V4) with Courier (one -> Suppliers).
 * - OrderItems (OrderItem, composite key OrderID + ItemNo): Order (one ->
 *   Orders), Product (one -> Products).
 * - Customers (Customer, key ID: String): Orders (many -> Orders), Favorite
 *   (one -> Products).
 * - Products (Product, key ID: String, a media entity type): Supplier (one ->
 *   Suppliers); Suppliers (key ID): Products (many -> Products).
 * - V4 bound operations: function Fz.Total (on an Order), function
 *   Fz.Recent (on the collection of Orders), action Fz.Cancel (on an Order).
 *
 * MASTER (namespace Md, always V4): BusinessPartners (key ID): Addresses
 * (many -> Addresses), Currency (one -> Currencies); Addresses
 * (PartnerAddress, composite key PartnerID + AddressID): Partner (one ->
 * BusinessPartners); Currencies (key Code).
 *
 * Every navigation name leads to the same entity set wherever it occurs, so
 * that the oracle's conservative "a name mentioned may be followed" rule is
 * tight.
 */

/** A structural property's kind. */
export type PropKind = "string" | "int" | "decimal" | "address" | "strings";

/** A navigation property: its target entity set and whether it is collection-valued. */
export interface NavDef {
  readonly type: string;
  readonly many: boolean;
  readonly target: string;
}

/** An entity type (unqualified name, in the service's namespace). */
export interface TypeDef {
  readonly name: string;
  readonly base?: string;
  readonly key: readonly string[];
  readonly props: Readonly<Record<string, PropKind>>;
  readonly navs: Readonly<Record<string, NavDef>>;
  readonly stream?: boolean;
  /** Only in the V4 document. */
  readonly v4only?: boolean;
}

/** A bound operation (V4 only). */
export interface OpDef {
  readonly name: string;
  readonly kind: "function" | "action";
  readonly binding: string;
  readonly collection: boolean;
}

/** One service as the fuzzer knows it. */
export interface ServiceDef {
  readonly name: string;
  readonly namespace: string;
  readonly types: readonly TypeDef[];
  /** Entity set -> entity type (unqualified). */
  readonly sets: Readonly<Record<string, string>>;
  readonly ops: readonly OpDef[];
  /** Key values that exist in the back end, per entity set (values in key order, as literals). */
  readonly samples?: Readonly<Record<string, readonly (readonly string[])[]>>;
}

const ADDRESS_PROPS = { City: "string", Country: "string" } as const;

/** The SALES service. */
export const SALES: ServiceDef = {
  name: "SALES",
  namespace: "Fz",
  types: [
    {
      name: "Order",
      key: ["ID"],
      props: { ID: "int", Note: "string", Amount: "decimal", Status: "string", ShipTo: "address", Tags: "strings" },
      navs: {
        Items: { type: "OrderItem", many: true, target: "OrderItems" },
        Customer: { type: "Customer", many: false, target: "Customers" },
      },
    },
    {
      name: "RushOrder",
      base: "Order",
      key: [],
      props: { Priority: "int" },
      navs: { Courier: { type: "Supplier", many: false, target: "Suppliers" } },
      v4only: true,
    },
    {
      name: "OrderItem",
      key: ["OrderID", "ItemNo"],
      props: { OrderID: "int", ItemNo: "int", Quantity: "decimal" },
      navs: {
        Order: { type: "Order", many: false, target: "Orders" },
        Product: { type: "Product", many: false, target: "Products" },
      },
    },
    {
      name: "Customer",
      key: ["ID"],
      props: { ID: "string", Name: "string" },
      navs: {
        Orders: { type: "Order", many: true, target: "Orders" },
        Favorite: { type: "Product", many: false, target: "Products" },
      },
    },
    {
      name: "Product",
      key: ["ID"],
      props: { ID: "string", Name: "string", Price: "decimal" },
      navs: { Supplier: { type: "Supplier", many: false, target: "Suppliers" } },
      stream: true,
    },
    {
      name: "Supplier",
      key: ["ID"],
      props: { ID: "string", Name: "string" },
      navs: { Products: { type: "Product", many: true, target: "Products" } },
    },
  ],
  sets: { Orders: "Order", OrderItems: "OrderItem", Customers: "Customer", Products: "Product", Suppliers: "Supplier" },
  ops: [
    { name: "Total", kind: "function", binding: "Order", collection: false },
    { name: "Recent", kind: "function", binding: "Order", collection: true },
    { name: "Cancel", kind: "action", binding: "Order", collection: false },
  ],
};

/** The MASTER service. */
export const MASTER: ServiceDef = {
  name: "MASTER",
  namespace: "Md",
  types: [
    {
      name: "BusinessPartner",
      key: ["ID"],
      props: { ID: "string", Name: "string" },
      navs: {
        Addresses: { type: "PartnerAddress", many: true, target: "Addresses" },
        Currency: { type: "Currency", many: false, target: "Currencies" },
      },
    },
    {
      name: "PartnerAddress",
      key: ["PartnerID", "AddressID"],
      props: { PartnerID: "string", AddressID: "string", City: "string" },
      navs: { Partner: { type: "BusinessPartner", many: false, target: "BusinessPartners" } },
    },
    { name: "Currency", key: ["Code"], props: { Code: "string", Name: "string" }, navs: {} },
  ],
  sets: { BusinessPartners: "BusinessPartner", Addresses: "PartnerAddress", Currencies: "Currency" },
  ops: [],
};

/** API_BUSINESS_PARTNER of the CAP back end (test-support/cap), as the fuzzer knows it. */
export const CAP_BUSINESS_PARTNER: ServiceDef = {
  name: "API_BUSINESS_PARTNER",
  namespace: "API_BUSINESS_PARTNER",
  types: [
    {
      name: "A_BusinessPartner",
      key: ["BusinessPartner"],
      props: { BusinessPartner: "string", FirstName: "string", LastName: "string", SearchTerm1: "string" },
      navs: { to_Address: { type: "A_BusinessPartnerAddress", many: true, target: "A_BusinessPartnerAddress" } },
    },
    {
      name: "A_BusinessPartnerAddress",
      key: ["BusinessPartner", "AddressID"],
      props: { BusinessPartner: "string", AddressID: "string", CityName: "string", StreetName: "string" },
      navs: { to_BusinessPartner: { type: "A_BusinessPartner", many: false, target: "A_BusinessPartner" } },
    },
    { name: "A_Currency", key: ["Currency"], props: { Currency: "string", CurrencyName: "string" }, navs: {} },
  ],
  sets: { A_BusinessPartner: "A_BusinessPartner", A_BusinessPartnerAddress: "A_BusinessPartnerAddress", A_Currency: "A_Currency" },
  ops: [],
  samples: {
    A_BusinessPartner: [["'1000001'"], ["'O''Neil'"]],
    A_BusinessPartnerAddress: [["'1000001'", "'2'"], ["'1000001'", "'1'"]],
    A_Currency: [["'EUR'"], ["'USD'"]],
  },
};

/** API_SALES_ORDER of the CAP back end. */
export const CAP_SALES_ORDER: ServiceDef = {
  name: "API_SALES_ORDER",
  namespace: "API_SALES_ORDER",
  types: [
    {
      name: "A_SalesOrder",
      key: ["SalesOrder"],
      props: { SalesOrder: "string", SoldToParty: "string", TransactionCurrency: "string" },
      navs: { to_Item: { type: "A_SalesOrderItem", many: true, target: "A_SalesOrderItem" } },
    },
    {
      name: "A_SalesOrderItem",
      key: ["SalesOrder", "SalesOrderItem"],
      props: { SalesOrder: "string", SalesOrderItem: "string", Material: "string" },
      navs: { to_SalesOrder: { type: "A_SalesOrder", many: false, target: "A_SalesOrder" } },
    },
  ],
  sets: { A_SalesOrder: "A_SalesOrder", A_SalesOrderItem: "A_SalesOrderItem" },
  ops: [],
  samples: { A_SalesOrder: [["'5000001'"]], A_SalesOrderItem: [["'5000001'", "'10'"]] },
};

/** Protocol family of a service as one instance serves it. */
export type Version = "4.0" | "2.0";

/** An instance: its name, its base path on the upstream, and its services' paths (below it) and versions. */
export interface InstanceDef {
  readonly name: string;
  /** Path of the instance's base URL on the upstream, e.g. `/svc/v4` (no trailing slash). */
  readonly basePath: string;
  readonly services: Readonly<Record<string, { readonly path: string; readonly version: Version }>>;
  /** The instance's SAP client (`sap_client`), which erplink adds to every upstream request; none when unset. */
  readonly sapClient?: string;
}

/**
 * Everything a fuzz run knows: the instances and services the upstream
 * serves, and what the one data key may do (the same in every instance).
 */
export interface Universe {
  readonly instances: readonly InstanceDef[];
  readonly services: Readonly<Record<string, ServiceDef>>;
  /** Service -> entity set -> operations. A service not named here grants nothing. */
  readonly grants: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
}

/**
 * The in-process universe: two instances, each with both services at
 * sibling paths (so that a dot segment can walk from one service root into
 * the other): `prod` (both V4, SAP client 100) and `prodv2` (SALES in V2,
 * MASTER in V4, no SAP client). The
 * key may list and read Orders and Customers, update OrderItems and create
 * Products (a media entity type: raw media is a create); it has nothing at
 * all on MASTER.
 */
export const FUZZ_UNIVERSE: Universe = {
  instances: [
    { name: "prod", basePath: "/svc/v4", services: { SALES: { path: "sales", version: "4.0" }, MASTER: { path: "master", version: "4.0" } }, sapClient: "100" },
    { name: "prodv2", basePath: "/svc/v2", services: { SALES: { path: "sales", version: "2.0" }, MASTER: { path: "master", version: "4.0" } } },
  ],
  services: { SALES, MASTER },
  grants: { SALES: { Orders: ["list", "get"], Customers: ["list", "get"], OrderItems: ["update"], Products: ["create"] } },
};

/**
 * The CAP universe: instance `s4` (V4) and `s4v2` (V2, CAP's adapter) with
 * both CAP services at sibling paths. The key may list and read currencies,
 * list, read and update addresses; nothing on partners, nothing on sales
 * orders.
 */
export const CAP_UNIVERSE: Universe = {
  instances: [
    {
      name: "s4",
      basePath: "/odata/v4",
      services: { API_BUSINESS_PARTNER: { path: "api-business-partner", version: "4.0" }, API_SALES_ORDER: { path: "api-sales-order", version: "4.0" } },
    },
    {
      name: "s4v2",
      basePath: "/odata/v2",
      services: { API_BUSINESS_PARTNER: { path: "api-business-partner", version: "2.0" }, API_SALES_ORDER: { path: "api-sales-order", version: "2.0" } },
    },
  ],
  services: { API_BUSINESS_PARTNER: CAP_BUSINESS_PARTNER, API_SALES_ORDER: CAP_SALES_ORDER },
  grants: { API_BUSINESS_PARTNER: { A_Currency: ["list", "get"], A_BusinessPartnerAddress: ["list", "get", "update"] } },
};

/** The data key's permissions in a universe, as the admin API takes them. */
export function permissionsOf(u: Universe): Record<string, Record<string, Record<string, string[]>>> {
  const grants = Object.fromEntries(Object.entries(u.grants).map(([svc, sets]) => [svc, Object.fromEntries(Object.entries(sets).map(([s, ops]) => [s, [...ops]]))]));
  return Object.fromEntries(u.instances.map((i) => [i.name, grants]));
}

/** Whether the key may do `operation` on `entitySet` of `service`. */
export function permitted(u: Universe, service: string, entitySet: string, operation: string): boolean {
  return u.grants[service]?.[entitySet]?.includes(operation) ?? false;
}

/** Upstream path (no trailing slash) of a service root, e.g. `/svc/v4/sales`. */
export function rootPath(instance: InstanceDef, service: string): string {
  return `${instance.basePath}/${instance.services[service]!.path}`;
}

/** Every (instance, service) root the upstream serves, with its version. */
export function serviceRoots(u: Universe): { instance: InstanceDef; service: string; path: string; version: Version }[] {
  return u.instances.flatMap((instance) =>
    Object.entries(instance.services).map(([service, s]) => ({ instance, service, path: rootPath(instance, service), version: s.version })),
  );
}

/** The types of a service as a given version serves them (V2 drops the V4-only ones). */
export function typesOf(def: ServiceDef, version: Version): TypeDef[] {
  return def.types.filter((t) => version === "4.0" || !t.v4only);
}

// ---------------------------------------------------------------- $metadata

const EDM: Record<PropKind, string> = {
  string: "Edm.String",
  int: "Edm.Int32",
  decimal: "Edm.Decimal",
  address: "Address",
  strings: "Collection(Edm.String)",
};

function propXml(def: ServiceDef, name: string, kind: PropKind, keyed: boolean): string {
  const type = kind === "address" ? `${def.namespace}.Address` : EDM[kind];
  return `        <Property Name="${name}" Type="${type}"${keyed ? ' Nullable="false"' : ""}/>`;
}

/** The V4 `$metadata` document of a service. */
export function v4Metadata(def: ServiceDef): string {
  const ns = def.namespace;
  const types = typesOf(def, "4.0");
  const out: string[] = [
    `<?xml version="1.0" encoding="utf-8"?>`,
    `<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">`,
    `  <edmx:DataServices>`,
    `    <Schema Namespace="${ns}" xmlns="http://docs.oasis-open.org/odata/ns/edm">`,
    `      <ComplexType Name="Address">`,
    ...Object.keys(ADDRESS_PROPS).map((p) => `        <Property Name="${p}" Type="Edm.String"/>`),
    `      </ComplexType>`,
  ];
  for (const t of types) {
    out.push(`      <EntityType Name="${t.name}"${t.base ? ` BaseType="${ns}.${t.base}"` : ""}${t.stream ? ' HasStream="true"' : ""}>`);
    if (t.key.length > 0) out.push(`        <Key>${t.key.map((k) => `<PropertyRef Name="${k}"/>`).join("")}</Key>`);
    for (const [name, kind] of Object.entries(t.props)) out.push(propXml(def, name, kind, t.key.includes(name)));
    for (const [name, nav] of Object.entries(t.navs)) {
      out.push(`        <NavigationProperty Name="${name}" Type="${nav.many ? `Collection(${ns}.${nav.type})` : `${ns}.${nav.type}`}"/>`);
    }
    out.push(`      </EntityType>`);
  }
  for (const op of def.ops) {
    const tag = op.kind === "function" ? "Function" : "Action";
    const binding = op.collection ? `Collection(${ns}.${op.binding})` : `${ns}.${op.binding}`;
    out.push(`      <${tag} Name="${op.name}" IsBound="true">`, `        <Parameter Name="in" Type="${binding}"/>`);
    if (op.kind === "function") out.push(`        <ReturnType Type="${op.collection ? `Collection(${ns}.${op.binding})` : "Edm.Decimal"}"/>`);
    out.push(`      </${tag}>`);
  }
  out.push(`      <EntityContainer Name="Container">`);
  for (const [set, typeName] of Object.entries(def.sets)) {
    out.push(`        <EntitySet Name="${set}" EntityType="${ns}.${typeName}">`);
    for (const t of types) {
      if (t.name !== typeName && t.base !== typeName) continue;
      for (const [name, nav] of Object.entries(t.navs)) {
        const path = t.name === typeName ? name : `${ns}.${t.name}/${name}`;
        out.push(`          <NavigationPropertyBinding Path="${path}" Target="${nav.target}"/>`);
      }
    }
    out.push(`        </EntitySet>`);
  }
  out.push(`      </EntityContainer>`, `    </Schema>`, `  </edmx:DataServices>`, `</edmx:Edmx>`);
  return out.join("\n");
}

/** The V2 (EDMX 1.0) `$metadata` document of a service: one association (and set) per navigation. */
export function v2Metadata(def: ServiceDef): string {
  const ns = def.namespace;
  const types = typesOf(def, "2.0");
  const out: string[] = [
    `<?xml version="1.0" encoding="utf-8"?>`,
    `<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"`,
    `    xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">`,
    `  <edmx:DataServices m:DataServiceVersion="2.0">`,
    `    <Schema Namespace="${ns}" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">`,
    `      <ComplexType Name="Address">`,
    ...Object.keys(ADDRESS_PROPS).map((p) => `        <Property Name="${p}" Type="Edm.String"/>`),
    `      </ComplexType>`,
  ];
  const associations: { name: string; from: string; to: string; many: boolean; fromSet: string; toSet: string }[] = [];
  for (const t of types) {
    out.push(`      <EntityType Name="${t.name}"${t.stream ? ' m:HasStream="true"' : ""}>`);
    out.push(`        <Key>${t.key.map((k) => `<PropertyRef Name="${k}"/>`).join("")}</Key>`);
    for (const [name, kind] of Object.entries(t.props)) {
      if (kind === "strings") continue;
      out.push(propXml(def, name, kind, t.key.includes(name)));
    }
    const fromSet = Object.entries(def.sets).find(([, typeName]) => typeName === t.name)![0];
    for (const [name, nav] of Object.entries(t.navs)) {
      const assoc = `${t.name}_${name}`;
      associations.push({ name: assoc, from: t.name, to: nav.type, many: nav.many, fromSet, toSet: nav.target });
      out.push(`        <NavigationProperty Name="${name}" Relationship="${ns}.${assoc}" FromRole="From_${assoc}" ToRole="To_${assoc}"/>`);
    }
    out.push(`      </EntityType>`);
  }
  for (const a of associations) {
    out.push(
      `      <Association Name="${a.name}">`,
      `        <End Type="${ns}.${a.from}" Multiplicity="*" Role="From_${a.name}"/>`,
      `        <End Type="${ns}.${a.to}" Multiplicity="${a.many ? "*" : "0..1"}" Role="To_${a.name}"/>`,
      `      </Association>`,
    );
  }
  out.push(`      <EntityContainer Name="Container" m:IsDefaultEntityContainer="true">`);
  for (const [set, typeName] of Object.entries(def.sets)) out.push(`        <EntitySet Name="${set}" EntityType="${ns}.${typeName}"/>`);
  for (const a of associations) {
    out.push(
      `        <AssociationSet Name="${a.name}_Set" Association="${ns}.${a.name}">`,
      `          <End EntitySet="${a.fromSet}" Role="From_${a.name}"/>`,
      `          <End EntitySet="${a.toSet}" Role="To_${a.name}"/>`,
      `        </AssociationSet>`,
    );
  }
  out.push(`      </EntityContainer>`, `    </Schema>`, `  </edmx:DataServices>`, `</edmx:Edmx>`);
  return out.join("\n");
}

/** The `$metadata` document of a service in a version. */
export function metadataOf(def: ServiceDef, version: Version): string {
  return version === "4.0" ? v4Metadata(def) : v2Metadata(def);
}
