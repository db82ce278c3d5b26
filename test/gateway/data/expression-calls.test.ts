/**
 * A data key with narrow permissions (`list` on SalesOrders only, or `list`
 * + `get`) cannot make erplink forward anything else: a call in an
 * expression (`$filter`, `$orderby`, `$compute`, aliases, `$batch` parts) of
 * anything but OData's built-in functions is refused, and so are other
 * entity sets reached through `$root`, `$it`, lambdas, casts and aliases.
 * erplink stands in front of a recording upstream that sees the request
 * line byte for byte; raw request lines over a real socket.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { type ForwardWorld, forwardedWith, rawRequest, startForwardWorld, stopForwardWorld } from "../../../test-support/forward-world.js";

/**
 * The fixture's V4 service plus an unbound function that returns a
 * primitive (a payroll lookup), with its function import: what a real
 * service may offer and this key may never call.
 */
const METADATA = V4_METADATA.replace(
  `      <Action Name="ResetAll"/>`,
  `      <Action Name="ResetAll"/>
      <Function Name="Salary">
        <Parameter Name="employee" Type="Edm.Int32"/>
        <ReturnType Type="Edm.Decimal"/>
      </Function>`,
).replace(
  `        <ActionImport Name="ResetAll" Action="Sales.ResetAll"/>`,
  `        <ActionImport Name="ResetAll" Action="Sales.ResetAll"/>
        <FunctionImport Name="Salary" Function="Sales.Salary"/>`,
);

interface Ctx extends ForwardWorld {
  /** `list` on SalesOrders, nothing else. */
  narrow: string;
  /** `list` and `get` on SalesOrders and Customers. */
  wide: string;
}

const SALES = "/odata/prod/SALES";
const UP = "/erp/sap/sales/0001";

const Attack = suite<Ctx>("data path: a narrow key cannot reach other data through calls in expressions");

Attack.before.each(async (ctx) => {
  Object.assign(
    ctx,
    await startForwardWorld({
      metadata: () => METADATA,
      services: { SALES: "sap/sales/0001" },
      keys: {
        narrow: { prod: { SALES: { SalesOrders: ["list"] } } },
        wide: { prod: { SALES: { SalesOrders: ["list", "get"], Customers: ["list", "get"] } } },
      },
      answer: (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ value: [] })),
    }),
  );
  ctx.narrow = ctx.keys.narrow!.key;
  ctx.wide = ctx.keys.wide!.key;
});

Attack.after.each((ctx) => stopForwardWorld(ctx));

/** Sends a request line as written with `key` (the narrow key by default). */
const raw = (ctx: Ctx, requestLine: string, opts: { key?: string; headers?: string[]; body?: string } = {}) => rawRequest(ctx, requestLine, opts.key ?? ctx.narrow, opts);

/** Sends each target as a GET with the narrow key; returns those the back end received, as it received them. */
const forwardedOf = (ctx: Ctx, targets: readonly string[]) => forwardedWith(ctx, ctx.narrow, SALES, targets);

// ---------------------------------------------------------------------------------------------
// Functions called inside expressions.
//
// The resource path refuses unbound function and action imports (403 NOT_ALLOWED), and a key
// that may not touch the import's name is stopped at the entity step. But the OData 4 ABNF also
// lets an expression call a function: `functionExpr = namespace "." function(params)`, unbound
// (`$filter=Sales.Search(text='x') ne null`) or bound to the current instance
// (`$filter=Sales.GetTotal() gt 1`). query.ts (scanTokens) reads a namespace-qualified name
// followed by '(' as a lone path, walked leniently: an unknown name passes as nothing, so the call
// is authorized as a plain `list` of the set and forwarded. Standard servers (Apache Olingo, and
// frameworks built on it) evaluate such calls for every row.
// ---------------------------------------------------------------------------------------------

Attack("an unbound function (the function behind a function import) called in $filter, $orderby, $compute or an alias is refused, not forwarded as a plain list", async (ctx) => {
  // Direct calls of the imports are refused for this key, as they should be.
  const direct = await raw(ctx, `GET ${SALES}/Salary(employee=7) HTTP/1.1`);
  assert.is(direct.status, 403, direct.body);
  const search = await raw(ctx, `GET ${SALES}/Search(text='x') HTTP/1.1`);
  assert.is(search.status, 403, search.body);
  assert.is(ctx.seen.length, 0);
  // The same functions, called from expressions of a request on SalesOrders.
  const reached = await forwardedOf(ctx, [
    // A boolean oracle: the list is non-empty iff employee 7 earns more than 100000.
    "SalesOrders?$filter=Sales.Salary(employee=7)%20gt%20100000&$top=1",
    // The value itself, computed into every row of the answer.
    "SalesOrders?$compute=Sales.Salary(employee=7)%20as%20s&$select=ID,s&$top=1",
    "SalesOrders?$orderby=Sales.Salary(employee=7)",
    "SalesOrders?$filter=@p%20gt%200&@p=Sales.Salary(employee=7)",
    // The schema alias, and the fixture's own unbound function (import 'Search', bound to Products).
    "SalesOrders?$filter=S.Salary(employee=7)%20gt%200",
    "SalesOrders?$filter=Sales.Search(text=%27x%27)%20ne%20null",
    // Unbound actions are not allowed in expressions by the standard, but they too reach the back end.
    "SalesOrders?$filter=Sales.ResetAll()%20eq%20null",
  ]);
  assert.equal(reached, [], `reached the back end:\n${reached.join("\n")}`);
});

Attack("an unbound function called in an expression of a $batch part is refused too", async (ctx) => {
  const body = JSON.stringify({ requests: [{ id: "1", method: "GET", url: "SalesOrders?$filter=Sales.Salary(employee=7)%20gt%20100000" }] });
  const res = await raw(ctx, `POST ${SALES}/$batch HTTP/1.1`, { headers: ["Content-Type: application/json"], body });
  assert.equal(
    ctx.seen.map((s) => s.body),
    [],
    `status ${res.status}; the back end received the batch`,
  );
});

Attack("a bound function called in $filter is refused, as its call in the path is without its grant", async (ctx) => {
  // The path form is a 'get' of SalesOrders: refused for this key (list only).
  const path = await raw(ctx, `GET ${SALES}/SalesOrders(1)/Sales.GetTotal() HTTP/1.1`);
  assert.is(path.status, 403, path.body);
  assert.is(ctx.seen.length, 0);
  // The back end evaluates GetTotal for every order; the same result for the key, read through $filter.
  const reached = await forwardedOf(ctx, ["SalesOrders?$filter=Sales.GetTotal()%20gt%201000", "SalesOrders?$orderby=Sales.GetTotal()%20desc&$top=1"]);
  assert.equal(reached, [], `reached the back end:\n${reached.join("\n")}`);
});

// ---------------------------------------------------------------------------------------------
// Probes that held (kept as regressions).
// ---------------------------------------------------------------------------------------------

Attack("held: other entity sets through $root, $it, lambdas, nested $count options, casts and aliases are refused or authorized", async (ctx) => {
  const cases: [string, number][] = [
    ["SalesOrders?$filter=$root/Customers('C1')/Name%20eq%20'x'", 403],
    ["SalesOrders?$filter=ID%20eq%20@a&@a=$root/Customers/$count", 403],
    ["SalesOrders(ID=@k)?@k=$root/Customers", 400],
    ["SalesOrders?$filter=$it/Customer/Name%20eq%20'x'", 403],
    ["SalesOrders?$filter=$this/Customer/ID%20eq%20'x'", 403],
    ["SalesOrders?$filter=Items/any(i:$it/Customer/ID%20eq%20'x')", 403],
    ["SalesOrders?$filter=Items/any(i:Product%20eq%20null)", 403],
    ["SalesOrders?$filter=Items/$count($filter=Product%20eq%20null)%20gt%200", 400],
    ["SalesOrders?$filter=Sales.Search(text=%27x%27)/$count%20gt%200", 400],
    ["SalesOrders?$filter=Sales.SpecialOrder/Escalation/ID%20eq%201", 403],
    ["SalesOrders?$filter=escalation/ID%20eq%201", 400],
    ["SalesOrders?$filter=CUSTOMER%20eq%20null", 400],
    ["SalesOrders?$select=ShipTo($select=CountryInfo)", 403],
    ["SalesOrders?$expand=customer/$ref", 400],
    ["SalesOrders?$expand=Items($levels=max;$expand=Product)", 403],
    ["SalesOrders?$compute=Customer/Name%20as%20X", 403],
    ["SalesOrders/Sales.SpecialOrder?$expand=Escalation", 403],
    ["SalesOrders?$filter=ID%20eq%20@a&@a=Customer/ID", 403],
    ["SalesOrders?$apply=groupby((Customer/Name))", 403],
    ["SalesOrders/$filter(ID%20eq%201)", 400],
    ["SalesOrders?$id=Customers('1')", 403],
    ["SalesOrders?sap-client=200", 403],
    ["SalesOrders?$expand=Customer&EXPAND=Items", 400],
    ["SalesOrders?$filter=Note%20eq%20'a'&%24filter=ID%20eq%201", 400],
    ["SalesOrders%2F..%2FCustomers", 400],
    ["SalesOrders;x=1/../Customers", 400],
    ["Salesorders%00/Customers", 400],
    ["Customers", 403],
    ["customers", 403],
    ["SalesOrders('1')/Customer", 400],
  ];
  const got: string[] = [];
  for (const [target, status] of cases) {
    const res = await raw(ctx, `GET ${SALES}/${target} HTTP/1.1`);
    if (res.status !== status) got.push(`${target}: ${res.status} ${res.body.slice(0, 200)}`);
  }
  assert.equal(got, []);
  assert.is(ctx.seen.length, 0, "nothing reached the back end");
});

Attack("held: method tunnelling and overrides cannot turn the narrow key's read into a write", async (ctx) => {
  const cases: [string, string[], number][] = [
    ["GET SalesOrders(1)", ["X-HTTP-Method: DELETE"], 403],
    ["GET SalesOrders", ["X-HTTP-Method-Override: POST"], 403],
    ["HEAD SalesOrders(1)", ["X-HTTP-Method: DELETE"], 403],
    ["POST SalesOrders(1)", ["X-HTTP-Method: DELETE"], 403],
    ["POST SalesOrders(1)", ["X-HTTP-Method: GET"], 403],
    ["POST SalesOrders(1)", ["X-HTTP-Method: DELETE", "X-HTTP-Method-Override: GET"], 400],
    ["DELETE SalesOrders(1)", [], 403],
    ["MERGE SalesOrders(1)", [], 403],
  ];
  const got: string[] = [];
  for (const [line, headers, status] of cases) {
    const [method, target] = line.split(" ");
    const res = await raw(ctx, `${method} ${SALES}/${target} HTTP/1.1`, { headers });
    if (res.status !== status) got.push(`${line} ${headers.join("; ")}: ${res.status} ${res.body.slice(0, 200)}`);
  }
  assert.equal(got, []);
  assert.is(ctx.seen.length, 0, "nothing reached the back end");
  // A plain list passes and goes out as a GET without any override header.
  const ok = await raw(ctx, `GET ${SALES}/SalesOrders HTTP/1.1`, { headers: ["X-Original-URL: /erp/sap/sales/0001/Customers", "X-Rewrite-URL: /Customers"] });
  assert.is(ok.status, 200, ok.body);
  assert.is(ctx.seen[0]!.method, "GET");
  assert.is(ctx.seen[0]!.url, `${UP}/SalesOrders?sap-client=100`);
  assert.is(ctx.seen[0]!.headers["x-original-url"], undefined);
  assert.is(ctx.seen[0]!.headers["x-rewrite-url"], undefined);
});

Attack("held: the analysis cache does not carry a wider key's analysis to the narrow key (same target, same method)", async (ctx) => {
  const target = `GET ${SALES}/SalesOrders?$expand=Customer HTTP/1.1`;
  const wide = await raw(ctx, target, { key: ctx.wide });
  assert.is(wide.status, 200, wide.body);
  assert.is(ctx.seen.length, 1);
  const narrow = await raw(ctx, target);
  assert.is(narrow.status, 403, narrow.body);
  // HEAD after a cached GET: its own entry, its own decision.
  const head = await raw(ctx, `HEAD ${SALES}/SalesOrders?$expand=Customer HTTP/1.1`);
  assert.is(head.status, 403);
  assert.is(ctx.seen.length, 1, "only the wide key's request reached the back end");
});
Attack.run();
