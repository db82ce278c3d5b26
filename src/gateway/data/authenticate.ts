/**
 * Stage 1, authenticate: the data key of the `Authorization` header. A
 * missing, malformed, unknown, revoked or expired key is 401; the master key
 * and admin keys are 403 (data access needs a data key). Both come from the
 * services as ConnectErrors, which the gateway's error table maps.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { PRINCIPAL_METADATA } from "../../schema/call-facts.js";
import { extend, type Authenticated, type Incoming } from "./exchange.js";
import type { DataKey, DataPort } from "./ports.js";

export async function authenticate<K extends DataKey>(incoming: Incoming, port: DataPort<K>): Promise<Authenticated<K>> {
  let key: K;
  try {
    key = await port.authenticate(incoming.req.headers.authorization);
  } catch (err) {
    // A key that could not be read now (the store, or the cold-read budget: 503) was not found invalid.
    if (err instanceof ConnectError && err.code !== Code.Unavailable) {
      incoming.fact.denialStep = "KEY_INVALID";
      // A revoked key's secret: the refusal is logged under the key it was.
      const revoked = err.metadata.get(PRINCIPAL_METADATA);
      if (revoked !== null) incoming.fact.apiKeyId = revoked;
    }
    throw err;
  }
  incoming.fact.apiKeyId = key.id;
  return extend(incoming, { key });
}
