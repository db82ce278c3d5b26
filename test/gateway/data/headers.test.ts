/**
 * The back end's answer headers as erplink passes them on
 * (`src/gateway/data/headers.ts`, `clientResponseHeaders`): URLs of the back
 * end (`Location`, `Content-Location`, `OData-EntityId`, `EntityId`) are
 * rewritten to erplink's, whether the back end sent a header once or
 * several times (undici hands a repeated header over as an array); its
 * rate-limit headers and request id never pass.
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

// A back end that repeats a URL header (undici: an array) must not have it passed on unrewritten, or the
// client learns the back end's host, port, service path and SAP client. Fails with the rewrite for strings only.
for (const name of ["location", "content-location", "odata-entityid", "entityid"]) {
  Headers(`a repeated ${name} header is rewritten value by value, never passed with the back end's URL`, () => {
    const out = clientResponseHeaders({ [name]: [BACKEND, "http://elsewhere.example/x"] }, ROOT, CLIENT);
    // Location and Content-Location hold one value: the first passes, rewritten.
    assert.equal(out[name], name.endsWith("location") ? ERPLINK : [ERPLINK, "http://elsewhere.example/x"]);
    const reversed = clientResponseHeaders({ [name]: ["http://elsewhere.example/x", BACKEND] }, ROOT, CLIENT);
    assert.equal(reversed[name], name.endsWith("location") ? "http://elsewhere.example/x" : ["http://elsewhere.example/x", ERPLINK]);
  });
}

// A back end's rate-limit headers never pass, even where erplink sets none of its own (a key without limits):
// the client would read the limits of erplink's shared back-end credentials as its key's.
Headers("a back end's rate-limit headers are always left out; its Retry-After, X-Request-Id aside, passes", () => {
  const out = clientResponseHeaders(
    {
      "x-ratelimit-limit": "999",
      "x-ratelimit-remaining": "998",
      "x-ratelimit-reset": "1",
      "x-ratelimit-used": "1",
      "x-rate-limit-limit": "999",
      "x-ratelimit": "999",
      "x-rate-limit": "999",
      ratelimit: '"upstream";r=998;t=1',
      "ratelimit-policy": '"upstream";q=999;w=1',
      "ratelimit-limit": "999",
      "ratelimit-remaining": "998",
      "ratelimit-reset": "1",
      "retry-after": "120",
      "x-request-id": "upstream-rid",
      "content-type": "text/plain",
    },
    ROOT,
    CLIENT,
  );
  assert.equal(out, {
    "retry-after": "120",
    "content-type": "text/plain",
    "content-security-policy": "sandbox; default-src 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
  });
});

// Node's HTTP/2 throws from writeHead on a connection-specific header or on several values of a
// header it holds single-valued, and it throws in a stream's data handler: a back end's HTTP2-Settings or two
// Content-Types would crash the process when the client speaks h2c (test/e2e/data-path-h2c.test.ts).
Headers("HTTP2-Settings is left out; a repeated single-value header passes its first value, a list-valued one all of them", () => {
  const out = clientResponseHeaders(
    {
      "http2-settings": "AAMAAABkAAQAoAAAAAIAAAAA",
      "content-type": ["application/json", "text/html"],
      etag: ['W/"1"', 'W/"2"'],
      "last-modified": ["Thu, 01 Jan 2026 00:00:00 GMT", "Fri, 02 Jan 2026 00:00:00 GMT"],
      "content-length": ["12", "12"],
      "content-encoding": ["gzip", "br"],
      "content-language": ["en", "de"],
      "content-range": ["bytes 0-1/2", "bytes 0-0/2"],
      "retry-after": ["120", "5"],
      age: ["1", "2"],
      expires: ["0", "1"],
      "access-control-max-age": ["1", "2"],
      "access-control-allow-credentials": ["true", "false"],
      "x-content-type-options": ["sniff", "sniff"],
      location: [BACKEND, "http://elsewhere.example/x"],
      "content-location": [BACKEND, BACKEND],
      vary: ["Accept", "Accept-Language"],
      link: ["<a>", "<b>"],
    },
    ROOT,
    CLIENT,
  );
  assert.equal(out, {
    "content-type": "application/json",
    etag: 'W/"1"',
    "last-modified": "Thu, 01 Jan 2026 00:00:00 GMT",
    "content-length": "12",
    "content-encoding": "gzip",
    "content-language": "en",
    "content-range": "bytes 0-1/2",
    "retry-after": "120",
    age: "1",
    expires: "0",
    "access-control-max-age": "1",
    "access-control-allow-credentials": "true",
    "x-content-type-options": "nosniff",
    location: ERPLINK,
    "content-location": ERPLINK,
    vary: ["Accept", "Accept-Language"],
    link: ["<a>", "<b>"],
    "content-security-policy": "sandbox; default-src 'none'; frame-ancestors 'none'",
  });
});

// A back end's `__proto__` header (undici: an own key) was written into a plain object: two values made the
// answer's headers object inherit from an array, one value was silently ignored. Now it is left out, like any
// other header erplink never passes, and the object is a plain record.
Headers("a back end's __proto__ header is left out; the headers stay a plain object with their own keys only", () => {
  const upstream = JSON.parse('{"__proto__": ["a", "b"], "constructor": "c", "content-type": "text/plain"}') as Record<string, string | string[]>;
  assert.equal(Object.keys(upstream), ["__proto__", "constructor", "content-type"]);
  const out = clientResponseHeaders(upstream, ROOT, CLIENT);
  assert.is(Object.getPrototypeOf(out), Object.prototype);
  assert.equal(Object.keys(out), ["constructor", "content-type", "content-security-policy", "x-content-type-options"]);
  assert.is(out.constructor, "c");
});

Headers.run();
