/**
 * A hostile loopback OData V4 back end for the dashboard's hostile-data suite
 * (test/dashboard/hostile.test.ts): its `$metadata` names entity sets with
 * markup, its answers carry markup in headers and bodies, and
 * `/redirect/…` answers a redirect to a `javascript:` URL with markup, so
 * that every piece of back-end text the dashboard shows (catalog, connection
 * test steps, Explain, logs, usage) is attacker-chosen.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Markup that marks itself: any element the dashboard builds from it as HTML
 * carries `data-pwned`, and any handler that runs pushes onto
 * `window.__pwned`. Short enough for 100-character fields.
 */
export const XSS = `"'><img src=x data-pwned onerror=__pwned.push(1)>`;
/** A `javascript:` URL that would push onto `window.__pwned` if followed or loaded. */
export const JS_URL = "javascript:__pwned.push(2)//";

/** Entity set names the hostile `$metadata` declares, besides `Orders`. */
export const HOSTILE_SETS = [`X${XSS}`, "__proto__", "constructor", "toString"] as const;

function xmlAttr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");
}

/** The hostile service's `$metadata`: one honest set (`Orders`) and the hostile ones, all of type `Order`. */
export const HOSTILE_METADATA = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="Evil" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <EntityType Name="Order">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <Property Name="Note" Type="Edm.String"/>
      </EntityType>
      <EntityContainer Name="Container">
        <EntitySet Name="Orders" EntityType="Evil.Order"/>
${HOSTILE_SETS.map((name) => `        <EntitySet Name="${xmlAttr(name)}" EntityType="Evil.Order"/>`).join("\n")}
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
`;

export interface HostileODataBackend {
  /** `http://127.0.0.1:<port>/`, the OData root. */
  readonly baseUrl: string;
  close(): Promise<void>;
}

export async function startHostileODataBackend(): Promise<HostileODataBackend> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path.includes("/redirect")) {
      res.writeHead(302, { location: `${JS_URL}${XSS}`, "content-type": "text/html" });
      res.end(XSS);
      return;
    }
    if (path.includes("/broken")) {
      res.writeHead(500, { "content-type": "text/html", "x-evil": XSS });
      res.end(`<html><body>${XSS}</body></html>`);
      return;
    }
    if (path.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml", "odata-version": "4.0" });
      res.end(HOSTILE_METADATA);
      return;
    }
    // Entity sets: an error naming the request, in markup (the data path passes it through).
    res.writeHead(400, { "content-type": "application/json", "odata-version": "4.0" });
    res.end(JSON.stringify({ error: { code: XSS, message: `${XSS} ${JS_URL}` } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
