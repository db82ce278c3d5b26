/**
 * Configuration of `/metrics` (src/config.ts): ERPLINK_METRICS off, on
 * (default) or token, and ERPLINK_METRICS_TOKEN, required by token and
 * refused without it (someone who set a token believes the endpoint is
 * protected).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConfigError, loadConfig } from "../src/config.js";

const Metrics = suite("config: ERPLINK_METRICS");
const TOKEN = "metrics-token-0123456789abcdefghijklmnop";

function refused(env: Record<string, string>, message: string): void {
  try {
    loadConfig(env);
    assert.unreachable("accepted");
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.ok((err as Error).message.includes(message), (err as Error).message);
  }
}

Metrics("unset or empty: on, without a token", () => {
  assert.equal(loadConfig({}).metrics, { mode: "on" });
  assert.equal(loadConfig({ ERPLINK_METRICS: "" }).metrics, { mode: "on" });
});

Metrics("off, on, and token with its token", () => {
  assert.equal(loadConfig({ ERPLINK_METRICS: "off" }).metrics, { mode: "off" });
  assert.equal(loadConfig({ ERPLINK_METRICS: "on" }).metrics, { mode: "on" });
  assert.equal(loadConfig({ ERPLINK_METRICS: "token", ERPLINK_METRICS_TOKEN: TOKEN }).metrics, { mode: "token", token: TOKEN });
});

Metrics("another mode is refused, naming the variable", () => {
  for (const bad of ["true", "ON", "bearer", "1"]) refused({ ERPLINK_METRICS: bad }, `ERPLINK_METRICS must be off, on or token (got "${bad}")`);
});

Metrics("token without ERPLINK_METRICS_TOKEN is refused", () => {
  refused({ ERPLINK_METRICS: "token" }, "ERPLINK_METRICS=token needs ERPLINK_METRICS_TOKEN");
});

Metrics("a token with on, off or the default is refused: it would protect nothing", () => {
  refused({ ERPLINK_METRICS_TOKEN: TOKEN }, "ERPLINK_METRICS_TOKEN is set but ERPLINK_METRICS is on: set ERPLINK_METRICS=token to require it");
  refused({ ERPLINK_METRICS: "off", ERPLINK_METRICS_TOKEN: TOKEN }, "ERPLINK_METRICS_TOKEN is set but ERPLINK_METRICS is off");
});

Metrics("a short token, or one with spaces, is refused", () => {
  refused({ ERPLINK_METRICS: "token", ERPLINK_METRICS_TOKEN: "short" }, "ERPLINK_METRICS_TOKEN must be at least 32 printable characters without spaces");
  refused(
    { ERPLINK_METRICS: "token", ERPLINK_METRICS_TOKEN: `${TOKEN} with spaces` },
    "ERPLINK_METRICS_TOKEN must be at least 32 printable characters without spaces",
  );
});

Metrics.run();
