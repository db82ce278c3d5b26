/**
 * The catalog's functions and actions (src/gateway/data/catalog-operations.ts)
 * over parsed `$metadata` documents: each operation by the name a key grants
 * it by, its kind, where a bound one can be called (the sets whose `get` or
 * `list` a call needs: direct, after a cast, inside a containment), the sets
 * its result lies in (an import's `EntitySet`, an `EntitySetPath`, every set
 * of the returned type), and results the document does not place. The
 * fixtures' exact answers are checked through the route in
 * test/gateway/data/diagnostics.test.ts.
 */
import { toJson } from "@bufbuild/protobuf";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { catalogOperation } from "../../../src/gateway/data/catalog-operations.js";
import { CatalogOperationSchema } from "../../../src/gen/erplink/admin/v1/diagnostics_pb.js";
import { parseMetadata, type ServiceModel } from "../../../src/gateway/odata/metadata.js";
import { V2_METADATA, V4_METADATA } from "../../../test-support/odata/fixtures.js";

const test = suite("catalog: functions and actions");

/** Every operation of a model as the catalog writes it (proto JSON, defaults included). */
function operationsOf(model: ServiceModel) {
  return model.operations.map((o) => toJson(CatalogOperationSchema, catalogOperation(model, o), { alwaysEmitImplicit: true }));
}

const op = (name: string, kind: string, rest: { bound?: boolean; binding?: string[]; result?: string[]; http?: string; unknown?: boolean } = {}) => ({
  name,
  kind,
  bound: rest.bound ?? false,
  bindingEntitySets: rest.binding ?? [],
  resultEntitySets: rest.result ?? [],
  httpMethod: rest.http ?? "",
  resultUnknown: rest.unknown ?? false,
});

test("V4 fixture: imports by their container name, bound operations by their qualified name, with binding and result sets", () => {
  assert.equal(operationsOf(parseMetadata(V4_METADATA)), [
    op("Search", "function", { result: ["Products"] }),
    op("ResetAll", "action"),
    op("Sales.GetTotal", "function", { bound: true, binding: ["SalesOrders"] }),
    op("Sales.TopOrders", "function", { bound: true, binding: ["SalesOrders"], result: ["SalesOrders"] }),
    op("Sales.Approve", "action", { bound: true, binding: ["SalesOrders"] }),
  ]);
});

test("V2 fixture: a function import called with POST is an action, with its method and EntitySet", () => {
  assert.equal(operationsOf(parseMetadata(V2_METADATA)), [op("ReleaseOrder", "action", { result: ["SalesOrderSet"], http: "POST" })]);
});

/**
 * Orders (Order, with contained Items and Approver -> Employees), RushOrders
 * (RushOrder, derived from Order), Employees and the singleton Boss
 * (Employee); Ghost, an entity type no set holds.
 */
const PLACES = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="N" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <EntityType Name="Order">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        <NavigationProperty Name="Items" Type="Collection(N.Item)" ContainsTarget="true"/>
        <NavigationProperty Name="Approver" Type="N.Employee"/>
      </EntityType>
      <EntityType Name="RushOrder" BaseType="N.Order"/>
      <EntityType Name="Item">
        <Key><PropertyRef Name="No"/></Key>
        <Property Name="No" Type="Edm.Int32" Nullable="false"/>
      </EntityType>
      <EntityType Name="Employee">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
      </EntityType>
      <EntityType Name="Ghost">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
      </EntityType>
      <Function Name="Escalate" IsBound="true">
        <Parameter Name="order" Type="N.RushOrder"/>
        <ReturnType Type="Edm.Boolean"/>
      </Function>
      <Function Name="Manager" IsBound="true" EntitySetPath="order/Approver">
        <Parameter Name="order" Type="N.Order"/>
        <ReturnType Type="N.Employee"/>
      </Function>
      <Action Name="Split" IsBound="true" EntitySetPath="item">
        <Parameter Name="item" Type="N.Item"/>
        <ReturnType Type="Collection(N.Item)"/>
      </Action>
      <Function Name="Staff">
        <ReturnType Type="Collection(N.Employee)"/>
      </Function>
      <Function Name="Orphans">
        <ReturnType Type="Collection(N.Ghost)"/>
      </Function>
      <Action Name="Archive">
        <Parameter Name="before" Type="Edm.Date"/>
      </Action>
      <EntityContainer Name="C">
        <EntitySet Name="Orders" EntityType="N.Order">
          <NavigationPropertyBinding Path="Approver" Target="Employees"/>
        </EntitySet>
        <EntitySet Name="RushOrders" EntityType="N.RushOrder">
          <NavigationPropertyBinding Path="Approver" Target="Employees"/>
        </EntitySet>
        <EntitySet Name="Employees" EntityType="N.Employee"/>
        <Singleton Name="Boss" Type="N.Employee"/>
        <FunctionImport Name="StaffList" Function="N.Staff"/>
        <FunctionImport Name="Orphans" Function="N.Orphans"/>
        <ActionImport Name="ArchiveOld" Action="N.Archive"/>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>`;

test("where a bound operation can be called: a derived type's set and its base type's (after a cast), a contained entity's container; results by EntitySetPath, by type, or unknown", () => {
  assert.equal(operationsOf(parseMetadata(PLACES)), [
    // No EntitySet: every set (and singleton) of the returned type.
    op("StaffList", "function", { result: ["Employees", "Boss"] }),
    // No set holds the returned type: the data path refuses the call, and the catalog says why.
    op("Orphans", "function", { unknown: true }),
    op("ArchiveOld", "action"),
    // Bound to RushOrder: on RushOrders, and on Orders after a cast (Orders(1)/N.RushOrder/N.Escalate).
    op("N.Escalate", "function", { bound: true, binding: ["Orders", "RushOrders"] }),
    // Bound to Order: on Orders and on RushOrders (a derived type); its result follows the EntitySetPath.
    op("N.Manager", "function", { bound: true, binding: ["Orders", "RushOrders"], result: ["Employees"] }),
    // Bound to the contained Item: the permissions of the container's set apply, and the result stays there.
    op("N.Split", "action", { bound: true, binding: ["Orders", "RushOrders"], result: ["Orders", "RushOrders"] }),
  ]);
});

test.run();
