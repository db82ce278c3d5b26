/**
 * Unit tests of `$apply` analysis (src/gateway/odata/parse/apply.ts,
 * src/gateway/odata/bind/apply.ts) through analyzeRequest: the exact
 * accesses every transformation needs on the V4 sample service of
 * test-support/odata/fixtures.ts, the aliases later transformations and
 * options may use, and the refusals (unknown transformations, custom
 * aggregation methods, malformed text, V2).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseMetadata, type ServiceModel } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest, type Access } from "../../../src/gateway/odata/request.js";
import { acc, every, LINEAR_BOUND_MS, noAccess, ok, PATH, withoutTarget, type Expected } from "../../../test-support/odata/analysis.js";
import { V2_METADATA, V4_METADATA } from "../../../test-support/odata/fixtures.js";

const MODELS: Record<"v4" | "v2", ServiceModel> = { v4: parseMetadata(V4_METADATA), v2: parseMetadata(V2_METADATA) };

interface Case {
  readonly model?: keyof typeof MODELS;
  readonly path?: string;
  /** `$apply`'s value, as written (encoded by the test). */
  readonly apply: string;
  /** Further query options, already encoded. */
  readonly more?: string;
  readonly grants?: readonly string[];
  readonly expect: Expected;
}

const get = (...accesses: Access[]): Expected => ok("GET", ...accesses);
const invalid = (message: string): Expected => ({ kind: "invalid", message });
const denied = (message: string): Expected => ({ kind: "denied", message });
const ORDERS = acc("SalesOrders", "list", PATH);

function run(c: Case): Expected {
  const query = `$apply=${encodeURIComponent(c.apply)}${c.more !== undefined ? `&${c.more}` : ""}`;
  const grants = c.grants;
  return withoutTarget(
    analyzeRequest({
      method: "GET",
      path: c.path ?? "/SalesOrders",
      query,
      headers: {},
      model: MODELS[c.model ?? "v4"],
      ...(grants ? { entityStep: (set: string) => (grants.includes(set) || grants.includes("*") ? undefined : noAccess(set)) } : {}),
    }),
  );
}

function table(name: string, cases: readonly Case[]): void {
  const test = suite(name);
  for (const c of cases) {
    const title = `${c.model ?? "v4"} ${c.path ?? "/SalesOrders"}?$apply=${c.apply}${c.more ? `&${c.more}` : ""}${c.grants ? ` [key: ${c.grants.join(", ")}]` : ""}`;
    test(title.slice(0, 200), () => assert.equal(run(c), c.expect));
  }
  test.run();
}

table("$apply: accesses of each transformation", [
  { apply: "aggregate($count as C)", expect: get(ORDERS) },
  { apply: "groupby((Note))", expect: get(ORDERS) },
  { apply: "groupby((Note,ShipTo/City))", expect: get(ORDERS) },
  { apply: "groupby((Customer/Name))", expect: get(ORDERS, acc("Customers", "list", "$apply groupby Customer")) },
  { apply: "groupby((Customer))", expect: get(ORDERS, acc("Customers", "list", "$apply groupby Customer")) },
  { apply: "groupby((ShipTo/CountryInfo/Name))", expect: get(ORDERS, acc("Countries", "list", "$apply groupby ShipTo/CountryInfo")) },
  { apply: "groupby((Note),aggregate(Amount with sum as Total))", expect: get(ORDERS) },
  {
    apply: "groupby((Note),aggregate(Customer/Orders/$count as N))",
    // Customer/Orders reads SalesOrders, already listed.
    expect: get(ORDERS, acc("Customers", "list", "$apply aggregate Customer")),
  },
  { apply: "aggregate(Amount with sum as Total,Amount with max as Most,ID with countdistinct as Ids)", expect: get(ORDERS) },
  // Items is contained in SalesOrders: listing it lists SalesOrders, already listed.
  { apply: "aggregate(Items/Quantity with sum as Q)", expect: get(ORDERS) },
  { apply: "aggregate(Amount with sum from Customer/Name with average as PerCustomer)", expect: get(ORDERS, acc("Customers", "list", "$apply aggregate Customer")) },
  { apply: "filter(Amount gt 100)/groupby((Note))", expect: get(ORDERS) },
  { apply: "filter(Customer/Name eq 'x')/groupby((Note))", expect: get(ORDERS, acc("Customers", "list", "$apply filter Customer")) },
  { apply: "compute(Amount mul 2 as Twice)/groupby((Twice))", expect: get(ORDERS) },
  { apply: "compute(Customer/Name as CN)", expect: get(ORDERS, acc("Customers", "list", "$apply compute Customer")) },
  { apply: "orderby(Customer/Name desc)/top(2)/skip(1)", expect: get(ORDERS, acc("Customers", "list", "$apply orderby Customer")) },
  { apply: "search(blue)/identity", expect: get(ORDERS) },
  {
    apply: "expand(Customer,filter(Address/CountryInfo/Name eq 'x'))",
    expect: get(ORDERS, acc("Customers", "list", "$apply expand Customer"), acc("Countries", "list", "$apply expand Customer filter Customer/Address/CountryInfo")),
  },
  {
    apply: "expand(Items,expand(Product))",
    expect: get(ORDERS, acc("Products", "list", "$apply expand Items/Product")),
  },
  {
    apply: "concat(groupby((Note),aggregate($count as C)),aggregate(Customer/Name with max as M))",
    expect: get(ORDERS, acc("Customers", "list", "$apply aggregate Customer")),
  },
  // Through a navigation the metadata gives no entity set: every set.
  { apply: "groupby((Approver/ID))", expect: get(ORDERS, every("list", "$apply groupby Approver", "navigation 'Approver' of 'SalesOrders'")) },
  // Below an entity: the collection the path reaches.
  { path: "/Customers('1')/Orders", apply: "groupby((Note))", expect: get(acc("Customers", "get", "navigation source in resource path"), ORDERS) },
  // Nested in $expand: bound at the expanded collection.
  {
    path: "/Customers",
    apply: "identity",
    more: `$expand=Orders(${encodeURIComponent("$apply=groupby((ShipTo/CountryInfo/Name))")})`,
    expect: get(acc("Customers", "list", PATH), acc("SalesOrders", "list", "$expand Orders"), acc("Countries", "list", "$apply in $expand Orders groupby Orders/ShipTo/CountryInfo")),
  },
  {
    path: "/Customers",
    apply: "identity",
    more: `$expand=Orders(${encodeURIComponent("$apply=nest(x)")})`,
    expect: invalid("$apply transformation 'nest' is not supported"),
  },
]);

table("$apply: aliases in later transformations and options", [
  { apply: "aggregate($count as C)/filter(C gt 1)", expect: get(ORDERS) },
  { apply: "groupby((Note),aggregate(Amount with sum as T))/filter(T gt 1)/orderby(T desc)", expect: get(ORDERS) },
  { apply: "groupby((Note),aggregate(Amount with sum as T))", more: "$filter=T%20gt%201&$orderby=T&$select=Note,T", expect: get(ORDERS) },
  { apply: "compute(Amount as A)", more: "$compute=A%20mul%202%20as%20B&$filter=B%20gt%201", expect: get(ORDERS) },
  { apply: "concat(compute(Amount as A),compute(Amount as B))/filter(A gt B)", expect: get(ORDERS) },
  // An alias of one sequence is not a name in the other.
  { apply: "concat(compute(Amount as A),filter(A gt 1))", expect: invalid("'A' is not a property or navigation of 'Sales.SalesOrder' in $apply filter") },
  { apply: "aggregate(Amount with sum as T,T with sum as U)", expect: invalid("'T' is not a property or navigation of 'Sales.SalesOrder' in $apply aggregate") },
  { apply: "filter(T gt 1)/aggregate(Amount with sum as T)", expect: invalid("'T' is not a property or navigation of 'Sales.SalesOrder' in $apply filter") },
  // An alias named like a primitive property hides no read; one named like a navigation would.
  { apply: "groupby((Note),aggregate(Amount with sum as Amount))/filter(Amount gt 1)", expect: get(ORDERS) },
  {
    apply: "compute(Note as Customer)/groupby((Customer))",
    expect: invalid("alias 'Customer' in $apply compute is the name of a navigation property: back ends disagree on which one a later 'Customer' means"),
  },
  {
    apply: "aggregate($count as Items)",
    expect: invalid("alias 'Items' in $apply aggregate is the name of a navigation property: back ends disagree on which one a later 'Items' means"),
  },
  { apply: "aggregate(Amount with sum as T)", more: "$filter=Customer/Name%20eq%20'x'", expect: get(ORDERS, acc("Customers", "list", "$filter Customer")) },
]);

table("$apply: a key without the target set of a path", [
  { apply: "groupby((Customer/Name))", grants: ["SalesOrders"], expect: get(ORDERS, acc("Customers", "list", "$apply groupby Customer")) },
  { apply: "groupby((Note))", grants: ["SalesOrders"], expect: get(ORDERS) },
]);

table("$apply: refusals", [
  { apply: "ancestors($root/SalesOrders,H,ID,filter(ID eq 1),keep start)", expect: invalid("$apply transformation 'ancestors' is not supported") },
  { apply: "descendants(H,ID,filter(ID eq 1))", expect: invalid("$apply transformation 'descendants' is not supported") },
  { apply: "traverse(H,ID,preorder)", expect: invalid("$apply transformation 'traverse' is not supported") },
  { apply: "topcount(2,Amount)", expect: invalid("$apply transformation 'topcount' is not supported") },
  { apply: "Sales.Special(x=1)", expect: invalid("$apply transformation 'Sales.Special' is not supported") },
  { apply: "GroupBy((Note))", expect: invalid("$apply transformation 'GroupBy' is not supported") },
  { apply: "groupby((Note)) ", expect: invalid("unexpected characters after ')' in $apply") },
  { apply: " groupby((Note))", expect: invalid("malformed transformation ' groupby((Note))' in $apply: no white space outside parentheses") },
  { apply: "nest(groupby((Note)) as N)", expect: invalid("$apply transformation 'nest' is not supported") },
  { apply: "groupby(rollup(Note,Amount))", expect: invalid("groupby in $apply needs a parenthesized list of grouping properties first") },
  { apply: "groupby((rollup($all,Note)))", expect: invalid("$apply transformation 'rollup' is not supported") },
  { apply: "groupby((Note),aggregate($count as C),filter(C gt 1))", expect: invalid("groupby in $apply takes the grouping properties and one transformation sequence") },
  { apply: "aggregate(Amount with Sales.median as M)", expect: invalid("aggregation method 'Sales.median' is not supported in $apply aggregate: only sum, min, max, average and countdistinct") },
  { apply: "aggregate(Amount)", expect: invalid("expected 'with' and an aggregation method in aggregate in $apply at its end") },
  { apply: "aggregate(Amount with sum)", expect: invalid("expected 'as' and an alias in aggregate in $apply at its end") },
  { apply: "aggregate($count)", expect: invalid("expected 'as' and an alias in aggregate in $apply at its end") },
  { apply: "filter(Sales.Total() gt 1)", expect: denied("'Sales.Total(…)' in $apply filter calls a function erplink cannot authorize: only OData's built-in functions may be called in an expression") },
  { apply: "filter($root/Customers('1')/Name eq 'x')", expect: denied("$root is not allowed in $apply filter") },
  { apply: "groupby((contains(Note,'x')))", expect: invalid("'contains(Note,'x')' is not a property path in groupby in $apply") },
  { apply: "groupby((Nope))", expect: invalid("'Nope' is not a property or navigation of 'Sales.SalesOrder' in $apply groupby") },
  { apply: "expand(Note)", expect: invalid("'Note' is not a navigation in $apply expand") },
  { apply: "expand(Customer,orderby(Name))", expect: invalid("'orderby(Name)' is not allowed in expand in $apply: only a filter(…) first, then expand(…)") },
  { apply: "top(x)", expect: invalid("malformed top in $apply: expected a non-negative integer, not 'x'") },
  { apply: "search(a/b)", expect: invalid("search in $apply may not be empty or hold quotes, brackets, parentheses, ',', ';' or '/': back ends disagree on where it ends") },
  { apply: "concat(identity)", expect: invalid("concat needs at least two transformation sequences in $apply") },
  { apply: "identity()", expect: invalid("identity takes no arguments in $apply") },
  { apply: "filter", expect: invalid("filter needs arguments in parentheses in $apply") },
  { apply: "", expect: invalid("empty $apply") },
  { apply: "groupby((Note))//top(1)", expect: invalid("empty transformation in $apply") },
  { apply: `filter(Note eq "x")`, expect: invalid(`'"' is not allowed in $apply outside a single-quoted literal: back ends disagree on where a JSON value, a list or a double-quoted string ends`) },
  { path: "/SalesOrders(1)", apply: "groupby((Note))", expect: invalid("$apply applies to collections, and the resource path addresses one entity") },
  { model: "v2", path: "/SalesOrderSet", apply: "groupby((Note))", expect: denied("$apply is not allowed: OData V2 has no data aggregation") },
]);

const hostile = suite("$apply: hostile input is refused quickly, never thrown");
hostile("concat and groupby nested beyond the nesting bound are invalid", () => {
  let apply = "identity";
  for (let i = 0; i < 40; i++) apply = `concat(${apply},identity)`;
  assert.equal(run({ apply, expect: get() }), invalid("$apply is nested more than 32 levels deep"));
  let grouped = "identity";
  for (let i = 0; i < 40; i++) grouped = `groupby((Note),${grouped})`;
  assert.equal(run({ apply: grouped, expect: get() }), invalid("$apply is nested more than 32 levels deep"));
});
hostile("hundreds of transformations are analyzed in linear time", () => {
  const started = performance.now();
  const result = run({ apply: Array.from({ length: 500 }, () => "filter(Customer/Name eq 'x')").join("/"), expect: get() });
  assert.equal(result, get(ORDERS, acc("Customers", "list", "$apply filter Customer")));
  assert.ok(performance.now() - started < LINEAR_BOUND_MS);
});
hostile.run();
