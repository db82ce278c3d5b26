/**
 * A loopback OData V4 back end whose services have many entity sets, for the
 * permission editor at scale (its browser suite and `npm run bench:dashboard`):
 * the service at path `/wide<N>` has entity sets `Set00001` … `Set<N>` of one
 * entity type in its `$metadata`; any other request is answered with an empty
 * collection. Lives outside test/ because uvu runs every file there.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** The name of entity set `i` (1-based) of a wide service: `Set00001`. */
export const wideSetName = (i: number) => `Set${String(i).padStart(5, "0")}`;

/** The names of the `n` entity sets of a wide service, in `$metadata` order. */
export const wideSetNames = (n: number) => Array.from({ length: n }, (_, i) => wideSetName(i + 1));

/** A V4 `$metadata` document with `n` entity sets (and no functions or actions). */
export function wideMetadata(n: number): string {
  const sets = wideSetNames(n)
    .map((name) => `<EntitySet Name="${name}" EntityType="Wide.Row"/>`)
    .join("\n        ");
  return `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="Wide" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <EntityType Name="Row">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
      </EntityType>
      <EntityContainer Name="Container">
        ${sets}
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
`;
}

/** A running wide back end. */
export interface WideBackend {
  readonly server: Server;
  /** `http://127.0.0.1:<port>/`: an instance's base URL. */
  readonly baseUrl: string;
  close(): Promise<void>;
}

/** Starts the back end on 127.0.0.1 (a free port); `$metadata` documents are made once per size asked for. */
export function startWideBackend(): Promise<WideBackend> {
  const documents = new Map<number, string>();
  const server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0]!;
    const wide = /^\/wide(\d{1,5})\/\$metadata$/.exec(path);
    if (wide !== null) {
      const n = Math.min(Number(wide[1]), 99_999);
      let doc = documents.get(n);
      if (doc === undefined) documents.set(n, (doc = wideMetadata(n)));
      res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0" });
      res.end(doc);
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" });
    res.end(JSON.stringify({ "@odata.context": "$metadata#Set00001", value: [] }));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        server,
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    ),
  );
}
