/**
 * Schemathesis, the property-based conformance tester, against a real
 * `src/main.ts` process: it reads `/api-reference/openapi.json` and sends
 * the administration API every kind of request the document allows (and
 * many it forbids), with the master key, all its checks (server errors,
 * status codes, content types, headers and bodies against the schemas,
 * schema-valid requests accepted, schema-violating ones refused, undeclared
 * methods answered 405 with `Allow`, …), in its four phases: the document's
 * examples, coverage of each schema's boundaries, random fuzzing, and
 * stateful sequences (create, then read, change and delete what was
 * created). A fixed seed and a bounded number of examples per operation
 * keep it reproducible and a few minutes long.
 *
 * Checks: one per operation (Schemathesis' JUnit report, all phases
 * together, with its failure text), one for the stateful sequences, one per
 * phase (it ran, and found nothing), and one for its exit status.
 *
 * The erplink process cannot leave the host (test-support/loopback-only.ts):
 * the instances Schemathesis creates name back ends such as `https://0.com`,
 * which the connection test and the catalog then fail to reach, as they
 * would an unreachable back end.
 *
 * Tools: python3 with a venv under .tmp/ (Schemathesis from PyPI), installed
 * in CI or with ERPLINK_INSTALL_TOOLS=1, else skipped when absent.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../test-support/e2e.js";
import { Skip, TOOLS_DIR, externalSuite, mayInstall, run } from "../test-support/external.js";
import { startErplinkProcess } from "../test-support/processes.js";

const VERSION = "4.32.5";
const VENV = join(TOOLS_DIR, "..", "venv-schemathesis");
const SCHEMATHESIS = join(VENV, "bin", "schemathesis");
const SEED = "1";
/** Test cases per operation and phase (the coverage phase takes what the schemas' boundaries need). */
const MAX_EXAMPLES = "50";
const PHASES = ["examples", "coverage", "fuzzing", "stateful"] as const;
const RUN_TIMEOUT_MS = 420_000;

/**
 * Answers the document lists but the checks would count against erplink:
 * - the catalog reaches the instance's back end, and none is reachable here:
 *   502 `BAD_GATEWAY` (504 when slow), as documented for that operation;
 * - an explained request whose `url` contradicts its `instance` or `service`
 *   fields (`/odata/a/…` with `instance: "b"`) is a malformed call (400),
 *   a rule between fields that JSON Schema cannot write;
 * - a PATCH or DELETE of a system, an instance or an API key whose
 *   `If-Match` (or body `etag`), generated at random, is not the resource's
 *   etag is refused with 412 `PRECONDITION_FAILED`, as documented;
 * - a connection test whose instance id a stateful sequence took from a
 *   batched catalog answer, where it may be empty: the client collapses
 *   `/admin/instances//test` into `/admin/instances/test`, another path, which
 *   has no POST: 405 `METHOD_NOT_ALLOWED`.
 * Only these statuses of only these operations are expected; every other
 * check applies to them unchanged.
 */
/** The operations that take an etag (If-Match, or `etag` in the body). */
const CONDITIONAL = ["UpdateSystem", "DeleteSystem", "UpdateInstance", "DeleteInstance", "UpdateApiKey", "DeleteApiKey"];

const CONFIG = `
[phases.examples]
# Path ids the examples leave out are generated.
fill-missing = true

[[operations]]
include-operation-id = "GetServiceCatalog"
checks.not_a_server_error.expected-statuses = ["2XX", "3XX", "4XX", "502", "504"]

[[operations]]
include-operation-id = "TestInstanceConnection"
checks.positive_data_acceptance.expected-statuses = ["2XX", "3XX", "400", "401", "403", "404", "405", "409", "429", "5XX"]

[[operations]]
include-operation-id = "ExplainApiKey"
checks.positive_data_acceptance.expected-statuses = ["2XX", "3XX", "400", "401", "403", "404", "409", "429", "5XX"]

${CONDITIONAL.map(
  (id) => `[[operations]]
include-operation-id = "${id}"
checks.positive_data_acceptance.expected-statuses = ["2XX", "3XX", "401", "403", "404", "409", "412", "429", "5XX"]
`,
).join("\n")}`;

async function ensureSchemathesis(): Promise<void> {
  const installed = async () =>
    existsSync(SCHEMATHESIS) && (await run(SCHEMATHESIS, ["--version"])).stdout.includes(`version ${VERSION}`);
  if (await installed()) return;
  if (!mayInstall()) throw new Skip(`no Schemathesis ${VERSION} in ${VENV} (ERPLINK_INSTALL_TOOLS=1 installs it)`);
  const venv = await run("python3", ["-m", "venv", VENV]);
  if (venv.code !== 0) throw new Error(`python3 -m venv failed: ${venv.stderr}`);
  const pip = await run(join(VENV, "bin", "pip"), ["install", "--quiet", "--disable-pip-version-check", `schemathesis==${VERSION}`], {
    timeoutMs: 600_000,
  });
  if (pip.code !== 0) throw new Error(`pip install schemathesis==${VERSION} failed: ${pip.stderr}`);
  if (!(await installed())) throw new Error(`schemathesis ${VERSION} is not runnable from ${SCHEMATHESIS} after installing it`);
}

/** One `<testcase>` of a JUnit report: its name and, when it failed, the failure text. */
interface TestCase {
  readonly name: string;
  readonly failure: string | undefined;
}

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp|#(\d+)|#x([0-9a-fA-F]+));/g, (_, name: string, dec?: string, hex?: string) =>
    dec !== undefined
      ? String.fromCodePoint(Number(dec))
      : hex !== undefined
        ? String.fromCodePoint(parseInt(hex, 16))
        : ({ lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" } as Record<string, string>)[name]!,
  );
}

/** The test cases of Schemathesis' JUnit report (flat: no nesting beyond testsuite/testcase). */
function readJUnit(xml: string): TestCase[] {
  const cases: TestCase[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const name = unescapeXml(/\bname="([^"]*)"/.exec(m[1]!)?.[1] ?? "?");
    const body = m[3] ?? "";
    const problems = [...body.matchAll(/<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/g)].map((p) => {
      const message = unescapeXml(/\bmessage="([^"]*)"/.exec(p[2]!)?.[1] ?? "");
      return `${p[1]}: ${message} ${unescapeXml(p[3] ?? "")}`.trim();
    });
    cases.push({ name, failure: problems.length > 0 ? problems.join(" | ") : undefined });
  }
  return cases;
}

await externalSuite(`schemathesis ${VERSION}: the administration API against its OpenAPI document`, async (checks) => {
  await ensureSchemathesis();
  const dir = await mkdtemp(join(tmpdir(), "erplink-schemathesis-"));
  const masterKey = `erpl_schemathesis_${randomBytes(24).toString("base64url")}`;
  const erplink = await startErplinkProcess({
    ERPLINK_DATA_DIR: ":memory:",
    ERPLINK_MASTER_KEY: masterKey,
    // Thousands of requests in a few minutes, all with the master key.
    ERPLINK_ADMIN_RATE_PER_MINUTE: "1000000000",
    ERPLINK_ADMIN_RATE_PER_DAY: "1000000000",
    NODE_OPTIONS: `--import tsx --import ${join(REPO_ROOT, "test-support", "loopback-only.ts")}`,
  });
  try {
    const config = join(dir, "schemathesis.toml");
    const junit = join(dir, "junit.xml");
    await writeFile(config, CONFIG);
    const started = Date.now();
    const result = await run(
      SCHEMATHESIS,
      [
        "--config-file",
        config,
        "run",
        `${erplink.baseUrl}/api-reference/openapi.json`,
        "--header",
        `Authorization: Bearer ${masterKey}`,
        "--checks",
        "all",
        "--mode",
        "all",
        "--phases",
        PHASES.join(","),
        "--max-examples",
        MAX_EXAMPLES,
        "--seed",
        SEED,
        "--generation-database",
        "none",
        "--request-timeout",
        "30",
        "--no-color",
        "--report",
        "junit",
        "--report-junit-path",
        junit,
      ],
      // Hypothesis keeps its files in the working directory.
      { cwd: dir, env: { PATH: process.env.PATH ?? "", HOME: dir, LANG: "C.UTF-8" }, timeoutMs: RUN_TIMEOUT_MS },
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    const out = result.stdout;
    process.stdout.write(`# schemathesis ran ${seconds} s: ${/\d+ generated[^\n]*/.exec(out)?.[0] ?? "no summary"}\n`);

    const cases = existsSync(junit) ? readJUnit(await readFile(junit, "utf8")) : [];
    checks.check("the JUnit report lists the operations and the stateful sequences", cases.length > 1, `${cases.length} test cases; ${result.stderr.slice(-1000)}`);
    for (const c of cases) {
      if (c.failure === undefined) checks.pass(`schemathesis: ${c.name}`);
      else checks.fail(`schemathesis: ${c.name}`, c.failure);
    }
    // The summary lists each phase: ✅ passed, ❌ failed, ⏭ skipped (an
    // examples phase without examples would be skipped: a failure here).
    const summary = out.slice(out.lastIndexOf("Test Phases:"));
    for (const phase of PHASES) {
      const line = new RegExp(`^\\s*(\\S+)\\s+${phase}\\s*$`, "im").exec(summary);
      checks.check(`schemathesis phase ${phase}: ran and found nothing`, line?.[1] === "✅", line === null ? "not in the summary" : line[0].trim());
    }
    const failures = out.includes("FAILURES") ? out.slice(out.indexOf("FAILURES"), out.lastIndexOf("SUMMARY")) : out.slice(-3000);
    checks.check(`schemathesis exits 0 (seed ${SEED}, ${MAX_EXAMPLES} examples per operation)`, result.code === 0, `exit ${result.code}: ${failures}`);
    if (result.code !== 0) {
      // The whole report, for whoever reads the log (the checks' reasons are cut at 2000 characters).
      for (const line of out.split("\n")) process.stdout.write(`# ${line}\n`);
    }
    checks.check("erplink is still running", erplink.alive(), erplink.output());
  } finally {
    await erplink.kill();
    await rm(dir, { recursive: true, force: true });
  }
});
