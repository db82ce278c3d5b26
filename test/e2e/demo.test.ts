/**
 * `npm run demo` (scripts/demo.ts) end to end: the script, run as a child
 * process the way a newcomer runs it, starts erplink and the CAP back end,
 * configures them through the admin API and prints curl lines; each printed
 * line is run as written (its curl arguments read into a fetch) and answers
 * as the demo says: the allowed read 200 with two partners, the sales-order
 * read 403 naming what the key lacks, the explain of that read 200 with the
 * same refusal. SIGINT then stops the demo, every process it started, and
 * removes its data directory.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { REPO_ROOT } from "../../test-support/e2e.js";

const STARTUP_MS = 40_000;
const EXIT_MS = 5_000;

interface Ctx {
  child?: ChildProcess;
  output: string;
  exited?: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const Demo = suite<Ctx>("npm run demo", { output: "" });

Demo.after((ctx) => {
  // Should an assertion have stopped the test before SIGINT: the demo's children die with its stdin.
  if (ctx.child && ctx.child.exitCode === null && ctx.child.signalCode === null) ctx.child.kill("SIGKILL");
});

/** Splits a shell line as the demo prints it: words separated by spaces, single-quoted words, `'\''` inside them. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === " ") {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated quote in: ${line}`);
      word = (word ?? "") + line.slice(i + 1, end);
      i = end;
    } else if (c === "\\" && line[i + 1] === "'") {
      word = (word ?? "") + "'";
      i++;
    } else {
      if (/["$`\\;&|<>()]/.test(c) && word === undefined) throw new Error(`unquoted shell character ${c} in: ${line}`);
      word = (word ?? "") + c;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** Runs a printed `curl -sS -i …` line with fetch (the options the demo uses: -X, -H, --data). */
async function runCurl(line: string): Promise<{ status: number; headers: Headers; body: string }> {
  const [cmd, ...args] = shellWords(line);
  assert.is(cmd, "curl");
  let method: string | undefined;
  let body: string | undefined;
  let url: string | undefined;
  const headers = new Headers();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-sS" || a === "-i") continue;
    if (a === "-X") method = args[++i];
    else if (a === "-H") {
      const h = args[++i]!;
      const colon = h.indexOf(":");
      headers.append(h.slice(0, colon).trim(), h.slice(colon + 1).trim());
    } else if (a === "--data") body = args[++i];
    else if (!a.startsWith("-") && url === undefined) url = a;
    else throw new Error(`unexpected curl argument ${a} in: ${line}`);
  }
  // curl posts --data as a form unless told otherwise; the demo always says.
  const res = await fetch(url!, { method: method ?? (body !== undefined ? "POST" : "GET"), headers, ...(body !== undefined ? { body } : {}) });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** Every process below `pid` (Linux /proc), deepest last. */
function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [c, ...descendants(c)]);
}

/** A process that still runs: `pid` names it and it is not a zombie waiting to be reaped. Its command line, else undefined. */
function running(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return undefined;
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
  } catch {
    return undefined;
  }
}

function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
    }),
  ]);
}

Demo("prints curl lines that answer 200, 403 and 200 as printed; SIGINT stops erplink and CAP and removes the data directory", async (ctx) => {
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "scripts/demo.ts")], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  ctx.child = child;
  ctx.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.stdout!.on("data", (chunk: Buffer) => (ctx.output += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => (ctx.output += chunk.toString("utf8")));
  await within(
    STARTUP_MS,
    "the demo's start",
    new Promise<void>((resolve, reject) => {
      const check = () => /^Ready\. /m.test(ctx.output) && resolve();
      child.stdout!.on("data", check);
      void ctx.exited!.then(({ code, signal }) => reject(new Error(`the demo exited (${signal ?? code}):\n${ctx.output}`)));
    }),
  );
  const output = ctx.output;

  const curls = output.split("\n").filter((l) => l.startsWith("    curl ")).map((l) => l.trim());
  assert.is(curls.length, 3, output);
  const dashboard = /^ {2}Dashboard: +(http:\/\/127\.0\.0\.1:\d+\/dashboard\/)$/m.exec(output)?.[1];
  assert.ok(dashboard, output);
  const masterKey = /^ {2}Sign-in key: +(\S+) /m.exec(output)?.[1];
  assert.ok(masterKey, output);
  const dataDir = /^ {2}Data directory: +(\S+) /m.exec(output)?.[1];
  assert.ok(dataDir && existsSync(dataDir), output);
  const [allowedLine, refusedLine, explainLine] = curls as [string, string, string];
  assert.match(allowedLine, "/odata/s4/API_BUSINESS_PARTNER/A_BusinessPartner?$top=2");
  assert.match(refusedLine, "/odata/s4/API_SALES_ORDER/A_SalesOrder");
  assert.match(explainLine, `Authorization: Bearer ${masterKey}`);

  // The dashboard is served where the demo says, and the master key signs in.
  const page = await fetch(dashboard!);
  assert.is(page.status, 200);
  assert.is(page.headers.get("content-type"), "text/html; charset=utf-8");
  const me = await fetch(new URL("/admin/systems", dashboard!), { headers: { authorization: `Bearer ${masterKey}` } });
  assert.is(me.status, 200);
  const systems = (await me.json()) as { data: { name: string }[] };
  assert.equal(systems.data.map((s) => s.name), ["S/4HANA demo"]);

  const allowed = await runCurl(allowedLine);
  assert.is(allowed.status, 200, allowed.body);
  const partners = JSON.parse(allowed.body) as { value: { BusinessPartner: string }[] };
  assert.equal(partners.value.map((p) => p.BusinessPartner), ["1000001", "1000002"]);

  const refused = await runCurl(refusedLine);
  assert.is(refused.status, 403, refused.body);
  const message = "API key has no access to service 'API_SALES_ORDER'";
  assert.equal(JSON.parse(refused.body), {
    error: { code: "FORBIDDEN", message, requestId: refused.headers.get("x-request-id") },
  });

  const explained = await runCurl(explainLine);
  assert.is(explained.status, 200, explained.body);
  const explanation = (JSON.parse(explained.body) as { data: Record<string, unknown> }).data;
  assert.equal(
    { instance: explanation.instance, service: explanation.service, allowed: explanation.allowed, status: explanation.status, code: explanation.code, message: explanation.message, denial_step: explanation.denial_step },
    { instance: "s4", service: "API_SALES_ORDER", allowed: false, status: 403, code: "FORBIDDEN", message, denial_step: "SERVICE" },
  );

  // The demo's processes: tsx may run it in a process of its own; CAP is one of them.
  const started = descendants(child.pid!);
  const cap = started.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("test-support/cap/server.mjs");
    } catch {
      return false;
    }
  });
  assert.is(cap.length, 1, `CAP among ${started.join(", ")}`);

  child.kill("SIGINT");
  const { code, signal } = await within(EXIT_MS, "the demo's exit after SIGINT", ctx.exited!);
  assert.equal({ code, signal }, { code: 0, signal: null }, ctx.output);
  // CAP has exited before the demo (it waits for CAP's exit).
  assert.is(running(cap[0]!), undefined);
  // Nothing else is left: esbuild's service process (the dashboard's bundler) exits once its stdin, held by the demo, closes.
  const left = () => started.map((pid) => [pid, running(pid)]).filter(([, cmd]) => cmd !== undefined);
  for (const until = Date.now() + 2000; left().length > 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
  assert.equal(left(), []);
  assert.not.ok(existsSync(dataDir!), `${dataDir} is still there`);
});

Demo.run();
