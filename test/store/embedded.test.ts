/**
 * The embedded adapter on disk: what survives a close and a reopen, the
 * files it keeps, and the store contract on a file-backed store.
 */
import { rmSync } from "node:fs";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import {
  createStore,
  DuplicateKeyError,
  type InstanceRecord,
  type LogQuery,
  type Store,
  type SystemRecord,
} from "../../src/store/index.js";
import { storeContract } from "../../test-support/store-contract.js";
import { rejection } from "../../test-support/store-contract.js";

// Every directory this file creates lives under one root, removed on exit even if a test fails midway.
const root = await mkdtemp(join(tmpdir(), "erplink-embedded-test-"));
process.on("exit", () => rmSync(root, { recursive: true, force: true }));

const T0 = new Date("2026-01-02T03:04:05.678Z");
const T1 = new Date("2026-01-02T03:04:06.789Z");

function openAt(dataDir: string): Promise<Store> {
  return createStore({ kind: "embedded", dataDir });
}

function assertDuplicate(err: unknown, collection: string, field: string): void {
  assert.instance(err, DuplicateKeyError);
  const dup = err as DuplicateKeyError;
  assert.equal({ collection: dup.collection, field: dup.field }, { collection, field });
}

/** Two systems and three instances, with ids in ascending order. */
function fixture() {
  const newId = createIdGenerator(() => T0);
  const [s1, s2] = [newId("sys"), newId("sys")];
  const systems: SystemRecord[] = [
    {
      id: s1,
      name: "S/4HANA Finance",
      description: "",
      labels: { "app.kubernetes.io/name": "s4", "team.example.com/owner": "fin" },
      createdAt: T0,
      updatedAt: T0,
    },
    { id: s2, name: "ECC Logistics", description: "legacy", labels: {}, createdAt: T0, updatedAt: T1 },
  ];
  const instances: InstanceRecord[] = ["Prod", "prod", "qa"].map((name, i) => ({
    id: newId("ins"),
    systemId: i < 2 ? s1 : s2,
    name,
    environment: i === 0 ? "production" : "",
    baseUrl: `https://${name.toLowerCase()}-${i}.example.com/odata/`,
    services: {},
    createdAt: T0,
    updatedAt: T1,
  }));
  return { systems, instances };
}

async function seed(store: Store, data: ReturnType<typeof fixture>): Promise<void> {
  for (const s of data.systems) await store.systems.create(s);
  for (const i of data.instances) await store.instances.create(i);
}

async function listAll(store: Store): Promise<{ systems: SystemRecord[]; instances: InstanceRecord[] }> {
  const systems = await store.systems.list({ limit: 100 });
  const instances = await store.instances.list({ limit: 100 });
  assert.is(systems.more || instances.more, false);
  return { systems: systems.items, instances: instances.items };
}

const persistence = suite<{ dir: string }>("embedded store: file-backed persistence", { dir: "" });

persistence.before.each(async (ctx) => {
  ctx.dir = await mkdtemp(join(root, "data-"));
});
persistence.after.each(async (ctx) => {
  await rm(ctx.dir, { recursive: true, force: true });
});

persistence("creates, updates and deletes survive close and reopen, with Dates and labels intact", async ({ dir }) => {
  const data = fixture();
  const first = await openAt(dir);
  await seed(first, data);
  const relabelled: SystemRecord = {
    ...data.systems[1],
    description: "moved to S/4",
    labels: { "app.kubernetes.io/part-of": "erp" },
    updatedAt: new Date("2026-05-06T07:08:09.012Z"),
  };
  await first.systems.update(relabelled.id, {
    description: relabelled.description,
    labels: relabelled.labels,
    updatedAt: relabelled.updatedAt,
  });
  await first.instances.delete(data.instances[1].id);
  await first.close();

  const second = await openAt(dir);
  try {
    assert.equal(await listAll(second), {
      systems: [data.systems[0], relabelled],
      instances: [data.instances[0], data.instances[2]],
    });
    const got = await second.systems.get(data.systems[0].id);
    assert.instance(got?.createdAt, Date);
    assert.is(got?.createdAt.toISOString(), "2026-01-02T03:04:05.678Z");
    assert.equal(await second.instances.getByName("Prod"), data.instances[0]);
    assert.is(await second.instances.getByName("prod"), undefined);
    const [s1, s2] = data.systems.map((s) => s.id);
    assert.equal([await second.instances.countBySystem(s1), await second.instances.countBySystem(s2)], [1, 1]);
  } finally {
    await second.close();
  }
});

persistence("unique constraints still hold after reopen; refused writes are not persisted", async ({ dir }) => {
  const data = fixture();
  const first = await openAt(dir);
  await seed(first, data);
  await first.close();

  const newId = createIdGenerator(() => T1);
  const second = await openAt(dir);
  try {
    const sysId = newId("sys");
    const [sys, ins] = [data.systems[0], data.instances[2]];
    const sameName = await rejection(() => second.systems.create({ ...sys, id: sysId, description: "dup" }));
    assertDuplicate(sameName, "systems", "name");
    const sameId = await rejection(() => second.systems.create({ ...sys, name: "fresh name" }));
    assertDuplicate(sameId, "systems", "id");
    const sameInstance = await rejection(() => second.instances.create({ ...ins, id: newId("ins"), systemId: sys.id }));
    assertDuplicate(sameInstance, "instances", "name");
    const renamed = await rejection(() => second.systems.update(data.systems[1].id, { name: sys.name }));
    assertDuplicate(renamed, "systems", "name");
  } finally {
    await second.close();
  }

  const third = await openAt(dir);
  try {
    assert.equal(await listAll(third), data);
  } finally {
    await third.close();
  }
});

persistence("a name freed by a delete can be taken again after reopen", async ({ dir }) => {
  const data = fixture();
  const first = await openAt(dir);
  await seed(first, data);
  await first.instances.delete(data.instances[0].id);
  await first.close();

  const second = await openAt(dir);
  try {
    const id = createIdGenerator(() => T1)("ins");
    const again: InstanceRecord = { ...data.instances[0], id, systemId: data.systems[1].id };
    assert.equal(await second.instances.create(again), again);
    assert.equal(await second.instances.getByName("Prod"), again);
  } finally {
    await second.close();
  }
});

persistence("creates a missing data directory and keeps one file per collection", async ({ dir }) => {
  const dataDir = join(dir, "nested", "data");
  const store = await openAt(dataDir);
  await seed(store, fixture());
  await store.close();
  assert.equal((await readdir(dataDir)).sort(), [
    "api_keys.db",
    "audit_entries.db",
    "instances.db",
    "rate_windows.db",
    "request_logs.jsonl",
    "sessions.db",
    "system_deletions.db",
    "systems.db",
    "usage_days.db",
    "usage_hour_groups.db",
    "usage_hours.db",
  ]);
});

persistence("close compacts the data file to one line per live document", async ({ dir }) => {
  const data = fixture();
  const store = await openAt(dir);
  await seed(store, data);
  for (const description of ["one", "two", "three"]) await store.systems.update(data.systems[0].id, { description });
  await store.systems.delete(data.systems[1].id);
  await store.close();

  const lines = (await readFile(join(dir, "systems.db"), "utf8")).split("\n").filter((l) => l !== "");
  const docs = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((d) => "_id" in d);
  assert.equal(
    docs.map((d) => [d._id, d.description]),
    [[data.systems[0].id, "three"]],
  );
});

/** The indexes a nedb data file declares (`$$indexCreated` lines), by field. */
async function declaredIndexes(file: string): Promise<string[]> {
  const lines = (await readFile(file, "utf8")).split("\n").filter((l) => l !== "");
  return lines
    .map((l) => JSON.parse(l) as { $$indexCreated?: { fieldName: string } })
    .flatMap((d) => (d.$$indexCreated === undefined ? [] : [d.$$indexCreated.fieldName]))
    .sort();
}

persistence("request_logs: an earlier release's nedb file (six indexes) is moved into request_logs.jsonl at open and removed; filters on every field match", async ({ dir }) => {
  const id = createIdGenerator(() => T0)("log");
  const index = (fieldName: string) => JSON.stringify({ $$indexCreated: { fieldName, unique: false, sparse: false } });
  // Unexpired when the store opens (entries expired by then are not moved).
  const expiresAt = Date.now() + 86_400_000;
  const doc = {
    _id: id,
    requestId: "req-old",
    timestamp: { $$date: T0.getTime() },
    apiKeyId: "key_01KA0000000000000000000000",
    sessionId: "",
    method: "GET",
    path: "/admin/systems",
    status: 200,
    durationMs: 1,
    instance: "prod",
    service: "",
    accesses: [],
    accessKeys: [],
    denialStep: "",
    errorCode: "",
    errorMessage: "",
    upstreamStatus: 0,
    upstreamDurationMs: 0,
    clientIp: "127.0.0.1",
    userAgent: "ua",
    upstreamMethod: "",
    upstreamUrl: "",
    expiresAt: { $$date: expiresAt },
  };
  const fields = ["timestamp", "apiKeyId", "instance", "requestId", "status", "expiresAt"];
  await writeFile(join(dir, "request_logs.db"), [JSON.stringify(doc), ...fields.map(index)].join("\n") + "\n");
  assert.equal(await declaredIndexes(join(dir, "request_logs.db")), [...fields].sort(), "precondition");
  const store = await openAt(dir);
  try {
    const match = async (q: Omit<LogQuery, "limit">) => (await store.logs.query({ limit: 10, ...q })).items.map((r) => r.requestId);
    assert.equal(
      await match({ apiKeyId: doc.apiKeyId, instance: "prod", status: { gte: 200, lt: 300 }, requestId: "req-old", from: T0, to: T1 }),
      ["req-old"],
    );
    assert.equal(await match({ instance: "dev" }), []);
    assert.equal(await match({ requestId: "req-new" }), []);
    assert.equal((await store.logs.get(id))?.expiresAt, new Date(expiresAt));
  } finally {
    await store.close();
  }
  const files = await readdir(dir);
  assert.ok(files.includes("request_logs.jsonl") && !files.includes("request_logs.db"), files.join(", "));
});

persistence.run();

storeContract("embedded (file-backed)", async () => {
  const dir = await mkdtemp(join(root, "contract-"));
  const store = await openAt(dir);
  return Object.assign(store, {
    dispose: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  });
});
