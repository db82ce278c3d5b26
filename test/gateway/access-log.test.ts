/**
 * The per-request `request` log line (ERPLINK_ACCESS_LOG): written at `info`
 * when on; off by default, when it is written at `debug` only, so that an
 * `info` deployment writes no line per request. Composed as src/main.ts does,
 * with the log lines captured.
 */
import { Writable } from "node:stream";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createErplink } from "../../src/app.js";
import { ConfigError, loadConfig } from "../../src/config.js";

const MASTER = "erpl_test_master_key_0123456789abcdefghijklmnop";

interface Line {
  readonly level: number;
  readonly msg: string;
  readonly method?: string;
  readonly url?: string;
  readonly status?: number;
}

/** erplink with `env`, its log lines collected; after two requests, the `request` lines. */
async function requestLines(env: Record<string, string>): Promise<Line[]> {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString("utf8").split("\n")) if (l !== "") lines.push(JSON.parse(l) as Line);
      done();
    },
  });
  const erplink = await createErplink(loadConfig({ ERPLINK_DATA_DIR: ":memory:", ERPLINK_MASTER_KEY: MASTER, ...env }), { logDestination: sink });
  try {
    const health = await erplink.app.inject({ method: "GET", url: "/healthz" });
    assert.is(health.statusCode, 200);
    const denied = await erplink.app.inject({ method: "GET", url: "/odata/prod/API_BP/A_BusinessPartner" });
    assert.is(denied.statusCode, 401);
  } finally {
    await erplink.close();
  }
  return lines.filter((l) => l.msg === "request");
}

const AccessLog = suite("access log line (ERPLINK_ACCESS_LOG)");

AccessLog("off by default: at info, no line per request", async () => {
  assert.equal(await requestLines({ LOG_LEVEL: "info" }), []);
  assert.equal(await requestLines({ LOG_LEVEL: "info", ERPLINK_ACCESS_LOG: "off" }), []);
});

AccessLog("off, at debug: one debug line per request", async () => {
  const lines = await requestLines({ LOG_LEVEL: "debug" });
  assert.equal(
    lines.map((l) => [l.level, l.method, l.url, l.status]),
    [
      [20, "GET", "/healthz", 200],
      [20, "GET", "/odata/prod/API_BP/A_BusinessPartner", 401],
    ],
  );
});

AccessLog("on: one info line per request (method, URL, status), never the credentials", async () => {
  const lines = await requestLines({ LOG_LEVEL: "info", ERPLINK_ACCESS_LOG: "on" });
  assert.equal(
    lines.map((l) => [l.level, l.method, l.url, l.status]),
    [
      [30, "GET", "/healthz", 200],
      [30, "GET", "/odata/prod/API_BP/A_BusinessPartner", 401],
    ],
  );
  assert.not.ok(JSON.stringify(lines).includes(MASTER));
});

AccessLog("any other value is a configuration error naming the variable", () => {
  try {
    loadConfig({ ERPLINK_ACCESS_LOG: "yes" });
    assert.unreachable("accepted");
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.match((err as Error).message, 'ERPLINK_ACCESS_LOG must be on or off (got "yes")');
  }
  assert.is(loadConfig({}).accessLog, false);
  assert.is(loadConfig({ ERPLINK_ACCESS_LOG: "on" }).accessLog, true);
});

AccessLog.run();
