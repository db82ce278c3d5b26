/**
 * Configuration (src/config.ts): the request log's cap,
 * ERPLINK_LOG_MAX_ENTRIES: 50,000 by default on the embedded store, none on
 * MongoDB, 0 for none, else 1,000 to 10⁹; anything else refused at start
 * with a message naming the variable and the value. And ERPLINK_LOG_THREAD
 * (the embedded log in a worker thread): off by default, on or off.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConfigError, loadConfig } from "../src/config.js";

const MONGO = { MONGODB_URL: "mongodb://127.0.0.1:27017/erplink", ERPLINK_ENCRYPTION_KEY: "ab".repeat(32) };

const Cap = suite("config: ERPLINK_LOG_MAX_ENTRIES");

Cap("unset or empty: 50,000 on the embedded store, no cap on MongoDB", () => {
  assert.is(loadConfig({}).logMaxEntries, 50_000);
  assert.is(loadConfig({ ERPLINK_LOG_MAX_ENTRIES: "" }).logMaxEntries, 50_000);
  assert.is(loadConfig({ ERPLINK_DATA_DIR: ":memory:" }).logMaxEntries, 50_000);
  assert.is(loadConfig(MONGO).logMaxEntries, undefined);
  assert.is(loadConfig({ ...MONGO, ERPLINK_LOG_MAX_ENTRIES: "" }).logMaxEntries, undefined);
});

Cap("a number from 1000 to 1000000000 sets the cap on either store; 0 means no cap", () => {
  const cases: [Record<string, string>, number | undefined][] = [
    [{ ERPLINK_LOG_MAX_ENTRIES: "1000" }, 1000],
    [{ ERPLINK_LOG_MAX_ENTRIES: "250000" }, 250_000],
    [{ ERPLINK_LOG_MAX_ENTRIES: "1000000000" }, 1_000_000_000],
    [{ ERPLINK_LOG_MAX_ENTRIES: "0" }, undefined],
    [{ ...MONGO, ERPLINK_LOG_MAX_ENTRIES: "5000000" }, 5_000_000],
    [{ ...MONGO, ERPLINK_LOG_MAX_ENTRIES: "0" }, undefined],
  ];
  assert.equal(
    cases.map(([env]) => loadConfig(env).logMaxEntries),
    cases.map(([, expected]) => expected),
  );
});

for (const bad of ["999", "1", "1000000001", "-1", "1e5", "100_000", "100,000", " 1000", "1000.0", "none", "off"]) {
  Cap(`"${bad}" is refused at start, naming the variable, what it takes and the value`, () => {
    try {
      loadConfig({ ERPLINK_LOG_MAX_ENTRIES: bad });
      assert.unreachable("accepted");
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.ok(
        (err as Error).message.includes(`ERPLINK_LOG_MAX_ENTRIES must be 0 (no cap) or an integer from 1000 to 1000000000 (got "${bad}")`),
        (err as Error).message,
      );
    }
  });
}

Cap("a bad value is listed with the other problems, not instead of them", () => {
  try {
    loadConfig({ ERPLINK_LOG_MAX_ENTRIES: "10", PORT: "abc" });
    assert.unreachable("accepted");
  } catch (err) {
    const lines = (err as Error).message.split("\n").slice(1).sort();
    assert.equal(lines, [
      '  - ERPLINK_LOG_MAX_ENTRIES must be 0 (no cap) or an integer from 1000 to 1000000000 (got "10")',
      '  - PORT must be an integer from 0 to 65535 (got "abc")',
    ]);
  }
});

Cap.run();

const Thread = suite("config: ERPLINK_LOG_THREAD");

Thread("unset or empty: off; on and off as given", () => {
  assert.equal(
    [{}, { ERPLINK_LOG_THREAD: "" }, { ERPLINK_LOG_THREAD: "on" }, { ERPLINK_LOG_THREAD: "off" }].map((env) => loadConfig(env).logThread),
    [false, false, true, false],
  );
});

for (const bad of ["true", "1", "ON", "no", " on"]) {
  Thread(`"${bad}" is refused at start, naming the variable and the value`, () => {
    try {
      loadConfig({ ERPLINK_LOG_THREAD: bad });
      assert.unreachable("accepted");
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.is((err as Error).message, `invalid configuration:\n  - ERPLINK_LOG_THREAD must be on or off (got "${bad}")`);
    }
  });
}

Thread.run();
