/**
 * The Python client program (clients/python/client.py: grpcio and
 * grpcio-status) against a real erplink: installs the pinned requirements in
 * a venv under the tools directory, generates the Python modules from
 * proto/erplink with grpcio-tools, starts erplink with the keys the program
 * needs and turns its lines into checks.
 *
 * Outside CI (and without ERPLINK_INSTALL_TOOLS=1) it skips when Python or
 * the venv is missing.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import { recordProgramRun, startClientWorld } from "../test-support/clients.js";
import { REPO_ROOT } from "../test-support/e2e.js";
import { Skip, TOOLS_DIR, externalSuite, mayInstall, run } from "../test-support/external.js";

const PY_DIR = join(REPO_ROOT, "clients", "python");
const REQUIREMENTS = join(PY_DIR, "requirements.txt");
const VENV = join(TOOLS_DIR, "clients-python-venv");
const PYTHON = join(VENV, "bin", "python");
/** Written into the venv after a successful install: the hash of the requirements it holds. */
const MARKER = join(VENV, "erplink-requirements.sha256");

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}

/** Every .proto file under `dir`, relative to the repository's proto/ directory. */
function protoFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return protoFiles(path);
      return name.endsWith(".proto") ? [relative(join(REPO_ROOT, "proto"), path)] : [];
    });
}

await externalSuite("clients-python", async (checks) => {
  if ((await run("python3", ["--version"])).code !== 0) throw new Skip("python3 is not installed");
  const wanted = createHash("sha256").update(readFileSync(REQUIREMENTS)).digest("hex");
  const current = existsSync(MARKER) ? readFileSync(MARKER, "utf8").trim() : undefined;

  let started = Date.now();
  if (current !== wanted) {
    if (!mayInstall()) throw new Skip(`no venv with clients/python/requirements.txt at ${VENV}: run with ERPLINK_INSTALL_TOOLS=1`);
    await rm(VENV, { recursive: true, force: true });
    const venv = await run("python3", ["-m", "venv", VENV]);
    if (venv.code !== 0) throw new Error(`python3 -m venv failed: ${venv.stderr}`);
    const pip = await run(PYTHON, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", REQUIREMENTS]);
    if (pip.code !== 0) throw new Error(`pip install -r clients/python/requirements.txt failed: ${pip.stderr}`);
    writeFileSync(MARKER, `${wanted}\n`);
  }
  process.stdout.write(`# venv ready in ${seconds(started)}\n`);

  started = Date.now();
  const out = join(PY_DIR, "gen");
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  // grpcio-tools bundles protoc and the gRPC Python generator, and adds the
  // well-known types' include path itself.
  const generated = await run(
    PYTHON,
    ["-m", "grpc_tools.protoc", "-I", "proto", `--python_out=${out}`, `--pyi_out=${out}`, `--grpc_python_out=${out}`, ...protoFiles(join(REPO_ROOT, "proto", "erplink"))],
  );
  checks.check("python: grpc_tools.protoc generates the modules", generated.code === 0, generated.stderr);
  if (generated.code !== 0) return;
  process.stdout.write(`# generated in ${seconds(started)}\n`);

  const world = await startClientWorld(1);
  try {
    const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...world.envs[0], ERPLINK_CLIENT_NAME: "python-client" };
    const result = await run(PYTHON, [join(PY_DIR, "client.py")], { env, timeoutMs: 60_000 });
    recordProgramRun(checks, "python grpcio", result);
    checks.check("python: erplink still running", world.erplink.alive(), world.erplink.output());
  } finally {
    await world.erplink.kill();
  }
});
