/**
 * Hand-written hostile requests through the fuzzing harness's oracle
 * (test-support/fuzz): each must be refused or forwarded as authorized.
 * Expand/filter/select/apply/compute paths, parameter aliases, query option
 * spellings and escapes, dot segments and separators in the path, body
 * binds/deep inserts/V2 control information/content-type tricks, method
 * tunnelling headers, sap-client in the query, and multipart and JSON
 * $batch parts (Content-ID references, absolute part URLs, base64 parts).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { FuzzCase } from "../../test-support/fuzz/generators.js";
import { checkExchange, provision, report, runCase, startFuzzGateway, type FuzzGateway } from "../../test-support/fuzz/harness.js";
import { FUZZ_UNIVERSE } from "../../test-support/fuzz/model.js";
import { RawClient } from "../../test-support/fuzz/raw-client.js";
import { startRecordingUpstream, type RecordingUpstream } from "../../test-support/fuzz/upstream.js";

interface Ctx { upstream: RecordingUpstream; gateway: FuzzGateway; client: RawClient; key: string }
const U = FUZZ_UNIVERSE;
const S = suite<Ctx>("hostile hand-written data-path requests");
S.before(async (ctx) => {
  ctx.upstream = await startRecordingUpstream({ universe: U });
  ctx.gateway = await startFuzzGateway();
  ctx.key = await provision((m, p, b) => ctx.gateway.admin(m, p, b), U, ctx.upstream.baseUrl);
  ctx.client = new RawClient(ctx.gateway.host, ctx.gateway.port);
});
S.after(async (ctx) => { ctx.client?.close(); await ctx.gateway?.close(); await ctx.upstream?.close(); });

const J = [["Content-Type", "application/json"]] as const;
const b = (s: string) => Buffer.from(s);
function c(method: string, target: string, headers: readonly (readonly [string, string])[] = [], body?: string, kind: FuzzCase["kind"] = "plain"): FuzzCase {
  const m = /^\/odata\/([^/]+)\/([^/?#]+)/.exec(target);
  return { kind, instance: m?.[1] ?? "prod", service: m?.[2] ?? "SALES", method, target, headers, ...(body !== undefined ? { body: b(body) } : {}) };
}
const CASES: FuzzCase[] = [
  c("PATCH", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"Product@odata.bind":"Products(\'1\')"}'),
  c("PATCH", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"Product":{"@odata.id":"Products(\'1\')","Name":"x"}}'),
  c("PATCH", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"Quantity":1,"__proto__":{"Order":{"ID":1}}}'),
  c("PATCH", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"Quantity":1,"ORDER@ODATA.BIND":"Orders(2)"}'),
  c("PATCH", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"@odata.context":"https://evil/x/$metadata","Product@odata.bind":"Products(\'1\')"}'),
  c("PATCH", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"Product@odata.bind":"../MASTER/Currencies(\'x\')"}'),
  c("PATCH", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", [["Content-Type", "text/plain"]], '{"Order":{"ID":2}}'),
  c("PATCH", "/odata/prodv2/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"Order":{"__deferred":{"uri":"Orders(2)"},"Note":"x"}}'),
  c("PATCH", "/odata/prodv2/SALES/OrderItems(OrderID=1,ItemNo=1)", J, '{"d":{"Order":{"ID":2}}}'),
  c("POST", "/odata/prod/SALES/Products", [["Content-Type", "image/png"]], '{"ID":"p","Supplier":{"ID":"s"}}'),
  c("POST", "/odata/prod/SALES/Products", [["Content-Type", "image/png"]], '<a:entry xmlns:a="http://www.w3.org/2005/Atom"/>'),
  c("POST", "/odata/prod/SALES/Products", [["Content-Type", "image/png, application/json"]], '{"ID":"p","Supplier":{"ID":"s"}}'),
  c("POST", "/odata/prod/SALES/Orders(1)", [["X-HTTP-Method", "DELETE"], ["X-HTTP-Method-Override", "PATCH"]]),
  c("POST", "/odata/prod/SALES/OrderItems(OrderID=1,ItemNo=1)", [["X-HTTP-Method", "MERGE"], ["Content-Type", "application/json"]], '{"Order":{"ID":1}}'),
  c("GET", "/odata/prod/SALES/Orders?sap-client=100&sap-client=200"),
  c("GET", "/odata/prod/SALES/Orders?sap%2Dclient=200"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($expand=Favorite($expand=Supplier))"),
  c("GET", "/odata/prod/SALES/Orders?$apply=groupby((Customer/Favorite/Name))"),
  c("GET", "/odata/prod/SALES/$entity?$id=Products('1')"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($select=Favorite/Supplier)"),
  c("GET", "/odata/prod/SALES/Orders?%24expand=Customer&$EXPAND=Items/Product"),
  c("POST", "/odata/prod/SALES/Orders/$query", [["Content-Type", "text/plain"]], '$expand=Customer($expand=Favorite)'),
  c("GET", "/odata/prod/SALES/Orders?$expand=Items/$ref"),
  c("GET", "/odata/prod/SALES/Orders?$filter=isof(Items,'Fz.OrderItem')"),
  c("GET", "/odata/prod/SALES/Orders?$filter=isof(Customer/Favorite,'Fz.Product')"),
  c("GET", "/odata/prod/SALES/Orders?$filter=cast(Customer/Favorite,'Fz.Product') ne null"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Customer/Favorite ne null"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Items/any()"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Items/$count gt 1"),
  c("GET", "/odata/prod/SALES/Orders?$orderby=Items/$count"),
  c("GET", "/odata/prod/SALES/Orders?$select=Items/$ref"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($levels=max;$expand=Favorite)"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($expand=Orders($levels=3))"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($expand=Orders($select=Items))"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer/Orders/$count"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer/Orders($expand=Items)"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer%2FFavorite"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer%28$expand=Favorite%29"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($expand%3DFavorite)"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer(%24expand=Favorite)"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($EXPAND=Favorite)"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer(expand=Favorite)"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($expand=Favorite,Orders)"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($filter=@x)&@x=Favorite/Name eq 'a'"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer($expand=@x)&@x=Favorite"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Customer/ID in @x&@x=[\"a\"]"),
  c("GET", "/odata/prod/SALES/Orders?$filter=contains(@x,'a')&@x=Customer/Favorite/Name"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq @x&@x=@y&@y=Customer/Favorite/Name"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq @x&@x=$root/Products('1')/Name"),
  c("GET", "/odata/prod/SALES/Orders(1)/Fz.Total(p=@x)?@x=Items"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq 'a'&$filter=Customer/Favorite/Name eq 'b'"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq 'a'%26$expand=Items"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq 'a%26$expand=Items'"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq 'a;$expand=Items'"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq 'a'%3B$expand=Items"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note eq 'a'&amp;$expand=Items"),
  c("GET", "/odata/prod/SALES/Orders?$filter=Note%20eq%20%27a%27+and+Customer/Favorite/Name+eq+%27b%27"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Customer+,Items"),
  c("GET", "/odata/prod/SALES/Orders?$expand=%20Items"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Items%00"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Custom%65r"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Ite%6Ds"),
  c("GET", "/odata/prod/SALES/Orders?%2524expand=Items"),
  c("GET", "/odata/prod/SALES/Orders?$ex%70and=Items"),
  c("GET", "/odata/prod/SALES/Orders?$expand=Items#&$top=1"),
  c("GET", "/odata/prod/SALES/Orders?$top=1#$expand=Items"),
  c("GET", "/odata/prod/SALES/Orders%3F$expand=Items"),
  c("GET", "/odata/prod/SALES/Orders%23/../OrderItems"),
  c("GET", "/odata/prod/SALES/Orders/%2e%2e/OrderItems"),
  c("GET", "/odata/prod/SALES/Orders/%2E./OrderItems"),
  c("GET", "/odata/prod/SALES/Orders\\..\\OrderItems"),
  c("GET", "/odata/prod/SALES/Orders/..%5COrderItems"),
  c("GET", "/odata/prod/SALES//OrderItems"),
  c("GET", "/odata/prod/SALES/Orders;x=../OrderItems"),
  c("GET", "/odata/prod/SALES/Orders(1);/Items"),
  c("GET", "/odata/prod/SALES/Orders%C0%AF..%C0%AFOrderItems"),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: application/http\r\n\r\nGET Orders(1)?$expand=Items HTTP/1.1\r\n\r\n\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: application/http\r\n\r\nGET Orders HTTP/1.1\r\nX-HTTP-Method: DELETE\r\n\r\n\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: application/http\r\n\r\nGET http://127.0.0.1:1/svc/v4/sales/OrderItems HTTP/1.1\r\n\r\n\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: application/http\r\n\r\nGET /odata/prod/SALES/OrderItems HTTP/1.1\r\n\r\n\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: application/http\r\n\r\nGET ../MASTER/Currencies HTTP/1.1\r\n\r\n\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\nPOST Products HTTP/1.1\r\nContent-Type: image/png\r\n\r\nx\r\n--c\r\nContent-Type: application/http\r\nContent-ID: 2\r\n\r\nGET $1/Supplier HTTP/1.1\r\n\r\n\r\n--c--\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\nPOST Products HTTP/1.1\r\nContent-Type: image/png\r\n\r\nx\r\n--c\r\nContent-Type: application/http\r\nContent-ID: 2\r\n\r\nDELETE $1 HTTP/1.1\r\n\r\n\r\n--c--\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\nPOST Products HTTP/1.1\r\nContent-Type: image/png\r\n\r\nx\r\n--c\r\nContent-Type: application/http\r\nContent-ID: 2\r\n\r\nPATCH OrderItems(OrderID=1,ItemNo=1) HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"Product@odata.bind":"$1"}\r\n--c--\r\n--b--\r\n'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"post","url":"Products","headers":{"content-type":"image/png"},"body":"eA=="},{"id":"2","dependsOn":["1"],"method":"get","url":"$1/Supplier"}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"get","url":"Orders","headers":{"x-http-method":"DELETE"}}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"GET","url":"Orders","atomicityGroup":"g","ifMatch":"x"}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"GET","url":"Orders","method":"DELETE"}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"GET","url":"Orders","body":{"a":1}}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"$1","method":"GET","url":"Orders"},{"id":"2","method":"GET","url":"$$1"}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"GET","url":"Orders?$expand=Items"}],"requests":[]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"GET","url":"Orders","URL":"OrderItems"}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"GET","url":"Orders","Method":"DELETE"}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"PATCH","url":"OrderItems(OrderID=1,ItemNo=1)","headers":{"content-type":"text/plain"},"body":{"Order":{"ID":1}}}]}'),
  c("POST", "/odata/prod/SALES/$batch", [["Content-Type", "application/json"]], '{"requests":[{"id":"1","method":"PATCH","url":"OrderItems(OrderID=1,ItemNo=1)","headers":{"content-type":"application/json"},"body":"{\\"Order\\":{\\"ID\\":1}}"}]}'),
  c("POST", "/odata/prodv2/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nMERGE OrderItems(OrderID=1,ItemNo=1) HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"Order":{"__metadata":{"uri":"Orders(1)"}}}\r\n--c--\r\n--b--\r\n'),
  c("POST", "/odata/prodv2/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: base64\r\n\r\nR0VUIE9yZGVySXRlbXMgSFRUUC8xLjENCg0K\r\n--c--\r\n--b--\r\n'),
  c("POST", "/odata/prodv2/SALES/$batch", [["Content-Type", "multipart/mixed; boundary=b"]], '--b\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: base64\r\n\r\nR0VUIE9yZGVySXRlbXMgSFRUUC8xLjENCg0K\r\n--b--\r\n'),
];

S("hand-written hostile cases are refused or forwarded as authorized", async (ctx) => {
  const bad: string[] = [];
  for (const k of CASES) {
    const ex = await runCase(ctx.client, ctx.upstream, ctx.key, k, (id, ms) => ctx.gateway.entry(id, ms));
    const problems = checkExchange(U, ex, { compareLog: true });

    if (problems.length > 0) bad.push(report(ex, problems));
  }
  assert.equal(bad, []);
});

S.run();
