// Mock data contributor of TripPin's entity container: the unbound operations.
// The mock server re-require()s this file for every call (no state here).
//
//   GET  GetNearestAirport(lat=40.6,lon=-73.8)  reads every Airport, answers the nearest one
//   POST ResetDataSource                        deletes every row of People, Airlines, Airports
//                                               and Me and inserts the rows of the JSON files again (204)
// GetPersonWithMostFriends is not mocked (501).
"use strict";

const { readFileSync } = require("node:fs");
const { join } = require("node:path");

const RESETTABLE = ["People", "Airlines", "Airports", "Me"];

function keysOf(row, keyNames) {
  return Object.fromEntries(keyNames.map((k) => [k, row[k]]));
}

module.exports = {
  async executeAction(actionDefinition, actionData, keys, odataRequest) {
    switch (actionDefinition.name) {
      case "GetNearestAirport": {
        const lat = Number(keys.lat ?? actionData.lat);
        const lon = Number(keys.lon ?? actionData.lon);
        if (!Number.isFinite(lat) || !Number.isFinite(lon)) {
          this.throwError("lat and lon are required", 400, { error: { code: "400", message: "lat and lon are required" } });
        }
        const airports = await this.base.getEntityInterface("Airports");
        let best;
        let bestDistance = Infinity;
        for (const airport of await airports.getAllEntries(odataRequest)) {
          const [alon, alat] = airport.Location?.Loc?.coordinates ?? [NaN, NaN];
          const d = (alat - lat) ** 2 + (alon - lon) ** 2;
          if (d < bestDistance) {
            bestDistance = d;
            best = airport;
          }
        }
        if (best === undefined) this.throwError("No airport", 404, { error: { code: "404", message: "No airport" } });
        return structuredClone(best);
      }
      case "ResetDataSource": {
        for (const name of RESETTABLE) {
          const set = await this.base.getEntityInterface(name);
          const keyNames = set._entityType.keys.map((k) => k.name);
          for (const row of [...(await set.getAllEntries(odataRequest, true))]) {
            await set.removeEntry(keysOf(row, keyNames), odataRequest);
          }
          for (const row of JSON.parse(readFileSync(join(__dirname, `${name}.json`), "utf8"))) {
            await set.addEntry(row, odataRequest);
          }
        }
        return undefined; // 204
      }
      default:
        this.throwError(`${actionDefinition.name} not mocked`, 501, {
          error: { code: "501", message: `Operation "${actionDefinition.name}" not mocked` },
        });
    }
  },
};
