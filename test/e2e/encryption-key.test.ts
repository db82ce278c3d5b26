/**
 * The embedded store's encryption key: generated once into the data dir,
 * reused on the next start, and never silently replaced while sealed
 * credentials depend on it.
 */
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createErplink } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { openBackendAuth } from "../../src/services/backend-auth.js";
import { createSecretBox } from "../../src/services/secret-box.js";

const Key = suite("encryption key in the data dir");
const MASTER = "erpl_test_master_key_0123456789abcdefghijklmnop";
const silent = () => new Writable({ write: (_c, _e, done) => done() });

async function start(dataDir: string) {
  return createErplink(loadConfig({ ERPLINK_DATA_DIR: dataDir, ERPLINK_MASTER_KEY: MASTER, LOG_LEVEL: "silent" }), {
    logDestination: silent(),
  });
}

Key("generated once (0600), reused after a restart, and refused when lost while credentials need it", async () => {
  const dir = await mkdtemp(join(tmpdir(), "erplink-key-"));
  try {
    const first = await start(dir);
    const file = join(dir, "encryption.key");
    assert.is((await stat(file)).mode & 0o777, 0o600);
    const keyHex = (await readFile(file, "utf8")).trim();
    assert.match(keyHex, /^[0-9a-f]{64}$/);
    const auth = { authorization: `Bearer ${MASTER}`, "content-type": "application/json" };
    const sys = JSON.parse((await first.app.inject({ method: "POST", url: "/admin/systems", headers: auth, payload: { name: "S" } })).body).data;
    const ins = await first.app.inject({
      method: "POST",
      url: `/admin/systems/${sys.id}/instances`,
      headers: auth,
      payload: { name: "prod", base_url: "https://erp.example.com/", auth: { type: "basic", username: "u", password: "pw" } },
    });
    assert.is(ins.statusCode, 201);
    const insId = JSON.parse(ins.body).data.id;
    await first.close();

    const second = await start(dir);
    assert.is((await readFile(file, "utf8")).trim(), keyHex, "the same key is reused");
    const rec = await second.store.instances.get(insId);
    assert.is(openBackendAuth(rec!.auth!, insId, createSecretBox(Buffer.from(keyHex, "hex"))).password, "pw");
    await second.close();

    await rm(file);
    try {
      const third = await start(dir);
      await third.close();
      assert.unreachable("started without the key its credentials need");
    } catch (err) {
      assert.match(String(err), /encryption\.key is missing but the store holds sealed back-end credentials/);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

Key.run();
