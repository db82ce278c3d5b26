/**
 * Unit tests of src/gateway/odata/body.ts, through `analyzeRequest`: every
 * request body maps to the exact Analysis (accesses in order, with reasons)
 * on the V4 and V2 sample services of test-support/odata/fixtures.ts and
 * without metadata, table-driven; then hostile bodies, which must answer
 * quickly and never throw.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MAX_BODY_WORK } from "../../../src/gateway/odata/body.js";
import { parseMetadata, type ServiceModel } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest, type Access, type RequestBody, type RequestInput } from "../../../src/gateway/odata/request.js";
import { acc, LINK_CREATES, LINK_SOURCE, ok, PATH, ROOT as PATH_ROOT, scan, SOURCE, stopped, withoutTarget, type Expected, LINEAR_BOUND_MS } from "../../../test-support/odata/analysis.js";
import { V2_METADATA, V4_BODY_METADATA } from "../../../test-support/odata/fixtures.js";

const MODELS: Record<"v4" | "v2" | "none", ServiceModel | undefined> = {
  v4: parseMetadata(V4_BODY_METADATA),
  v2: parseMetadata(V2_METADATA),
  none: undefined,
};

/** The client's service root as the gateway's resolver knows it. */
const ROOT = "https://erp.example.com/odata/ins_1/sales/";

/** Maps absolute URLs and paths under {@link ROOT} to the path below it, as the gateway does. */
function resolveReference(url: string): string | undefined {
  const absolute = url.startsWith("/") ? `https://erp.example.com${url}` : url;
  return absolute.startsWith(ROOT) ? absolute.slice(ROOT.length) : undefined;
}

interface Case {
  readonly model: keyof typeof MODELS;
  readonly method?: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  /** A JSON body, as the gateway parsed it. */
  readonly json?: unknown;
  /** A JSON body as text, parsed here (for keys such as `__proto__`). */
  readonly text?: string;
  /** The content type of a body that is not JSON. */
  readonly other?: string;
  /** Whether the caller passes {@link resolveReference}. */
  readonly resolve?: boolean;
  /** Shown instead of the body in the test name. */
  readonly name?: string;
  readonly expect: Expected;
}

/** An allowed create of one entity: `entityPath` names it with a placeholder key. */
function created(entityPath: string, ...accesses: Access[]): Expected {
  return { kind: "access", accesses, effectiveMethod: "POST", entityPath };
}
/** An allowed update of the entity at `entityPath`. */
function updated(method: string, entityPath: string, ...accesses: Access[]): Expected {
  const upsert = method === "PUT" || method === "PATCH" ? { upsertEntitySet: accesses[0].entitySet } : {};
  return { kind: "access", accesses, effectiveMethod: method, entityPath, ...upsert };
}
const denied = (message: string): Expected => ({ kind: "denied", message });
const invalid = (message: string): Expected => ({ kind: "invalid", message });
const noNav = (what: string): Expected =>
  denied(`cannot authorize navigation ${what}: the service metadata does not say which entity set it leads to`);
const undeclared = (name: string, type: string): Expected =>
  denied(`cannot authorize property '${name}' of '${type}': only declared properties may hold objects or arrays`);

/** The reason of the update of a linked entity, which may hold the foreign key a link change writes. */
const LINKED = "link change (foreign key of the linked entity)";
const createOrder = (...more: Access[]): Expected => created("SalesOrders(ID=0)", acc("SalesOrders", "create", PATH), ...more);
const patchOrder = (...more: Access[]): Expected => updated("PATCH", "SalesOrders(1)", acc("SalesOrders", "update", PATH), ...more);

function bodyOf(c: Case): RequestBody | undefined {
  if (c.other !== undefined) return { kind: "other", contentType: c.other };
  if (c.text !== undefined) return { kind: "json", value: JSON.parse(c.text) as unknown };
  if ("json" in c) return { kind: "json", value: c.json };
  return undefined;
}

function input(c: Case): RequestInput {
  const body = bodyOf(c);
  return {
    method: c.method ?? "POST",
    path: c.path,
    query: "",
    headers: c.headers ?? {},
    ...(MODELS[c.model] ? { model: MODELS[c.model] } : {}),
    ...(body ? { body } : {}),
    ...(c.resolve ? { resolveReference } : {}),
  };
}

function title(c: Case): string {
  const body = c.name ?? (c.other !== undefined ? `<${c.other}>` : (c.text ?? JSON.stringify(c.json) ?? "<no body>"));
  const headers = c.headers ? ` ${JSON.stringify(c.headers)}` : "";
  return `${c.model} ${c.method ?? "POST"} ${c.path}${headers} ${body}`.slice(0, 180);
}

function table(name: string, cases: readonly Case[]): void {
  const test = suite(name);
  for (const c of cases) {
    test(title(c), () => {
      assert.equal(withoutTarget(analyzeRequest(input(c))), c.expect);
    });
  }
  test.run();
}

// Deep insert: nested entities are created in their navigation's target set, at any depth.
table("body: deep insert", [
  { model: "v4", path: "/SalesOrders", json: { ID: 1, Note: "x", Amount: 5 }, expect: createOrder() },
  { model: "v4", path: "/SalesOrders", expect: createOrder() },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { ID: 1, Customer: { ID: "C9", Name: "New" } },
    expect: createOrder(acc("Customers", "create", "deep insert Customer")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    // A navigation named in another case is no navigation: an object there is refused.
    json: { ID: 1, customer: { ID: "C9" } },
    expect: denied("cannot authorize property 'customer' of 'Sales.SalesOrder': only declared properties may hold objects or arrays"),
  },
  // Contained items belong to the order's entity set; their product does not.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { ID: 1, Items: [{ ItemNo: 1, Product: { ID: "P1", Category: { ID: 7 } } }, { ItemNo: 2 }] },
    expect: createOrder(acc("Products", "create", "deep insert Items/Product"), acc("Categories", "create", "deep insert Items/Product/Category")),
  },
  {
    model: "v4",
    path: "/Customers",
    json: { ID: "C1", Orders: [{ ID: 1, Items: [{ ItemNo: 1 }] }] },
    expect: created("Customers(ID='0')", acc("Customers", "create", PATH), acc("SalesOrders", "create", "deep insert Orders")),
  },
  {
    model: "v4",
    path: "/SalesOrders(1)/Items",
    json: { ItemNo: 3, Product: { ID: "P3" } },
    expect: created(
      "SalesOrders(1)/Items(ItemNo=0)",
      acc("SalesOrders", "get", SOURCE),
      acc("SalesOrders", "create", PATH),
      acc("Products", "create", "deep insert Product"),
    ),
  },
  // The bind target is already read as the navigation source.
  {
    model: "v4",
    path: "/Customers('A')/Orders",
    json: { ID: 4, Items: [], "Customer@odata.bind": "Customers('A')" },
    expect: created("Customers('A')/Orders(ID=0)", acc("Customers", "get", SOURCE), acc("SalesOrders", "create", PATH)),
  },
  // V4 complex types may hold navigation properties.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { ShipTo: { City: "Berlin", CountryInfo: { Code: "DE" } } },
    expect: createOrder(acc("Countries", "create", "deep insert ShipTo/CountryInfo")),
  },
  { model: "v4", path: "/SalesOrders", json: { ShipTo: null, Tags: ["a", "b"], Customer: null }, expect: createOrder(acc("Customers", "get", "unlink Customer")) },
  {
    model: "v4",
    path: "/Shipments",
    json: { ID: 1, Stops: [{ City: "a", CountryInfo: { Code: "DE" } }, null, "x"], Origin: { City: "b" } },
    expect: created("Shipments(ID=0)", acc("Shipments", "create", PATH), acc("Countries", "create", "deep insert Stops/CountryInfo")),
  },
  // Declared primitive properties take any value (geography values are objects).
  { model: "v4", path: "/SalesOrders", json: { Amount: { type: "Point", coordinates: [1, 2] }, Tags: [{ a: 1 }], Note: [[["x"]]] }, expect: createOrder() },
  { model: "v4", path: "/PriceConditions", json: { OrderID: 1, Type: "a", Value: 2 }, expect: created("PriceConditions(OrderID=0,Type='0')", acc("PriceConditions", "create", PATH)) },
  // Names the model does not know: primitive values pass, structured ones are refused.
  { model: "v4", path: "/SalesOrders", json: { Unknown: 1, Other: null, Flag: true, Text: "Customer" }, expect: createOrder() },
  { model: "v4", path: "/SalesOrders", json: { Unknown: { ID: 1 } }, expect: undeclared("Unknown", "Sales.SalesOrder") },
  { model: "v4", path: "/SalesOrders", json: { Unknown: [] }, expect: undeclared("Unknown", "Sales.SalesOrder") },
  { model: "v4", path: "/SalesOrders", json: { ShipTo: { Planet: { Name: "Mars" } } }, expect: undeclared("ShipTo/Planet", "Sales.Address") },
  { model: "v4", path: "/SalesOrders", json: { Items: [{ Extra: [1] }] }, expect: undeclared("Items/Extra", "Sales.SalesOrderItem") },
  { model: "v4", path: "/SalesOrders", json: { "Sales.Approve": {} }, expect: undeclared("Sales.Approve", "Sales.SalesOrder") },
  // Escalation is declared on the derived type only.
  { model: "v4", path: "/SalesOrders", json: { Escalation: { ID: 1 } }, expect: undeclared("Escalation", "Sales.SalesOrder") },
  // Not as a primitive or null either: `null` could unlink the derived type's navigation on a back end that finds it without the cast.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Escalation: null },
    expect: invalid("'Escalation' is a navigation property of a type derived from 'Sales.SalesOrder' ('Sales.SpecialOrder/Escalation'): give the entity's type with '@odata.type'"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { escalation: 1 },
    expect: invalid("'escalation' is a navigation property of a type derived from 'Sales.SalesOrder' ('Sales.SpecialOrder/Escalation'): give the entity's type with '@odata.type'"),
  },
  // Open types: dynamic properties take primitive values only.
  { model: "v4", path: "/Extensions", json: { ID: 1, Anything: "x", Count: 3 }, expect: created("Extensions(ID=0)", acc("Extensions", "create", PATH)) },
  { model: "v4", path: "/Extensions", json: { ID: 1, Anything: { Customer: {} } }, expect: undeclared("Anything", "Sales.Extension") },
  { model: "v4", path: "/Extensions", json: { ID: 1, Anything: [1] }, expect: undeclared("Anything", "Sales.Extension") },
  // Fail closed: a navigation whose entity set the metadata does not name.
  { model: "v4", path: "/SalesOrders", json: { Approver: { ID: 1 } }, expect: noNav("'Approver' of 'SalesOrders'") },
  { model: "v4", path: "/SalesOrders", json: { Approver: null }, expect: noNav("'Approver' of 'SalesOrders'") },
  { model: "v4", path: "/SalesOrders", json: { Approver: 1 }, expect: noNav("'Approver' of 'SalesOrders'") },
  // A navigation holds entities, not primitive values.
  { model: "v4", path: "/SalesOrders", json: { Customer: "Customers('C1')" }, expect: invalid("'Customer' must hold an entity, a collection of entities or null, not a string") },
  { model: "v4", path: "/SalesOrders", json: { Items: [1] }, expect: invalid("'Items' must hold JSON objects, not a number") },
  { model: "v4", path: "/SalesOrders", json: { Items: [[{ ItemNo: 1 }]] }, expect: invalid("'Items' must hold JSON objects, not an array") },
]);

// Deep update: nested entities may be created or updated; a nested collection replaces the related set.
table("body: deep update", [
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", json: { Note: "x" }, expect: patchOrder() },
  {
    model: "v4",
    method: "PATCH",
    path: "/SalesOrders(1)",
    json: { Customer: { ID: "C9", Name: "n" } },
    expect: patchOrder(acc("Customers", "create", "deep update Customer"), acc("Customers", "update", "deep update Customer")),
  },
  // Contained entities left out of a replaced collection are deleted.
  {
    model: "v4",
    method: "PATCH",
    path: "/SalesOrders(1)",
    json: { Items: [{ ItemNo: 1, Product: { ID: "P" } }] },
    expect: patchOrder(
      acc("SalesOrders", "delete", "unlink Items"),
      acc("SalesOrders", "create", "deep update Items"),
      acc("Products", "create", "deep update Items/Product"),
      acc("Products", "update", "deep update Items/Product"),
    ),
  },
  // Non-contained ones are unlinked: like a $ref change, a read of the target.
  {
    model: "v4",
    method: "PUT",
    path: "/Customers('A')",
    json: { Orders: [] },
    expect: updated("PUT", "Customers('A')", acc("Customers", "update", PATH), acc("SalesOrders", "get", "unlink Orders")),
  },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", json: { Customer: null }, expect: patchOrder(acc("Customers", "get", "unlink Customer")) },
  {
    model: "v4",
    method: "MERGE",
    path: "/SalesOrders(1)",
    json: { ShipTo: { CountryInfo: { Code: "DE" } } },
    expect: {
      kind: "access",
      accesses: [acc("SalesOrders", "update", PATH), acc("Countries", "create", "deep update ShipTo/CountryInfo"), acc("Countries", "update", "deep update ShipTo/CountryInfo")],
      effectiveMethod: "MERGE",
      entityPath: "SalesOrders(1)",
    },
  },
  {
    model: "v4",
    method: "POST",
    path: "/SalesOrders(1)",
    headers: { "X-HTTP-Method": "PATCH" },
    json: { Customer: { ID: "C9" } },
    expect: patchOrder(acc("Customers", "create", "deep update Customer"), acc("Customers", "update", "deep update Customer")),
  },
  {
    model: "v4",
    method: "PUT",
    path: "/SalesOrders(1)",
    headers: { "If-None-Match": "*" },
    json: { Customer: { ID: "C9" } },
    expect: {
      kind: "access",
      accesses: [
        acc("SalesOrders", "create", "resource path (If-None-Match: *)"),
        acc("SalesOrders", "update", "resource path (If-None-Match: *)"),
        acc("Customers", "create", "deep update Customer"),
        acc("Customers", "update", "deep update Customer"),
      ],
      effectiveMethod: "PUT",
      entityPath: "SalesOrders(1)",
    },
  },
  {
    model: "v4",
    method: "PATCH",
    path: "/SalesOrders(1)/Customer",
    json: { Orders: [{ ID: 2 }] },
    expect: {
      kind: "access",
      accesses: [
        acc("SalesOrders", "get", SOURCE),
        acc("Customers", "update", PATH),
        acc("Customers", "list", scan("Customer")),
        acc("SalesOrders", "update", PATH_ROOT),
        acc("SalesOrders", "create", "deep update Orders"),
      ],
      effectiveMethod: "PATCH",
      upsertEntitySet: "Customers",
      entityPath: "SalesOrders(1)/Customer",
    },
  },
  { model: "v4", method: "PATCH", path: "/Me", json: { Name: "me", "Orders@odata.bind": ["SalesOrders(1)"] }, expect: updated("PATCH", "Me", acc("Me", "update", PATH), acc("SalesOrders", "get", "bind Orders")) },
]);

// References: nested objects that only name an entity link it; with data besides, they may update it.
table("body: entity references", [
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.id": "Customers('C1')" } },
    expect: createOrder(acc("Customers", "get", "link Customer")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@id": "Customers('C1')", "@odata.etag": 'W/"1"' } },
    expect: createOrder(acc("Customers", "get", "link Customer")),
  },
  {
    model: "v4",
    path: "/Customers",
    json: { ID: "C", Orders: [{ "@odata.id": "SalesOrders(1)" }, { "@odata.id": "SalesOrders(2)" }] },
    expect: created("Customers(ID='0')", acc("Customers", "create", PATH), acc("SalesOrders", "get", "link Orders")),
  },
  // The reference is resolved: every entity set it names is read.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.id": "Products('A')" } },
    expect: createOrder(acc("Customers", "get", "link Customer"), acc("Products", "get", "link Customer")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.id": "SalesOrders(9)/Customer" } },
    expect: createOrder(acc("Customers", "get", "link Customer"), acc("Customers", "list", "link Customer: navigation 'Customer' (a back end may scan the set for it)"), acc("SalesOrders", "get", "link Customer")),
  },
  // With data besides the id, the nested entity may update the one it names.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.id": "Customers('C1')", Name: "renamed" } },
    expect: createOrder(acc("Customers", "create", "deep insert Customer"), acc("Customers", "update", "deep insert Customer")),
  },
  // An id spelled otherwise is not taken for a reference: the object is an entity.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@ODATA.ID": "Customers('C1')" } },
    expect: createOrder(acc("Customers", "create", "deep insert Customer")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.id": "https://erp.example.com/odata/ins_1/sales/Customers('C1')" } },
    resolve: true,
    expect: createOrder(acc("Customers", "get", "link Customer")),
  },
  // Outside a batch (no resolver) a Content-ID reference names nothing.
  { model: "v4", path: "/SalesOrders", json: { Customer: { "@odata.id": "$1" } }, expect: denied("cannot authorize '$1' in 'Customer/@odata.id': Content-ID references cannot be resolved here") },
  { model: "v4", path: "/SalesOrders", json: { Customer: { "@odata.id": 5 } }, expect: invalid("'Customer/@odata.id' must be a URL") },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.id": "Customers('C1')", "@id": "Customers('C2')" } },
    expect: invalid("'Customer' names an entity twice ('@odata.id', '@id')"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.id": "Nope(1)" } },
    expect: stopped(404, "Nope", "link Customer", "entity set 'Nope' not found in 'Customer/@odata.id'", acc("SalesOrders", "create", PATH), acc("Customers", "get", "link Customer")),
  },
  // The request's own entity: services ignore its id.
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", json: { "@odata.id": "Customers('C1')", Note: "x" }, expect: patchOrder() },
]);

// Bind annotations: a read of the navigation target and of every entity set the URL names.
table("body: bind", [
  // Body URLs are forwarded as written: nothing a URL parser would read as structure.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Customers('a\\..\\Orders')" },
    expect: invalid("'Customers('a\\..\\Orders')' in 'Customer@odata.bind' must not contain '\\' or control characters: body URLs are forwarded as written"),
  },
  ...["%2F..%2F", "%5C", "%23", "%3F", "%25"].map((enc) => ({
    model: "v4" as const,
    path: "/SalesOrders",
    json: { "Customer@odata.bind": `Customers('a${enc}b')` },
    expect: invalid(`body URLs are forwarded as written: 'Customers('a${enc}b')' may not encode '/', '\\', '#', '?' or '%' in 'Customer@odata.bind'`),
  })),
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "Customers('ACME Inc')" }, expect: createOrder(acc("Customers", "get", "bind Customer")) },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "Customers('C1')" }, expect: createOrder(acc("Customers", "get", "bind Customer")) },
  // Bind URLs are forwarded as written: a key parser that splits before it unquotes (SAP's mock server) would read another key.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Customers('&$id=x(1)y')" },
    expect: invalid("body URLs are forwarded as written: a quoted value in 'Customers('&$id=x(1)y')' may not hold '=', ',' or parentheses in 'Customer@odata.bind'"),
  },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "Customers('a,b')" }, expect: invalid("body URLs are forwarded as written: a quoted value in 'Customers('a,b')' may not hold '=', ',' or parentheses in 'Customer@odata.bind'") },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "Customers('O''Neil')" }, expect: createOrder(acc("Customers", "get", "bind Customer")) },
  // A reference must address its entity by key: a back end that resolves it by reading it (SAP's mock server) would read the whole set for a key as a segment or a cast.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Customers/C1" },
    expect: invalid("'Customers/C1' must address its entity by key, not through a key as a segment: a back end that resolves it by reading it would read the whole set 'Customers' in 'Customer@odata.bind'"),
  },
  {
    model: "v4",
    path: "/Customers",
    json: { ID: "C9", "Orders@odata.bind": ["SalesOrders(1)/Sales.SpecialOrder"] },
    expect: invalid("'SalesOrders(1)/Sales.SpecialOrder' must address its entity by key, not through type cast 'Sales.SpecialOrder': a back end that resolves it by reading it would read the whole set 'SalesOrders' in 'Orders@odata.bind'"),
  },
  { model: "v4", path: "/SalesOrders", json: { "Customer@bind": "Customers('C1')" }, expect: createOrder(acc("Customers", "get", "bind Customer")) },
  // The annotation's term is matched ignoring case, the navigation's name exactly.
  { model: "v4", path: "/SalesOrders", json: { "Customer@OData.Bind": "Customers('C1')" }, expect: createOrder(acc("Customers", "get", "bind Customer")) },
  { model: "v4", path: "/SalesOrders", json: { "customer@odata.bind": "Customers('C1')" }, expect: invalid("'customer@odata.bind' does not annotate a navigation property of 'Sales.SalesOrder'") },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind#q": "Customers('C1')" }, expect: createOrder(acc("Customers", "get", "bind Customer")) },
  {
    model: "v4",
    path: "/Customers",
    json: { ID: "C", "Orders@odata.bind": ["SalesOrders(1)", "SalesOrders(2)"] },
    expect: created("Customers(ID='0')", acc("Customers", "create", PATH), acc("SalesOrders", "get", "bind Orders")),
  },
  // The URL is walked like a resource path.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "SalesOrders(5)/Customer" },
    // A single-valued navigation is a list of its target, as in a resource path (SAP CAP scans for it).
    expect: createOrder(acc("Customers", "get", "bind Customer"), acc("Customers", "list", "bind Customer: navigation 'Customer' (a back end may scan the set for it)"), acc("SalesOrders", "get", "bind Customer")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Products('P')" },
    expect: createOrder(acc("Customers", "get", "bind Customer"), acc("Products", "get", "bind Customer")),
  },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "$1" }, expect: denied("cannot authorize '$1' in 'Customer@odata.bind': Content-ID references cannot be resolved here") },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Items: [{ ItemNo: 1, "Product@odata.bind": "Products('P')" }] },
    expect: createOrder(acc("Products", "get", "bind Items/Product")),
  },
  {
    model: "v4",
    method: "PATCH",
    path: "/SalesOrders(1)",
    json: { ShipTo: { "CountryInfo@odata.bind": "Countries('DE')" } },
    expect: patchOrder(acc("Countries", "get", "bind ShipTo/CountryInfo")),
  },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", json: { "Customer@odata.bind": null }, expect: patchOrder(acc("Customers", "get", "unlink Customer")) },
  // Absolute URLs: only through the caller's resolver, and only under the service root.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "https://erp.example.com/odata/ins_1/sales/Customers('C1')" },
    resolve: true,
    expect: createOrder(acc("Customers", "get", "bind Customer")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "/odata/ins_1/sales/Customers('C1')" },
    resolve: true,
    expect: createOrder(acc("Customers", "get", "bind Customer")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "https://erp.example.com/odata/ins_2/sales/Customers('C1')" },
    resolve: true,
    expect: denied("'https://erp.example.com/odata/ins_2/sales/Customers('C1')' in 'Customer@odata.bind' leaves the service root"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "//evil.example.com/Customers('C1')" },
    resolve: true,
    expect: denied("'//evil.example.com/Customers('C1')' in 'Customer@odata.bind' leaves the service root"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "https://erp.example.com/odata/ins_1/sales/Customers('C1')" },
    expect: denied(
      "cannot authorize 'https://erp.example.com/odata/ins_1/sales/Customers('C1')' in 'Customer@odata.bind': absolute URLs cannot be resolved here",
    ),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "urn:x:Customers('C1')" },
    expect: denied("cannot authorize 'urn:x:Customers('C1')' in 'Customer@odata.bind': absolute URLs cannot be resolved here"),
  },
  // Malformed or unknown bind targets are invalid, unknown navigation targets denied.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Nope('C1')" },
    expect: stopped(404, "Nope", "bind Customer", "entity set 'Nope' not found in 'Customer@odata.bind'", acc("SalesOrders", "create", PATH), acc("Customers", "get", "bind Customer")),
  },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "Customers" }, expect: invalid("'Customers' does not address one entity in 'Customer@odata.bind'") },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Customers('C1')/Name" },
    expect: invalid("'Customers('C1')/Name' does not address one entity in 'Customer@odata.bind'"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Customers('C1')?$expand=Orders" },
    expect: invalid("'Customers('C1')?$expand=Orders' in 'Customer@odata.bind' must not have a query or fragment"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": "Customers('C1')/../SalesOrders(1)" },
    expect: invalid("dot segments are not allowed in the path in 'Customer@odata.bind'"),
  },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "Search(text='a')" }, expect: invalid("'Search(text='a')' does not address one entity in 'Customer@odata.bind'") },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": "" }, expect: invalid("'' in 'Customer@odata.bind' does not address one entity") },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind": 1 }, expect: invalid("'Customer@odata.bind' must be a URL or an array of URLs") },
  { model: "v4", path: "/Customers", json: { "Orders@odata.bind": ["SalesOrders(1)", { id: 2 }] }, expect: invalid("'Orders@odata.bind' must be a URL or an array of URLs") },
  { model: "v4", path: "/SalesOrders", json: { "Note@odata.bind": "Customers('C1')" }, expect: invalid("'Note@odata.bind' does not annotate a navigation property of 'Sales.SalesOrder'") },
  { model: "v4", path: "/SalesOrders", json: { "Nope@odata.bind": "Customers('C1')" }, expect: invalid("'Nope@odata.bind' does not annotate a navigation property of 'Sales.SalesOrder'") },
  { model: "v4", path: "/SalesOrders", json: { "@odata.bind": "Customers('C1')" }, expect: invalid("'@odata.bind' must annotate a navigation property") },
  { model: "v4", path: "/SalesOrders", json: { "Approver@odata.bind": "Employees(1)" }, expect: noNav("'Approver' of 'SalesOrders'") },
  { model: "v4", path: "/SalesOrders", json: { "Customer@odata.bind@odata.type": "x" }, expect: invalid("malformed annotation 'Customer@odata.bind@odata.type'") },
]);

// Delta payloads are refused; other control information and annotations pass; types are cast.
table("body: annotations and types", [
  { model: "v4", path: "/SalesOrders", json: { "Items@odata.delta": [{ ItemNo: 1 }] }, expect: denied("delta payloads are not allowed ('Items@odata.delta')") },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", json: { "Items@delta": [] }, expect: denied("delta payloads are not allowed ('Items@delta')") },
  {
    model: "v4",
    method: "PATCH",
    path: "/SalesOrders(1)",
    json: { Items: [{ "@odata.removed": { reason: "deleted" }, ItemNo: 1 }] },
    expect: denied("delta payloads are not allowed ('Items/@odata.removed')"),
  },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", json: { Items: [{ "@removed": {}, "@id": "SalesOrders(1)/Items(1)" }] }, expect: denied("delta payloads are not allowed ('Items/@removed')") },
  {
    model: "v4",
    method: "PATCH",
    path: "/SalesOrders(1)",
    json: { "@odata.context": "$metadata#SalesOrders/$delta" },
    expect: denied("delta payloads are not allowed ('@odata.context')"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: {
      "@odata.context": "$metadata#SalesOrders/$entity",
      "@odata.type": "#Sales.SalesOrder",
      "@odata.etag": 'W/"1"',
      "@Core.Messages": [{ code: "x" }],
      "Note@Core.Description": { text: "annotated" },
      "Items@odata.count": 0,
      "Customer@odata.navigationLink": "SalesOrders(1)/Customer",
      ID: 1,
    },
    expect: createOrder(),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "@odata.context": "https://erp.example.com/odata/ins_1/sales/$metadata#SalesOrders/$entity" },
    resolve: true,
    expect: createOrder(),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "@odata.context": "https://other.example.com/svc/$metadata#SalesOrders/$entity", "Customer@odata.bind": "Customers('C1')" },
    resolve: true,
    expect: denied("'https://other.example.com/svc/$metadata#SalesOrders/$entity' in '@odata.context' leaves the service root"),
  },
  { model: "v4", path: "/SalesOrders", json: { "@odata.context": "../other/$metadata" }, expect: invalid("'@odata.context' must point to this service's $metadata") },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "@odata.context": "https://erp.example.com/odata/ins_1/sales/Customers" },
    resolve: true,
    expect: invalid("'@odata.context' must point to this service's $metadata"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@context": "https://other.example.com/$metadata", ID: "C" } },
    expect: denied("cannot authorize 'https://other.example.com/$metadata' in 'Customer/@context': absolute URLs cannot be resolved here"),
  },
  // A derived type brings its own navigation properties.
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "@odata.type": "#Sales.SpecialOrder", Priority: 1, Escalation: { ID: 1 } },
    expect: createOrder(acc("Employees", "create", "deep insert Escalation")),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "@type": "S.SpecialOrder", "Escalation@odata.bind": "Employees(1)" },
    expect: createOrder(acc("Employees", "get", "bind Escalation")),
  },
  {
    model: "v4",
    path: "/Shipments",
    json: { Stops: [{ "@odata.type": "#Sales.PostalAddress", PostOffice: { ID: 1 } }] },
    expect: created("Shipments(ID=0)", acc("Shipments", "create", PATH), acc("Employees", "create", "deep insert Stops/PostOffice")),
  },
  {
    model: "v4",
    path: "/Shipments",
    json: { "Stops@odata.type": "#Collection(Sales.PostalAddress)", Stops: [{ "PostOffice@odata.bind": "Employees(1)" }] },
    expect: created("Shipments(ID=0)", acc("Shipments", "create", PATH), acc("Employees", "get", "bind Stops/PostOffice")),
  },
  // The derived type's binding is only declared for Stops.
  { model: "v4", path: "/Shipments", json: { Origin: { "@odata.type": "#Sales.PostalAddress", PostOffice: {} } }, expect: noNav("'PostOffice' of 'Shipments'") },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "@odata.type": "#Sales.Customer" },
    expect: invalid("'#Sales.Customer' in '@odata.type' is not 'Sales.SalesOrder' or a type derived from it"),
  },
  { model: "v4", path: "/SalesOrders", json: { "@odata.type": "#Note" }, expect: invalid("'#Note' in '@odata.type' is not 'Sales.SalesOrder' or a type derived from it") },
  { model: "v4", path: "/SalesOrders", json: { "@odata.type": 1 }, expect: invalid("'@odata.type' must be a type name") },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "@odata.type": "#Sales.SpecialOrder", "@type": "#Sales.SalesOrder" },
    expect: invalid("the request body names its type more than once"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Customer: { "@odata.type": "#Sales.SalesOrder" } },
    expect: invalid("'#Sales.SalesOrder' in 'Customer/@odata.type' is not 'Sales.Customer' or a type derived from it"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "ShipTo@odata.type": "#Sales.Customer", ShipTo: {} },
    expect: invalid("'#Sales.Customer' in 'ShipTo@odata.type' is not 'Sales.Address' or a type derived from it"),
  },
  { model: "v4", path: "/SalesOrders", json: { "Note@odata.type": "#Edm.String", "Tags@odata.type": "#Collection(Edm.String)" }, expect: createOrder() },
]);

// Which bodies are analyzed, and which content types are accepted where.
table("body: targets and content types", [
  { model: "v4", path: "/SalesOrders", other: "application/atom+xml;type=entry", expect: denied("only JSON request bodies can be authorized for entity writes; got application/atom+xml;type=entry") },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", other: "application/xml", expect: denied("only JSON request bodies can be authorized for entity writes; got application/xml") },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", other: "", expect: denied("only JSON request bodies can be authorized for entity writes; got no content type") },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)/ShipTo", other: "application/xml", expect: denied("only JSON request bodies can be authorized for entity writes; got application/xml") },
  // Media resources, raw values, primitive properties and streams take any body.
  { model: "v4", method: "PUT", path: "/Products('A')/$value", other: "image/png", expect: ok("PUT", acc("Products", "update", PATH)) },
  { model: "v4", method: "PUT", path: "/SalesOrders(1)/Note/$value", other: "text/plain", expect: ok("PUT", acc("SalesOrders", "update", PATH)) },
  { model: "v4", method: "PUT", path: "/SalesOrders(1)/Note", other: "text/plain", expect: ok("PUT", acc("SalesOrders", "update", PATH)) },
  { model: "v4", method: "PUT", path: "/SalesOrders(1)/Note", json: { value: { Customer: {} } }, expect: ok("PUT", acc("SalesOrders", "update", PATH)) },
  { model: "v4", method: "POST", path: "/SalesOrders(1)/Tags", json: { value: "x" }, expect: ok("POST", acc("SalesOrders", "update", PATH)) },
  // Complex property writes are walked (V4 complex types may navigate).
  {
    model: "v4",
    method: "PATCH",
    path: "/SalesOrders(1)/ShipTo",
    json: { City: "x", "CountryInfo@odata.bind": "Countries('DE')" },
    expect: ok("PATCH", acc("SalesOrders", "update", PATH), acc("Countries", "get", "bind CountryInfo")),
  },
  { model: "v4", method: "PUT", path: "/SalesOrders(1)/ShipTo", json: null, expect: ok("PUT", acc("SalesOrders", "update", PATH)) },
  { model: "v4", method: "PUT", path: "/SalesOrders(1)/ShipTo", json: "Berlin", expect: invalid("the request body must be a JSON object, not a string") },
  {
    model: "v4",
    method: "PUT",
    path: "/Shipments(1)/Stops",
    json: { "@odata.context": "$metadata#Collection(Sales.Address)", value: [{ City: "a" }, { CountryInfo: { Code: "DE" } }] },
    expect: ok(
      "PUT",
      acc("Shipments", "update", PATH),
      acc("Countries", "create", "deep update CountryInfo"),
      acc("Countries", "update", "deep update CountryInfo"),
    ),
  },
  {
    model: "v4",
    method: "PUT",
    path: "/Shipments(1)/Stops",
    json: [{ "CountryInfo@odata.bind": "Countries('DE')" }],
    expect: ok("PUT", acc("Shipments", "update", PATH), acc("Countries", "get", "bind CountryInfo")),
  },
  {
    model: "v4",
    method: "POST",
    path: "/Shipments(1)/Stops",
    json: { "@odata.type": "#Sales.PostalAddress", "PostOffice@odata.bind": "Employees(1)" },
    expect: ok("POST", acc("Shipments", "update", PATH), acc("Employees", "get", "bind PostOffice")),
  },
  { model: "v4", method: "PUT", path: "/Shipments(1)/Stops", json: { value: [], City: "x" }, expect: invalid("unexpected 'City' beside 'value' in the request body") },
  { model: "v4", method: "PUT", path: "/Shipments(1)/Stops", json: [[{ City: "x" }]], expect: invalid("the request body must hold complex values, not arrays") },
  // An action's parameters are the action's business (its invoke grant covers what it does); reads and deletes ignore bodies.
  {
    model: "v4",
    method: "POST",
    path: "/SalesOrders(1)/Sales.Approve",
    json: { Customer: { ID: "C9" }, "Customer@odata.bind": "Nope" },
    expect: ok("POST", acc("SalesOrders", "get", "binding of Sales.Approve"), acc("Sales.Approve", "invoke", "action Sales.Approve")),
  },
  {
    model: "v4",
    method: "POST",
    path: "/SalesOrders(1)/Sales.Approve",
    other: "application/xml",
    expect: ok("POST", acc("SalesOrders", "get", "binding of Sales.Approve"), acc("Sales.Approve", "invoke", "action Sales.Approve")),
  },
  { model: "v4", method: "DELETE", path: "/SalesOrders(1)", json: { Customer: {} }, expect: { kind: "access", accesses: [acc("SalesOrders", "delete", PATH)], effectiveMethod: "DELETE", entityPath: "SalesOrders(1)" } },
  { model: "v4", method: "GET", path: "/SalesOrders(1)", other: "application/xml", expect: { kind: "access", accesses: [acc("SalesOrders", "get", PATH)], effectiveMethod: "GET", entityPath: "SalesOrders(1)" } },
  // A body that is not an object cannot describe an entity.
  { model: "v4", path: "/SalesOrders", json: [{ ID: 1 }], expect: invalid("the request body must be a JSON object, not an array") },
  { model: "v4", path: "/SalesOrders", json: "SalesOrders(1)", expect: invalid("the request body must be a JSON object, not a string") },
  { model: "v4", method: "PATCH", path: "/SalesOrders(1)", json: 1, expect: invalid("the request body must be a JSON object, not a number") },
  { model: "v4", method: "PUT", path: "/SalesOrders(1)", json: null, expect: invalid("the request body must be a JSON object, not null") },
  { model: "v4", path: "/SalesOrders", json: true, expect: invalid("the request body must be a JSON object, not a boolean") },
]);

// Media entity creates: a POST of the media itself to a collection of a media
// entity type (HasStream) is `create` of the set; the media is opaque.
const NOT_JSON = (got: string, why = ""): Expected => denied(`only JSON request bodies can be authorized for entity writes; got ${got}${why}`);
const AT_VALUE = (entitySet: string): string => ` (the media of an entity in '${entitySet}' is written at its $value)`;
table("body: media entity creates", [
  { model: "v4", path: "/Products", other: "application/pdf", expect: created("Products(ID='0')", acc("Products", "create", PATH)) },
  { model: "v4", path: "/Products", headers: { Slug: "datasheet.pdf" }, other: "Application/PDF; name=datasheet.pdf", expect: created("Products(ID='0')", acc("Products", "create", PATH)) },
  { model: "v4", path: "/Products", other: "image/png", expect: created("Products(ID='0')", acc("Products", "create", PATH)) },
  { model: "v4", path: "/Products", other: "application/xml", expect: created("Products(ID='0')", acc("Products", "create", PATH)) },
  { model: "v4", path: "/Products", other: "multipart/form-data; boundary=x", expect: created("Products(ID='0')", acc("Products", "create", PATH)) },
  // The type's stream is inherited along BaseType, or declared on a derived type reached by a cast.
  { model: "v4", path: "/Products/Sales.ProductSheet", other: "application/pdf", expect: created("Products/Sales.ProductSheet(ID='0')", acc("Products", "create", PATH)) },
  { model: "v4", path: "/Shipments/Sales.ScannedShipment", other: "image/tiff", expect: created("Shipments/Sales.ScannedShipment(ID=0)", acc("Shipments", "create", PATH)) },
  { model: "v4", path: "/Shipments", other: "image/tiff", expect: NOT_JSON("image/tiff") },
  // Through a navigation: the target set is created in, the path read.
  {
    model: "v2",
    path: "/SalesOrderSet('1')/ToAttachments",
    headers: { slug: "invoice.pdf" },
    other: "application/pdf",
    expect: created("SalesOrderSet('1')/ToAttachments(AttachmentID='0')", acc("SalesOrderSet", "get", SOURCE), acc("AttachmentSet", "create", PATH)),
  },
  { model: "v2", path: "/AttachmentSet", headers: { Slug: "scan.jpg" }, other: "image/jpeg", expect: created("AttachmentSet(AttachmentID='0')", acc("AttachmentSet", "create", PATH)) },
  { model: "v2", path: "/AttachmentSet", other: "text/plain", expect: created("AttachmentSet(AttachmentID='0')", acc("AttachmentSet", "create", PATH)) },
  // A JSON body to a media entity set is walked as an entity, as any JSON body is.
  { model: "v4", path: "/Products", json: { ID: "A", Category: { ID: 1 } }, expect: created("Products(ID='0')", acc("Products", "create", PATH), acc("Categories", "create", "deep insert Category")) },
  { model: "v2", path: "/AttachmentSet", json: { d: { AttachmentID: "1", FileName: "a.pdf" } }, expect: created("AttachmentSet(AttachmentID='0')", acc("AttachmentSet", "create", PATH)) },
  // Still denied: no content type, Atom (may be read as an entity), and POSTs to sets without a stream.
  { model: "v4", path: "/Products", other: "", expect: denied("a media entity create in 'Products' needs a Content-Type naming the media type") },
  { model: "v2", path: "/AttachmentSet", other: " ", expect: denied("a media entity create in 'AttachmentSet' needs a Content-Type naming the media type") },
  {
    model: "v2",
    path: "/AttachmentSet",
    other: "application/atom+xml;type=entry",
    expect: NOT_JSON("application/atom+xml;type=entry", " (a media entity in 'AttachmentSet' is created from the media itself, not an Atom entry)"),
  },
  {
    model: "v4",
    path: "/Products",
    other: "Application/Atom+XML",
    expect: NOT_JSON("Application/Atom+XML", " (a media entity in 'Products' is created from the media itself, not an Atom entry)"),
  },
  { model: "v4", path: "/SalesOrders", other: "application/pdf", expect: NOT_JSON("application/pdf") },
  { model: "v4", path: "/SalesOrders(1)/Items", other: "application/pdf", expect: NOT_JSON("application/pdf") },
  { model: "v4", path: "/Categories(1)/Children", other: "application/pdf", expect: NOT_JSON("application/pdf") },
  { model: "v2", path: "/SalesOrderSet", other: "application/pdf", expect: NOT_JSON("application/pdf") },
  { model: "v2", path: "/CustomerSet('C')/ToOrders", other: "application/pdf", expect: NOT_JSON("application/pdf") },
  // The media of an existing media entity is written at $value; the entity itself takes JSON only.
  { model: "v4", method: "PUT", path: "/Products('A')", other: "application/pdf", expect: NOT_JSON("application/pdf", AT_VALUE("Products")) },
  { model: "v4", method: "PATCH", path: "/Products('A')", other: "application/pdf", expect: NOT_JSON("application/pdf", AT_VALUE("Products")) },
  { model: "v4", method: "PUT", path: "/Products('A')", headers: { "If-None-Match": "*" }, other: "application/pdf", expect: NOT_JSON("application/pdf", AT_VALUE("Products")) },
  { model: "v4", method: "POST", path: "/Products('A')", headers: { "X-HTTP-Method": "PUT" }, other: "application/pdf", expect: NOT_JSON("application/pdf", AT_VALUE("Products")) },
  { model: "v2", method: "MERGE", path: "/AttachmentSet('1')", other: "application/pdf", expect: NOT_JSON("application/pdf", AT_VALUE("AttachmentSet")) },
  { model: "v2", method: "PUT", path: "/SalesOrderSet('1')", other: "application/pdf", expect: NOT_JSON("application/pdf") },
  { model: "v4", method: "POST", path: "/Products('A')", other: "application/pdf", expect: denied("POST is only allowed on collections") },
  { model: "v4", method: "PUT", path: "/Products('A')/$value", other: "application/pdf", expect: ok("PUT", acc("Products", "update", PATH)) },
  { model: "v2", method: "PUT", path: "/AttachmentSet('1')/$value", headers: { Slug: "v2.pdf" }, other: "application/pdf", expect: ok("PUT", acc("AttachmentSet", "update", PATH)) },
  { model: "v2", method: "POST", path: "/SalesOrderSet('1')/$links/ToAttachments", other: "application/pdf", expect: denied("only JSON request bodies can be authorized for link changes; got application/pdf") },
]);

// Link changes: the body names the linked entity, which is read and must lie where the navigation leads.
table("body: $ref and $links", [
  {
    model: "v4",
    path: "/Customers('A')/Orders/$ref",
    json: { "@odata.id": "SalesOrders(5)" },
    expect: ok(
      "POST",
      acc("Customers", "get", SOURCE),
      acc("Customers", "update", "link change"),
      acc("SalesOrders", "update", LINKED),
      acc("SalesOrders", "create", LINK_CREATES),
      acc("Customers", "list", LINK_SOURCE),
      acc("SalesOrders", "get", "link target"),
    ),
  },
  {
    model: "v4",
    path: "/Customers('A')/Orders/$ref",
    json: { "@odata.context": "$metadata#$ref", "@id": "SalesOrders(5)" },
    expect: ok(
      "POST",
      acc("Customers", "get", SOURCE),
      acc("Customers", "update", "link change"),
      acc("SalesOrders", "update", LINKED),
      acc("SalesOrders", "create", LINK_CREATES),
      acc("Customers", "list", LINK_SOURCE),
      acc("SalesOrders", "get", "link target"),
    ),
  },
  {
    model: "v4",
    path: "/Customers('A')/Orders/$ref",
    json: { "@odata.id": "Products('P')" },
    expect: invalid("'Products('P')' in '@odata.id' is not an entity of 'SalesOrders', where the link leads"),
  },
  {
    model: "v4",
    method: "PUT",
    path: "/SalesOrders(1)/Customer/$ref",
    json: { "@odata.id": "https://erp.example.com/odata/ins_1/sales/Customers('C1')" },
    resolve: true,
    expect: ok("PUT", acc("SalesOrders", "get", SOURCE), acc("SalesOrders", "update", "link change"), acc("Customers", "update", LINKED), acc("Customers", "create", LINK_CREATES), acc("Customers", "get", "link target")),
  },
  {
    model: "v4",
    method: "PUT",
    path: "/SalesOrders(1)/Customer/$ref",
    json: { "@odata.id": "https://erp.example.com/odata/ins_1/sales/Customers('C1')" },
    expect: denied("cannot authorize 'https://erp.example.com/odata/ins_1/sales/Customers('C1')' in '@odata.id': absolute URLs cannot be resolved here"),
  },
  { model: "v4", path: "/Customers('A')/Orders/$ref", json: {}, expect: invalid("the request body of a link change must name the entity in '@odata.id'") },
  { model: "v4", path: "/Customers('A')/Orders/$ref", json: { "@odata.id": "SalesOrders(5)", ID: 5 }, expect: invalid("unexpected 'ID' in the request body of a link change") },
  { model: "v4", path: "/Customers('A')/Orders/$ref", json: ["SalesOrders(5)"], expect: invalid("the request body of a link change must be a JSON object, not an array") },
  { model: "v4", path: "/Customers('A')/Orders/$ref", json: { "@odata.id": null }, expect: invalid("'@odata.id' must be a URL") },
  { model: "v4", path: "/Customers('A')/Orders/$ref", json: { "@odata.id": "Customers" }, expect: invalid("'Customers' does not address one entity in '@odata.id'") },
  { model: "v4", path: "/Customers('A')/Orders/$ref", other: "application/xml", expect: denied("only JSON request bodies can be authorized for link changes; got application/xml") },
  {
    model: "v4",
    method: "DELETE",
    path: "/Customers('A')/Orders(1)/$ref",
    json: { "@odata.id": "Products('P')" },
    expect: ok("DELETE", acc("Customers", "get", SOURCE), acc("Customers", "delete", "link removal (a back end may delete the source)"), acc("Customers", "update", "link change"), acc("SalesOrders", "update", LINKED), acc("SalesOrders", "get", "link target")),
  },
  {
    model: "v2",
    method: "PUT",
    path: "/SalesOrderSet('1')/$links/ToCustomer",
    json: { uri: "CustomerSet('C')" },
    expect: ok("PUT", acc("SalesOrderSet", "get", SOURCE), acc("SalesOrderSet", "update", "link change"), acc("CustomerSet", "update", LINKED), acc("CustomerSet", "create", LINK_CREATES), acc("CustomerSet", "get", "link target")),
  },
  {
    model: "v2",
    method: "POST",
    path: "/SalesOrderSet('1')/$links/ToItems",
    json: { d: { uri: "SalesOrderItemSet(SalesOrderID='1',ItemPosition='10')" } },
    expect: ok(
      "POST",
      acc("SalesOrderSet", "get", SOURCE),
      acc("SalesOrderSet", "update", "link change"),
      acc("SalesOrderItemSet", "update", LINKED),
      acc("SalesOrderItemSet", "create", LINK_CREATES),
      acc("SalesOrderSet", "list", LINK_SOURCE),
      acc("SalesOrderItemSet", "get", "link target"),
    ),
  },
  { model: "v2", method: "PUT", path: "/SalesOrderSet('1')/$links/ToCustomer", json: { url: "CustomerSet('C')" }, expect: invalid("unexpected 'url' in the request body of a link change") },
]);

// V2 verbose JSON: the `d` wrapper, `results`, `__metadata` and `__deferred`.
table("body: V2", [
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { d: { SalesOrderID: "1", ToCustomer: { CustomerID: "C", Address: { City: "x" } } } },
    expect: created("SalesOrderSet(SalesOrderID='0')", acc("SalesOrderSet", "create", PATH), acc("CustomerSet", "create", "deep insert ToCustomer")),
  },
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { SalesOrderID: "1", ToItems: { results: [{ ItemPosition: "10", ToProduct: { ProductID: "P" } }] } },
    expect: created(
      "SalesOrderSet(SalesOrderID='0')",
      acc("SalesOrderSet", "create", PATH),
      acc("SalesOrderItemSet", "create", "deep insert ToItems"),
      acc("ProductSet", "create", "deep insert ToItems/ToProduct"),
    ),
  },
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { ToItems: [{ ItemPosition: "10" }] },
    expect: created("SalesOrderSet(SalesOrderID='0')", acc("SalesOrderSet", "create", PATH), acc("SalesOrderItemSet", "create", "deep insert ToItems")),
  },
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { d: { __metadata: { type: "ZSALES_SRV.SalesOrder", uri: "SalesOrderSet('1')" }, ToCustomer: { __metadata: { uri: "CustomerSet('C')" } } } },
    expect: created("SalesOrderSet(SalesOrderID='0')", acc("SalesOrderSet", "create", PATH), acc("CustomerSet", "get", "link ToCustomer")),
  },
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { ToCustomer: { __deferred: { uri: "https://erp.example.com/odata/ins_1/sales/SalesOrderSet('1')/ToCustomer" } } },
    expect: created("SalesOrderSet(SalesOrderID='0')", acc("SalesOrderSet", "create", PATH), acc("CustomerSet", "get", "link ToCustomer")),
  },
  // A nested entity with an id and data may update the entity it names.
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { ToCustomer: { __metadata: { uri: "CustomerSet('C')", type: "ZSALES_SRV.Customer" }, Name: "x" } },
    expect: created(
      "SalesOrderSet(SalesOrderID='0')",
      acc("SalesOrderSet", "create", PATH),
      acc("CustomerSet", "create", "deep insert ToCustomer"),
      acc("CustomerSet", "update", "deep insert ToCustomer"),
    ),
  },
  // V4 control information means nothing to a V2 service: such an object is an entity.
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { ToCustomer: { "@odata.id": "CustomerSet('C')" } },
    expect: created("SalesOrderSet(SalesOrderID='0')", acc("SalesOrderSet", "create", PATH), acc("CustomerSet", "create", "deep insert ToCustomer")),
  },
  {
    model: "v2",
    method: "MERGE",
    path: "/SalesOrderSet('1')",
    json: { d: { Note: "x", ToItems: { results: [] } } },
    expect: {
      kind: "access",
      accesses: [acc("SalesOrderSet", "update", PATH), acc("SalesOrderItemSet", "get", "unlink ToItems")],
      effectiveMethod: "MERGE",
      entityPath: "SalesOrderSet('1')",
    },
  },
  {
    model: "v2",
    path: "/CustomerSet",
    json: { d: { __metadata: { type: "ZSALES_SRV.Customer" }, CustomerID: "C", Address: { __metadata: { type: "ZSALES_SRV.Address" }, City: "x" } } },
    expect: created("CustomerSet(CustomerID='0')", acc("CustomerSet", "create", PATH)),
  },
  { model: "v2", path: "/CustomerSet", json: { d: { CustomerID: "C", ToContacts: [{ ContactID: "K" }] } }, expect: noNav("'ToContacts' of 'CustomerSet'") },
  {
    model: "v2",
    path: "/SalesOrderSet",
    json: { __metadata: { type: "ZSALES_SRV.Customer" } },
    expect: invalid("'ZSALES_SRV.Customer' in '__metadata/type' is not 'ZSALES_SRV.SalesOrder' or a type derived from it"),
  },
  { model: "v2", path: "/SalesOrderSet", json: { __metadata: "x" }, expect: invalid("'__metadata' must be a JSON object") },
  { model: "v2", path: "/SalesOrderSet", json: { d: [{ SalesOrderID: "1" }] }, expect: undeclared("d", "ZSALES_SRV.SalesOrder") },
  { model: "v2", path: "/SalesOrderSet", json: { d: { d: { ToCustomer: {} } } }, expect: undeclared("d", "ZSALES_SRV.SalesOrder") },
  // V2 complex types cannot navigate: their values are left to the back end.
  {
    model: "v2",
    method: "PUT",
    path: "/CustomerSet('C')/Address",
    json: { d: { Address: { City: "x" } } },
    expect: ok("PUT", acc("CustomerSet", "update", PATH)),
  },
  { model: "v2", method: "PUT", path: "/CustomerSet('C')/Address", other: "application/xml", expect: denied("only JSON request bodies can be authorized for entity writes; got application/xml") },
  {
    model: "v2",
    path: "/SalesOrderSet('1')/ToItems",
    json: { d: { ItemPosition: "20", ToProduct: { ProductID: "P" } } },
    expect: created(
      "SalesOrderSet('1')/ToItems(SalesOrderID='0',ItemPosition='0')",
      acc("SalesOrderSet", "get", SOURCE),
      acc("SalesOrderItemSet", "create", PATH),
      acc("ProductSet", "create", "deep insert ToProduct"),
    ),
  },
  { model: "v2", path: "/SalesOrderSet", json: { "ToCustomer@odata.bind": "CustomerSet('C')" }, expect: created("SalesOrderSet(SalesOrderID='0')", acc("SalesOrderSet", "create", PATH), acc("CustomerSet", "get", "bind ToCustomer")) },
]);

// Without metadata nothing below the service root is authorized, whatever the body.
table("body: without metadata", [
  { model: "none", path: "/SalesOrders", json: { ID: 1, Note: "x" }, expect: denied("cannot authorize 'SalesOrders': the service metadata is unavailable") },
]);

/** `{"Customer": {"Orders": [ … ]}}` nested `levels` times. */
function nestedOrders(levels: number): unknown {
  let body: unknown = { ID: 1 };
  for (let i = 0; i < levels; i++) body = { Customer: { Orders: [body] } };
  return body;
}

// Hostile bodies: refused (or let through) quickly, never thrown.
table("body: hostile bodies", [
  {
    model: "v4",
    path: "/SalesOrders",
    json: nestedOrders(7),
    name: "deep insert 7 levels deep",
    expect: createOrder(acc("Customers", "create", "deep insert Customer")),
  },
  { model: "v4", path: "/SalesOrders", json: nestedOrders(10_000), name: "deep insert 10000 levels deep", expect: invalid("the request body is nested more than 32 levels deep") },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Unknown: JSON.parse(`${"[".repeat(5_000)}${"]".repeat(5_000)}`) as unknown },
    name: "5000 nested arrays in an undeclared property",
    expect: undeclared("Unknown", "Sales.SalesOrder"),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Amount: JSON.parse(`${"[".repeat(5_000)}${"]".repeat(5_000)}`) as unknown },
    name: "5000 nested arrays in a primitive property",
    expect: createOrder(),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { Items: Array.from({ length: MAX_BODY_WORK }, (_, i) => ({ ItemNo: i })) },
    name: "more nested entities than the work cap",
    expect: invalid(`the request body is too large to authorize (more than ${MAX_BODY_WORK} members)`),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: Object.fromEntries(Array.from({ length: MAX_BODY_WORK + 1 }, (_, i) => [`k${i}`, i])),
    name: "more members than the work cap",
    expect: invalid(`the request body is too large to authorize (more than ${MAX_BODY_WORK} members)`),
  },
  { model: "v4", path: "/SalesOrders", json: { Tags: Array(1_000_000).fill("x") }, name: "a million strings in a primitive collection", expect: createOrder() },
  // Query-operator-like names are just names the model does not know.
  { model: "v4", path: "/SalesOrders", json: { $ne: 1, $where: "1==1" }, expect: createOrder() },
  { model: "v4", path: "/SalesOrders", json: { $ne: { ID: 1 } }, expect: undeclared("$ne", "Sales.SalesOrder") },
  { model: "v4", path: "/SalesOrders", json: { ID: { $gt: 0 } }, expect: createOrder() },
  { model: "v4", path: "/SalesOrders", json: { Customer: { $ref: "Customers('C1')" } }, expect: createOrder(acc("Customers", "create", "deep insert Customer")) },
  { model: "v4", path: "/SalesOrders", json: { Customer: { $ref: { ID: "C1" } } }, expect: undeclared("Customer/$ref", "Sales.Customer") },
  // __proto__ and friends are own members like any other.
  { model: "v4", path: "/SalesOrders", text: '{"__proto__": {"Customer": {"ID": "C9"}}}', expect: undeclared("__proto__", "Sales.SalesOrder") },
  { model: "v4", path: "/SalesOrders", text: '{"__proto__": 1, "constructor": "x", "toString": null}', expect: createOrder() },
  { model: "v4", path: "/SalesOrders", text: '{"constructor": {"prototype": {}}}', expect: undeclared("constructor", "Sales.SalesOrder") },
  { model: "v4", path: "/SalesOrders", text: '{"Customer": {"__proto__": {"ID": "C9"}}}', expect: undeclared("Customer/__proto__", "Sales.Customer") },
  // Escaped names read as the service reads them.
  { model: "v4", path: "/SalesOrders", text: '{"Customer\\u0040odata.bind": "Products(\'P\')"}', expect: createOrder(acc("Customers", "get", "bind Customer"), acc("Products", "get", "bind Customer")) },
  { model: "v4", path: "/SalesOrders", text: '{"a\\r\\nb": {}}', expect: undeclared("a??b", "Sales.SalesOrder") },
  {
    model: "v4",
    path: "/Customers",
    json: { "Orders@odata.bind": Array(MAX_BODY_WORK + 1).fill("SalesOrders(1)") },
    name: "more bind values than the work cap",
    expect: invalid(`the request body is too large to authorize (more than ${MAX_BODY_WORK} members)`),
  },
  {
    model: "v4",
    path: "/SalesOrders",
    json: { "Customer@odata.bind": `Customers('${"x".repeat(10_000)}')` },
    name: "a bind value longer than a path may be",
    expect: invalid("path is longer than 8192 characters in 'Customer@odata.bind'"),
  },
]);

const timing = suite("body: hostile bodies answer quickly");

timing("every hostile body answers in linear time (under 2 s) and never throws", () => {
  const model = MODELS.v4!;
  // Built one at a time, outside the measured time.
  const bodies: (() => unknown)[] = [
    () => nestedOrders(100_000),
    () => ({ Items: Array.from({ length: 150_000 }, () => ({ Product: { Category: {} } })) }),
    () => Object.fromEntries(Array.from({ length: 150_000 }, (_, i) => [`Unknown${i}`, i])),
    () => Object.fromEntries(Array.from({ length: 150_000 }, (_, i) => [`Unknown${i}@odata.type`, "#Sales.Nope"])),
    () => ({ "Orders@odata.bind": Array(150_000).fill(`Customers('${"(".repeat(200)}')`) }),
    () => ({ ShipTo: Array.from({ length: 150_000 }, () => ({ CountryInfo: null })) }),
    () => JSON.parse(`${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`) as unknown,
  ];
  for (const [i, build] of bodies.entries()) {
    const value = build();
    for (const method of ["POST", "PATCH"]) {
      const started = performance.now();
      const analysis = analyzeRequest({
        method,
        path: method === "POST" ? "/Customers" : "/SalesOrders(1)",
        query: "",
        headers: {},
        model,
        body: { kind: "json", value },
        resolveReference,
      });
      const elapsed = performance.now() - started;
      assert.ok(elapsed < LINEAR_BOUND_MS, `body ${i} (${method}) took ${elapsed.toFixed(0)} ms`);
      assert.ok(["access", "invalid", "denied"].includes(analysis.kind));
    }
  }
});

timing.run();
