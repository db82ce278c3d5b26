/**
 * `/metrics` read by the Prometheus project's own Python parser
 * (`prometheus_client.parser.text_string_to_metric_families`), from a real
 * `src/main.ts` process configured by its environment (`ERPLINK_METRICS=token`):
 * the scrape without the token is refused, every family parses with its type,
 * and the counters of a short scripted sequence (admin calls, a data request
 * refused for its key, Authorize over Connect) moved by exactly that.
 *
 * Tools: python3 with a venv under .tmp/ (`prometheus-client` from PyPI),
 * installed in CI or with ERPLINK_INSTALL_TOOLS=1, else skipped when absent.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Skip, TOOLS_DIR, externalSuite, mayInstall, run } from "../test-support/external.js";
import { startErplinkProcess } from "../test-support/processes.js";

const PROMETHEUS_CLIENT = "prometheus-client==0.26.0";
const VENV = join(TOOLS_DIR, "..", "venv-metrics");
const PYTHON = join(VENV, "bin", "python");
const MASTER_KEY = "erpl_external_metrics_master_key_0123456789";
const METRICS_TOKEN = "external-metrics-token-0123456789abcdefgh";

/** Reads an exposition from a file and prints its families as JSON: name, type, and every sample. */
const PARSER = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
families = []
with open(sys.argv[1]) as f:
    for family in text_string_to_metric_families(f.read()):
        families.append({"name": family.name, "type": family.type, "documentation": family.documentation,
                         "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples]})
print(json.dumps(families))
`;

interface Family {
  readonly name: string;
  readonly type: string;
  readonly documentation: string;
  readonly samples: readonly { readonly name: string; readonly labels: Record<string, string>; readonly value: number }[];
}

async function ensurePython(): Promise<void> {
  if (existsSync(PYTHON) && (await run(PYTHON, ["-c", "import prometheus_client"])).code === 0) return;
  if (!mayInstall()) throw new Skip(`no ${VENV} with prometheus-client (ERPLINK_INSTALL_TOOLS=1 installs it)`);
  const venv = await run("python3", ["-m", "venv", VENV]);
  if (venv.code !== 0) throw new Error(`python3 -m venv failed: ${venv.stderr}`);
  const pip = await run(join(VENV, "bin", "pip"), ["install", "--quiet", PROMETHEUS_CLIENT], { timeoutMs: 300_000 });
  if (pip.code !== 0) throw new Error(`pip install ${PROMETHEUS_CLIENT} failed: ${pip.stderr}`);
}

await externalSuite("metrics: /metrics read by prometheus_client's parser", async (checks) => {
  await ensurePython();
  const dir = await mkdtemp(join(tmpdir(), "erplink-metrics-"));
  const erplink = await startErplinkProcess({
    ERPLINK_DATA_DIR: ":memory:",
    ERPLINK_MASTER_KEY: MASTER_KEY,
    ERPLINK_METRICS: "token",
    ERPLINK_METRICS_TOKEN: METRICS_TOKEN,
  });
  try {
    const admin = { authorization: `Bearer ${MASTER_KEY}` };
    let scrapes = 0;
    const scrape = async (): Promise<Family[]> => {
      const res = await fetch(`${erplink.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      if (res.status !== 200) throw new Error(`scrape answered ${res.status}`);
      const file = join(dir, `scrape-${++scrapes}.txt`);
      await writeFile(file, await res.text());
      const parsed = await run(PYTHON, ["-c", PARSER, file], { timeoutMs: 60_000 });
      if (parsed.code !== 0) throw new Error(`the parser refused the exposition: ${parsed.stderr}`);
      return JSON.parse(parsed.stdout) as Family[];
    };
    const value = (families: Family[], sample: string, labels: Record<string, string>) =>
      families
        .flatMap((f) => f.samples)
        .find((s) => s.name === sample && Object.keys(labels).length === Object.keys(s.labels).length && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        ?.value ?? 0;

    const refused = await fetch(`${erplink.baseUrl}/metrics`, { headers: admin });
    const body = (await refused.json()) as { error?: { code?: string } };
    checks.check("a scrape with another token (the master key) is 401 UNAUTHORIZED", refused.status === 401 && body.error?.code === "UNAUTHORIZED", `${refused.status} ${JSON.stringify(body)}`);

    const before = await scrape();
    const erplinkFamilies = before.filter((f) => f.name.startsWith("erplink_"));
    checks.check(
      "every erplink family parses, typed and documented",
      erplinkFamilies.length >= 20 && erplinkFamilies.every((f) => ["counter", "gauge", "histogram"].includes(f.type) && f.documentation !== ""),
      JSON.stringify(erplinkFamilies.map((f) => [f.name, f.type])),
    );
    checks.check("process metrics parse", ["process_cpu_seconds", "process_resident_memory_bytes"].every((n) => before.some((f) => f.name === n)), before.map((f) => f.name).join(" "));

    // The sequence.
    for (let i = 0; i < 3; i++) await (await fetch(`${erplink.baseUrl}/admin/systems`, { headers: admin })).arrayBuffer();
    await (await fetch(`${erplink.baseUrl}/odata/prod/SALES/Orders`, { headers: { authorization: "Bearer erpl_no" } })).arrayBuffer();
    for (const apiKey of ["", `erpl_${"x".repeat(49)}`]) {
      await (
        await fetch(`${erplink.baseUrl}/erplink.authz.v1.AuthorizationService/Authorize`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ apiKey, instance: "prod", service: "SALES", entity: "Orders", operation: "OPERATION_GET" }),
        })
      ).arrayBuffer();
    }

    const after = await scrape();
    const delta = (sample: string, labels: Record<string, string>) => value(after, sample, labels) - value(before, sample, labels);
    const admin2xx = delta("erplink_http_requests_total", { route: "admin", service: "", method: "GET", status_class: "2xx" });
    checks.check("3 admin GETs counted", admin2xx === 3, String(admin2xx));
    const adminHistogram = delta("erplink_http_request_duration_seconds_count", { route: "admin", service: "", method: "GET", status_class: "2xx" });
    checks.check("and timed (histogram count)", adminHistogram === 3, String(adminHistogram));
    const denied = delta("erplink_data_denials_total", { step: "key_invalid" });
    checks.check("the data request refused for its key counted as key_invalid", denied === 1, String(denied));
    const decisions = [
      delta("erplink_authorization_decisions_total", { api: "authorize", outcome: "invalid_request" }),
      delta("erplink_authorization_decisions_total", { api: "authorize", outcome: "key_invalid" }),
    ];
    checks.check("Authorize: one invalid request, one invalid key", decisions.join() === "1,1", decisions.join());
    const scraped = delta("erplink_http_requests_total", { route: "metrics", service: "", method: "GET", status_class: "2xx" });
    checks.check("the first scrape counted", scraped === 1, String(scraped));
  } finally {
    await erplink.kill();
    await rm(dir, { recursive: true, force: true });
  }
});
