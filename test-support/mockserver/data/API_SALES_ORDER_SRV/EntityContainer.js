// Mock data contributor of API_SALES_ORDER_SRV's entity container: the
// unbound function imports. The mock server re-require()s this file for every
// call, so it keeps no state of its own; everything lives in A_SalesOrder.
//
//   POST releaseApprovalRequest?SalesOrder='5000001'  -> SalesDocApprovalStatus "A" -> "B"
//   POST rejectApprovalRequest?SalesOrder='5000001'   -> SalesDocApprovalStatus "A" -> "C"
//
// Both answer like SAP Gateway does for a function import returning a
// complex type: {"d":{"<name>":{"__metadata":{"type":"API_SALES_ORDER_SRV.FunctionResult"},"Boolean":true}}}.
// An unknown order is 404, an order not awaiting approval ("A") is 400.
"use strict";

const NEW_STATUS = { releaseApprovalRequest: "B", rejectApprovalRequest: "C" };

/** `'5000001'` (URL form, quotes and doubled quotes) -> `5000001`. */
function stringParameter(raw) {
  if (typeof raw !== "string") return undefined;
  const m = /^'(.*)'$/s.exec(raw);
  return m ? m[1].replace(/''/g, "'") : raw;
}

function sapError(code, message) {
  return { error: { code, message: { lang: "en", value: message } } };
}

module.exports = {
  async executeAction(actionDefinition, _actionData, _keys, odataRequest) {
    const name = actionDefinition.name;
    const status = NEW_STATUS[name];
    if (status === undefined) {
      this.throwError(`FunctionImport ${name} not mocked`, 501, sapError("MOCK/501", `FunctionImport "${name}" not mocked`));
    }
    const salesOrder = stringParameter(odataRequest.allParams?.get("SalesOrder") ?? undefined);
    if (!salesOrder) {
      this.throwError("Missing parameter SalesOrder", 400, sapError("MOCK/400", "Parameter SalesOrder is missing"));
    }
    const orders = await this.base.getEntityInterface("A_SalesOrder");
    const [order] = await orders.fetchEntries({ SalesOrder: salesOrder }, odataRequest);
    if (!order) {
      this.throwError("Not found", 404, sapError("V1/004", `Sales order ${salesOrder} does not exist`));
    }
    if (order.SalesDocApprovalStatus !== "A") {
      this.throwError("Not in approval", 400, sapError("V1/400", `Sales order ${salesOrder} is not awaiting approval`));
    }
    const updated = { ...order, SalesDocApprovalStatus: status, LastChangeDateTime: order.LastChangeDateTime };
    await orders.updateEntry({ SalesOrder: salesOrder }, updated, { SalesDocApprovalStatus: status }, odataRequest);
    return { [name]: { __metadata: { type: "API_SALES_ORDER_SRV.FunctionResult" }, Boolean: true } };
  },
};
