/**
 * A call's Node request as Connect's universal request: an authority that
 * makes no URL (none at all, a port out of range, a lone bracket, a bad
 * percent-escape) is the `invalid_argument` refusal, not connect-node's
 * throw; a well-formed one gives connect-node's request. Over a real port
 * with both ways of serving a call: test/e2e/rpc-direct.test.ts.
 */
import http from "node:http";
import net from "node:net";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import fc from "fast-check";
import { BAD_AUTHORITY_MESSAGE, callUrl, clampTimeouts, universalRequestOf } from "../../../src/gateway/rpc/node-request.js";

const test = suite("universalRequestOf: the request, or the refusal of a malformed authority");

/** An HTTP/1.1 request as Node's server hands it over (nothing read from the socket). */
function request(host: string | undefined): { req: http.IncomingMessage; res: http.ServerResponse } {
  const req = new http.IncomingMessage(new net.Socket());
  req.method = "POST";
  req.url = "/erplink.authz.v1.AuthorizationService/Authorize";
  req.headers = host === undefined ? { "content-type": "application/json" } : { host, "content-type": "application/json" };
  return { req, res: new http.ServerResponse(req) };
}

test("a well-formed authority: connect-node's request, with its URL and the context values", () => {
  for (const host of ["erplink.example", "127.0.0.1:8080", "[::1]:1", "ext_authz"]) {
    const { req, res } = request(host);
    const values = createContextValues();
    const uReq = universalRequestOf(req, res, values);
    assert.not.instance(uReq, ConnectError, host);
    if (uReq instanceof ConnectError) continue;
    assert.is(new URL(uReq.url).pathname, "/erplink.authz.v1.AuthorizationService/Authorize", host);
    assert.is(uReq.contextValues, values, host);
  }
});

test("no authority, or one that makes no URL: invalid_argument, not connect-node's error", () => {
  for (const host of [undefined, "", "x:99999", "[", "a%zz", "a b"]) {
    const { req, res } = request(host);
    const uReq = universalRequestOf(req, res, undefined);
    assert.instance(uReq, ConnectError, String(host));
    assert.is((uReq as ConnectError).code, Code.InvalidArgument, String(host));
    assert.is((uReq as ConnectError).rawMessage, BAD_AUTHORITY_MESSAGE, String(host));
  }
});

test("a deadline beyond a Node timer's bound (2^31 - 1 ms) is capped at it; others, and malformed ones, are left as sent", () => {
  const cases: [string, string, string][] = [
    // [header, sent, seen by Connect]
    ["grpc-timeout", "1S", "1S"],
    ["grpc-timeout", "596H", "596H"], // 2,145,600,000 ms: under the bound
    ["grpc-timeout", "597H", "2147483S"], // 2,149,200,000 ms: over it
    ["grpc-timeout", "720H", "2147483S"],
    ["grpc-timeout", "99999999H", "2147483S"],
    ["grpc-timeout", "35791M", "35791M"], // 2,147,460,000 ms
    ["grpc-timeout", "35792M", "2147483S"],
    ["grpc-timeout", "2147483647m", "2147483647m"], // ten digits: malformed, Connect refuses it
    ["grpc-timeout", "99999999n", "99999999n"],
    ["grpc-timeout", "99999999u", "99999999u"],
    ["grpc-timeout", "abc", "abc"],
    ["connect-timeout-ms", "2147483647", "2147483647"],
    ["connect-timeout-ms", "2147483648", "2147483647"],
    ["connect-timeout-ms", "9999999999", "2147483647"],
    ["connect-timeout-ms", "99999999999", "99999999999"], // eleven digits: malformed
    ["connect-timeout-ms", "-1", "-1"],
  ];
  for (const [name, sent, seen] of cases) {
    const header = new Headers({ [name]: sent });
    clampTimeouts(header);
    assert.is(header.get(name), seen, `${name}: ${sent}`);
  }
  const none = new Headers({ "content-type": "application/grpc" });
  clampTimeouts(none);
  assert.equal([...none.keys()], ["content-type"]);
});

test("callUrl is new URL(path, origin) as a string, or undefined where that throws, for hostile authorities and paths (property)", () => {
  const whatwg = (path: string, origin: string): string | undefined => {
    try {
      return new URL(path, origin).toString();
    } catch {
      return undefined;
    }
  };
  // Pieces of authorities that the WHATWG parser rewrites or refuses: case, IPv4 forms, default ports, userinfo, escapes, delimiters.
  const piece = fc.constantFrom(
    "a", "A", "erplink.example", "EXAMPLE.com", "127.0.0.1", "127.1", "0x7f.1", "017.0.0.1", "4294967295", "4294967296", "1.2.3.4.5",
    "[::1]", "[::ffff:127.0.0.1]", "[", "]", ":", ":80", ":443", ":8080", ":0", ":65535", ":65536", ":99999", ":x",
    "@", "user:pw@", "%", "%41", "%zz", "%00", "/", "?", "#", "\\", " ", "\t", "xn--nxasmq6b", "ümlaut", "ß", ".", "..", "_", "-", "*", "|", "^", "\u0000",
  );
  const authority = fc.oneof(fc.array(piece, { maxLength: 5 }).map((p) => p.join("")), fc.string({ maxLength: 12 }), fc.string({ unit: "binary", maxLength: 6 }));
  const path = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom("/erplink.authz.v1.AuthorizationService/Authorize", "/grpc.health.v1.Health/Check", "/envoy.service.auth.v3.Authorization/Check") },
    fc.constantFrom("", "/", "//x/y", "/a/../b", "/a/./b", "/%2e%2e/x", "/a b/c", "/ü/x", "/a/b?x", "/a/b#x", "*", "http://evil.example/a/b"),
    // Shaped like a method's path but with a dot segment, which the parser removes.
    fc.constantFrom("/../Method", "/./Method", "/../erplink_authz/Authorize", "/.well/x", "/a./b", "/._/M"),
    fc.string({ maxLength: 10 }).map((s) => `/${s}`),
  );
  const scheme = fc.constantFrom("http", "https");
  // Twice per origin: the second answer comes from what the first remembered.
  fc.assert(
    fc.property(scheme, authority, path, (s, a, p) => {
      const origin = `${s}://${a}`;
      const want = whatwg(p, origin);
      assert.is(callUrl(p, origin), want, JSON.stringify([origin, p]));
      assert.is(callUrl(p, origin), want, JSON.stringify([origin, p, "again"]));
    }),
    { numRuns: 3000 },
  );
});

test.run();
