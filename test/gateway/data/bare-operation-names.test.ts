/**
 * An operation bound to the entity, named in an expression without
 * parentheses (`$filter=Sales.GetTotal gt 1000`), is called by back ends
 * that bind a dotted identifier as a call (Microsoft.OData.Core), so it is
 * refused like its call; and a derived type's navigation named like an
 * operator is refused uncast like any other. A data key with `list` on
 * SalesOrders only tries, against a recording upstream that sees the
 * request line byte for byte; nothing of it may reach the back end.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { type ForwardWorld, forwardedWith, rawRequest, startForwardWorld, stopForwardWorld } from "../../../test-support/forward-world.js";

/**
 * The fixture's V4 service, where the derived type SpecialOrder also has two
 * navigations named like operators (`In`, single-valued, and `Desc`,
 * collection-valued, both to Employees), beside its `Escalation`.
 */
const METADATA = V4_METADATA.replace(
  `      <EntityType Name="SpecialOrder" BaseType="S.SalesOrder">`,
  `      <EntityType Name="SpecialOrder" BaseType="S.SalesOrder">
        <NavigationProperty Name="In" Type="Sales.Employee"/>
        <NavigationProperty Name="Desc" Type="Collection(Sales.Employee)"/>`,
).replace(
  `<NavigationPropertyBinding Path="Sales.SpecialOrder/Escalation" Target="Sales.Container/Employees"/>`,
  `<NavigationPropertyBinding Path="Sales.SpecialOrder/Escalation" Target="Sales.Container/Employees"/>
          <NavigationPropertyBinding Path="Sales.SpecialOrder/In" Target="Employees"/>
          <NavigationPropertyBinding Path="Sales.SpecialOrder/Desc" Target="Employees"/>`,
);

interface Ctx extends ForwardWorld {
  /** `list` on SalesOrders, nothing else. */
  narrow: string;
}

const SALES = "/odata/prod/SALES";

const Attack = suite<Ctx>("data path: bound operations named without parentheses are calls");

Attack.before.each(async (ctx) => {
  Object.assign(
    ctx,
    await startForwardWorld({
      metadata: () => METADATA,
      services: { SALES: "sap/sales/0001" },
      keys: { narrow: { prod: { SALES: { SalesOrders: ["list"] } } } },
      answer: (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ value: [] })),
    }),
  );
  ctx.narrow = ctx.keys.narrow!.key;
});

Attack.after.each((ctx) => stopForwardWorld(ctx));

const raw = (ctx: Ctx, requestLine: string, opts: { headers?: string[]; body?: string } = {}) => rawRequest(ctx, requestLine, ctx.narrow, opts);

/** Sends each target as a GET; returns those the back end received, as it received them. */
const forwardedOf = (ctx: Ctx, targets: readonly string[]) => forwardedWith(ctx, ctx.narrow, SALES, targets);

// ---------------------------------------------------------------------------------------------
// Bound operations named in an expression without parentheses.
//
// A bound function with no non-binding parameter is invoked when it is named bare too:
// Microsoft.OData.Core (ASP.NET Core OData) binds a dotted identifier that is no type as a
// function call (DottedIdentifierBinder -> FunctionCallBinder.TryBindDottedIdentifierAsFunctionCall)
// and an unqualified end path as one too (TryBindEndPathAsFunctionCall, with the
// unqualified/default-namespace resolver, as 4.01 allows). So the binder refuses such a name as it
// refuses the call.
// ---------------------------------------------------------------------------------------------

Attack("a bound function named without parentheses in $filter, $orderby, $compute, an alias or a $batch part is refused like its call", async (ctx) => {
  // The path form needs the operation's grant (refused for this key); without parentheses it is no call (400).
  for (const [target, status] of [["SalesOrders(1)/Sales.GetTotal()", 403], ["SalesOrders(1)/Sales.GetTotal", 400]] as const) {
    const res = await raw(ctx, `GET ${SALES}/${target} HTTP/1.1`);
    assert.is(res.status, status, `${target}: ${res.body}`);
  }
  // The call form in an expression is refused.
  const call = await raw(ctx, `GET ${SALES}/SalesOrders?$filter=Sales.GetTotal()%20gt%201000 HTTP/1.1`);
  assert.is(call.status, 403, call.body);
  assert.is(ctx.seen.length, 0);
  const reached = await forwardedOf(ctx, [
    // A boolean oracle over the function's result for every order.
    "SalesOrders?$filter=Sales.GetTotal%20gt%201000",
    // The schema alias, and the unqualified (4.01, default namespace) spelling.
    "SalesOrders?$filter=S.GetTotal%20gt%201000",
    "SalesOrders?$filter=GetTotal%20gt%201000",
    // The value itself, in every row, and sorted by.
    "SalesOrders?$compute=Sales.GetTotal%20as%20t&$select=ID,t",
    "SalesOrders?$orderby=Sales.GetTotal%20desc&$top=1",
    "SalesOrders?$orderby=GetTotal%20desc&$top=1",
    // Through a parameter alias.
    "SalesOrders?$filter=@p%20gt%201000&@p=Sales.GetTotal",
    // A bound action (Approve), which the call form also refuses, named bare.
    "SalesOrders?$filter=Sales.Approve%20eq%20null",
  ]);
  // And inside a JSON $batch part.
  const before = ctx.seen.length;
  const body = JSON.stringify({ requests: [{ id: "1", method: "GET", url: "SalesOrders?$filter=Sales.GetTotal%20gt%201000" }] });
  const batch = await raw(ctx, `POST ${SALES}/$batch HTTP/1.1`, { headers: ["Content-Type: application/json"], body });
  if (ctx.seen.length > before) reached.push(`${batch.status} $batch -> ${ctx.seen[ctx.seen.length - 1]!.body}`);
  assert.equal(reached, [], `reached the back end:\n${reached.join("\n")}`);
});

// ---------------------------------------------------------------------------------------------
// Operator-named navigations of a derived type.
//
// erplink refuses a lone name that is a navigation of a type derived from the one in scope,
// uncast (`$filter=Escalation eq null`: 400, "cast to it first"), because a back end may follow
// it for entities of that type. The new keyword rule in scanTokens walks an operator-named lone
// token only when `step()` answers kind "navigation"; for a derived type's navigation `step()`
// answers "unknown" (with derivedNavigation), so `In` and `Desc` pass unanalyzed: the read of
// Employees that erplink refuses under any other name is forwarded under these.
// ---------------------------------------------------------------------------------------------

Attack("a derived type's navigation named like an operator (In, Desc) is refused uncast like any other name", async (ctx) => {
  // Any other name of a derived type's navigation, uncast, is refused.
  for (const target of ["SalesOrders?$filter=Escalation%20eq%20null", "SalesOrders?$filter=Desc/any()"]) {
    const res = await raw(ctx, `GET ${SALES}/${target} HTTP/1.1`);
    assert.is(res.status, 400, `${target}: ${res.body}`);
  }
  // Cast, it is authorized (and refused for this key).
  const cast = await raw(ctx, `GET ${SALES}/SalesOrders?$filter=Sales.SpecialOrder/In%20eq%20null HTTP/1.1`);
  assert.is(cast.status, 403, cast.body);
  assert.is(ctx.seen.length, 0);
  const reached = await forwardedOf(ctx, [
    "SalesOrders?$filter=In%20eq%20null",
    "SalesOrders?$filter=IN%20ne%20null",
    "SalesOrders?$orderby=Desc",
    "SalesOrders?$filter=Items/any(d:In%20eq%20null)",
  ]);
  assert.equal(reached, [], `reached the back end:\n${reached.join("\n")}`);
});

// ---------------------------------------------------------------------------------------------
// Probes that held.
// ---------------------------------------------------------------------------------------------

Attack("held: built-in names, their spellings and arguments; calls hidden by spacing, encoding or splitting", async (ctx) => {
  const cases: [string, number][] = [
    // Arguments of built-ins are scanned: a navigation in cast/isof/contains/case is a read.
    ["SalesOrders?$filter=isof(Customer,Sales.Customer)", 403],
    ["SalesOrders?$filter=cast(Customer,Sales.Customer)/Name%20eq%20'x'", 400],
    ["SalesOrders?$filter=contains(Customer/Name,'x')", 403],
    ["SalesOrders?$filter=length(Customer/Name)%20gt%201", 403],
    ["SalesOrders?$compute=case(ID%20eq%201:Customer/Name,true:'x')%20as%20c", 400],
    ["SalesOrders?$compute=case(Customer/ID%20eq%20'x':1,true:2)%20as%20c", 403],
    ["SalesOrders?$filter=CONTAINS(Customer/Name,'x')", 403],
    // Non-built-ins whatever the spacing or spelling between name and '('.
    ["SalesOrders?$filter=Sales.Salary%20(employee=7)%20gt%200", 400],
    ["SalesOrders?$filter=Sales.Salary%09(employee=7)%20gt%200", 400],
    ["SalesOrders?$filter=Sales.Salary%E2%80%8B(employee=7)%20gt%200", 403],
    ["SalesOrders?$filter=Sales%20/%20Salary(employee=7)%20gt%200", 400],
    ["SalesOrders?$filter=geo.Salary(employee=7)%20gt%200", 403],
    ["SalesOrders?$filter=contains.x(Note)", 403],
    ["SalesOrders?$filter=Sales.contains(Note,'x')", 403],
    ["SalesOrders?$filter=$it/contains(Note,'x')", 403],
    ["SalesOrders?$filter=Items/any(d:d/length(x))", 403],
    // Keyword words followed by '(' are not calls of a model function that erplink skips: the inside is scanned.
    ["SalesOrders?$filter=not(Customer/Name%20eq%20'x')", 403],
    // A word before '(' in operand position is a call: `in(…)` is no built-in.
    ["SalesOrders?$filter=in(Customer/ID)", 403],
    // In nested options, aliases and key predicates.
    ["SalesOrders?$expand=Items($filter=Sales.GetTotal()%20gt%201)", 403],
    ["SalesOrders?$expand=Items($filter=contains(Product/Name,'x'))", 403],
    ["SalesOrders?$filter=ID%20eq%20@a&@a=length(Customer/Name)", 403],
    ["SalesOrders?$filter=ID%20eq%20@a&@a=@b&@b=Sales.Salary(employee=7)", 403],
    ["SalesOrders(@k)?@k=Sales.Salary(employee=7)", 400],
    // Expanding a function names it in a path: refused as a call.
    ["SalesOrders?$expand=Sales.GetTotal", 403],
  ];
  const got: string[] = [];
  for (const [target, status] of cases) {
    const res = await raw(ctx, `GET ${SALES}/${target} HTTP/1.1`);
    if (res.status !== status) got.push(`${target}: ${res.status} ${res.body.slice(0, 200)}`);
  }
  assert.equal(got, []);
  assert.is(ctx.seen.length, 0, "nothing reached the back end");
});

Attack("held: option spellings and separators cannot smuggle a second, unanalyzed option", async (ctx) => {
  const cases: [string, number][] = [
    ["SalesOrders?$filter=ID%20eq%201&filter=Customer/ID%20eq%20'x'", 400],
    ["SalesOrders?$FILTER=Customer/ID%20eq%20'x'", 403],
    ["SalesOrders?expand=Customer", 403],
    ["SalesOrders?%24expand=Customer", 403],
    ["SalesOrders?%2524expand=Customer", 400],
    ["SalesOrders?$filter=ID%20eq%201%26$expand=Customer", 400],
    ["SalesOrders?$filter=ID%20eq%201;$expand=Customer", 400],
    ["SalesOrders?$expand=Items($top=1$expand=Product)", 400],
    ["SalesOrders?$expand=Items($search=x;$expand=Product)", 403],
    ["SalesOrders?$select=Customer/Name", 403],
    ["SalesOrders?$filter=Customer%2FName%20eq%20'x'", 403],
    ["SalesOrders?$filter=Customer%20/%20Name%20eq%20'x'", 400],
    ["SalesOrders?$filter=Customer%5CName%20eq%20'x'", 400],
    ["SalesOrders?$filter=ID%20eq%20'a''%20or%20Customer/ID%20eq%20''b'", 200],
  ];
  const got: string[] = [];
  for (const [target, status] of cases) {
    const res = await raw(ctx, `GET ${SALES}/${target} HTTP/1.1`);
    if (res.status !== status) got.push(`${target}: ${res.status} ${res.body.slice(0, 200)}`);
  }
  assert.equal(got, []);
  // Only the last one (a literal holding the text 'or Customer/ID eq') went out, its quotes as sent.
  assert.equal(
    ctx.seen.map((s) => s.url),
    ["/erp/sap/sales/0001/SalesOrders?$filter=ID%20eq%20%27a%27%27%20or%20Customer/ID%20eq%20%27%27b%27&sap-client=100"],
  );
});

Attack.run();
