/**
 * Hostile derived-type navigations (beside "a navigation property of a
 * derived type named without the cast is refused"): a service whose base
 * type has members that match a derived type's navigations ignoring case,
 * a derived type of a derived type, and a derived complex type with a
 * navigation. Every case is one a back end that follows a derived type's
 * navigation without the cast (the premise of that refusal) reads as reaching
 * `Secrets`, which the analysis must authorize as such.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseMetadata } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest, type RequestBody } from "../../../src/gateway/odata/request.js";
import { acc, ok, PATH, withoutTarget, type Expected } from "../../../test-support/odata/analysis.js";

/**
 * `P.Order` (set Orders): property `courier`, navigations `items` (->
 * Customers) and `Customer`, complex `Addr` (`P.Address`); derived
 * `P.RushOrder` adds `Courier` and `Items` (-> Secrets), and `P.JetOrder`
 * (derived from RushOrder) `Pilot` (-> Secrets); the complex `P.ExtAddress`
 * (derived from `P.Address`) adds `Owner` (-> Secrets). Alias `A` for `P`.
 */
const METADATA = `<?xml version="1.0"?><edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0"><edmx:DataServices>
<Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="P" Alias="A">
<EntityType Name="Order"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/><Property Name="courier" Type="Edm.String"/><Property Name="Addr" Type="A.Address"/>
<NavigationProperty Name="items" Type="Collection(P.Customer)"/><NavigationProperty Name="Customer" Type="P.Customer"/></EntityType>
<EntityType Name="RushOrder" BaseType="A.Order"><NavigationProperty Name="Courier" Type="P.Secret"/><NavigationProperty Name="Items" Type="Collection(P.Secret)"/></EntityType>
<EntityType Name="JetOrder" BaseType="P.RushOrder"><NavigationProperty Name="Pilot" Type="P.Secret"/></EntityType>
<EntityType Name="Customer"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/><Property Name="Name" Type="Edm.String"/><NavigationProperty Name="Orders" Type="Collection(P.Order)"/></EntityType>
<EntityType Name="Secret"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/><Property Name="Name" Type="Edm.String"/></EntityType>
<ComplexType Name="Address"><Property Name="City" Type="Edm.String"/></ComplexType>
<ComplexType Name="ExtAddress" BaseType="P.Address"><NavigationProperty Name="Owner" Type="P.Secret"/></ComplexType>
<EntityContainer Name="C">
<EntitySet Name="Orders" EntityType="P.Order"><NavigationPropertyBinding Path="items" Target="Customers"/><NavigationPropertyBinding Path="Customer" Target="Customers"/><NavigationPropertyBinding Path="P.RushOrder/Courier" Target="Secrets"/><NavigationPropertyBinding Path="P.RushOrder/Items" Target="Secrets"/><NavigationPropertyBinding Path="P.JetOrder/Pilot" Target="Secrets"/><NavigationPropertyBinding Path="Addr/P.ExtAddress/Owner" Target="Secrets"/></EntitySet>
<EntitySet Name="Customers" EntityType="P.Customer"><NavigationPropertyBinding Path="Orders" Target="Orders"/></EntitySet>
<EntitySet Name="Secrets" EntityType="P.Secret"/>
</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`;

const model = parseMetadata(METADATA);

interface Case {
  readonly method?: string;
  readonly path: string;
  readonly query?: string;
  readonly body?: unknown;
  readonly expect: Expected;
}

const invalid = (message: string): Expected => ({ kind: "invalid", message });
const derivedNav = (name: string, type: string, path: string, what: string): Expected =>
  invalid(`'${name}' is a navigation property of a type derived from '${type}': cast to it first ('${path}') in ${what}`);
const get = (...accesses: ReturnType<typeof acc>[]): Expected => ok("GET", ...accesses);

function table(name: string, cases: readonly Case[]): void {
  const test = suite(name);
  for (const c of cases) {
    const body: RequestBody | undefined = c.body === undefined ? undefined : { kind: "json", value: c.body };
    test(`${c.method ?? "GET"} ${c.path}${c.query ? `?${c.query}` : ""}${c.body === undefined ? "" : ` ${JSON.stringify(c.body)}`}`, () => {
      const analysis = analyzeRequest({ method: c.method ?? "GET", path: c.path, query: c.query ?? "", headers: {}, model, ...(body ? { body } : {}) });
      assert.equal(withoutTarget(analysis), c.expect);
    });
  }
  test.run();
}

// The exact spelling is a derived type's navigation, a base member matches it ignoring case.
table("derived types: a derived navigation spelled exactly beats a base member matched ignoring case", [
  // Was: `list Customers` through the base's `items`; a back end matching exactly reads RushOrder/Items (Secrets).
  { path: "/Orders", query: "$expand=Items", expect: derivedNav("Items", "P.Order", "P.RushOrder/Items", "$expand") },
  { path: "/Orders", query: "$select=Items", expect: derivedNav("Items", "P.Order", "P.RushOrder/Items", "$select") },
  { path: "/Orders(1)/Items", expect: invalid("'Items' is a navigation property of a type derived from 'P.Order': cast to it first ('P.RushOrder/Items')") },
  { path: "/Orders", query: "$filter=Items/any(i:i/Name eq 'x')", expect: derivedNav("Items", "P.Order", "P.RushOrder/Items", "$filter") },
  // Was: the base's property `courier`.
  { path: "/Orders", query: "$select=Courier", expect: derivedNav("Courier", "P.Order", "P.RushOrder/Courier", "$select") },
  { path: "/Orders", query: "$filter=Courier eq null", expect: derivedNav("Courier", "P.Order", "P.RushOrder/Courier", "$filter") },
  { path: "/Orders", query: "$orderby=Courier", expect: derivedNav("Courier", "P.Order", "P.RushOrder/Courier", "$orderby") },
  { path: "/Orders(1)/Courier", expect: invalid("'Courier' is a navigation property of a type derived from 'P.Order': cast to it first ('P.RushOrder/Courier')") },
  {
    method: "PATCH",
    path: "/Orders(1)",
    body: { Courier: null },
    expect: invalid("'Courier' is a navigation property of a type derived from 'P.Order' ('P.RushOrder/Courier'): give the entity's type with '@odata.type'"),
  },
  // Exact spellings of the base's members are still theirs, and the cast reaches the derived ones.
  { path: "/Orders", query: "$expand=items", expect: get(acc("Orders", "list", PATH), acc("Customers", "list", "$expand items")) },
  { path: "/Orders", query: "$select=courier", expect: get(acc("Orders", "list", PATH)) },
  { path: "/Orders(1)/courier", expect: get(acc("Orders", "get", PATH)) },
  { path: "/Orders", query: "$expand=A.RushOrder/Items", expect: get(acc("Orders", "list", PATH), acc("Secrets", "list", "$expand P.RushOrder/Items")) },
  // Derived of derived, and a derived complex type, without the cast.
  { path: "/Orders", query: "$select=Pilot", expect: derivedNav("Pilot", "P.Order", "P.JetOrder/Pilot", "$select") },
  { path: "/Orders/A.RushOrder", query: "$expand=PILOT", expect: derivedNav("PILOT", "P.RushOrder", "P.JetOrder/Pilot", "$expand") },
  { path: "/Orders", query: "$filter=Addr/Owner/ID eq 1", expect: derivedNav("Owner", "P.Address", "P.ExtAddress/Owner", "$filter") },
]);

// `$expand=*` must expand an entity's own navigations, as a back end does, not the declared type's only.
// Expanded from a collection, every navigation reads many rows: one `list` of Secrets covers both.
const EVERY_DERIVED = [acc("Secrets", "list", "$expand P.RushOrder/Courier")];
table("derived types: $expand=* needs the derived types' navigations too", [
  { path: "/Orders", query: "$expand=*", expect: get(acc("Orders", "list", PATH), acc("Customers", "list", "$expand items"), ...EVERY_DERIVED) },
  { path: "/Orders", query: "$expand=*/$ref", expect: get(acc("Orders", "list", PATH), acc("Customers", "list", "$expand items"), ...EVERY_DERIVED) },
  // (`list Customers` is the resource path's already.)
  {
    path: "/Customers",
    query: "$expand=Orders($expand=*)",
    expect: get(
      acc("Customers", "list", PATH),
      acc("Orders", "list", "$expand Orders"),
      acc("Secrets", "list", "$expand Orders/P.RushOrder/Courier"),
    ),
  },
  {
    path: "/Customers",
    query: "$expand=Orders/*",
    expect: get(
      acc("Customers", "list", PATH),
      acc("Orders", "list", "$expand Orders"),
      acc("Secrets", "list", "$expand Orders/P.RushOrder/Courier"),
    ),
  },
]);

const members = suite("derived types: derivedNavigationPaths");
members("every navigation only a derived type (or a derived complex type of a property) declares, with its casts", () => {
  const root = model.root("Orders");
  assert.ok(root !== undefined && "position" in root);
  assert.equal(model.derivedNavigationPaths(root.position), [
    ["P.RushOrder", "Courier"],
    ["P.RushOrder", "Items"],
    ["P.JetOrder", "Pilot"],
    ["Addr", "P.ExtAddress", "Owner"],
  ]);
  const customers = model.root("Customers");
  assert.ok(customers !== undefined && "position" in customers);
  assert.equal(model.derivedNavigationPaths(customers.position), []);
});
members.run();
