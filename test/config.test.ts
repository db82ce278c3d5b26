/**
 * Configuration (src/config.ts): the audit trail's own retention,
 * ERPLINK_AUDIT_RETENTION_DAYS, unlimited unless set, and independent of the
 * request log's ERPLINK_LOG_RETENTION_DAYS.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConfigError, loadConfig } from "../src/config.js";

const Config = suite("config: ERPLINK_AUDIT_RETENTION_DAYS");

Config("unset or empty: unlimited (undefined), whatever the request log's retention", () => {
  assert.is(loadConfig({}).auditRetentionDays, undefined);
  assert.is(loadConfig({ ERPLINK_AUDIT_RETENTION_DAYS: "" }).auditRetentionDays, undefined);
  const c = loadConfig({ ERPLINK_LOG_RETENTION_DAYS: "7" });
  assert.equal([c.logRetentionDays, c.auditRetentionDays], [7, undefined]);
});

Config("a whole number of days from 1 to 36500", () => {
  assert.is(loadConfig({ ERPLINK_AUDIT_RETENTION_DAYS: "1" }).auditRetentionDays, 1);
  assert.is(loadConfig({ ERPLINK_AUDIT_RETENTION_DAYS: "2555" }).auditRetentionDays, 2555);
  assert.is(loadConfig({ ERPLINK_AUDIT_RETENTION_DAYS: "36500" }).auditRetentionDays, 36500);
});

for (const bad of ["0", "36501", "-1", "1.5", "30d", "unlimited", " 30"]) {
  Config(`"${bad}" is refused, naming the variable`, () => {
    try {
      loadConfig({ ERPLINK_AUDIT_RETENTION_DAYS: bad });
      assert.unreachable("accepted");
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.ok(
        (err as Error).message.includes(`ERPLINK_AUDIT_RETENTION_DAYS must be an integer from 1 to 36500 (got "${bad}")`),
        (err as Error).message,
      );
    }
  });
}

Config.run();

const ExtAuthzToken = suite("config: ERPLINK_EXT_AUTHZ_TOKEN");

ExtAuthzToken("unset or empty: no token (Envoy's Check never injects credentials); else kept as given", () => {
  assert.is(loadConfig({}).extAuthzToken, undefined);
  assert.is(loadConfig({ ERPLINK_EXT_AUTHZ_TOKEN: "" }).extAuthzToken, undefined);
  const token = "envoy-ext-authz-0123456789abcdefghijkl";
  assert.is(loadConfig({ ERPLINK_EXT_AUTHZ_TOKEN: token }).extAuthzToken, token);
});

ExtAuthzToken("shorter than 32 printable characters, or with spaces, is refused, naming the variable", () => {
  for (const bad of ["short", `${"x".repeat(31)}`, `${"x".repeat(20)} ${"y".repeat(20)}`]) {
    try {
      loadConfig({ ERPLINK_EXT_AUTHZ_TOKEN: bad });
      assert.unreachable("accepted");
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.ok((err as Error).message.includes("ERPLINK_EXT_AUTHZ_TOKEN must be at least 32 printable characters without spaces"), (err as Error).message);
    }
  }
});

ExtAuthzToken.run();

const SessionBudget = suite("config: ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE and _PER_DAY");

SessionBudget("unset: 600 a minute and 50,000 a day, above the admin tokens' 100 and 10,000; set: as given, apart from them", () => {
  const c = loadConfig({});
  assert.equal([c.adminLimits, c.adminSessionLimits], [{ perMinute: 100, perDay: 10_000 }, { perMinute: 600, perDay: 50_000 }]);
  const set = loadConfig({ ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE: "30", ERPLINK_ADMIN_SESSION_RATE_PER_DAY: "900", ERPLINK_ADMIN_RATE_PER_MINUTE: "7" });
  assert.equal([set.adminLimits, set.adminSessionLimits], [{ perMinute: 7, perDay: 10_000 }, { perMinute: 30, perDay: 900 }]);
});

SessionBudget("0 or a non-integer is refused, naming the variable", () => {
  try {
    loadConfig({ ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE: "0", ERPLINK_ADMIN_SESSION_RATE_PER_DAY: "lots" });
    assert.unreachable("accepted");
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.is(
      (err as Error).message,
      'invalid configuration:\n  - ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE must be an integer from 1 to 1000000000 (got "0")\n  - ERPLINK_ADMIN_SESSION_RATE_PER_DAY must be an integer from 1 to 1000000000 (got "lots")',
    );
  }
});

SessionBudget.run();
