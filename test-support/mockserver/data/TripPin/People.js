// Mock data contributor of TripPin's People: the operations bound to a Person.
// Rows come from People.json (the mock server loads it next to this file).
//
//   GET  People('russellwhyte')/Trippin.GetFavoriteAirline()          the Airline whose code prefixes most
//                                                                     flight numbers in the person's trips
//   GET  People('russellwhyte')/Trippin.GetFriendsTrips(userName='scottketchum')   that person's Trips
//   POST People('russellwhyte')/Trippin.UpdateLastName  {"lastName":"X"}          sets LastName, answers {"value":true}
//   POST People('russellwhyte')/Trippin.ShareTrip  {"userName":"scottketchum","tripId":0}
//                                                                     copies the trip to that person (204)
"use strict";

function fail(self, status, message) {
  self.throwError(message, status, { error: { code: String(status), message } });
}

module.exports = {
  async executeAction(actionDefinition, actionData, keys, odataRequest) {
    // actionData.person etc. is the bound entity as the mock server answers it
    // (navigation properties such as Trips removed): read the row itself.
    const self = this;
    const row = async (userName) => (await self.base.fetchEntries({ UserName: userName }, odataRequest))[0];
    const person = await row(keys.UserName);
    if (!person) fail(this, 404, `No person ${keys.UserName}`);
    switch (actionDefinition.name) {
      case "GetFavoriteAirline": {
        const counts = new Map();
        for (const trip of person.Trips ?? []) {
          for (const item of trip.PlanItems ?? []) {
            const code = /^([A-Z0-9]{2})\d/.exec(item.FlightNumber ?? "")?.[1];
            if (code) counts.set(code, (counts.get(code) ?? 0) + 1);
          }
        }
        const [code] = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0] ?? [];
        if (code === undefined) return undefined; // 204: no flights, no favourite
        const airlines = await this.base.getEntityInterface("Airlines");
        const [airline] = await airlines.fetchEntries({ AirlineCode: code }, odataRequest);
        return airline === undefined ? undefined : structuredClone(airline);
      }
      case "GetFriendsTrips": {
        const friend = await row(String(actionData.userName ?? ""));
        if (!friend) fail(this, 404, `No person ${actionData.userName}`);
        return structuredClone(friend.Trips ?? []).map(({ PlanItems, ...trip }) => trip);
      }
      case "UpdateLastName": {
        if (typeof actionData.lastName !== "string") fail(this, 400, "lastName is required");
        await this.base.updateEntry({ UserName: person.UserName }, { LastName: actionData.lastName }, odataRequest);
        return { value: true };
      }
      case "ShareTrip": {
        const trip = (person.Trips ?? []).find((t) => t.TripId === Number(actionData.tripId));
        if (!trip) fail(this, 404, `No trip ${actionData.tripId} of ${person.UserName}`);
        const target = await row(String(actionData.userName ?? ""));
        if (!target) fail(this, 404, `No person ${actionData.userName}`);
        const trips = [...(target.Trips ?? []).filter((t) => t.TripId !== trip.TripId), structuredClone(trip)];
        await this.base.updateEntry({ UserName: target.UserName }, { Trips: trips }, odataRequest);
        return undefined; // 204
      }
      default:
        fail(this, 501, `Operation "${actionDefinition.name}" not mocked`);
    }
  },
};
