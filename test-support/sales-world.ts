/**
 * A test world with one instance `prod` whose service `SALES` is a small
 * upstream serving the V4 fixture `$metadata` (test-support/odata/fixtures.ts)
 * and answering `{"value":[]}` to everything else, and data keys named by
 * the caller, each with its permissions on `prod/SALES`.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import * as assert from "uvu/assert";
import { json, post } from "./http.js";
import { V4_METADATA } from "./odata/fixtures.js";
import { createWorld, type World } from "./world.js";

export interface SalesWorld {
  world: World;
  upstream: http.Server;
  /** Requests the upstream received (`METHOD target`), `$metadata` fetches left out. */
  seen: string[];
  /** Key name -> secret. */
  keys: Record<string, string>;
}

/** Starts the world; `keys` maps each key's name to its permissions on `prod/SALES`. */
export async function startSalesWorld(keys: Record<string, Record<string, string[]>>): Promise<SalesWorld> {
  const seen: string[] = [];
  const upstream = http.createServer(async (req, res) => {
    for await (const _ of req);
    if (req.url?.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      return;
    }
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "application/json" }).end('{"value":[]}');
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/erp/`;
  const world = await createWorld();
  const app = world.app;
  const sys = json(await post(app, "/admin/systems", { name: "S4" })).data.id;
  assert.is((await post(app, `/admin/systems/${sys}/instances`, { name: "prod", base_url: base })).statusCode, 201);
  const secrets: Record<string, string> = {};
  for (const [name, sales] of Object.entries(keys)) {
    const res = await post(app, "/admin/api-keys", { name, permissions: { prod: { SALES: sales } } });
    assert.is(res.statusCode, 201, res.body);
    secrets[name] = json(res).data.key;
  }
  return { world, upstream, seen, keys: secrets };
}

/**
 * On a running world: the system `S4`, its instance `prod` at `base` (an
 * upstream's `/odata/` root) with the service `SALES` at `sap/sales/0001`
 * and basic credentials, and the data key `app` with `sales` as its
 * permissions on `prod/SALES`. Returns the key's secret.
 */
export async function addProdSales(app: World["app"], base: string, sales: Record<string, string[]>): Promise<string> {
  const sys = json(await post(app, "/admin/systems", { name: "S4" })).data.id;
  const ins = await post(app, `/admin/systems/${sys}/instances`, {
    name: "prod",
    base_url: base,
    services: { SALES: { path: "sap/sales/0001" } },
    auth: { type: "basic", username: "erp-user", password: "erp-pass" },
  });
  assert.is(ins.statusCode, 201, ins.body);
  return json(await post(app, "/admin/api-keys", { name: "app", permissions: { prod: { SALES: sales } } })).data.key;
}

export async function stopSalesWorld(w: SalesWorld): Promise<void> {
  await w.world.close();
  w.upstream.closeAllConnections();
  await new Promise<void>((r) => w.upstream.close(() => r()));
}
