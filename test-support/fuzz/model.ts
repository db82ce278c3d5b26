/**
 * The model the forwarding fuzzer works on: OData services written here as
 * plain data, so that the oracle (./oracle.ts) resolves names from this
 * description and never from erplink's `$metadata` parser; the `$metadata`
 * documents the recording upstream serves are generated from the same data
 * (V4, and V2 for SALES), unless a service carries its back end's own
 * documents (`documents`: the end-to-end universes, whose back ends serve
 * their own `$metadata`; see ./mockserver-universe.ts).
 *
 * SALES (namespace Fz):
 * - Orders (Order, key ID: Int32): Items (many -> OrderItems, a composition),
 *   Customer (one -> Customers), ShipTo (complex Address), Tags (V4:
 *   collection of strings); derived type Fz.RushOrder (V4) with Courier
 *   (one -> Suppliers).
 * - OrderItems (OrderItem, composite key OrderID + ItemNo): Order (one ->
 *   Orders), Product (one -> Products).
 * - Customers (Customer, key ID: String): Orders (many -> Orders), Favorite
 *   (one -> Products).
 * - Products (Product, key ID: String, a media entity type): Supplier (one ->
 *   Suppliers); Suppliers (key ID): Products (many -> Products).
 * - V4 bound operations: function Fz.Total (on an Order, `currency`:
 *   String), function Fz.Recent (on the collection of Orders, returns
 *   Orders), action Fz.Cancel (on an Order). Unbound (V4 function and action
 *   imports, V2 function imports): function TopCustomers (`limit`: Int32,
 *   returns Customers), action Reset.
 *
 * LOGISTICS (namespace Lg), keys of every EDM type a key can have:
 * Shipments (key ShipmentID: Guid; Parcels: many -> Parcels and Manifest:
 * one -> Manifests, both compositions), Parcels (ShipmentID: Guid +
 * ParcelNo: Int16; Shipment: one -> Shipments), Manifests (ManifestID:
 * Int64), Rates (Currency: String(3) + ValidFrom: Date (V2 DateTime) + Tier:
 * Decimal), Ledger (EntryNo: Int64 + PostedAt: V2 DateTime (V4
 * DateTimeOffset)), Slots (Day: Date + Start: TimeOfDay (V2 Time) + Open:
 * Boolean), Gauges (Reading: Double + Scale: Single + TakenAt:
 * DateTimeOffset), Tariffs (Code: enum Lg.TariffCode, V2 a String(8)),
 * Blobs (Hash: Binary + Level: Byte + Kind: SByte). Operations: function
 * Lg.Track (on a Shipment, `at`: DateTimeOffset, returns Parcels), action
 * Lg.Dispatch (on a Shipment, `mode`: Lg.ShipMode), function import RatesOn
 * (`day`: Date, `tier`: Decimal, returns Rates), action import Recalculate.
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

/**
 * A structural property's kind: an EDM primitive type (`edmTypeOf` says how
 * each version writes it), an enumeration type of the service (`enum:Name`),
 * the complex `address`, or a collection of strings.
 */
export type PropKind =
  | "string"
  | "int"
  | "int16"
  | "int64"
  | "byte"
  | "sbyte"
  | "decimal"
  | "double"
  | "single"
  | "guid"
  | "boolean"
  | "binary"
  | "date"
  | "datetimeoffset"
  | "datetime"
  | "time"
  | "timeofday"
  | "duration"
  | `enum:${string}`
  | "address"
  | "strings";

/** A navigation property: its target entity set and whether it is collection-valued. */
export interface NavDef {
  readonly type: string;
  readonly many: boolean;
  /** The target entity set; absent when the document names none (erplink denies such a navigation). */
  readonly target: string;
  /** A composition: deleting the source deletes the targets (`OnDelete Action="Cascade"`, as SAP CAP writes compositions). */
  readonly composition?: boolean;
}

/** An entity type (unqualified name, in the service's namespace). */
export interface TypeDef {
  readonly name: string;
  readonly base?: string;
  readonly key: readonly string[];
  readonly props: Readonly<Record<string, PropKind>>;
  readonly navs: Readonly<Record<string, NavDef>>;
  /** `MaxLength` of string properties that have one. */
  readonly maxLength?: Readonly<Record<string, number>>;
  readonly stream?: boolean;
  /** Only in the V4 document. */
  readonly v4only?: boolean;
}

/**
 * A function or action. Bound ones (V4 only) name their binding type; the
 * others are imports (V4 function and action imports, V2 function imports
 * with `m:HttpMethod` GET for a function, POST for an action), named in the
 * entity container by their own name. A key is granted a call by
 * {@link grantName}.
 */
export interface OpDef {
  readonly name: string;
  readonly kind: "function" | "action";
  /** The entity type it is bound to (unqualified); absent for an import. */
  readonly binding?: string;
  /** Bound to a collection of the binding type. */
  readonly collection?: boolean;
  /** Parameters after the binding parameter. */
  readonly params?: Readonly<Record<string, PropKind>>;
  /** What it returns: entities of an entity set (`many`: a collection), or a primitive; nothing when absent. */
  readonly returns?: { readonly set: string; readonly many: boolean } | { readonly kind: PropKind };
  /** Only in the V4 document, or only in the V2 one. */
  readonly version?: Version;
}

/** One service as the fuzzer knows it. */
export interface ServiceDef {
  readonly name: string;
  readonly namespace: string;
  readonly types: readonly TypeDef[];
  /** Entity set -> entity type (unqualified). */
  readonly sets: Readonly<Record<string, string>>;
  readonly ops: readonly OpDef[];
  /** Enumeration types (V4): name -> members. */
  readonly enums?: Readonly<Record<string, { readonly members: readonly string[]; readonly flags?: boolean }>>;
  /** Key values that exist in the back end, per entity set (values in key order, as literals). */
  readonly samples?: Readonly<Record<string, readonly (readonly string[])[]>>;
  /**
   * The back end's own `$metadata` documents, per version: served (and
   * re-analyzed with) instead of documents generated from this data.
   */
  readonly documents?: Partial<Readonly<Record<Version, string>>>;
}

/** The name a key's permissions grant a call of `op` by: a bound operation's qualified name, an import's own. */
export function grantName(def: ServiceDef, op: OpDef): string {
  return op.binding !== undefined ? `${def.namespace}.${op.name}` : op.name;
}

/** The operations of a service as a version serves them (V2 has no bound ones). */
export function opsOf(def: ServiceDef, version: Version): OpDef[] {
  return def.ops.filter((o) => (o.version === undefined || o.version === version) && (version === "4.0" || o.binding === undefined));
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
        Items: { type: "OrderItem", many: true, target: "OrderItems", composition: true },
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
    { name: "Total", kind: "function", binding: "Order", collection: false, params: { currency: "string" }, returns: { kind: "decimal" } },
    { name: "Recent", kind: "function", binding: "Order", collection: true, returns: { set: "Orders", many: true } },
    { name: "Cancel", kind: "action", binding: "Order", collection: false },
    { name: "TopCustomers", kind: "function", params: { limit: "int" }, returns: { set: "Customers", many: true } },
    { name: "Reset", kind: "action" },
  ],
};

/** The LOGISTICS service: keys of every EDM type a key can have, compositions, operations. */
export const LOGISTICS: ServiceDef = {
  name: "LOGISTICS",
  namespace: "Lg",
  types: [
    {
      name: "Shipment",
      key: ["ShipmentID"],
      props: { ShipmentID: "guid", Carrier: "string", ShippedAt: "datetimeoffset", Weight: "double", Mode: "enum:ShipMode", Express: "boolean" },
      maxLength: { Carrier: 10 },
      navs: {
        Parcels: { type: "Parcel", many: true, target: "Parcels", composition: true },
        Manifest: { type: "Manifest", many: false, target: "Manifests", composition: true },
      },
    },
    {
      name: "Parcel",
      key: ["ShipmentID", "ParcelNo"],
      props: { ShipmentID: "guid", ParcelNo: "int16", Size: "single", Label: "string" },
      maxLength: { Label: 20 },
      navs: { Shipment: { type: "Shipment", many: false, target: "Shipments" } },
    },
    {
      name: "Rate",
      key: ["Currency", "ValidFrom", "Tier"],
      props: { Currency: "string", ValidFrom: "date", Tier: "decimal", Factor: "double" },
      maxLength: { Currency: 3 },
      navs: {},
    },
    {
      name: "LedgerEntry",
      key: ["EntryNo", "PostedAt"],
      props: { EntryNo: "int64", PostedAt: "datetime", Amount: "decimal", Text: "string" },
      maxLength: { Text: 40 },
      navs: { Shipment: { type: "Shipment", many: false, target: "Shipments" } },
    },
    {
      name: "Slot",
      key: ["Day", "Start", "Open"],
      props: { Day: "date", Start: "timeofday", Open: "boolean", Length: "duration", Capacity: "int" },
      navs: {},
    },
    {
      name: "Gauge",
      key: ["Reading", "Scale", "TakenAt"],
      props: { Reading: "double", Scale: "single", TakenAt: "datetimeoffset", Unit: "string" },
      navs: {},
    },
    {
      name: "Tariff",
      key: ["Code"],
      props: { Code: "enum:TariffCode", Price: "decimal" },
      maxLength: { Code: 8 },
      navs: {},
    },
    {
      name: "Blob",
      key: ["Hash", "Level", "Kind"],
      props: { Hash: "binary", Level: "byte", Kind: "sbyte", Size: "int64" },
      navs: {},
    },
    {
      name: "Manifest",
      key: ["ManifestID"],
      props: { ManifestID: "int64", Text: "string" },
      maxLength: { Text: 40 },
      navs: { Shipment: { type: "Shipment", many: false, target: "Shipments" } },
    },
  ],
  sets: {
    Shipments: "Shipment",
    Parcels: "Parcel",
    Manifests: "Manifest",
    Rates: "Rate",
    Ledger: "LedgerEntry",
    Slots: "Slot",
    Gauges: "Gauge",
    Tariffs: "Tariff",
    Blobs: "Blob",
  },
  ops: [
    { name: "Track", kind: "function", binding: "Shipment", collection: false, params: { at: "datetimeoffset" }, returns: { set: "Parcels", many: true } },
    { name: "Dispatch", kind: "action", binding: "Shipment", collection: false, params: { mode: "enum:ShipMode" } },
    { name: "RatesOn", kind: "function", params: { day: "date", tier: "decimal" }, returns: { set: "Rates", many: true } },
    { name: "Recalculate", kind: "action", params: { from: "datetimeoffset" } },
  ],
  enums: { ShipMode: { members: ["Air", "Sea", "Road"] }, TariffCode: { members: ["Basic", "Plus", "Max"] } },
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
      props: { BusinessPartner: "string", FirstName: "string", LastName: "string", SearchTerm1: "string", BusinessPartnerIsBlocked: "boolean", CreationDate: "date" },
      maxLength: { BusinessPartner: 10, FirstName: 40, LastName: 40, SearchTerm1: 20 },
      navs: { to_Address: { type: "A_BusinessPartnerAddress", many: true, target: "A_BusinessPartnerAddress", composition: true } },
    },
    {
      name: "A_BusinessPartnerAddress",
      key: ["BusinessPartner", "AddressID"],
      props: { BusinessPartner: "string", AddressID: "string", CityName: "string", StreetName: "string" },
      maxLength: { BusinessPartner: 10, AddressID: 10, CityName: 40, StreetName: 60 },
      navs: { to_BusinessPartner: { type: "A_BusinessPartner", many: false, target: "A_BusinessPartner" } },
    },
    { name: "A_Currency", key: ["Currency"], props: { Currency: "string", CurrencyName: "string", Decimals: "int" }, maxLength: { Currency: 5, CurrencyName: 40 }, navs: {} },
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
      props: { SalesOrder: "string", SoldToParty: "string", TransactionCurrency: "string", SalesOrderDate: "date", TotalNetAmount: "decimal" },
      maxLength: { SalesOrder: 10, SoldToParty: 10, TransactionCurrency: 5 },
      navs: { to_Item: { type: "A_SalesOrderItem", many: true, target: "A_SalesOrderItem", composition: true } },
    },
    {
      name: "A_SalesOrderItem",
      key: ["SalesOrder", "SalesOrderItem"],
      props: { SalesOrder: "string", SalesOrderItem: "string", Material: "string", RequestedQuantity: "decimal" },
      maxLength: { SalesOrder: 10, SalesOrderItem: 6, Material: 40 },
      navs: { to_SalesOrder: { type: "A_SalesOrder", many: false, target: "A_SalesOrder" } },
    },
  ],
  sets: { A_SalesOrder: "A_SalesOrder", A_SalesOrderItem: "A_SalesOrderItem" },
  ops: [],
  samples: {
    A_SalesOrder: [["'5000001'"], ["'5000002'"], ["'5000003'"]],
    A_SalesOrderItem: [["'5000001'", "'10'"], ["'5000001'", "'20'"], ["'5000002'", "'10'"]],
  },
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
  /**
   * Service -> entity set (or operation, by {@link grantName}) -> operations
   * (`invoke` for an operation). A service not named here grants nothing.
   */
  readonly grants: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
}

/**
 * The in-process universe: two instances, each with the three services at
 * sibling paths (so that a dot segment can walk from one service root into
 * another): `prod` (all V4, SAP client 100) and `prodv2` (SALES and LOGISTICS
 * in V2, MASTER in V4, no SAP client). On SALES the key may list and read
 * Orders and Customers, update OrderItems and create Products (a media
 * entity type: raw media is a create), invoke Fz.Total and TopCustomers (not
 * Fz.Recent, Fz.Cancel, Reset); on LOGISTICS do anything with Shipments and
 * their Parcels, read, create and delete Manifests (a single-valued
 * composition of a shipment), list and read Rates, Slots (and update them)
 * and Tariffs, read single Ledger entries and Gauges, invoke Lg.Track and
 * RatesOn (not Lg.Dispatch, Recalculate); nothing on Suppliers and Blobs,
 * and nothing at all on MASTER.
 */
export const FUZZ_UNIVERSE: Universe = {
  instances: [
    {
      name: "prod",
      basePath: "/svc/v4",
      services: { SALES: { path: "sales", version: "4.0" }, MASTER: { path: "master", version: "4.0" }, LOGISTICS: { path: "logistics", version: "4.0" } },
      sapClient: "100",
    },
    {
      name: "prodv2",
      basePath: "/svc/v2",
      services: { SALES: { path: "sales", version: "2.0" }, MASTER: { path: "master", version: "4.0" }, LOGISTICS: { path: "logistics", version: "2.0" } },
    },
  ],
  services: { SALES, MASTER, LOGISTICS },
  grants: {
    SALES: { Orders: ["list", "get"], Customers: ["list", "get"], OrderItems: ["update"], Products: ["create"], "Fz.Total": ["invoke"], TopCustomers: ["invoke"] },
    LOGISTICS: {
      Shipments: ["list", "get", "create", "update", "delete"],
      Parcels: ["list", "get", "create", "update", "delete"],
      Manifests: ["get", "create", "delete"],
      Rates: ["list", "get"],
      Ledger: ["get"],
      Slots: ["list", "get", "update"],
      Gauges: ["get"],
      Tariffs: ["list", "get"],
      "Lg.Track": ["invoke"],
      RatesOn: ["invoke"],
    },
  },
};

/**
 * The CAP universe: instance `s4` (V4) and `s4v2` (V2, CAP's adapter) with
 * both CAP services at sibling paths. The key may list and read currencies,
 * list, read and update addresses; nothing on partners; list, read, update
 * and delete sales orders, and do anything with their items (a composition
 * of the order: link changes and removals, references in bodies).
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
  grants: {
    API_BUSINESS_PARTNER: { A_Currency: ["list", "get"], A_BusinessPartnerAddress: ["list", "get", "update"] },
    API_SALES_ORDER: { A_SalesOrder: ["list", "get", "update", "delete"], A_SalesOrderItem: ["list", "get", "create", "update", "delete"] },
  },
};

/** `u` with its services' `$metadata` documents replaced by the back end's own (service -> version -> XML). */
export function withDocuments(u: Universe, documents: Readonly<Record<string, Partial<Record<Version, string>>>>): Universe {
  const services = Object.fromEntries(
    Object.entries(u.services).map(([name, def]) => [name, documents[name] !== undefined ? { ...def, documents: { ...def.documents, ...documents[name] } } : def]),
  );
  return { ...u, services };
}

/** The data key's permissions in a universe, as the admin API takes them. */
export function permissionsOf(u: Universe): Record<string, Record<string, Record<string, string[]>>> {
  const grants = Object.fromEntries(Object.entries(u.grants).map(([svc, sets]) => [svc, Object.fromEntries(Object.entries(sets).map(([s, ops]) => [s, [...ops]]))]));
  return Object.fromEntries(u.instances.map((i) => [i.name, Object.fromEntries(Object.entries(grants).filter(([svc]) => i.services[svc] !== undefined))]));
}

/** Whether the key may do `operation` on `entitySet` (or, for `invoke`, the operation of that grant name) of `service`. */
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

/** How a version writes a property kind's type (qualified; V2 has no Date, TimeOfDay, Duration nor enumerations). */
export function edmTypeOf(kind: PropKind, version: Version, namespace: string): string {
  if (kind.startsWith("enum:")) return version === "4.0" ? `${namespace}.${kind.slice(5)}` : "Edm.String";
  const v2 = version === "2.0";
  switch (kind) {
    case "string":
      return "Edm.String";
    case "int":
      return "Edm.Int32";
    case "int16":
      return "Edm.Int16";
    case "int64":
      return "Edm.Int64";
    case "byte":
      return "Edm.Byte";
    case "sbyte":
      return "Edm.SByte";
    case "decimal":
      return "Edm.Decimal";
    case "double":
      return "Edm.Double";
    case "single":
      return "Edm.Single";
    case "guid":
      return "Edm.Guid";
    case "boolean":
      return "Edm.Boolean";
    case "binary":
      return "Edm.Binary";
    case "date":
      return v2 ? "Edm.DateTime" : "Edm.Date";
    case "datetimeoffset":
      return "Edm.DateTimeOffset";
    case "datetime":
      return v2 ? "Edm.DateTime" : "Edm.DateTimeOffset";
    case "time":
    case "timeofday":
      return v2 ? "Edm.Time" : "Edm.TimeOfDay";
    case "duration":
      return v2 ? "Edm.Time" : "Edm.Duration";
    case "address":
      return `${namespace}.Address`;
    case "strings":
      return "Collection(Edm.String)";
  }
  return "Edm.String";
}

function propXml(def: ServiceDef, t: TypeDef, name: string, kind: PropKind, version: Version): string {
  const keyed = t.key.includes(name);
  const max = t.maxLength?.[name];
  return `        <Property Name="${name}" Type="${edmTypeOf(kind, version, def.namespace)}"${max !== undefined ? ` MaxLength="${max}"` : ""}${keyed ? ' Nullable="false"' : ""}/>`;
}

/** The entity type an operation's result lies in, qualified, or a primitive type; undefined when it returns nothing. */
function returnTypeOf(def: ServiceDef, op: OpDef, version: Version): string | undefined {
  const r = op.returns;
  if (r === undefined) return undefined;
  if ("kind" in r) return edmTypeOf(r.kind, version, def.namespace);
  const type = `${def.namespace}.${def.sets[r.set]!}`;
  return r.many ? `Collection(${type})` : type;
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
  for (const [name, e] of Object.entries(def.enums ?? {})) {
    out.push(`      <EnumType Name="${name}"${e.flags ? ' IsFlags="true"' : ""}>`, ...e.members.map((m, i) => `        <Member Name="${m}" Value="${i}"/>`), `      </EnumType>`);
  }
  for (const t of types) {
    out.push(`      <EntityType Name="${t.name}"${t.base ? ` BaseType="${ns}.${t.base}"` : ""}${t.stream ? ' HasStream="true"' : ""}>`);
    if (t.key.length > 0) out.push(`        <Key>${t.key.map((k) => `<PropertyRef Name="${k}"/>`).join("")}</Key>`);
    for (const [name, kind] of Object.entries(t.props)) out.push(propXml(def, t, name, kind, "4.0"));
    for (const [name, nav] of Object.entries(t.navs)) {
      const type = nav.many ? `Collection(${ns}.${nav.type})` : `${ns}.${nav.type}`;
      if (nav.composition) out.push(`        <NavigationProperty Name="${name}" Type="${type}">`, `          <OnDelete Action="Cascade"/>`, `        </NavigationProperty>`);
      else out.push(`        <NavigationProperty Name="${name}" Type="${type}"/>`);
    }
    out.push(`      </EntityType>`);
  }
  for (const op of opsOf(def, "4.0")) {
    const tag = op.kind === "function" ? "Function" : "Action";
    out.push(`      <${tag} Name="${op.name}"${op.binding !== undefined ? ' IsBound="true"' : ""}>`);
    if (op.binding !== undefined) out.push(`        <Parameter Name="in" Type="${op.collection ? `Collection(${ns}.${op.binding})` : `${ns}.${op.binding}`}"/>`);
    for (const [p, kind] of Object.entries(op.params ?? {})) out.push(`        <Parameter Name="${p}" Type="${edmTypeOf(kind, "4.0", ns)}"/>`);
    const returns = returnTypeOf(def, op, "4.0");
    if (returns !== undefined) out.push(`        <ReturnType Type="${returns}"/>`);
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
  for (const op of opsOf(def, "4.0").filter((o) => o.binding === undefined)) {
    const set = op.returns !== undefined && "set" in op.returns ? ` EntitySet="${op.returns.set}"` : "";
    if (op.kind === "function") out.push(`        <FunctionImport Name="${op.name}" Function="${ns}.${op.name}"${set}/>`);
    else out.push(`        <ActionImport Name="${op.name}" Action="${ns}.${op.name}"${set}/>`);
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
  const associations: { name: string; from: string; to: string; many: boolean; fromSet: string; toSet: string; composition: boolean }[] = [];
  for (const t of types) {
    out.push(`      <EntityType Name="${t.name}"${t.stream ? ' m:HasStream="true"' : ""}>`);
    out.push(`        <Key>${t.key.map((k) => `<PropertyRef Name="${k}"/>`).join("")}</Key>`);
    for (const [name, kind] of Object.entries(t.props)) {
      if (kind === "strings") continue;
      out.push(propXml(def, t, name, kind, "2.0"));
    }
    const fromSet = Object.entries(def.sets).find(([, typeName]) => typeName === t.name)![0];
    for (const [name, nav] of Object.entries(t.navs)) {
      const assoc = `${t.name}_${name}`;
      associations.push({ name: assoc, from: t.name, to: nav.type, many: nav.many, fromSet, toSet: nav.target, composition: nav.composition === true });
      out.push(`        <NavigationProperty Name="${name}" Relationship="${ns}.${assoc}" FromRole="From_${assoc}" ToRole="To_${assoc}"/>`);
    }
    out.push(`      </EntityType>`);
  }
  for (const a of associations) {
    // A composition: deleting the entity at the From end deletes those at the To end.
    const from = `<End Type="${ns}.${a.from}" Multiplicity="${a.composition ? "1" : "*"}" Role="From_${a.name}"`;
    out.push(`      <Association Name="${a.name}">`);
    if (a.composition) out.push(`        ${from}>`, `          <OnDelete Action="Cascade"/>`, `        </End>`);
    else out.push(`        ${from}/>`);
    out.push(`        <End Type="${ns}.${a.to}" Multiplicity="${a.many ? "*" : "0..1"}" Role="To_${a.name}"/>`, `      </Association>`);
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
  for (const op of opsOf(def, "2.0")) {
    const returns = returnTypeOf(def, op, "2.0");
    const set = op.returns !== undefined && "set" in op.returns ? ` EntitySet="${op.returns.set}"` : "";
    out.push(`        <FunctionImport Name="${op.name}"${returns !== undefined ? ` ReturnType="${returns}"` : ""}${set} m:HttpMethod="${op.kind === "function" ? "GET" : "POST"}">`);
    for (const [p, kind] of Object.entries(op.params ?? {})) out.push(`          <Parameter Name="${p}" Type="${edmTypeOf(kind, "2.0", ns)}" Mode="In"/>`);
    out.push(`        </FunctionImport>`);
  }
  out.push(`      </EntityContainer>`, `    </Schema>`, `  </edmx:DataServices>`, `</edmx:Edmx>`);
  return out.join("\n");
}

/** The `$metadata` document of a service in a version: its back end's own when the service carries it. */
export function metadataOf(def: ServiceDef, version: Version): string {
  const own = def.documents?.[version];
  if (own !== undefined) return own;
  return version === "4.0" ? v4Metadata(def) : v2Metadata(def);
}
