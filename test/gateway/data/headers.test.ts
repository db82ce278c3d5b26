/**
 * The back end's answer headers as erplink passes them on
 * (`src/gateway/data/headers.ts`, `clientResponseHeaders`): URLs of the back
 * end (`Location`, `Content-Location`, `OData-EntityId`, `EntityId`) are
 * rewritten to erplink's, whether the back end sent a header once or
 * several times (undici hands a repeated header over as an array).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { clientResponseHeaders, type ClientRoot } from "../../../src/gateway/data/headers.js";
import { ServiceRoot } from "../../../src/gateway/data/service-root.js";

const Headers = suite("data path: the back end's answer headers");

const ROOT = new ServiceRoot({ baseUrl: "http://10.0.0.5:8000/sap/opu/odata/sap", servicePath: (s) => s, sapClient: "100" }, "API_SALES");
const CLIENT: ClientRoot = { origin: "https://api.example.com", proto: "https", host: "api.example.com", path: "/odata/prod/API_SALES" };
const BACKEND = "http://10.0.0.5:8000/sap/opu/odata/sap/API_SALES/SalesOrders(1)?sap-client=100";
const ERPLINK = "https://api.example.com/odata/prod/API_SALES/SalesOrders(1)";

Headers("a Location sent once names erplink's URL, without the instance's sap-client", () => {
  const out = clientResponseHeaders({ location: BACKEND }, ROOT, CLIENT);
  assert.is(out.location, ERPLINK);
});

// Red team 9: a back end that repeats a URL header (undici: an array) had it passed on unrewritten, so the
// client learnt the back end's host, port, service path and SAP client. Fails with the rewrite for strings only.
for (const name of ["location", "content-location", "odata-entityid", "entityid"]) {
  Headers(`a repeated ${name} header is rewritten value by value, never passed with the back end's URL`, () => {
    const out = clientResponseHeaders({ [name]: [BACKEND, "http://elsewhere.example/x"] }, ROOT, CLIENT);
    assert.equal(out[name], [ERPLINK, "http://elsewhere.example/x"]);
  });
}

Headers.run();
