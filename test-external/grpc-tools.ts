/**
 * External suite: the gRPC tools users reach for first, against a real
 * erplink process. grpcurl 1.9.4 (reflection: list, describe; calls with a
 * bearer token; error details decoded; an unknown method) and
 * grpc-health-probe 0.4.61 (SERVING; NOT_SERVING with exit code 4 while the
 * store is down: a MongoDB erplink on a private FerretDB that the suite stops
 * and starts again).
 *
 * Tools are installed with `go install` into the tools dir (.tmp/bin, or
 * $ERPLINK_TOOLS_DIR) when CI is set or ERPLINK_INSTALL_TOOLS=1; otherwise
 * the suite skips when they are missing.
 *
 * Run: ERPLINK_INSTALL_TOOLS=1 node --import tsx test-external/grpc-tools.ts
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Skip, TOOLS_DIR, externalSuite, mayInstall, run, type Checks, type RunResult } from "../test-support/external.js";
import { freePort } from "../test-support/e2e.js";
import {
  ensureFerretDbBinary,
  ferretDbBinary,
  pollUntil,
  startErplinkProcess,
  startFerretDb,
  type ErplinkProcess,
  type FerretDbProcess,
} from "../test-support/processes.js";

/** The tools, pinned: Go module, version, binary name. */
const TOOLS = [
  { module: "github.com/fullstorydev/grpcurl", pkg: "github.com/fullstorydev/grpcurl/cmd/grpcurl", version: "v1.9.4", bin: "grpcurl" },
  { module: "github.com/grpc-ecosystem/grpc-health-probe", pkg: "github.com/grpc-ecosystem/grpc-health-probe", version: "v0.4.61", bin: "grpc-health-probe" },
] as const;

/** Services every erplink serves (others, added later, are listed too and must be describable). */
const EXPECTED_SERVICES = [
  "erplink.admin.v1.ApiKeyService",
  "erplink.admin.v1.AuditService",
  "erplink.admin.v1.InstanceService",
  "erplink.admin.v1.LogService",
  "erplink.admin.v1.SessionService",
  "erplink.admin.v1.SystemService",
  "erplink.admin.v1.UsageService",
  "erplink.authz.v1.AuthorizationService",
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];

const MASTER = "erpl_grpc_tools_master_key_0123456789abcdefg";
/** Exit code of grpc-health-probe for a status other than SERVING. */
const PROBE_UNHEALTHY = 4;

/** Whether a binary was built from the module at the version (from its build info). */
async function builtAt(bin: string, module: string, version: string): Promise<boolean> {
  if (!existsSync(bin)) return false;
  const info = await run("go", ["version", "-m", bin], { timeoutMs: 30_000 });
  return info.code === 0 && new RegExp(`\\bmod\\s+${module.replace(/[.]/g, "\\.")}\\s+${version}\\b`).test(info.stdout);
}

/** The tools' paths, installed first if allowed (idempotent); Skip when they are missing and may not be installed. */
async function tools(): Promise<Record<(typeof TOOLS)[number]["bin"], string>> {
  const out = {} as Record<(typeof TOOLS)[number]["bin"], string>;
  for (const tool of TOOLS) {
    const bin = join(TOOLS_DIR, tool.bin);
    if (!(await builtAt(bin, tool.module, tool.version))) {
      if (!mayInstall()) throw new Skip(`${tool.bin} ${tool.version} not in ${TOOLS_DIR} (set ERPLINK_INSTALL_TOOLS=1 to install it with go install)`);
      await mkdir(TOOLS_DIR, { recursive: true });
      const installed = await run("go", ["install", `${tool.pkg}@${tool.version}`], {
        env: { ...process.env, GOBIN: TOOLS_DIR },
        timeoutMs: 600_000,
      });
      if (installed.code !== 0) throw new Error(`go install ${tool.pkg}@${tool.version} failed: ${installed.stderr.slice(-2000)}`);
      if (!(await builtAt(bin, tool.module, tool.version))) throw new Error(`${bin} is not ${tool.module}@${tool.version} after go install`);
    }
    out[tool.bin] = bin;
  }
  return out;
}

function shown(r: RunResult): string {
  return `exit ${r.code}; stdout: ${r.stdout.slice(0, 1500)}; stderr: ${r.stderr.slice(0, 1500)}`;
}

await externalSuite("grpc-tools: grpcurl and grpc-health-probe against erplink", async (c: Checks) => {
  const bins = await tools();
  const grpcurl = (args: string[]) => run(bins.grpcurl, ["-plaintext", "-max-time", "10", ...args], { timeoutMs: 20_000 });
  const probe = (address: string, args: string[] = []) => run(bins["grpc-health-probe"], ["-addr", address, ...args], { timeoutMs: 20_000 });
  const scratch = await mkdtemp(join(tmpdir(), "erplink-grpc-tools-"));
  let erplink: ErplinkProcess | undefined;
  try {
    erplink = await startErplinkProcess({ ERPLINK_DATA_DIR: ":memory:", ERPLINK_MASTER_KEY: MASTER });
    const addr = erplink.address;
    const bearer = ["-H", `authorization: Bearer ${MASTER}`];

    // Reflection: list and describe.
    const list = await grpcurl([addr, "list"]);
    const listed = list.stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "");
    const missing = EXPECTED_SERVICES.filter((s) => !listed.includes(s));
    c.check("grpcurl list: lists every service (admin, Authorize, health, reflection v1 and v1alpha)", list.code === 0 && missing.length === 0, `missing ${missing.join(", ")}; ${shown(list)}`);
    let undescribed: string[] = [];
    for (const service of listed) {
      const d = await grpcurl([addr, "describe", service]);
      if (d.code !== 0 || !d.stdout.includes(`${service} is a service:`)) undescribed.push(`${service}: ${shown(d)}`);
    }
    c.check("grpcurl describe: every listed service is described", listed.length > 0 && undescribed.length === 0, undescribed.join(" | "));
    const svc = await grpcurl([addr, "describe", "erplink.admin.v1.SystemService"]);
    c.check(
      "grpcurl describe SystemService: its RPCs with request and response types",
      svc.code === 0 && svc.stdout.includes("rpc ListSystems ( .erplink.admin.v1.ListSystemsRequest ) returns ( .erplink.admin.v1.ListSystemsResponse );"),
      shown(svc),
    );
    const msg = await grpcurl([addr, "describe", "erplink.admin.v1.System"]);
    c.check("grpcurl describe System: a message with its fields and our field options", msg.code === 0 && /message System \{/.test(msg.stdout) && /string name = 2 \[/.test(msg.stdout) && msg.stdout.includes("erplink.options.v1.field"), shown(msg));
    const detail = await grpcurl([addr, "describe", "erplink.errors.v1.BadRequest"]);
    const status = await grpcurl([addr, "describe", "google.rpc.Status"]);
    c.check(
      "grpcurl describe: the error detail types (erplink.errors.v1.BadRequest, google.rpc.Status)",
      detail.code === 0 && detail.stdout.includes("repeated .erplink.errors.v1.FieldViolation field_violations = 1;") && status.code === 0 && status.stdout.includes("repeated .google.protobuf.Any details = 3;"),
      `${shown(detail)} | ${shown(status)}`,
    );

    // Calls with a bearer token.
    const created = await grpcurl([...bearer, "-d", '{"system":{"name":"from-grpcurl"}}', addr, "erplink.admin.v1.SystemService/CreateSystem"]);
    const listedSystems = await grpcurl([...bearer, "-d", "{}", addr, "erplink.admin.v1.SystemService/ListSystems"]);
    c.check(
      "grpcurl with a bearer token: CreateSystem, then ListSystems shows it",
      created.code === 0 && listedSystems.code === 0 && listedSystems.stdout.includes('"name": "from-grpcurl"'),
      `${shown(created)} | ${shown(listedSystems)}`,
    );
    const anonymous = await grpcurl(["-d", "{}", addr, "erplink.admin.v1.SystemService/ListSystems"]);
    c.check("grpcurl without a token: Unauthenticated", anonymous.code !== 0 && anonymous.stderr.includes("Code: Unauthenticated"), shown(anonymous));
    const invalid = await grpcurl([...bearer, "-d", '{"system":{"name":""}}', addr, "erplink.admin.v1.SystemService/CreateSystem"]);
    c.check(
      "grpcurl: a validation error shows the BadRequest detail, decoded through reflection",
      invalid.code !== 0 && invalid.stderr.includes("Code: InvalidArgument") && invalid.stderr.includes('"@type": "type.googleapis.com/erplink.errors.v1.BadRequest"') && invalid.stderr.includes('"field": "name"'),
      shown(invalid),
    );
    const key = await grpcurl([
      ...bearer,
      "-d",
      '{"api_key":{"name":"grpcurl data key","permissions":{"prod":{"API_BP":{"A_BusinessPartner":["get"]}}}}}',
      addr,
      "erplink.admin.v1.ApiKeyService/CreateApiKey",
    ]);
    const secret = /"key":\s*"([^"]+)"/.exec(key.stdout)?.[1];
    const authorized = await grpcurl([
      ...bearer,
      "-d",
      JSON.stringify({ api_key: secret ?? "", instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: "OPERATION_GET" }),
      addr,
      "erplink.authz.v1.AuthorizationService/Authorize",
    ]);
    c.check(
      "grpcurl Authorize with a data key made through grpcurl: allowed",
      key.code === 0 && secret !== undefined && authorized.code === 0 && /"allowed":\s*true/.test(authorized.stdout),
      `${shown(key)} | ${shown(authorized)}`,
    );

    // Unknown service and method: grpcurl checks names against reflection first, so it is given a proto that declares them.
    await writeFile(
      join(scratch, "unknown.proto"),
      'syntax = "proto3";\npackage erplink.admin.v1;\nmessage Nothing {}\nservice SystemService { rpc Nope(Nothing) returns (Nothing); }\nservice NoSuchService { rpc Get(Nothing) returns (Nothing); }\n',
    );
    const nope = await grpcurl(["-import-path", scratch, "-proto", "unknown.proto", "-d", "{}", addr, "erplink.admin.v1.SystemService/Nope"]);
    const noService = await grpcurl(["-import-path", scratch, "-proto", "unknown.proto", "-d", "{}", addr, "erplink.admin.v1.NoSuchService/Get"]);
    c.check(
      "grpcurl: an unknown method and an unknown service are Unimplemented with grpc-go's messages",
      nope.stderr.includes("Code: Unimplemented") &&
        nope.stderr.includes("Message: unknown method Nope for service erplink.admin.v1.SystemService") &&
        noService.stderr.includes("Code: Unimplemented") &&
        noService.stderr.includes("Message: unknown service erplink.admin.v1.NoSuchService"),
      `${shown(nope)} | ${shown(noService)}`,
    );

    // Health.
    const healthy = await probe(addr);
    c.check("grpc-health-probe -addr: exit 0, status: SERVING", healthy.code === 0 && healthy.stderr.includes("status: SERVING"), shown(healthy));
    const perService = await probe(addr, ["-service", "erplink.authz.v1.AuthorizationService"]);
    c.check("grpc-health-probe -service AuthorizationService: exit 0", perService.code === 0, shown(perService));
    const unknown = await probe(addr, ["-service", "no.Such"]);
    c.check("grpc-health-probe -service of an unknown service: fails (NOT_FOUND, exit 3)", unknown.code === 3, shown(unknown));
  } finally {
    await erplink?.kill();
  }

  // The store goes away: a MongoDB erplink on a private FerretDB.
  if (!mayInstall() && !existsSync(ferretDbBinary())) {
    process.stdout.write(`# store-down checks not run: no FerretDB binary at ${ferretDbBinary()} (npm run db:ferret -- install)\n`);
  } else {
    let ferret: FerretDbProcess | undefined;
    let mongoErplink: ErplinkProcess | undefined;
    try {
      const bin = await ensureFerretDbBinary();
      const port = await freePort();
      const dir = join(scratch, "ferretdb");
      await mkdir(dir);
      ferret = await startFerretDb(bin, port, dir);
      mongoErplink = await startErplinkProcess({
        MONGODB_URL: `${ferret.url}erplink_grpc_tools`,
        ERPLINK_MASTER_KEY: MASTER,
        ERPLINK_ENCRYPTION_KEY: "cd".repeat(32),
        ERPLINK_MONGODB_TIMEOUT_MS: "1000",
      });
      const addr = mongoErplink.address;
      const up = await probe(addr);
      c.check("store up (MongoDB on FerretDB): grpc-health-probe exits 0", up.code === 0, shown(up));
      await ferret.stop();
      const down = await pollUntil("probe reports NOT_SERVING", async () => {
        const r = await probe(addr);
        return r.code === 0 ? undefined : r;
      }, { intervalMs: 200, timeoutMs: 10_000 }).catch((err: Error) => ({ code: -1, stdout: "", stderr: err.message }) as RunResult);
      c.check(
        `store down: grpc-health-probe exits ${PROBE_UNHEALTHY} (NOT_SERVING), not a timeout`,
        down.code === PROBE_UNHEALTHY && down.stderr.includes(`responded with "NOT_SERVING"`) && mongoErplink.alive(),
        shown(down),
      );
      ferret = await startFerretDb(bin, port, dir);
      const back = await pollUntil("probe reports SERVING again", async () => {
        const r = await probe(addr);
        return r.code === 0 ? r : undefined;
      }, { intervalMs: 250, timeoutMs: 20_000 }).catch((err: Error) => ({ code: -1, stdout: "", stderr: err.message }) as RunResult);
      c.check("store back: grpc-health-probe exits 0 again, without a restart", back.code === 0, shown(back));
    } finally {
      await mongoErplink?.kill();
      await ferret?.kill();
    }
  }
  await rm(scratch, { recursive: true, force: true });
});
