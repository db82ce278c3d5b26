/**
 * Store faults seen through the REST facade: an unreachable store is 503
 * UNAVAILABLE (and /readyz says so), an unexpected error is a masked 500;
 * neither leaks driver messages or stack traces. The embedded request log's
 * worker thread that cannot be started again is an unavailable store too.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { StoreUnavailableError } from "../../src/store/index.js";
import { openRequestLogWorker } from "../../src/store/request-log-worker.js";
import { AUTH, createWorld } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";

type Ctx = { world: Awaited<ReturnType<typeof createWorld>> };
const Faults = suite<Ctx>("store faults");

Faults.before.each(async (ctx) => {
  ctx.world = await createWorld();
});
Faults.after.each(async (ctx) => {
  await ctx.world.close();
});

const DRIVER_MESSAGE = "connect ECONNREFUSED mongodb://admin:hunter2@db.internal:27017";

Faults("an unreachable store is 503 UNAVAILABLE in the envelope, and /readyz is 503", async ({ world }) => {
  world.store.systems.list = async () => {
    throw new StoreUnavailableError({ cause: new Error(DRIVER_MESSAGE) });
  };
  world.store.ping = async () => {
    throw new StoreUnavailableError({ cause: new Error(DRIVER_MESSAGE) });
  };
  const res = await world.app.inject({ method: "GET", url: "/admin/systems", headers: AUTH });
  assert.is(res.statusCode, 503);
  assert.equal(json(res), {
    error: { code: "UNAVAILABLE", message: "the store is unavailable; try again later", requestId: res.headers["x-request-id"] },
  });
  const ready = await world.app.inject({ method: "GET", url: "/readyz" });
  assert.is(ready.statusCode, 503);
  assert.equal(json(ready), {
    error: { code: "UNAVAILABLE", message: "the store is unavailable", requestId: ready.headers["x-request-id"] },
  });
  const health = await world.app.inject({ method: "GET", url: "/healthz" });
  assert.is(health.statusCode, 200);
  assert.not.match(res.body + ready.body, /hunter2|ECONNREFUSED/);
});

Faults("an unexpected store error is a masked 500; the cause is logged, not sent", async ({ world }) => {
  const cause = new TypeError(`boom: ${DRIVER_MESSAGE}`);
  world.store.systems.create = async () => {
    throw cause;
  };
  const res = await post(world.app, "/admin/systems", { name: "n" });
  assert.is(res.statusCode, 500);
  assert.equal(json(res), {
    error: { code: "INTERNAL", message: "internal error", requestId: res.headers["x-request-id"] },
  });
  assert.not.match(res.body, /hunter2|boom|TypeError|at /);
  assert.equal(world.errors, [cause]);
});

Faults("the request log's worker thread that cannot be started again: GET /admin/logs is 503 UNAVAILABLE, no path or errno sent", async ({ world }) => {
  const root = await mkdtemp(join(tmpdir(), "erplink-faults-"));
  const dir = join(root, "data");
  const worker = await openRequestLogWorker({ dataDir: dir });
  try {
    await (worker as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await rm(dir, { recursive: true });
    await writeFile(dir, "not a directory");
    // The world's log, answering from the worker.
    world.store.logs.query = (q) => worker.query(q);
    const res = await world.app.inject({ method: "GET", url: "/admin/logs", headers: AUTH });
    assert.is(res.statusCode, 503, res.body);
    assert.equal(json(res), {
      error: { code: "UNAVAILABLE", message: "the store is unavailable; try again later", requestId: res.headers["x-request-id"] },
    });
    assert.not.match(res.body, /EEXIST|mkdir|erplink-faults/);
    assert.equal(world.errors, []);
  } finally {
    await worker.close();
    await rm(root, { recursive: true, force: true });
  }
});

Faults.run();
