/**
 * Navigations that bear an operator's name (`In`, `has`, `Not`, `desc`, …,
 * any case): the expression grammar reads a word in operand position as a
 * member and in operator position as an operator, so `$filter=In eq null`
 * reads the navigation `In` (authorized like any navigation), while
 * `Name in ('a','b')` and `$orderby=Name desc` use the operators and read
 * nothing else.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseMetadata } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest } from "../../../src/gateway/odata/request.js";
import { acc, ok, PATH, withoutTarget } from "../../../test-support/odata/analysis.js";

const METADATA = `<?xml version="1.0"?><edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0"><edmx:DataServices>
<Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="P">
<EntityType Name="Order"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/><Property Name="Name" Type="Edm.String"/>
<NavigationProperty Name="In" Type="P.Secret"/><NavigationProperty Name="has" Type="Collection(P.Secret)"/><NavigationProperty Name="desc" Type="P.Secret"/></EntityType>
<EntityType Name="Secret"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/></EntityType>
<EntityContainer Name="C">
<EntitySet Name="Orders" EntityType="P.Order"><NavigationPropertyBinding Path="In" Target="Secrets"/><NavigationPropertyBinding Path="has" Target="Secrets"/><NavigationPropertyBinding Path="desc" Target="Secrets"/></EntitySet>
<EntitySet Name="Secrets" EntityType="P.Secret"/>
</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`;

const model = parseMetadata(METADATA);
const test = suite("OData expressions: navigations named like operators are authorized");

const cases: readonly [string, ReturnType<typeof ok>][] = [
  ["$filter=In eq null", ok("GET", acc("Orders", "list", PATH), acc("Secrets", "list", "$filter In"))],
  // Names are the model's spelling: IN is neither the navigation nor the operator.
  ["$filter=IN eq null", { kind: "invalid", message: "'IN' is not a property or navigation of 'P.Order' in $filter" }],
  ["$filter=not (In eq null)", ok("GET", acc("Orders", "list", PATH), acc("Secrets", "list", "$filter In"))],
  // The operators read nothing.
  ["$filter=Name in ('a','b')", ok("GET", acc("Orders", "list", PATH))],
  ["$orderby=desc desc", ok("GET", acc("Orders", "list", PATH), acc("Secrets", "list", "$orderby desc"))],
  ["$orderby=Name desc", ok("GET", acc("Orders", "list", PATH))],
  ["$orderby=Name asc", ok("GET", acc("Orders", "list", PATH))],
  ["$filter=has ne null and Name eq 'x'", ok("GET", acc("Orders", "list", PATH), acc("Secrets", "list", "$filter has"))],
];

for (const [query, expected] of cases) {
  test(`GET /Orders?${query}`, () => {
    assert.equal(withoutTarget(analyzeRequest({ method: "GET", path: "/Orders", query, headers: {}, model })), expected);
  });
}

test.run();
