/**
 * The Go client programs (clients/go: grpc-go, and connect-go over the
 * Connect, gRPC and gRPC-Web protocols) against a real erplink: installs the
 * protoc plugins pinned in clients/go/go.mod (`go install tool`), generates
 * the Go packages from proto/erplink with buf, builds the programs, starts
 * erplink with the keys they need and turns their lines into checks.
 *
 * Outside CI (and without ERPLINK_INSTALL_TOOLS=1) it skips when Go or the
 * plugins are missing, and builds only from the module cache (GOPROXY=off).
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { recordProgramRun, startClientWorld } from "../test-support/clients.js";
import { REPO_ROOT } from "../test-support/e2e.js";
import { Skip, TOOLS_DIR, externalSuite, mayInstall, run } from "../test-support/external.js";

const GO_DIR = join(REPO_ROOT, "clients", "go");
const PLUGINS = ["protoc-gen-go", "protoc-gen-go-grpc", "protoc-gen-connect-go"];
/** The program runs: grpc-go, then connect-go over each protocol. */
const RUNS = [
  { label: "go grpc-go", program: "grpc-client", args: [] },
  { label: "go connect-go (connect)", program: "connect-client", args: ["-protocol", "connect"] },
  { label: "go connect-go (grpc)", program: "connect-client", args: ["-protocol", "grpc"] },
  { label: "go connect-go (grpc-web)", program: "connect-client", args: ["-protocol", "grpcweb"] },
] as const;

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}

await externalSuite("clients-go", async (checks) => {
  if ((await run("go", ["version"])).code !== 0) throw new Skip("the Go toolchain (go) is not installed");
  const install = mayInstall();
  // Module downloads go to the usual module cache (GOPATH), kept across runs.
  const goEnv = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=readonly -buildvcs=false", ...(install ? {} : { GOPROXY: "off" }) };

  let started = Date.now();
  if (install) {
    const res = await run("go", ["install", "tool"], { cwd: GO_DIR, env: { ...goEnv, GOBIN: TOOLS_DIR } });
    if (res.code !== 0) throw new Error(`go install tool (clients/go) failed: ${res.stderr}`);
  } else if (!PLUGINS.every((p) => existsSync(join(TOOLS_DIR, p)))) {
    throw new Skip(`protoc plugins not installed in ${TOOLS_DIR}: run with ERPLINK_INSTALL_TOOLS=1`);
  }
  process.stdout.write(`# plugins ready in ${seconds(started)}\n`);

  started = Date.now();
  const generated = await run(join(REPO_ROOT, "node_modules", ".bin", "buf"), ["generate", "--template", "clients/go/buf.gen.yaml"], {
    env: { ...process.env, PATH: `${TOOLS_DIR}${delimiter}${process.env.PATH ?? ""}` },
  });
  checks.check("go: buf generate with the local plugins", generated.code === 0, generated.stderr);
  if (generated.code !== 0) return;

  const bin = await mkdtemp(join(tmpdir(), "erplink-clients-go-"));
  try {
    const built = await run("go", ["build", "-o", bin, "./cmd/..."], { cwd: GO_DIR, env: goEnv });
    if (built.code !== 0 && !install && /GOPROXY=off|module lookup disabled/.test(built.stderr)) {
      throw new Skip("the Go modules of clients/go are not in the module cache: run with ERPLINK_INSTALL_TOOLS=1");
    }
    checks.check("go: the programs build", built.code === 0, built.stderr);
    if (built.code !== 0) return;
    process.stdout.write(`# generated and built in ${seconds(started)}\n`);

    const world = await startClientWorld(RUNS.length);
    try {
      for (const [i, r] of RUNS.entries()) {
        const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...world.envs[i], ERPLINK_CLIENT_NAME: `go-${r.program}-${i}` };
        const result = await run(join(bin, r.program), r.args, { env, timeoutMs: 60_000 });
        recordProgramRun(checks, r.label, result);
      }
      checks.check("go: erplink still running", world.erplink.alive(), world.erplink.output());
    } finally {
      await world.erplink.kill();
    }
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
});
