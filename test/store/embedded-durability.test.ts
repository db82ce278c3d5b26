/**
 * The embedded store's files when the disk fails or the process dies:
 *
 * - a torn or unterminated tail is cut back to the last complete record at
 *   start, with a warning, and every complete record loads;
 * - a write the disk refuses (partway, or at the flush) is refused with
 *   StoreUnavailableError (503 `UNAVAILABLE` over HTTP), is not visible
 *   afterwards, leaves the file as it was, and the next write is not glued
 *   to anything;
 * - after SIGKILL during writes (and during a full-disk episode) every
 *   acknowledged write is there and every acknowledged delete stays deleted;
 * - `ping` and so `/readyz` say 503 while writes fail and 200 after.
 *
 * A failing disk is simulated behind the store's file layer
 * (test-support/faulty-disk.ts); a full one is a small tmpfs where this
 * process may mount one (root), and those tests print why and pass as
 * skipped elsewhere.
 */
import { spawn } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, appendFile } from "node:fs/promises";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createErplink } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createIdGenerator } from "../../src/services/ids.js";
import { createEmbeddedBackend } from "../../src/store/embedded.js";
import { uniqueIndex, type Document, type DocumentCollection, type StoreBackend } from "../../src/store/collection.js";
import { createStore, StoreUnavailableError, type Store, type SystemRecord } from "../../src/store/index.js";
import { faultyDisk, type FaultyDisk } from "../../test-support/faulty-disk.js";
import { rejection } from "../../test-support/store-contract.js";
import { mountTmpfs } from "../../test-support/tmpfs.js";

const root = await mkdtemp(join(tmpdir(), "erplink-durability-test-"));
process.on("exit", () => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);

const REPO = new URL("../../", import.meta.url).pathname;
const T0 = new Date("2026-03-04T05:06:07.890Z");

/** What the store logged. */
interface Logged {
  readonly warnings: { fields: Record<string, unknown>; message: string }[];
  readonly errors: { fields: Record<string, unknown>; message: string }[];
  readonly log: {
    warn(fields: Record<string, unknown>, message: string): void;
    error(fields: Record<string, unknown>, message: string): void;
  };
}

function logged(): Logged {
  const warnings: Logged["warnings"] = [];
  const errors: Logged["errors"] = [];
  return {
    warnings,
    errors,
    log: {
      warn: (fields, message) => warnings.push({ fields, message }),
      error: (fields, message) => errors.push({ fields, message }),
    },
  };
}

/** Asserts every line of a data file is whole: it ends with a newline and each line is JSON. */
async function assertWholeLines(file: string): Promise<string[]> {
  const text = await readFile(file, "utf8");
  assert.ok(text === "" || text.endsWith("\n"), `${file} ends without a newline: ${JSON.stringify(text.slice(-80))}`);
  const lines = text.split("\n").slice(0, -1);
  for (const line of lines) {
    try {
      JSON.parse(line);
    } catch {
      assert.unreachable(`${file} has a line that is not JSON: ${JSON.stringify(line.slice(0, 200))}`);
    }
  }
  return lines;
}

/** Copies a data directory as it is on disk now: what a crash at this moment would leave. */
async function crashImage(dir: string): Promise<string> {
  const copy = freshDir();
  await mkdir(copy, { recursive: true });
  for (const name of await readdir(dir)) await copyFile(join(dir, name), join(copy, name));
  return copy;
}

/** Ids in the order they are made. */
const newId = createIdGenerator(() => T0);

function system(name: string, big = false): SystemRecord {
  return {
    id: newId("sys"),
    name,
    // Big: some 18 KB, more than any slack left in a file's last page.
    description: big ? "d".repeat(1000) : "",
    labels: big ? Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`label-${i}`, "v".repeat(256)])) : {},
    createdAt: T0,
    updatedAt: T0,
  };
}

async function allSystems(store: Store): Promise<SystemRecord[]> {
  return (await store.systems.list({ limit: 500 })).items;
}

// ------------------------------------------------------------------ torn tails

const tails = suite("embedded store: a torn or unterminated tail is cut back at start");

tails("an unterminated last line (an append cut short) is cut back with a warning; every complete record loads and the next write reads back", async () => {
  const dir = freshDir();
  const first = await createStore({ kind: "embedded", dataDir: dir });
  const kept = [system("alpha"), system("beta")];
  for (const s of kept) await first.systems.create(s);
  await first.close();
  const file = join(dir, "systems.db");
  await appendFile(file, '{"_id":"sys_01KTORN0000000000000000000","name":"gam');

  const { warnings, errors, log } = logged();
  const second = await createStore({ kind: "embedded", dataDir: dir, log });
  try {
    assert.equal(await allSystems(second), kept);
    const cut = warnings.filter((w) => w.fields.file === file);
    assert.is(cut.length, 1, JSON.stringify(warnings));
    assert.equal([cut[0]!.fields.bytes, cut[0]!.fields.lines], [Buffer.byteLength('{"_id":"sys_01KTORN0000000000000000000","name":"gam'), 1]);
    assert.equal(errors, []);
    const gamma = system("gamma");
    await second.systems.create(gamma);
    const lines = await assertWholeLines(file);
    for (const name of ["alpha", "beta", "gamma"]) assert.is(lines.filter((l) => l.includes(`"name":"${name}"`)).length, 1, name);
    assert.is(lines.filter((l) => l.includes("TORN")).length, 0);
  } finally {
    await second.close();
  }
  const third = await createStore({ kind: "embedded", dataDir: dir });
  try {
    assert.equal((await allSystems(third)).map((s) => s.name), ["alpha", "beta", "gamma"]);
  } finally {
    await third.close();
  }
});

tails("a tail of lines that are no records (NULs a power loss leaves, a line cut short) is cut back to the last complete record, with a warning; the rest loads", async () => {
  const dir = freshDir();
  const first = await createStore({ kind: "embedded", dataDir: dir });
  const kept = Array.from({ length: 20 }, (_, i) => system(`system-${String(i).padStart(2, "0")}`));
  for (const s of kept) await first.systems.create(s);
  await first.close();
  const file = join(dir, "systems.db");
  const tail = `${"\0".repeat(300)}\n{"_id":"sys_01KTORN0000000000000000001","name":"cut short`;
  await appendFile(file, tail);

  const { warnings, log } = logged();
  const second = await createStore({ kind: "embedded", dataDir: dir, log });
  try {
    assert.equal(await allSystems(second), kept);
    const cut = warnings.filter((w) => w.fields.file === file);
    assert.is(cut.length, 1, JSON.stringify(warnings));
    assert.equal([cut[0]!.fields.bytes, cut[0]!.fields.lines], [Buffer.byteLength(tail), 2]);
    await assertWholeLines(file);
  } finally {
    await second.close();
  }
});

tails.run();

// ------------------------------------------------------------------ a failing disk

const failing = suite("embedded store: a write the disk refuses leaves nothing behind");

const items = { name: "items", indexes: [uniqueIndex("items", "name")] };

async function openItems(dir: string, disk?: FaultyDisk): Promise<{ backend: StoreBackend; coll: DocumentCollection }> {
  const backend = await createEmbeddedBackend({ dataDir: dir, compactionIntervalMs: 0, openFile: disk?.openFile });
  return { backend, coll: await backend.collection(items) };
}

async function everyItem(coll: DocumentCollection): Promise<Document[]> {
  return coll.list({}, { limit: 10_000 });
}

failing("insert, update, upsert and delete failing partway or at the flush are refused (StoreUnavailableError), invisible, and leave the file as it was", async () => {
  const dir = freshDir();
  const disk = faultyDisk();
  const { backend, coll } = await openItems(dir, disk);
  const file = join(dir, "items.db");
  try {
    await coll.insert({ _id: "a1", name: "first", v: 1 });
    await coll.increment("c0", "count", 5, { name: "c0" });
    await coll.insert({ _id: "b1", name: "dated", at: T0 });
    const before = await everyItem(coll);
    const bytes = await readFile(file);

    const attempts: [string, () => Promise<unknown>][] = [
      ["insert", () => coll.insert({ _id: "a2", name: "second", v: 2 })],
      ["update", () => coll.update("a1", { v: 10, name: "renamed" })],
      ["upsert", () => coll.increment("c1", "count", 1, { name: "c1" })],
      ["increment", () => coll.increment("c0", "count", 1, {})],
      ["delete", () => coll.delete("a1")],
      ["deleteBefore", () => coll.deleteBefore("at", new Date(T0.getTime() + 1))],
    ];
    for (const fault of ["partial", "refused", "sync"] as const) {
      for (const [what, attempt] of attempts) {
        disk.fail(fault, 1);
        const err = await rejection(attempt, `${what} (${fault})`);
        assert.instance(err, StoreUnavailableError, `${what} (${fault}): ${String(err)}`);
        assert.equal(await everyItem(coll), before, `${what} (${fault}) left nothing in memory`);
        assert.equal(await readFile(file), bytes, `${what} (${fault}) left the file as it was`);
      }
    }
    // The unique index was rolled back too: the name is free.
    await coll.insert({ _id: "a2", name: "second", v: 2 });
    assert.equal((await coll.findOne({ name: "second" }))?._id, "a2");
    const lines = await assertWholeLines(file);
    assert.is(lines.at(-1), JSON.stringify({ _id: "a2", name: "second", v: 2 }));
  } finally {
    await backend.close();
  }
});

failing("a failed append whose cut back fails too is cut before the next write, which is not glued to it", async () => {
  const dir = freshDir();
  const disk = faultyDisk();
  const { backend, coll } = await openItems(dir, disk);
  const file = join(dir, "items.db");
  try {
    await coll.insert({ _id: "a1", name: "first" });
    const bytes = await readFile(file, "utf8");
    disk.fail("partial-stuck", 1);
    assert.instance(await rejection(() => coll.insert({ _id: "a2", name: "second" })), StoreUnavailableError);
    assert.is(await coll.get("a2"), undefined);
    assert.ok((await readFile(file, "utf8")).length > bytes.length, "precondition: half a line is left in the file");
    // A crash now: the half line is cut at start.
    const image = await crashImage(dir);
    const { warnings, log } = logged();
    const reopened = await createEmbeddedBackend({ dataDir: image, compactionIntervalMs: 0, log });
    try {
      assert.equal(await everyItem(await reopened.collection(items)), [{ _id: "a1", name: "first" }]);
      assert.is(warnings.length, 1, JSON.stringify(warnings));
    } finally {
      await reopened.close();
    }
    // No crash: the next write cuts it first.
    await coll.insert({ _id: "a3", name: "third" });
    assert.is(await readFile(file, "utf8"), `${bytes}${JSON.stringify({ _id: "a3", name: "third" })}\n`);
  } finally {
    await backend.close();
  }
  const { backend: again, coll: reread } = await openItems(dir);
  try {
    assert.equal((await everyItem(reread)).map((d) => d._id), ["a1", "a3"]);
  } finally {
    await again.close();
  }
});

failing("ping rejects with StoreUnavailableError while writes fail and resolves once the disk takes a write again (a probe, with no write coming)", async () => {
  const dir = freshDir();
  const disk = faultyDisk();
  const { backend, coll } = await openItems(dir, disk);
  try {
    await backend.ping();
    disk.fail("refused");
    assert.instance(await rejection(() => coll.insert({ _id: "a1", name: "first" })), StoreUnavailableError);
    assert.instance(await rejection(() => backend.ping()), StoreUnavailableError);
    assert.instance(await rejection(() => backend.ping()), StoreUnavailableError, "still, while the disk fails");
    // Reads keep working from memory.
    assert.equal(await everyItem(coll), []);
    disk.heal();
    await backend.ping();
    assert.equal(await readdir(dir), ["items.db"], "the probe leaves nothing behind");
    await coll.insert({ _id: "a1", name: "first" });
  } finally {
    await backend.close();
  }
});

failing.run();

// ------------------------------------------------------------------ a full disk (tmpfs)

const TMPFS_KIB = 2048;
const tmpfs = mountTmpfs(TMPFS_KIB);
const noTmpfs = "skip" in tmpfs ? tmpfs.skip : undefined;
if (noTmpfs !== undefined) console.log(`embedded-durability: the full-disk tests are skipped: ${noTmpfs}`);

const full = suite("embedded store: a full disk (tmpfs)");

full("a write is refused with StoreUnavailableError, is not visible, leaves whole lines only; reads work; the write after space returns survives a crash", async () => {
  if ("skip" in tmpfs) return;
  const dir = join(tmpfs.dir, `store-${dirs++}`);
  const store = await createStore({ kind: "embedded", dataDir: dir });
  const file = join(dir, "systems.db");
  try {
    const seed = [system("alpha"), system("beta")];
    for (const s of seed) await store.systems.create(s);
    const bytes = await readFile(file);
    await tmpfs.fill();
    try {
      const big = system("too-big", true);
      const err = await rejection(() => store.systems.create(big));
      assert.instance(err, StoreUnavailableError, String(err));
      assert.is(await store.systems.get(big.id), undefined);
      assert.equal(await allSystems(store), seed);
      const updated = await rejection(() => store.systems.update(seed[0]!.id, { labels: system("x", true).labels }));
      assert.instance(updated, StoreUnavailableError, String(updated));
      assert.equal(await store.systems.get(seed[0]!.id), seed[0]);
      assert.equal(await readFile(file), bytes, "the file is as it was");
      assert.instance(await rejection(() => store.ping()), StoreUnavailableError);
    } finally {
      await tmpfs.free();
    }
    await store.ping();
    const after = system("after-the-disk-was-full", true);
    await store.systems.create(after);
    await assertWholeLines(file);
    const image = await crashImage(dir);
    const { warnings, log } = logged();
    const reopened = await createStore({ kind: "embedded", dataDir: image, log });
    try {
      assert.equal(await allSystems(reopened), [...seed, after]);
      assert.equal(warnings, []);
    } finally {
      await reopened.close();
    }
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});

full("/readyz: 200, then 503 while the disk is full (writes answer 503 UNAVAILABLE, reads 200, Authorize unavailable), 200 again once there is room", async () => {
  if ("skip" in tmpfs) return;
  const dir = join(tmpfs.dir, `app-${dirs++}`);
  const MASTER = "erpl_test_master_key_0123456789abcdefghijklmnop";
  const erplink = await createErplink(
    loadConfig({
      ERPLINK_DATA_DIR: dir,
      ERPLINK_MASTER_KEY: MASTER,
      ERPLINK_ENCRYPTION_KEY: "cd".repeat(32),
      LOG_LEVEL: "silent",
      ERPLINK_METRICS: "off",
    }),
  );
  const headers = { authorization: `Bearer ${MASTER}` };
  const big = system("x", true);
  const body = (name: string) => ({ name, description: big.description, labels: big.labels });
  try {
    const readyz = async () => (await erplink.app.inject({ method: "GET", url: "/readyz" })).statusCode;
    assert.is(await readyz(), 200);
    const before = await erplink.app.inject({ method: "POST", url: "/admin/systems", headers, payload: body("before") });
    assert.is(before.statusCode, 201, before.body);
    const permissions = { prod: { API_BP: { A_BusinessPartner: ["get"] } } };
    const key = await erplink.app.inject({ method: "POST", url: "/admin/api-keys", headers, payload: { name: "data key", permissions } });
    assert.is(key.statusCode, 201, key.body);
    // A data key's rate-limit window (600 a minute by default) is counted in the store, request by request.
    const authorize = () =>
      erplink.app.inject({
        method: "POST",
        url: "/erplink.authz.v1.AuthorizationService/Authorize",
        headers: { "content-type": "application/json", "connect-protocol-version": "1" },
        payload: { apiKey: JSON.parse(key.body).data.key, instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: "OPERATION_GET" },
      });
    await tmpfs.fill();
    try {
      const refused = await erplink.app.inject({ method: "POST", url: "/admin/systems", headers, payload: body("while-full") });
      assert.is(refused.statusCode, 503, refused.body);
      assert.is(JSON.parse(refused.body).error.code, "UNAVAILABLE");
      const listed = await erplink.app.inject({ method: "GET", url: "/admin/systems", headers });
      assert.is(listed.statusCode, 200, listed.body);
      assert.equal((JSON.parse(listed.body).data as { name: string }[]).map((s) => s.name), ["before"]);
      // A window's count is a small line, which may fit in what is left of its file's last block: a
      // few are counted until that is used up; then each is refused as unavailable, never an internal error.
      const answers: number[] = [];
      for (let i = 0; i < 200 && !answers.includes(503); i++) {
        const res = await authorize();
        answers.push(res.statusCode);
        if (res.statusCode === 503) assert.is(JSON.parse(res.body).code, "unavailable", res.body);
        else assert.is(res.statusCode, 200, res.body);
      }
      assert.ok(answers.includes(503), `Authorize answered ${answers.join(",")}`);
      assert.is(await readyz(), 503);
      assert.is(await readyz(), 503);
    } finally {
      await tmpfs.free();
    }
    assert.is(await readyz(), 200);
    const after = await erplink.app.inject({ method: "POST", url: "/admin/systems", headers, payload: body("after") });
    assert.is(after.statusCode, 201, after.body);
    const allowed = await authorize();
    assert.is(allowed.statusCode, 200, allowed.body);
    assert.is(JSON.parse(allowed.body).allowed, true, allowed.body);
  } finally {
    await erplink.close();
    await rm(dir, { recursive: true, force: true });
  }
});

full.run();

// ------------------------------------------------------------------ SIGKILL during writes

const killed = suite("embedded store: SIGKILL during writes");

/** A writer process (test-support/embedded-writer.ts) and what it printed. */
function startWriter(dir: string, pad: number, faults: boolean) {
  const args = ["--import", "tsx", join(REPO, "test-support/embedded-writer.ts"), dir, String(pad), ...(faults ? ["faults"] : [])];
  const child = spawn(process.execPath, args, { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  let partial = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    const text = partial + chunk.toString("utf8");
    const parts = text.split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
  return {
    lines,
    /** Resolves once `count` lines satisfy `pred`. */
    async until(what: string, pred: (line: string) => boolean, count: number, timeoutMs = 30_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (lines.filter(pred).length < count) {
        if (child.exitCode !== null) assert.unreachable(`the writer exited (${child.exitCode}) before ${what}:\n${stderr}`);
        if (Date.now() > deadline) assert.unreachable(`no ${what} within ${timeoutMs} ms:\n${lines.slice(-5).join("\n")}\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    async kill(): Promise<void> {
      child.kill("SIGKILL");
      assert.is(await exited, "SIGKILL", stderr);
    },
  };
}

/** Checks the store in `dir` against what the writer acknowledged before it was killed. */
async function assertAcknowledged(dir: string, lines: readonly string[]): Promise<{ acked: number; failed: number; deleted: number }> {
  const acked = new Set<string>();
  const deleteTried = new Set<string>();
  const deleted = new Set<string>();
  const failed = new Set<string>();
  let started: string | undefined;
  for (const line of lines) {
    const [word, a, b] = line.split(" ");
    if (word === "visible") assert.unreachable(`a refused insert was readable: ${line}`);
    if (word === "delete") deleteTried.add(a!);
    if (word === "ack" && a === "insert") acked.add(b!);
    if (word === "ack" && a === "delete") deleted.add(b!);
    if (word === "fail" && a === "insert") failed.add(b!);
  }
  const lastInsert = Math.max(-1, ...[...acked, ...failed].map((id) => Number(id.slice(4))));
  // The insert under way when the process died: acknowledged or not, it may be there.
  started = `doc-${String(lastInsert + 1).padStart(7, "0")}`;
  const { warnings, errors, log } = logged();
  const backend = await createEmbeddedBackend({ dataDir: dir, compactionIntervalMs: 0, log });
  try {
    const coll = await backend.collection({ name: "items", indexes: [] });
    const docs = await coll.list({}, { limit: 100_000 });
    const present = new Map(docs.map((d) => [d._id, d]));
    for (const id of acked) {
      if (deleted.has(id)) assert.is(present.has(id), false, `acknowledged delete of ${id} undone`);
      else if (!deleteTried.has(id)) assert.ok(present.has(id), `acknowledged insert of ${id} lost (warnings: ${JSON.stringify(warnings)})`);
    }
    for (const id of failed) assert.is(present.has(id), false, `refused insert of ${id} is there`);
    for (const [id, doc] of present) {
      assert.ok(acked.has(id) || id === started, `${id} was never written`);
      assert.is(doc.n, Number(id.slice(4)), `${id} is intact`);
    }
    assert.equal(errors, []);
  } finally {
    await backend.close();
  }
  return { acked: acked.size, failed: failed.size, deleted: deleted.size };
}

killed("with writes failing partway or at the flush (every fifth): every acknowledged write is there, every acknowledged delete stays deleted, no refused insert", async () => {
  const dir = freshDir();
  const writer = startWriter(dir, 200, true);
  await writer.until("300 acknowledged writes", (l) => l.startsWith("ack "), 300);
  await writer.kill();
  const counts = await assertAcknowledged(dir, writer.lines);
  assert.ok(counts.failed >= 20 && counts.deleted >= 50, JSON.stringify(counts));
});

killed("through a full disk (tmpfs): every acknowledged write is there, every acknowledged delete stays deleted, no refused insert", async () => {
  if ("skip" in tmpfs) return;
  const dir = join(tmpfs.dir, `writer-${dirs++}`);
  // 1500-byte documents: a full disk refuses them within a few writes.
  const writer = startWriter(dir, 1500, false);
  try {
    await writer.until("40 acknowledged writes", (l) => l.startsWith("ack "), 40);
    await tmpfs.fill();
    try {
      await writer.until("5 refused inserts", (l) => l.startsWith("fail insert"), 5);
    } finally {
      await tmpfs.free();
    }
    const acks = writer.lines.filter((l) => l.startsWith("ack ")).length;
    await writer.until("40 writes acknowledged after the disk had room again", (l) => l.startsWith("ack "), acks + 40);
    await writer.kill();
    const counts = await assertAcknowledged(dir, writer.lines);
    assert.ok(counts.failed >= 5, JSON.stringify(counts));
  } finally {
    await writer.kill().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});

killed.run();
