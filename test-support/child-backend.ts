/**
 * Starts a test back end in a child process of its own (SAP CAP in
 * ./cap/, SAP's mock server in ./mockserver/): `node <script>` on
 * 127.0.0.1, which prints one line `<MARKER> <json>` once it listens, and
 * serves `$metadata` at the roots given behind HTTP basic authentication.
 * Children die with this process (an exit hook, and their stdin, which
 * they watch); `stop()` sends SIGTERM, then SIGKILL after 3 s.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname } from "node:path";

const STARTUP_TIMEOUT_MS = 20_000;
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Children also exit when their stdin (held by us) closes; this covers a normal exit.
  process.once("exit", () => {
    for (const child of live) child.kill("SIGKILL");
  });
}

export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
}

export interface ChildBackendOptions {
  /** What the back end is called in errors (`the mock server`, `CAP back end`). */
  readonly name: string;
  /** The script to run; its folder is the working directory. */
  readonly script: string;
  /** Its environment, beside this process's. */
  readonly env: Readonly<Record<string, string>>;
  /** The first word of the line it prints once it listens (`CAP_READY`). */
  readonly marker: string;
  readonly credentials: { readonly username: string; readonly password: string };
  /** Forward its output to this process's stderr. */
  readonly debug?: boolean;
}

export interface ChildBackend<Ready> {
  /** What its ready line said. */
  readonly ready: Ready;
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** `GET <baseUrl><path>` as JSON; throws with its stderr when it has exited, or on another status than 200. */
  getJson<T>(path: string): Promise<T>;
  stop(): Promise<void>;
}

/**
 * Spawns the back end, waits for its ready line, then until every
 * `$metadata` of `roots(ready)` answers 200 (within 20 s in all).
 */
export async function startChildBackend<Ready extends { readonly port: number }>(
  options: ChildBackendOptions,
  roots: (ready: Ready) => readonly string[],
): Promise<ChildBackend<Ready>> {
  installExitHook();
  const { name, debug } = options;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  const child = spawn(process.execPath, [options.script], {
    cwd: dirname(options.script),
    env: { ...process.env, NODE_ENV: "test", NODE_OPTIONS: "", ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  /** How the process ended, once it has. */
  let exit: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      live.delete(child);
      exit = `${signal ?? code}`;
      resolve();
    });
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    if (debug) process.stderr.write(chunk);
    else stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  };

  try {
    const ready = await new Promise<Ready>((resolve, reject) => {
      let out: string | null = "";
      const timer = setTimeout(() => reject(new Error(`${name} did not start within 20 s`)), deadline - Date.now());
      const line = new RegExp(`^${options.marker} (.*)$`, "m");
      child.stdout!.on("data", (chunk: Buffer) => {
        if (debug) process.stderr.write(chunk);
        if (out === null) return;
        out += chunk.toString("utf8");
        const m = line.exec(out);
        if (m) {
          out = null;
          clearTimeout(timer);
          resolve(JSON.parse(m[1]!) as Ready);
        }
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited during startup (${signal ?? code})`));
      });
      child.once("error", reject);
    });

    const baseUrl = `http://127.0.0.1:${ready.port}`;
    const authorization = basicAuth(options.credentials.username, options.credentials.password);
    for (const root of roots(ready)) {
      const url = `${baseUrl}${root}$metadata`;
      for (;;) {
        const status = await fetch(url, { headers: { authorization } }).then(
          async (r) => (await r.arrayBuffer(), r.status),
          () => 0,
        );
        if (status === 200) break;
        if (Date.now() > deadline) throw new Error(`${name}: ${url} answered ${status || "nothing"}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const getJson = async <T>(path: string): Promise<T> => {
      if (exit !== undefined) throw new Error(`${name} has exited (${exit}): ${stderr.slice(-1000)}`);
      const res = await fetch(`${baseUrl}${path}`);
      if (res.status !== 200) throw new Error(`${name}: ${path} answered ${res.status}: ${await res.text()}`);
      return (await res.json()) as T;
    };
    return { ready, baseUrl, getJson, stop };
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}${stderr ? `\n--- ${name}: stderr ---\n${stderr}` : ""}`, { cause: err });
  }
}
