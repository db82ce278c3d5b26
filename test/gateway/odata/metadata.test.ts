/**
 * Unit tests of src/gateway/odata/metadata.ts: what the V4 and V2 sample
 * documents of test-support/odata/fixtures.ts say about entity sets, navigation targets,
 * properties, keys, bound operations and media entity types (table-driven), and the documents
 * that are refused (DTDs and entities, oversized, malformed, unknown EDMX).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MAX_METADATA_LENGTH, MetadataError, parseMetadata, type Position, type ServiceModel } from "../../../src/gateway/odata/metadata.js";
import { V2_METADATA, V4_METADATA } from "../../../test-support/odata/fixtures.js";

const v4 = parseMetadata(V4_METADATA);
const v2 = parseMetadata(V2_METADATA);

const shape = suite("metadata: documents");

shape("V4: version, entity sets and singletons in document order", () => {
  assert.is(v4.version, "4.0");
  assert.equal(v4.entitySets, [
    "SalesOrders",
    "Customers",
    "Products",
    "Categories",
    "Countries",
    "Employees",
    "PriceConditions",
    "Extensions",
  ]);
  assert.equal(v4.singletons, ["Me"]);
});

shape("V2: version and entity sets", () => {
  assert.is(v2.version, "2.0");
  assert.equal(v2.entitySets, ["SalesOrderSet", "SalesOrderItemSet", "CustomerSet", "ProductSet", "ContactSet", "AttachmentSet"]);
  assert.equal(v2.singletons, []);
});

shape("root: entity sets, singletons and imports, by their exact names", () => {
  assert.equal(v4.root("Me"), {
    kind: "singleton",
    name: "Me",
    position: { entitySet: "Me", type: "Sales.Customer", bindingPath: [], collection: false, complex: false },
  });
  assert.equal(v4.root("Customers"), {
    kind: "entitySet",
    name: "Customers",
    position: { entitySet: "Customers", type: "Sales.Customer", bindingPath: [], collection: true, complex: false },
  });
  // Another case is no name: a back end that matches names exactly reads it so.
  assert.is(v4.root("customers"), undefined);
  assert.is(v4.root("search"), undefined);
  const search = v4.root("Search");
  assert.equal(search !== undefined && "operation" in search ? [search.kind, search.name, search.operation.name, search.operation.kind] : search, ["functionImport", "Search", "Search", "function"]);
  const reset = v4.root("ResetAll");
  assert.equal(reset !== undefined && "operation" in reset ? [reset.kind, reset.name, reset.operation.kind] : reset, ["actionImport", "ResetAll", "action"]);
  const release = v2.root("ReleaseOrder");
  // A V2 function import called with POST is an action: what it does is its own.
  assert.equal(release !== undefined && "operation" in release ? [release.kind, release.operation.kind, release.operation.httpMethod] : release, ["functionImport", "action", "POST"]);
  assert.is(v4.root("Nope"), undefined);
});

shape.run();

const targets = suite("metadata: navigationTarget");

const targetCases: [string, typeof v4, string, string[], { entitySet: string; collection: boolean } | undefined][] = [
  ["V4 single-valued binding", v4, "SalesOrders", ["Customer"], { entitySet: "Customers", collection: false }],
  ["V4 collection binding", v4, "Customers", ["Orders"], { entitySet: "SalesOrders", collection: true }],
  ["V4 containment stays in the containing set", v4, "SalesOrders", ["Items"], { entitySet: "SalesOrders", collection: true }],
  ["V4 binding through containment", v4, "SalesOrders", ["Items", "Product"], { entitySet: "Products", collection: false }],
  ["V4 binding through a complex property", v4, "Customers", ["Address", "CountryInfo"], { entitySet: "Countries", collection: false }],
  ["V4 binding with a type cast and a qualified target", v4, "SalesOrders", ["Sales.SpecialOrder", "Escalation"], { entitySet: "Employees", collection: false }],
  ["V4 cast by alias", v4, "SalesOrders", ["S.SpecialOrder", "Escalation"], { entitySet: "Employees", collection: false }],
  ["V4 singleton binding", v4, "Me", ["Orders"], { entitySet: "SalesOrders", collection: true }],
  ["V4 chained", v4, "SalesOrders", ["Customer", "Orders", "Customer"], { entitySet: "Customers", collection: false }],
  ["V4 recursive", v4, "Categories", ["Children", "Parent"], { entitySet: "Categories", collection: false }],
  ["V4 navigation without binding", v4, "SalesOrders", ["Approver"], undefined],
  ["V4 derived navigation without the cast", v4, "SalesOrders", ["Escalation"], undefined],
  ["V4 path ending in a property", v4, "SalesOrders", ["Customer", "Name"], undefined],
  ["V4 unknown name", v4, "SalesOrders", ["Nope"], undefined],
  ["V4 unknown entity set", v4, "Nope", ["Customer"], undefined],
  ["V2 one end", v2, "SalesOrderSet", ["ToCustomer"], { entitySet: "CustomerSet", collection: false }],
  ["V2 many end", v2, "SalesOrderSet", ["ToItems"], { entitySet: "SalesOrderItemSet", collection: true }],
  ["V2 the other direction", v2, "CustomerSet", ["ToOrders"], { entitySet: "SalesOrderSet", collection: true }],
  ["V2 0..1 end", v2, "SalesOrderItemSet", ["ToProduct"], { entitySet: "ProductSet", collection: false }],
  ["V2 chained", v2, "CustomerSet", ["ToOrders", "ToItems", "ToProduct"], { entitySet: "ProductSet", collection: false }],
  ["V2 association without association set", v2, "CustomerSet", ["ToContacts"], undefined],
];
for (const [name, model, entitySet, path, expected] of targetCases) {
  targets(`${name}: ${entitySet}/${path.join("/")}`, () => {
    assert.equal(model.navigationTarget(entitySet, path), expected);
  });
}

targets.run();

const members = suite("metadata: properties, keys, operations");

const propertyCases: [typeof v4, string, string, boolean][] = [
  [v4, "SalesOrders", "Note", true],
  [v4, "SalesOrders", "ShipTo", true],
  [v4, "SalesOrders", "Tags", true],
  [v4, "SalesOrders", "Customer", false],
  [v4, "SalesOrders", "Nope", false],
  [v4, "Extensions", "Dynamic", false],
  [v4, "Customers", "name", false],
  [v2, "CustomerSet", "Address", true],
  [v2, "CustomerSet", "ToOrders", false],
];
for (const [model, entitySet, name, expected] of propertyCases) {
  members(`isProperty ${model.version} ${entitySet}.${name} is ${expected}`, () => {
    assert.is(model.isProperty(entitySet, name), expected);
  });
}

const keyCases: [typeof v4, string, readonly string[] | undefined][] = [
  [v4, "SalesOrders", ["ID"]],
  [v4, "PriceConditions", ["OrderID", "Type"]],
  [v4, "Me", ["ID"]],
  [v4, "Nope", undefined],
  [v2, "SalesOrderItemSet", ["SalesOrderID", "ItemPosition"]],
];
for (const [model, entitySet, expected] of keyCases) {
  members(`keyProperties ${model.version} ${entitySet}`, () => {
    assert.equal(model.keyProperties(entitySet), expected);
  });
}

members("keys of a derived type come from its base type", () => {
  const root = v4.root("SalesOrders");
  assert.ok(root !== undefined && "position" in root);
  const cast = v4.step(root.position, "Sales.SpecialOrder");
  assert.ok(cast.kind === "cast");
  assert.equal(v4.keyOf(cast.position), ["ID"]);
});

members("a derived type's navigation named without the cast is unknown, and says which it is", () => {
  const root = v4.root("SalesOrders");
  assert.ok(root !== undefined && "position" in root);
  assert.equal(v4.step(root.position, "Escalation"), { kind: "unknown", derivedNavigation: "Sales.SpecialOrder/Escalation" });
  assert.equal(v4.step(root.position, "ESCALATION"), { kind: "unknown", derivedNavigation: "Sales.SpecialOrder/Escalation" });
  assert.equal(v4.step(root.position, "Nope"), { kind: "unknown" });
  const cast = v4.step(root.position, "Sales.SpecialOrder");
  assert.ok(cast.kind === "cast");
  assert.is(v4.step(cast.position, "Escalation").kind, "navigation");
  assert.equal([...v4.derivedNavigations(cast.position)], []);
});

members("boundOperation by qualified, aliased and unqualified name", () => {
  const getTotal = {
    kind: "function",
    name: "Sales.GetTotal",
    bindings: [{ type: "Sales.SalesOrder", collection: false }],
  };
  assert.equal(v4.boundOperation("Sales.GetTotal"), getTotal);
  assert.equal(v4.boundOperation("S.GetTotal"), getTotal);
  assert.equal(v4.boundOperation("GetTotal"), getTotal);
  assert.equal(v4.boundOperation("Sales.TopOrders"), {
    kind: "function",
    name: "Sales.TopOrders",
    bindings: [{ type: "Sales.SalesOrder", collection: true }],
  });
  assert.equal(v4.boundOperation("Sales.Approve"), {
    kind: "action",
    name: "Sales.Approve",
    bindings: [{ type: "Sales.SalesOrder", collection: false }],
  });
  // Unbound operations are reachable only through their imports.
  assert.is(v4.boundOperation("Sales.Search"), undefined);
  assert.is(v4.boundOperation("Sales.Nope"), undefined);
});

members("step: an operation applies only to its binding's cardinality", () => {
  const root = v4.root("SalesOrders");
  assert.ok(root !== undefined && "position" in root);
  const kindAndName = (step: ReturnType<typeof v4.step>): unknown => (step.kind === "function" || step.kind === "action" ? { kind: step.kind, name: step.name, overloads: step.overloads.length } : step);
  assert.equal(kindAndName(v4.step(root.position, "Sales.TopOrders")), { kind: "function", name: "Sales.TopOrders", overloads: 1 });
  assert.equal(v4.step(root.position, "Sales.GetTotal"), { kind: "unknown" });
  const one = { ...root.position, collection: false };
  assert.equal(kindAndName(v4.step(one, "Sales.GetTotal")), { kind: "function", name: "Sales.GetTotal", overloads: 1 });
  assert.equal(v4.step(one, "Sales.Customer"), { kind: "unknown" }); // not a derived type
});

members("navigationPaths: direct and through complex properties", () => {
  const root = v4.root("Customers");
  assert.ok(root !== undefined && "position" in root);
  assert.equal(v4.navigationPaths(root.position), [["Orders"], ["Address", "CountryInfo"]]);
});

members.run();

const media = suite("metadata: hasStream (media entity types)");

/** The position of entity set `name`, or of `cast` applied to it. */
function positionOf(model: ServiceModel, name: string, cast?: string): Position {
  const root = model.root(name);
  assert.ok(root !== undefined && "position" in root, `${name} is an entity set`);
  if (cast === undefined) return root.position;
  const step = model.step(root.position, cast);
  assert.ok(step.kind === "cast", `${cast} is a cast`);
  return step.position;
}

/** A V4 document: Base (HasStream as given), Derived from it, and Plain with Media derived from it. */
function v4Doc(baseHasStream: string): string {
  return (
    `<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>` +
    `<Schema Namespace="A" xmlns="http://docs.oasis-open.org/odata/ns/edm">` +
    `<EntityType Name="Base" ${baseHasStream}><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/></EntityType>` +
    `<EntityType Name="Derived" BaseType="A.Base"/>` +
    `<EntityType Name="Plain"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/></EntityType>` +
    `<EntityType Name="Media" BaseType="A.Plain" HasStream="true"/>` +
    `<EntityContainer Name="C"><EntitySet Name="Bases" EntityType="A.Base"/><EntitySet Name="Plains" EntityType="A.Plain"/></EntityContainer>` +
    `</Schema></edmx:DataServices></edmx:Edmx>`
  );
}

media("V4: HasStream=\"true\" on the entity type of the set", () => {
  assert.is(v4.hasStream(positionOf(v4, "Products")), true);
  assert.is(v4.hasStream({ ...positionOf(v4, "Products"), collection: false }), true);
  assert.is(v4.hasStream(positionOf(v4, "SalesOrders")), false);
  assert.is(v4.hasStream(positionOf(v4, "Me")), false);
});

media("V4: reached through a navigation, and not for complex types", () => {
  const items = v4.step({ ...positionOf(v4, "SalesOrders"), collection: false }, "Items");
  assert.ok(items.kind === "navigation" && items.target !== undefined);
  const product = v4.step({ ...items.target, collection: false }, "Product");
  assert.ok(product.kind === "navigation" && product.target !== undefined);
  assert.is(v4.hasStream(product.target), true);
  const shipTo = v4.step({ ...positionOf(v4, "SalesOrders"), collection: false }, "ShipTo");
  assert.ok(shipTo.kind === "property" && shipTo.position !== undefined);
  assert.is(v4.hasStream(shipTo.position), false);
});

media("V4: inherited along BaseType, and declared on a derived type only", () => {
  const model = parseMetadata(v4Doc(`HasStream="true"`));
  assert.is(model.hasStream(positionOf(model, "Bases")), true);
  assert.is(model.hasStream(positionOf(model, "Bases", "A.Derived")), true);
  assert.is(model.hasStream(positionOf(model, "Plains")), false);
  assert.is(model.hasStream(positionOf(model, "Plains", "A.Media")), true);
});

media("V4: HasStream absent or false is no media entity type", () => {
  for (const attribute of ["", `HasStream="false"`]) {
    const model = parseMetadata(v4Doc(attribute));
    assert.is(model.hasStream(positionOf(model, "Bases")), false, attribute);
    assert.is(model.hasStream(positionOf(model, "Bases", "A.Derived")), false, attribute);
  }
});

media("V2: m:HasStream in the metadata namespace", () => {
  assert.is(v2.hasStream(positionOf(v2, "AttachmentSet")), true);
  assert.is(v2.hasStream(positionOf(v2, "SalesOrderSet")), false);
  const step = v2.step({ ...positionOf(v2, "SalesOrderSet"), collection: false }, "ToAttachments");
  assert.ok(step.kind === "navigation" && step.target !== undefined);
  assert.equal(step.target, { entitySet: "AttachmentSet", type: "ZSALES_SRV.Attachment", bindingPath: [], collection: true, complex: false });
  assert.is(v2.hasStream(step.target), true);
});

media("V2: m:HasStream is inherited along BaseType", () => {
  const model = parseMetadata(
    V2_METADATA.replace(
      `<EntityType Name="Contact">`,
      `<EntityType Name="ScannedContact" BaseType="ZSALES_SRV.Contact" m:HasStream="true"/><EntityType Name="Contact">`,
    )
      .replace(`<EntityType Name="Product">`, `<EntityType Name="Product" m:HasStream="true">`)
      .replace(`<EntityType Name="Customer">`, `<EntityType Name="Brochure" BaseType="ZSALES_SRV.Product"/><EntityType Name="Customer">`)
      .replace(`<EntitySet Name="ContactSet"`, `<EntitySet Name="BrochureSet" EntityType="ZSALES_SRV.Brochure"/><EntitySet Name="ContactSet"`),
  );
  assert.is(model.hasStream(positionOf(model, "BrochureSet")), true);
  assert.is(model.hasStream(positionOf(model, "ProductSet")), true);
  assert.is(model.hasStream(positionOf(model, "ContactSet")), false);
  assert.is(model.hasStream(positionOf(model, "ContactSet", "ZSALES_SRV.ScannedContact")), true);
});

media("unknown types are no media entity types", () => {
  assert.is(v4.hasStream({ entitySet: "Products", type: "Sales.Nope", bindingPath: [], collection: true, complex: false }), false);
});

media.run();

const refused = suite("metadata: refused documents");

/** `message` is exact, or a pattern where the text comes from the XML library. */
function refuses(xml: string, message: string | RegExp): void {
  try {
    parseMetadata(xml);
  } catch (error) {
    assert.instance(error, MetadataError);
    if (typeof message === "string") assert.is((error as Error).message, message);
    else assert.match((error as Error).message, message);
    return;
  }
  assert.unreachable("parseMetadata accepted the document");
}

const DTD_REFUSED = "metadata document contains a document type declaration, which is not accepted";

refused("an internal DTD with nested entities (billion laughs) is refused, not expanded", () => {
  refuses(
    `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;">]>` +
      `<edmx:Edmx Version="4.0" xmlns:edmx="x"><edmx:DataServices><Schema Namespace="A">` +
      `<EntityContainer Name="C"><EntitySet Name="&lol2;" EntityType="A.T"/></EntityContainer>` +
      `</Schema></edmx:DataServices></edmx:Edmx>`,
    DTD_REFUSED,
  );
});

refused("an external entity (XXE) is refused", () => {
  refuses(
    `<?xml version="1.0"?><!DOCTYPE edmx [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><edmx:Edmx Version="4.0">&xxe;</edmx:Edmx>`,
    DTD_REFUSED,
  );
});

refused("an external DTD is refused, whatever the case", () => {
  refuses(`<?xml version="1.0"?><!doctype edmx SYSTEM "http://example.com/edmx.dtd"><edmx:Edmx Version="4.0"/>`, DTD_REFUSED);
});

refused("an entity reference without a DTD stays literal text", () => {
  const model = parseMetadata(
    `<edmx:Edmx Version="4.0" xmlns:edmx="x"><edmx:DataServices><Schema Namespace="A">` +
      `<EntityType Name="T"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32"/></EntityType>` +
      `<EntityContainer Name="C"><EntitySet Name="&amp;x;" EntityType="A.T"/><EntitySet Name="Ts" EntityType="A.T"/></EntityContainer>` +
      `</Schema></edmx:DataServices></edmx:Edmx>`,
  );
  assert.equal(model.entitySets, ["&amp;x;", "Ts"]);
});

refused("a document over the size limit is refused before parsing", () => {
  refuses(" ".repeat(MAX_METADATA_LENGTH + 1), `metadata document is larger than ${MAX_METADATA_LENGTH} characters`);
});

refused("malformed XML", () => {
  refuses(
    `<edmx:Edmx Version="4.0"><edmx:DataServices><Schema Namespace="A"></edmx:DataServices></edmx:Edmx>`,
    /^metadata document is not well-formed XML \(line 1: .*'Schema'/,
  );
});

refused("nesting deeper than 100 elements", () => {
  refuses(
    `<edmx:Edmx Version="4.0">${"<a>".repeat(200)}${"</a>".repeat(200)}</edmx:Edmx>`,
    /^metadata document could not be parsed: /,
  );
});

refused("an unknown EDMX version", () => {
  refuses(`<edmx:Edmx Version="3.0"><edmx:DataServices><Schema Namespace="A"/></edmx:DataServices></edmx:Edmx>`, "unsupported EDMX version '3.0'");
});

refused("a document without Edmx root or Schema", () => {
  refuses(`<root/>`, "metadata document has no Edmx root element");
  refuses(`<edmx:Edmx Version="4.0"><edmx:DataServices/></edmx:Edmx>`, "metadata document has no Schema");
});

refused("an entity set declared twice", () => {
  refuses(
    `<edmx:Edmx Version="4.0"><edmx:DataServices><Schema Namespace="A"><EntityContainer Name="C">` +
      `<EntitySet Name="E" EntityType="A.T"/><EntitySet Name="E" EntityType="A.T"/>` +
      `</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`,
    "entity set 'E' is declared twice",
  );
});

refused("an element without its name", () => {
  refuses(
    `<edmx:Edmx Version="4.0"><edmx:DataServices><Schema Namespace="A"><EntityType/></Schema></edmx:DataServices></edmx:Edmx>`,
    "EntityType without Name",
  );
});

refused.run();

const ambiguity = suite("metadata: what the document does not say stays unknown");

ambiguity("a V2 navigation with two matching association sets has no target", () => {
  const xml = V2_METADATA.replace(
    "</EntityContainer>",
    `<EntitySet Name="OtherCustomerSet" EntityType="ZSALES_SRV.Customer"/>
     <AssociationSet Name="Order_Customer_Set2" Association="ZSALES_SRV.Order_Customer">
       <End EntitySet="SalesOrderSet" Role="Order"/><End EntitySet="OtherCustomerSet" Role="Customer"/>
     </AssociationSet></EntityContainer>`,
  );
  const model = parseMetadata(xml);
  assert.is(model.navigationTarget("SalesOrderSet", ["ToCustomer"]), undefined);
  assert.equal(model.navigationTarget("CustomerSet", ["ToOrders"]), { entitySet: "SalesOrderSet", collection: true });
});

ambiguity("a V4 binding to another service's container has no target", () => {
  const model = parseMetadata(V4_METADATA.replace('Target="Customers"/>', 'Target="Other.Container/Customers"/>'));
  assert.is(model.navigationTarget("SalesOrders", ["Customer"]), undefined);
});

ambiguity("a V4 binding to a missing entity set has no target", () => {
  const model = parseMetadata(V4_METADATA.replace('Target="Customers"/>', 'Target="Gone"/>'));
  assert.is(model.navigationTarget("SalesOrders", ["Customer"]), undefined);
});

ambiguity("a base-type cycle does not loop", () => {
  const model = parseMetadata(
    `<edmx:Edmx Version="4.0"><edmx:DataServices><Schema Namespace="A">` +
      `<EntityType Name="T" BaseType="A.U"><Property Name="P" Type="Edm.String"/></EntityType>` +
      `<EntityType Name="U" BaseType="A.T"/>` +
      `<EntityContainer Name="C"><EntitySet Name="Ts" EntityType="A.T"/></EntityContainer>` +
      `</Schema></edmx:DataServices></edmx:Edmx>`,
  );
  assert.is(model.isProperty("Ts", "P"), true);
  assert.is(model.isProperty("Ts", "Q"), false);
  assert.equal(model.keyProperties("Ts"), []);
});

ambiguity.run();
