/**
 * The universe of the forwarding fuzzer against SAP's Fiori elements mock
 * server (test-support/mockserver): its three services, modelled from the
 * very EDMX documents it serves (third_party/sap-edmx/, read by ./edmx.ts),
 * on two instances as test/e2e/odata-mockserver.test.ts provisions them:
 * `sap` (`/sap/opu/odata/sap/`: API_BUSINESS_PARTNER and
 * API_SALES_ORDER_SRV, OData V2) and `trip` (`/odata/`: TripPin, V4). The
 * services carry the documents themselves, so that erplink's analyzer run
 * again on what the mock server received (harness.ts `reanalyze`) reads the
 * same `$metadata` erplink read.
 *
 * The key's grants (the same on both instances):
 * - API_BUSINESS_PARTNER: list, read and update partners (not delete: a
 *   link removal from a partner is refused); anything on partner addresses;
 *   list and read the home-page URLs (a key of Edm.String, Edm.DateTime and
 *   Edm.Boolean); read, update and delete address usages (a key with an
 *   Edm.DateTimeOffset); read contacts (Edm.DateTime in the key); list,
 *   read and create roles. Nothing on the other 29 entity sets.
 * - API_SALES_ORDER_SRV: list, read and update orders; anything but create
 *   on items; invoke `releaseApprovalRequest` (not `rejectApprovalRequest`).
 * - TripPin: list, read and update people; list and read airlines; read
 *   airports; invoke `Trippin.GetFavoriteAirline`, `Trippin.UpdateLastName`
 *   and `GetNearestAirport` (not `Trippin.GetFriendsTrips`,
 *   `Trippin.ShareTrip`, `GetPersonWithMostFriends`, `ResetDataSource`).
 *
 * Navigation names that lead to different entity sets from different types
 * (`to_Text`: order texts or item texts) would make the oracle's reading of
 * lone names in expressions loose; `checkUniverse` makes sure the grants
 * treat every target of such a name alike.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../e2e.js";
import { serviceFromEdmx } from "./edmx.js";
import type { ServiceDef, Universe } from "./model.js";

const EDMX = join(REPO_ROOT, "third_party", "sap-edmx");

/** String key values of the rows the mock server generates (150 per set without a data file): name cut to fit MaxLength, then the row index. */
function generatedKeys(def: ServiceDef, set: string, rows: number): string[][] {
  const type = def.types.find((t) => t.name === def.sets[set])!;
  return Array.from({ length: rows }, (_, i) =>
    type.key.map((k) => {
      const kind = type.props[k];
      if (kind === "datetime") return "datetime'2020-01-01T00:00'";
      if (kind === "datetimeoffset") return "datetimeoffset'2020-01-01T00:00:00Z'";
      if (kind === "boolean") return "false";
      const max = type.maxLength?.[k] ?? 40;
      return `'${k.slice(0, Math.max(1, max - String(i).length))}${i}'`;
    }),
  );
}

function service(name: string, file: string, samples: Record<string, string[][]>, generated: readonly string[]): ServiceDef {
  const { def } = serviceFromEdmx(name, readFileSync(join(EDMX, file), "utf8"));
  const all: Record<string, string[][]> = { ...samples };
  for (const set of generated) all[set] = generatedKeys(def, set, 3);
  return { ...def, samples: all };
}

const q = (...values: string[]) => values.map((v) => `'${v.replaceAll("'", "''")}'`);

/** The universe of the mock server (see the module comment). */
export function mockServerUniverse(): Universe {
  const bp = service(
    "API_BUSINESS_PARTNER",
    "API_BUSINESS_PARTNER.edmx",
    {
      A_BusinessPartner: [q("1000001"), q("1000002"), q("1000004"), q("O'Neil")],
      A_BusinessPartnerAddress: [q("1000001", "2001"), q("1000001", "2002"), q("1000002", "2003"), q("1000004", "2005")],
    },
    ["A_AddressHomePageURL", "A_BuPaAddressUsage", "A_BusinessPartnerContact", "A_BusinessPartnerRole", "A_Customer"],
  );
  const so = service(
    "API_SALES_ORDER_SRV",
    "API_SALES_ORDER_SRV.edmx",
    {
      A_SalesOrder: [q("5000001"), q("5000002"), q("5000003")],
      A_SalesOrderItem: [q("5000001", "10"), q("5000001", "20"), q("5000002", "10")],
    },
    ["A_SalesOrderText", "A_SalesOrderHeaderPartner"],
  );
  const trip = service(
    "TripPin",
    "TripPin.xml",
    {
      People: [q("russellwhyte"), q("scottketchum"), q("javieralfred"), q("ronaldmundy")],
      Airlines: [q("AA"), q("FM"), q("MU")],
      Airports: [q("KSFO"), q("KJFK"), q("LFPG")],
    },
    [],
  );
  const universe: Universe = {
    instances: [
      { name: "sap", basePath: "/sap/opu/odata/sap", services: { API_BUSINESS_PARTNER: { path: "API_BUSINESS_PARTNER", version: "2.0" }, API_SALES_ORDER_SRV: { path: "API_SALES_ORDER_SRV", version: "2.0" } } },
      { name: "trip", basePath: "/odata", services: { TripPin: { path: "trippin", version: "4.0" } } },
    ],
    services: { API_BUSINESS_PARTNER: bp, API_SALES_ORDER_SRV: so, TripPin: trip },
    grants: {
      API_BUSINESS_PARTNER: {
        A_BusinessPartner: ["list", "get", "update"],
        A_BusinessPartnerAddress: ["list", "get", "create", "update", "delete"],
        A_AddressHomePageURL: ["list", "get"],
        A_BuPaAddressUsage: ["get", "update", "delete"],
        A_BusinessPartnerContact: ["get"],
        A_BusinessPartnerRole: ["list", "get", "create"],
      },
      API_SALES_ORDER_SRV: {
        A_SalesOrder: ["list", "get", "update"],
        A_SalesOrderItem: ["list", "get", "update", "delete"],
        releaseApprovalRequest: ["invoke"],
      },
      TripPin: {
        People: ["list", "get", "update"],
        Airlines: ["list", "get"],
        Airports: ["get"],
        "Trippin.GetFavoriteAirline": ["invoke"],
        "Trippin.UpdateLastName": ["invoke"],
        GetNearestAirport: ["invoke"],
      },
    },
  };
  checkUniverse(universe);
  return universe;
}

/**
 * Fails when a navigation name leads to entity sets the key's grants treat
 * differently (the oracle follows a lone name wherever the model declares
 * it), or a granted name is no entity set nor operation of its service.
 */
export function checkUniverse(u: Universe): void {
  for (const [name, def] of Object.entries(u.services)) {
    const grants = u.grants[name] ?? {};
    const targets = new Map<string, Set<string>>();
    for (const t of def.types) for (const [nav, d] of Object.entries(t.navs)) targets.set(nav.toLowerCase(), (targets.get(nav.toLowerCase()) ?? new Set()).add(d.target));
    for (const [nav, sets] of targets) {
      const seen = new Set([...sets].map((s) => JSON.stringify([...(grants[s] ?? [])].sort())));
      if (seen.size > 1) throw new Error(`${name}: navigation '${nav}' leads to ${[...sets].join(", ")}, which the grants treat differently`);
    }
    const ops = new Set(def.ops.map((o) => (o.binding !== undefined ? `${def.namespace}.${o.name}` : o.name)));
    for (const g of Object.keys(grants)) if (def.sets[g] === undefined && !ops.has(g)) throw new Error(`${name}: grant '${g}' names no entity set or operation`);
  }
}
