/**
 * Benchmark of an OData GET through erplink's data path against the same GET
 * through a bare Node proxy, nginx, and straight to the back end, on loopback.
 *
 * Every server is its own process: the OData back end and the bare proxy
 * (Fastify + @fastify/reply-from) from `bench/proxy-servers.ts`, nginx with
 * one worker when it is installed, erplink (`src/main.ts`, as deployed:
 * embedded in-memory store, `LOG_LEVEL=info` to /dev/null, metrics on,
 * request log on, data rate limits of 10⁹ per minute and day so that every
 * request is counted but none refused), and erplink on MongoDB (a FerretDB
 * of its own) when scripts/ferretdb.sh has built FerretDB. The load comes
 * from a process of its own: wrk when it is installed (one thread, a fixed
 * number of connections, each sending its next request when the previous one
 * is answered), else `bench/proxy-load.ts` (undici).
 *
 * Phase 1, throughput: after a warm-up of each scenario, rounds that
 * alternate between the scenarios (direct, bare, nginx, erplink, erplink on
 * MongoDB, direct, …), so that a slow spell of a shared machine is spread over
 * all of them. Each round gives throughput, p50 and p99, and the CPU time the
 * server's processes used per request (from /proc: the most portable figure
 * on a shared machine). The ratios erplink ÷ bare proxy are taken round by
 * round (the two ran seconds apart) and their median reported.
 *
 * Phase 2, latency at half load: each erplink scenario and the bare proxy at
 * a fixed rate of half erplink's median throughput (`bench/proxy-load.ts`,
 * open loop), alternating; the p50 erplink adds over the bare proxy at that
 * load.
 *
 * Usage: npm run bench:proxy [-- --rounds 5 --duration 3 --warmup 2 --connections 16 --loader auto
 *        --half-load-rounds 3 --stores embedded,mongodb --nginx auto --profile <dir> --compare <dir>]
 * `--compare <dir>` adds erplink from another source tree (e.g. a git worktree
 * of an earlier commit) on the embedded store to the same rounds: a before /
 * after comparison that a noisy machine cannot skew. `--profile <dir>`
 * writes CPU profiles of the erplink processes and of the bare proxy.
 * See bench/README.md for how to read the output.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { intOption, median, runBench } from "./lib.js";
import {
  BACKEND_AUTHORIZATION,
  ENTITY_SET,
  PAYLOAD,
  PROXIED_PREFIX,
  QUERY,
  ROOT,
  SERVICE,
  type BackendCounts,
} from "./proxy-backend.js";
import { freePort } from "../test-support/e2e.js";
import { ferretDbBinary, startFerretDb, type FerretDbProcess } from "../test-support/processes.js";
import {
  DATA_LIMIT,
  INSTANCE,
  NodeLoad,
  WRK_SCRIPT,
  configureErplink,
  hasWrk,
  runWrk,
  settle,
  startErplink,
  startNodeServer,
  track,
  type Measured,
  type Server,
} from "./harness.js";

const CLK_TCK = 100;

// ------------------------------------------------------------------ processes

/** nginx with one worker in front of the back end, or undefined when it is not installed. */
async function startNginx(backendPort: number, dir: string): Promise<Server | undefined> {
  const bin = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
  if (bin === undefined) return undefined;
  const port = await freePort();
  const conf = join(dir, "nginx.conf");
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
master_process on;
${process.getuid?.() === 0 ? "user root;" : ""}
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/client; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream backend { server 127.0.0.1:${backendPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location ${PROXIED_PREFIX}/ {
      proxy_pass http://backend/odata/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "${BACKEND_AUTHORIZATION}";
      proxy_set_header Forwarded "for=$remote_addr;proto=http";
      proxy_buffering on;
    }
  }
}
`,
  );
  const child = spawn(bin, ["-p", dir, "-c", conf, "-e", join(dir, "nginx-error.log")], { stdio: ["ignore", "ignore", "pipe"] });
  const server = track("nginx", child, port);
  for (let i = 0; i < 100; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) });
      await res.arrayBuffer();
      return server;
    } catch {
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await server.stop();
  console.log(`nginx did not start: ${server.stderr().trim() || readIfExists(join(dir, "nginx-error.log"))}`);
  return undefined;
}

function readIfExists(path: string): string {
  try {
    return readFileSync(path, "utf8").slice(-2000);
  } catch {
    return "";
  }
}

/** CPU time (clock ticks) used so far by `pid` and every process below it. */
function cpuTicks(pids: readonly number[]): number {
  const parent = new Map<number, number>();
  const ticks = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // The command name (field 2) may hold spaces: fields count from its closing parenthesis.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    parent.set(Number(entry), Number(f[1]));
    ticks.set(Number(entry), Number(f[11]) + Number(f[12]));
  }
  const roots = new Set(pids);
  let total = 0;
  for (const [pid, t] of ticks) {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parent.get(p)) {
      if (roots.has(p)) {
        total += t;
        break;
      }
    }
  }
  return total;
}

// ------------------------------------------------------------------ scenarios

interface Scenario {
  readonly name: string;
  /** Short label for the ratio lines. */
  readonly label: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The processes whose CPU time counts as this scenario's server (the back end's is reported apart). */
  readonly pids: readonly number[];
  readonly erplink?: { readonly base: string; readonly key: string };
  readonly rounds: (Measured & { readonly cpuUsPerRequest: number; readonly backendUsPerRequest: number })[];
  warmup: number;
}

/** erplink's store operations (its /metrics) by collection and operation, per `requests`, the most frequent first. */
async function storeOperations(base: string, requests: number): Promise<string> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const ops: [string, number][] = [];
  for (const m of text.matchAll(/^erplink_store_operation_duration_seconds_count\{collection="([^"]+)",operation="([^"]+)"\} (\d+)/gm)) {
    ops.push([`${m[1]}.${m[2]}`, Number(m[3])]);
  }
  if (ops.length === 0) return "(no store metrics)";
  return ops
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([name, n]) => `${name} ${(n / Math.max(1, requests)).toFixed(4)}`)
    .join(", ");
}

async function probe(s: Scenario): Promise<void> {
  const res = await fetch(s.url, { headers: s.headers });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || !body.equals(PAYLOAD)) {
    throw new Error(`${s.name}: GET answered ${res.status} with ${body.length} bytes: ${body.subarray(0, 300).toString("utf8")}`);
  }
}

async function main(): Promise<boolean> {
  const { values } = parseArgs({
    options: {
      rounds: { type: "string", default: "5" },
      duration: { type: "string", default: "3" },
      warmup: { type: "string", default: "2" },
      connections: { type: "string", default: "16" },
      loader: { type: "string", default: "auto" },
      "half-load-rounds": { type: "string", default: "3" },
      stores: { type: "string", default: "embedded,mongodb" },
      nginx: { type: "string", default: "auto" },
      profile: { type: "string" },
      compare: { type: "string" },
    },
  });
  const rounds = intOption("rounds", values.rounds, 50);
  const duration = intOption("duration", values.duration, 60);
  const warmup = intOption("warmup", values.warmup, 60);
  const connections = intOption("connections", values.connections, 512);
  const halfRounds = values["half-load-rounds"] === "0" ? 0 : intOption("half-load-rounds", values["half-load-rounds"], 20);
  if (!["auto", "wrk", "node"].includes(values.loader!)) throw new Error("--loader must be auto, wrk or node");
  if (values.loader === "wrk" && !hasWrk()) throw new Error("--loader wrk: wrk is not installed (Debian: apt-get install wrk)");
  const loader = values.loader === "node" || !hasWrk() ? "node" : "wrk";
  const stores = new Set(values.stores!.split(",").filter((s) => s !== ""));
  for (const s of stores) if (s !== "embedded" && s !== "mongodb") throw new Error("--stores is a list of embedded, mongodb");
  if (!["auto", "off"].includes(values.nginx!)) throw new Error("--nginx must be auto or off");
  const profileDir = values.profile;

  const dir = mkdtempSync(join(os.tmpdir(), "erplink-bench-"));
  const script = join(dir, "report.lua");
  writeFileSync(script, WRK_SCRIPT);
  const servers: Server[] = [];
  let ferret: FerretDbProcess | undefined;
  let load: NodeLoad | undefined;
  let failed = false;
  try {
    const backend = await startNodeServer("back end", ["backend"]);
    servers.push(backend);
    const backendUrl = `http://127.0.0.1:${backend.port}`;
    const bare = await startNodeServer("bare proxy", ["bare", String(backend.port)], profileDir);
    servers.push(bare);
    const nginx = values.nginx === "off" ? undefined : await startNginx(backend.port, dir);
    if (nginx !== undefined) servers.push(nginx);

    const proxiedPath = `${PROXIED_PREFIX}/${SERVICE}/${ENTITY_SET}?${QUERY}`;
    const accept = "application/json";
    const scenarios: Scenario[] = [];
    const scenario = (name: string, label: string, url: string, authorization: string, pids: number[], erplink?: Scenario["erplink"]) => {
      const s: Scenario = { name, label, url, headers: { authorization, accept }, pids, erplink, rounds: [], warmup: 0 };
      scenarios.push(s);
      return s;
    };
    scenario("direct: client -> back end", "direct", `${backendUrl}${ROOT}/${ENTITY_SET}?${QUERY}`, BACKEND_AUTHORIZATION, [backend.pid]);
    const bareScenario = scenario("bare proxy: Fastify + reply-from", "bare", `http://127.0.0.1:${bare.port}${proxiedPath}`, "Bearer none", [bare.pid]);
    if (nginx !== undefined) scenario("nginx (1 worker)", "nginx", `http://127.0.0.1:${nginx.port}${proxiedPath}`, "Bearer none", [nginx.pid]);
    else if (values.nginx !== "off") console.log("nginx: not installed (Debian: apt-get install nginx-light); left out");

    const erplinks: Scenario[] = [];
    if (stores.has("embedded")) {
      // As deployed (`npm start`): a data directory, so the request log's file is written too.
      const e = await startErplink("erplink-embedded", { ERPLINK_DATA_DIR: mkdtempSync(join(dir, "data-")) }, profileDir);
      servers.push(e);
      const base = `http://127.0.0.1:${e.port}`;
      const key = await configureErplink(base, backendUrl);
      erplinks.push(scenario("erplink, embedded store", "erplink", `${base}/odata/${INSTANCE}/${SERVICE}/${ENTITY_SET}?${QUERY}`, `Bearer ${key}`, [e.pid], { base, key }));
    }
    if (values.compare !== undefined) {
      // Another source tree (a git worktree of an earlier commit, with node_modules), embedded store, in the same rounds.
      const other = values.compare;
      if (!existsSync(join(other, "src", "main.ts"))) throw new Error(`--compare ${other}: no src/main.ts there`);
      const e = await startErplink("erplink-compare", { ERPLINK_DATA_DIR: mkdtempSync(join(dir, "data-")) }, profileDir, other);
      servers.push(e);
      const base = `http://127.0.0.1:${e.port}`;
      const key = await configureErplink(base, backendUrl);
      erplinks.push(scenario(`erplink from ${other}, embedded`, "compare", `${base}/odata/${INSTANCE}/${SERVICE}/${ENTITY_SET}?${QUERY}`, `Bearer ${key}`, [e.pid], { base, key }));
    }
    if (stores.has("mongodb")) {
      const bin = ferretDbBinary();
      if (!existsSync(bin)) {
        console.log(`erplink on MongoDB: FerretDB is not built (${bin}; scripts/ferretdb.sh install); left out`);
      } else {
        ferret = await startFerretDb(bin, await freePort(), mkdtempSync(join(dir, "ferret-")));
        const e = await startErplink("erplink-mongodb", { MONGODB_URL: `${ferret.url}erplink_bench` }, profileDir);
        servers.push(e);
        const base = `http://127.0.0.1:${e.port}`;
        const key = await configureErplink(base, backendUrl);
        erplinks.push(
          scenario("erplink, MongoDB store (FerretDB)", "erplink-mongodb", `${base}/odata/${INSTANCE}/${SERVICE}/${ENTITY_SET}?${QUERY}`, `Bearer ${key}`, [e.pid, ferret.child.pid!], {
            base,
            key,
          }),
        );
      }
    }
    for (const s of scenarios) await probe(s);
    if (loader === "node" || halfRounds > 0) load = await NodeLoad.start();

    const measure = async (s: Scenario, seconds: number): Promise<Measured> => {
      if (loader === "wrk") return runWrk(s.url, s.headers, connections, seconds, script);
      return load!.run({ mode: "closed", url: s.url, headers: s.headers, durationMs: seconds * 1000, connections });
    };
    const settleAll = async () => {
      for (const e of erplinks) await settle(e.erplink!.base);
    };

    const cpus = os.cpus();
    console.log(
      `OData GET (${PAYLOAD.length}-byte JSON answer), HTTP/1.1 keep-alive on loopback: node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? "cpu"}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}\n` +
        `load: ${loader === "wrk" ? "wrk, 1 thread" : "bench/proxy-load.ts (undici)"}, ${connections} connections, its own process; every server in its own process\n` +
        `${warmup} s warm-up per scenario, then ${rounds} rounds of ${duration} s per scenario, alternating ${scenarios.map((s) => s.label).join(", ")}`,
    );
    for (const s of scenarios) {
      await settleAll();
      s.warmup += (await measure(s, warmup)).requests;
    }

    const f2 = (x: number) => x.toFixed(2);
    for (let round = 0; round < rounds; round++) {
      const parts: string[] = [];
      for (const s of scenarios) {
        await settleAll();
        const cpu0 = cpuTicks(s.pids);
        const be0 = cpuTicks([backend.pid]);
        const m = await measure(s, duration);
        const cpuUs = ((cpuTicks(s.pids) - cpu0) * 1e6) / CLK_TCK / Math.max(1, m.requests);
        const beUs = ((cpuTicks([backend.pid]) - be0) * 1e6) / CLK_TCK / Math.max(1, m.requests);
        s.rounds.push({ ...m, cpuUsPerRequest: cpuUs, backendUsPerRequest: beUs });
        parts.push(`${s.label} ${Math.round(m.rps)}/s p50 ${f2(m.p50)} p99 ${f2(m.p99)}`);
      }
      console.log(`  round ${round + 1}/${rounds}: ${parts.join(" | ")}`);
    }

    const header = ["scenario", "requests", "problems", "req/s", "p50 ms", "p99 ms", "server CPU µs/req", "back end CPU µs/req", "req/s ÷ bare"];
    const table = scenarios.map((s) => {
      const ratio = median(s.rounds.map((r, i) => r.rps / bareScenario.rounds[i]!.rps));
      return [
        s.name,
        String(s.rounds.reduce((n, r) => n + r.requests, 0)),
        String(s.rounds.reduce((n, r) => n + r.problems, 0)),
        String(Math.round(median(s.rounds.map((r) => r.rps)))),
        f2(median(s.rounds.map((r) => r.p50))),
        f2(median(s.rounds.map((r) => r.p99))),
        String(Math.round(median(s.rounds.map((r) => r.cpuUsPerRequest)))),
        String(Math.round(median(s.rounds.map((r) => r.backendUsPerRequest)))),
        f2(ratio),
      ];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
    console.log();
    console.log(line(header));
    console.log(widths.map((w) => "-".repeat(w)).join("  "));
    for (const row of table) console.log(line(row));
    console.log("(medians of the rounds; server CPU: user + system time of the server's processes (erplink on MongoDB: with FerretDB's) ÷ requests;");
    console.log(" req/s ÷ bare: the median of each round's ratio to the bare proxy's round)");

    for (const s of scenarios) {
      const problems = s.rounds.reduce((n, r) => n + r.problems, 0);
      const first = s.rounds.find((r) => r.firstProblem !== undefined)?.firstProblem;
      if (problems > 0) {
        failed = true;
        console.log(`FAILED ${s.name}: ${problems} failed or unexpected answers; first: ${first}`);
      }
    }

    // Phase 2: the latency erplink adds at half its own maximum load.
    const halfLines: string[] = [];
    if (halfRounds > 0 && load !== undefined) {
      console.log();
      for (const e of erplinks) {
        const rate = Math.max(50, Math.round(median(e.rounds.map((r) => r.rps)) / 2));
        const pair = [bareScenario, e];
        const p50s = new Map<Scenario, number[]>(pair.map((s) => [s, []]));
        const p99s = new Map<Scenario, number[]>(pair.map((s) => [s, []]));
        for (let round = 0; round < halfRounds; round++) {
          for (const s of pair) {
            await settleAll();
            const m = await load.run({ mode: "open", url: s.url, headers: s.headers, durationMs: duration * 1000, connections: 64, rate });
            if (m.problems > 0) {
              failed = true;
              console.log(`FAILED ${s.name} at ${rate}/s: ${m.problems} failed or unexpected answers; first: ${m.firstProblem}`);
            }
            p50s.get(s)!.push(m.p50);
            p99s.get(s)!.push(m.p99);
          }
        }
        const added = median(p50s.get(e)!.map((p, i) => p - p50s.get(bareScenario)![i]!));
        const text =
          `at ${rate} req/s (half of ${e.label}'s): bare p50 ${f2(median(p50s.get(bareScenario)!))} ms p99 ${f2(median(p99s.get(bareScenario)!))} ms; ` +
          `${e.label} p50 ${f2(median(p50s.get(e)!))} ms p99 ${f2(median(p99s.get(e)!))} ms; p50 added ${f2(added)} ms`;
        console.log(text);
        halfLines.push(`p50 added by ${e.label} over bare at half load = ${f2(added)} ms`);
      }
    }

    // Checks that the run measured what it claims to.
    console.log();
    const counts = (await (await fetch(`${backendUrl}/__bench/counts`)).json()) as BackendCounts;
    console.log(`back end: ${counts.proxied} requests through a proxy, ${counts.direct} direct, ${counts.metadata} $metadata, ${counts.refused} refused`);
    if (counts.refused !== 0) {
      failed = true;
      console.log("FAILED: the back end refused requests");
    }
    for (const e of erplinks) {
      const res = await fetch(e.url, { headers: e.headers });
      await res.arrayBuffer();
      const counted = DATA_LIMIT - Number(res.headers.get("x-ratelimit-remaining"));
      const log = await settle(e.erplink!.base);
      console.log(`${e.label}: rate limiter counted ${counted} data requests today; request log ${log?.written} written, ${log?.dropped} dropped, ${log?.queued} queued`);
      console.log(`${e.label}: store operations per data request: ${await storeOperations(e.erplink!.base, counted)}`);
      if ((log?.dropped ?? 0) > 0) {
        failed = true;
        console.log(`FAILED ${e.label}: request-log entries dropped`);
      }
    }
    console.log();
    for (const e of erplinks) {
      const ratios = (pick: (m: Measured) => number) => median(e.rounds.map((r, i) => pick(r) / pick(bareScenario.rounds[i]!)));
      console.log(`ratio throughput ${e.label}/bare = ${f2(ratios((m) => m.rps))}`);
      console.log(`ratio p50 ${e.label}/bare = ${f2(ratios((m) => m.p50))}`);
      console.log(`${e.label} CPU per request = ${Math.round(median(e.rounds.map((r) => r.cpuUsPerRequest)))} µs (bare ${Math.round(median(bareScenario.rounds.map((r) => r.cpuUsPerRequest)))} µs)`);
    }
    for (const l of halfLines) console.log(l);
  } finally {
    load?.close();
    await Promise.all(servers.map((s) => s.stop()));
    await ferret?.stop();
    if (ferret !== undefined) rmSync(ferret.dir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
    if (profileDir !== undefined) console.log(`CPU profiles of the erplink processes: ${profileDir}`);
  }
  return !failed;
}

await runBench(15 * 60_000, main);
