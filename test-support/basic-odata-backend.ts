/**
 * A loopback OData V4 back end that requires Basic authentication, for the
 * dashboard's browser suites: `/<service>/$metadata` serves the sales
 * fixture's `$metadata`, `/<service>/Customers` a small collection, and any
 * request without the right `Authorization` gets 401 with a Basic challenge.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { V4_METADATA } from "./odata/fixtures.js";

export interface BasicODataBackend {
  /** `http://127.0.0.1:<port>/`, the OData root. */
  readonly baseUrl: string;
  /** Requests answered, and whether each carried the right credentials. */
  readonly requests: { readonly path: string; readonly authorized: boolean }[];
  close(): Promise<void>;
}

export async function startBasicODataBackend(username: string, password: string): Promise<BasicODataBackend> {
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
  const requests: { path: string; authorized: boolean }[] = [];
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const authorized = req.headers.authorization === expected;
    requests.push({ path, authorized });
    if (!authorized) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="stub"', "content-type": "text/plain" });
      res.end("unauthorized");
      return;
    }
    if (path.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0" });
      res.end(V4_METADATA);
      return;
    }
    if (/\/Customers$/.test(path)) {
      res.writeHead(200, { "content-type": "application/json;odata.metadata=minimal", "odata-version": "4.0" });
      res.end(JSON.stringify({ "@odata.context": "$metadata#Customers", value: [{ ID: "C1", Name: "Contoso" }] }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" });
    res.end(JSON.stringify({ "@odata.context": "$metadata", value: [{ name: "Customers", kind: "EntitySet", url: "Customers" }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
