/**
 * The back end of `bench/proxy.ts`: a small OData V4 service on node:http
 * (keep-alive), loopback only, with HTTP basic authentication. It answers
 * `GET <root>/$metadata` with a CSDL document (one entity set, `Products`,
 * key `ID`) and `GET <root>/Products?$top=…` with the same ~2 KB JSON payload
 * every time, so that a request straight to it and one through a proxy cost
 * it exactly the same. It counts what it answers, telling requests that came
 * through a proxy (erplink and the others of the benchmark send `Forwarded`)
 * from direct ones, and `Products` requests with another query by query (so
 * that a benchmark's clients can tell themselves apart by `$top`); with
 * `countsPath`, `GET <countsPath>` answers the counts as JSON (no
 * credentials), for a benchmark that runs it in another process.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** Where the service lives on the back end. */
export const SERVICE = "ProductService";
export const ROOT = `/odata/${SERVICE}`;
/** The path prefix the proxies of the benchmark (bare, nginx, erplink's instance `bench`) serve the back end's services under. */
export const PROXIED_PREFIX = "/odata/bench";
export const ENTITY_SET = "Products";
/** The query every benchmark request sends (the back end ignores the value: its answer is fixed). */
export const QUERY = "$top=12";
export const BACKEND_USER = "bench-user";
export const BACKEND_PASSWORD = "bench-pass";
export const BACKEND_AUTHORIZATION = `Basic ${Buffer.from(`${BACKEND_USER}:${BACKEND_PASSWORD}`).toString("base64")}`;

export const METADATA = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="Bench" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <EntityType Name="Product">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        <Property Name="Name" Type="Edm.String" MaxLength="80"/>
        <Property Name="Category" Type="Edm.String" MaxLength="40"/>
        <Property Name="Price" Type="Edm.Decimal" Precision="15" Scale="2"/>
        <Property Name="Currency" Type="Edm.String" MaxLength="3"/>
        <Property Name="InStock" Type="Edm.Boolean"/>
        <Property Name="ModifiedAt" Type="Edm.DateTimeOffset"/>
      </EntityType>
      <EntityContainer Name="Container">
        <EntitySet Name="${ENTITY_SET}" EntityType="Bench.Product"/>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
`;

/** The fixed answer to every `Products` request: 12 products, about 2 KB. */
export const PAYLOAD: Buffer = Buffer.from(
  JSON.stringify({
    "@odata.context": "$metadata#Products",
    value: Array.from({ length: 12 }, (_, i) => ({
      ID: 1000 + i,
      Name: `Benchmark product number ${String(i + 1).padStart(2, "0")}`,
      Category: ["Hardware", "Software", "Services"][i % 3],
      Price: ((i + 1) * 19.95).toFixed(2),
      Currency: "EUR",
      InStock: i % 4 !== 0,
      ModifiedAt: `2024-0${(i % 9) + 1}-1${i % 10}T08:30:00Z`,
    })),
  }),
  "utf8",
);

/** What the back end has answered. */
export interface BackendCounts {
  /** `Products` requests that came through a proxy (with `Forwarded`) / straight from a client. */
  proxied: number;
  direct: number;
  metadata: number;
  /** Requests answered with anything but 200 (wrong path, missing credentials). */
  refused: number;
  /**
   * `Products` requests whose query was not {@link QUERY}, by query (a
   * benchmark that sends `$top=<n>` of its own tells its clients apart).
   */
  byQuery: Record<string, number>;
}

/** A running back end. */
export interface Backend {
  readonly port: number;
  readonly counts: BackendCounts;
  close(): Promise<void>;
}

/** Options of {@link startBackend}. */
export interface BackendOptions {
  /** Where the counts are answered as JSON (no credentials); not served when omitted. */
  readonly countsPath?: string;
}

/** Starts the back end on 127.0.0.1, on an ephemeral port. */
export async function startBackend(options: BackendOptions = {}): Promise<Backend> {
  const counts: BackendCounts = { proxied: 0, direct: 0, metadata: 0, refused: 0, byQuery: {} };
  const metadata = Buffer.from(METADATA, "utf8");
  const dataPath = `${ROOT}/${ENTITY_SET}`;
  const server = http.createServer((req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    if (options.countsPath !== undefined && path === options.countsPath) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(counts));
      return;
    }
    if (req.method !== "GET" || req.headers.authorization !== BACKEND_AUTHORIZATION) {
      counts.refused++;
      res.writeHead(401, { "content-type": "text/plain", "www-authenticate": 'Basic realm="bench"' }).end("no credentials");
      return;
    }
    if (path === `${ROOT}/$metadata`) {
      counts.metadata++;
      res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0", "content-length": metadata.length });
      res.end(metadata);
      return;
    }
    if (path === dataPath && url.slice(q + 1).startsWith("$top=")) {
      if (req.headers.forwarded !== undefined) counts.proxied++;
      else counts.direct++;
      const query = url.slice(q + 1);
      if (query !== QUERY) counts.byQuery[query] = (counts.byQuery[query] ?? 0) + 1;
      res.writeHead(200, {
        "content-type": "application/json;odata.metadata=minimal;IEEE754Compatible=false",
        "odata-version": "4.0",
        "content-length": PAYLOAD.length,
      });
      res.end(PAYLOAD);
      return;
    }
    counts.refused++;
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  });
  // Longer than any pause of the run, so that no idle connection is closed under a client.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 121_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
