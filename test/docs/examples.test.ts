/**
 * Every shell example of README.md and docs/*.md works as written: each
 * ```sh / ```bash block is run with bash against a started erplink whose
 * instances reach the demo back end (SAP CAP with sample data, as
 * `npm run demo` starts it), command by command, and each command must exit
 * 0; each curl must answer the HTTP status its comment names (`# 201`,
 * `# 200, 502, 504`: one of them), or a 2xx when it names none.
 *
 * What the examples leave as placeholders is filled the way a reader fills it:
 * - `localhost:8080` is the address of the erplink under test, and the values
 *   the examples export for `ERPLINK`, `ERPLINK_MASTER_KEY` and `BACKEND`
 *   are that erplink's address, its master key and the demo back end's URL;
 * - an id such as `sys_01KAF3…` (kinds sys, ins, key, ses, log, aud), a data
 *   key `erpl_…` and a session token `erpls_…` stand for one resource each per
 *   spelling within a file: the newest of its kind answered so far (and not
 *   deleted since) when the spelling is first met, the same one afterwards;
 * - `<meta.nextPageToken>` is the newest page token answered.
 *
 * Commands run in a temporary directory that links package.json, proto/ and
 * node_modules/ of the checkout, as if in it.
 * The README runs on an erplink of its own; every guide runs on a fresh one
 * after the README's blocks, since the guides start where the README's
 * walkthrough ends (its system, its instance `s4-prod`, its data key).
 *
 * A block is skipped only by an HTML comment on the line before its fence,
 * `<!-- example: skip (reason) -->` (installing, starting or stopping things,
 * minutes-long runs), or when a program it calls (grpcurl,
 * grpc-health-probe) is on neither PATH nor the tools directory (.tmp/bin,
 * where the external suites install them); what ran and what was skipped,
 * and why, is printed.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startCapBackend, type CapBackend } from "../../test-support/cap/index.js";
import { REPO_ROOT, startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { TOOLS_DIR } from "../../test-support/external.js";

/** A fenced shell block of a Markdown file. */
interface Block {
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly text: string;
  /** The reason of a `<!-- example: skip (reason) -->` right before the fence. */
  readonly skip?: string;
}

/** One shell command of a block (continuation lines and multi-line quotes joined) and the status its comment names. */
interface Command {
  readonly text: string;
  readonly statuses?: readonly number[];
}

const SKIP_COMMENT = /^<!--\s*example:\s*skip\s*\((.+)\)\s*-->$/;
/** Programs that may be missing outside CI; a block calling one that is missing is skipped. */
const OPTIONAL_PROGRAMS = ["grpcurl", "grpc-health-probe"];
const PATH = [TOOLS_DIR, join(REPO_ROOT, "node_modules", ".bin"), process.env.PATH ?? ""].join(delimiter);

function markdownFiles(): string[] {
  const docs = readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  return ["README.md", ...docs];
}

function shellBlocks(file: string): Block[] {
  const lines = readFileSync(join(REPO_ROOT, file), "utf8").split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash)\s*$/.test(lines[i]!)) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`${file}:${i + 1}: unclosed fence`);
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    const skip = before >= 0 ? SKIP_COMMENT.exec(lines[before]!.trim())?.[1] : undefined;
    blocks.push({ file, line: i + 1, text: lines.slice(i + 1, end).join("\n"), ...(skip !== undefined ? { skip } : {}) });
    i = end;
  }
  return blocks;
}

/**
 * Splits a block into commands as bash reads them: a command ends at a
 * newline outside quotes that no backslash continues. Comments are dropped
 * from the text; the first comment of a command that begins with statuses
 * (`# 201`, `# 200, 502, 504`) gives the statuses its curl may answer.
 */
function commands(block: string): Command[] {
  const out: Command[] = [];
  let text = "";
  let statuses: number[] | undefined;
  let quote: "'" | '"' | undefined;
  const flush = () => {
    if (text.trim() !== "") out.push({ text: text.trim(), ...(statuses ? { statuses } : {}) });
    text = "";
    statuses = undefined;
  };
  for (let i = 0; i < block.length; i++) {
    const c = block[i]!;
    if (quote !== undefined) {
      text += c;
      if (c === "\\" && quote === '"') text += block[++i] ?? "";
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
      text += c;
    } else if (c === "\\") {
      if (block[i + 1] === "\n") i++;
      else text += c + (block[++i] ?? "");
    } else if (c === "#" && (text === "" || /\s$/.test(text))) {
      const endOfLine = block.indexOf("\n", i);
      const comment = block.slice(i + 1, endOfLine < 0 ? undefined : endOfLine);
      const named = /^\s*(\d{3}(?:\s*,\s*\d{3})*)\b/.exec(comment);
      if (named && statuses === undefined) statuses = named[1]!.split(",").map((s) => Number(s.trim()));
      i = (endOfLine < 0 ? block.length : endOfLine) - 1;
    } else if (c === "\n") {
      flush();
    } else {
      text += c;
    }
  }
  if (quote !== undefined) throw new Error(`unterminated ${quote} in: ${text}`);
  flush();
  return out;
}

function onPath(program: string): boolean {
  return spawnSync("bash", ["-c", `command -v ${program}`], { env: { ...process.env, PATH } }).status === 0;
}

/** Why a block is not run, if it is not. */
function skipReason(block: Block): string | undefined {
  if (block.skip !== undefined) return block.skip;
  for (const program of OPTIONAL_PROGRAMS) {
    if (new RegExp(`(^|\\n)\\s*${program}\\b`).test(block.text) && !onPath(program)) {
      return `${program} is on neither PATH nor ${TOOLS_DIR}`;
    }
  }
  return undefined;
}

/** The shell in which a file's blocks run: its directory, exported variables carried from command to command. */
class Shell {
  readonly dir = mkdtempSync(join(tmpdir(), "erplink-examples-"));
  /** Placeholder spelling -> the value it was bound to. */
  private readonly bound = new Map<string, string>();
  /** Kind (sys, ins, …, erpl, erpls) -> values answered, oldest first. */
  private readonly answered = new Map<string, string[]>();
  private pageToken: string | undefined;

  constructor(
    private readonly erplink: RunningErplink,
    private readonly backend: CapBackend,
  ) {
    writeFileSync(join(this.dir, "state.sh"), "");
    // As in a checkout: the examples name proto/ and run npx.
    for (const name of ["package.json", "proto", "node_modules"]) symlinkSync(join(REPO_ROOT, name), join(this.dir, name));
  }

  /** A file's own blocks begin: its placeholder spellings are its own. */
  forgetBindings(): void {
    this.bound.clear();
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private fill(text: string, where: string): string {
    const address = `127.0.0.1:${this.erplink.port}`;
    const values: Record<string, string> = {
      ERPLINK: this.erplink.baseUrl,
      ERPLINK_MASTER_KEY: this.erplink.masterKey,
      BACKEND: this.backend.baseUrl,
    };
    let filled = text
      .replace(/localhost:8080/g, address)
      .replace(/^export (ERPLINK|ERPLINK_MASTER_KEY|BACKEND)=\S+/gm, (_, name: string) => `export ${name}='${values[name]}'`);
    filled = filled.replace(/\b(sys|ins|key|ses|log|aud|erpls|erpl)_[0-9A-Z]*…/g, (spelling, kind: string) => {
      let value = this.bound.get(spelling);
      if (value === undefined) {
        value = this.answered.get(kind)?.at(-1);
        if (value === undefined) throw new Error(`${where}: ${spelling} stands for a ${kind} that no earlier answer named`);
        this.bound.set(spelling, value);
      }
      return value;
    });
    return filled.replace(/<meta\.nextPageToken>/g, () => {
      if (this.pageToken === undefined) throw new Error(`${where}: <meta.nextPageToken> with no page token answered before`);
      return this.pageToken;
    });
  }

  private remember(kind: string, value: string): void {
    const values = this.answered.get(kind) ?? [];
    this.answered.set(kind, [...values.filter((v) => v !== value), value]);
  }

  /** Takes ids, secrets and page tokens from an answer's JSON. */
  private capture(body: string, deleting: boolean): void {
    let parsed: { data?: unknown; meta?: { nextPageToken?: unknown } };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      return;
    }
    if (typeof parsed !== "object" || parsed === null) return;
    if (typeof parsed.meta?.nextPageToken === "string" && parsed.meta.nextPageToken !== "") this.pageToken = parsed.meta.nextPageToken;
    const idKind = (id: unknown) => (typeof id === "string" ? /^(sys|ins|key|ses|log|aud)_[0-9A-Z]{26}$/.exec(id)?.[1] : undefined);
    const data = parsed.data as Record<string, unknown> | Record<string, unknown>[] | undefined;
    if (Array.isArray(data)) {
      // A list names a kind only when nothing created one before (request log entries, audit events).
      const kind = idKind(data[0]?.id);
      if (kind !== undefined && !this.answered.has(kind)) this.remember(kind, data[0]!.id as string);
    } else if (typeof data === "object" && data !== null) {
      const kind = idKind(data.id);
      // A deleted resource is no longer the newest of its kind.
      if (kind !== undefined && deleting) this.answered.set(kind, (this.answered.get(kind) ?? []).filter((v) => v !== data.id));
      else if (kind !== undefined) this.remember(kind, data.id as string);
      if (typeof data.key === "string" && data.type === "data") this.remember("erpl", data.key);
      if (typeof data.token === "string") this.remember("erpls", data.token);
    }
  }

  /** Runs one command; returns what failed, or undefined. */
  async run(command: Command, where: string): Promise<string | undefined> {
    const calls = join(this.dir, "calls");
    rmSync(calls, { recursive: true, force: true });
    let filled: string;
    try {
      filled = this.fill(command.text, where);
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
    const script = [
      "set -u",
      `. ${JSON.stringify(join(this.dir, "state.sh"))}`,
      // Each curl's status and body, for the check and the placeholders of later commands.
      `__calls=${JSON.stringify(calls)}; mkdir -p "$__calls"; __n=0`,
      `curl() { __n=$((__n + 1)); command curl "$@" -o "$__calls/$__n.body" -w '%{http_code}' > "$__calls/$__n.status"; local rc=$?; cat "$__calls/$__n.body"; return $rc; }`,
      filled,
      "__rc=$?",
      `export -p > ${JSON.stringify(join(this.dir, "state.sh"))}`,
      "exit $__rc",
    ].join("\n");
    // Not spawnSync: the erplink under test answers from this process.
    const result = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn("bash", ["-c", script], {
        cwd: this.dir,
        env: { PATH, HOME: process.env.HOME ?? this.dir, LANG: "C.UTF-8" },
        timeout: 30_000,
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
      child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
      child.on("close", (status) => resolve({ status, stdout, stderr }));
    });
    const shown = `${where}: ${command.text}\n  exit ${result.status}; stdout: ${result.stdout.slice(0, 800)}; stderr: ${result.stderr.slice(0, 800)}`;
    const made = existsSync(calls) ? readdirSync(calls).filter((f) => f.endsWith(".status")).length : 0;
    const statuses: number[] = [];
    for (let n = 1; n <= made; n++) {
      statuses.push(Number(readFileSync(join(calls, `${n}.status`), "utf8")));
      this.capture(existsSync(join(calls, `${n}.body`)) ? readFileSync(join(calls, `${n}.body`), "utf8") : "", /-X DELETE\b/.test(command.text));
    }
    if (result.status !== 0) return shown;
    for (const status of statuses) {
      const ok = command.statuses ? command.statuses.includes(status) : status >= 200 && status < 300;
      if (!ok) return `${shown}\n  HTTP ${status}, expected ${command.statuses ? command.statuses.join(" or ") : "2xx"}`;
    }
    return undefined;
  }
}

interface Ctx {
  backend?: CapBackend;
}

const Examples = suite<Ctx>("the shell examples of README.md and docs/*.md", {});

Examples.before(async (ctx) => {
  ctx.backend = await startCapBackend();
});

Examples.after(async (ctx) => {
  await ctx.backend?.stop();
});

Examples("commands split as bash reads them, with the statuses their comments name", () => {
  assert.equal(
    commands(`export A=1   # the address\ncurl -s -X POST $E/x -H "$AUTH" \\\n  -d '{"a": "#1",\n "b": 2}'   # 201; shown once\n# a comment\ncurl -s $E/y   # 200, 502, 504\ncurl -s $E/z # list`),
    [
      { text: "export A=1" },
      { text: `curl -s -X POST $E/x -H "$AUTH"   -d '{"a": "#1",\n "b": 2}'`, statuses: [201] },
      { text: "curl -s $E/y", statuses: [200, 502, 504] },
      { text: "curl -s $E/z" },
    ],
  );
});

Examples("every shell block runs as written, or is skipped for a stated reason", async (ctx) => {
  const started = Date.now();
  const files = markdownFiles().map((file) => ({ file, blocks: shellBlocks(file) }));
  const readme = files[0]!.blocks.filter((b) => skipReason(b) === undefined);
  const failures: string[] = [];
  const report: string[] = [];
  let ran = 0;
  let skipped = 0;
  let commandsRun = 0;
  for (const { file, blocks } of files) {
    const runnable = blocks.filter((b) => skipReason(b) === undefined);
    for (const b of blocks) {
      const reason = skipReason(b);
      if (reason !== undefined) {
        skipped++;
        report.push(`  skipped ${b.file}:${b.line}: ${reason}`);
      }
    }
    if (runnable.length === 0) continue;
    const erplink = await startErplink();
    const shell = new Shell(erplink, ctx.backend!);
    try {
      // The guides start where the README's walkthrough ends.
      const sequence = file === "README.md" ? runnable : [...readme, ...runnable];
      for (const b of sequence) {
        const own = b.file === file;
        if (own && b === runnable[0]) shell.forgetBindings();
        const cmds = commands(b.text);
        let failed = false;
        for (const c of cmds) {
          const failure = await shell.run(c, `${b.file}:${b.line}${own ? "" : ` (before ${file})`}`);
          if (own) commandsRun++;
          if (failure !== undefined) {
            failures.push(failure);
            failed = true;
            break;
          }
        }
        if (own) {
          ran++;
          report.push(`  ${failed ? "FAILED " : "ran    "} ${b.file}:${b.line} (${cmds.length} command${cmds.length === 1 ? "" : "s"})`);
        }
        if (failed && !own) break;
      }
    } finally {
      shell.close();
      await erplink.close();
    }
  }
  process.stdout.write(
    `\nshell examples: ${ran} blocks run (${commandsRun} commands), ${skipped} skipped, in ${((Date.now() - started) / 1000).toFixed(1)} s\n${report.join("\n")}\n`,
  );
  assert.ok(ran > 0, "no shell block ran");
  assert.equal(failures, [], `examples that do not work as written:\n${failures.join("\n\n")}`);
});

Examples.run();
