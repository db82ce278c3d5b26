/**
 * Configuration (src/config.ts): ERPLINK_MASTER_KEY may not be shaped like
 * an API key. The data path looks a token up among the keys before it
 * compares it with the master key (src/services/data-plane.ts), which is
 * only sound while no token can be both.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConfigError, loadConfig } from "../src/config.js";
import { generateApiKeySecret, isWellFormedApiKey } from "../src/services/api-key-secret.js";

const MasterKey = suite("config: ERPLINK_MASTER_KEY");

const REFUSAL = "ERPLINK_MASTER_KEY must not be an API key: choose another value (openssl rand -base64 32)";

function problemOf(masterKey: string): string | undefined {
  try {
    loadConfig({ ERPLINK_MASTER_KEY: masterKey });
    return undefined;
  } catch (err) {
    assert.instance(err, ConfigError);
    return (err as Error).message;
  }
}

MasterKey("an API key's secret (the erpl_ format with a valid checksum) is refused, naming the variable", () => {
  const secret = generateApiKeySecret();
  assert.ok(isWellFormedApiKey(secret));
  const message = problemOf(secret);
  assert.ok(message?.includes(REFUSAL), message);
});

MasterKey("a value of the same length and prefix whose checksum does not hold is accepted", () => {
  const secret = generateApiKeySecret();
  // Another last character breaks the checksum (base62: 0-9A-Za-z).
  const other = `${secret.slice(0, -1)}${secret.endsWith("0") ? "1" : "0"}`;
  assert.not.ok(isWellFormedApiKey(other));
  assert.is(problemOf(other), undefined);
  assert.is(loadConfig({ ERPLINK_MASTER_KEY: other }).masterKey, other);
});

MasterKey("the shape main generates (erpl_master_…) and an arbitrary long value are accepted", () => {
  for (const value of [`erpl_master_${"A".repeat(43)}`, "correct horse battery staple, but without spaces!".replaceAll(" ", "-")]) {
    assert.is(loadConfig({ ERPLINK_MASTER_KEY: value }).masterKey, value);
  }
});

MasterKey.run();
