/**
 * Builds a fresh erplink world for one test file: a store (embedded in
 * memory, or a throwaway MongoDB database when ERPLINK_TEST_MONGODB_URL is
 * set), the services, and the gateway for `inject()`. Lives outside test/
 * because uvu runs every file there.
 */
import { randomBytes } from "node:crypto";
import { createClient, createRouterTransport, type Client, type Transport } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import type { FastifyInstance } from "fastify";
import { MongoClient } from "mongodb";
import { createGateway } from "../src/gateway/app.js";
import { createDualProtocolServer } from "../src/gateway/server.js";
import { createServiceLayer, type ServiceLayer } from "../src/services/layer.js";
import type { Limits } from "../src/services/rate-limiter.js";
import { createStore, type Store } from "../src/store/index.js";

/** The master key every test world uses. */
export const MASTER_KEY = "erpl_test_master_key_0123456789abcdefghijklmnop";
/** The key back-end credentials are sealed with in test worlds. */
export const ENCRYPTION_KEY = Buffer.alloc(32, 7);
/** Authorization header with the master key. */
export const AUTH = { authorization: `Bearer ${MASTER_KEY}` } as const;

/** The MongoDB server tests run against, if any (set by scripts/test.ts). */
export function testMongoUrl(): string | undefined {
  return process.env.ERPLINK_TEST_MONGODB_URL || undefined;
}

/** A MongoDB URL naming a fresh database on the test server. */
export function freshMongoUrl(base: string): string {
  const u = new URL(base);
  u.pathname = `/erplink_test_${randomBytes(6).toString("hex")}`;
  return u.toString();
}

/** Drops the database a URL names. */
export async function dropMongoDatabase(url: string): Promise<void> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
  try {
    await client.connect();
    await client.db().dropDatabase();
  } finally {
    await client.close();
  }
}

/** Opens the store tests run on: MongoDB when configured, else embedded in memory. */
export async function openTestStore(): Promise<Store & { readonly dispose: () => Promise<void> }> {
  const base = testMongoUrl();
  if (base === undefined) {
    const store = await createStore({ kind: "embedded", dataDir: ":memory:" });
    return Object.assign(store, { dispose: () => store.close() });
  }
  const url = freshMongoUrl(base);
  const store = await createStore({ kind: "mongodb", url, serverSelectionTimeoutMs: 5000 });
  return Object.assign(store, {
    dispose: async () => {
      await store.close();
      await dropMongoDatabase(url);
    },
  });
}

/** A world for one test file. */
export interface World {
  readonly store: Store;
  readonly layer: ServiceLayer;
  readonly transport: Transport;
  readonly app: FastifyInstance;
  /** A typed Connect client of a service, authenticated as the master key. */
  client<S extends DescService>(service: S): Client<S>;
  /** The time the world's clock reads; tests may move it. */
  now: Date;
  close(): Promise<void>;
}

/** Options of {@link createWorld}. */
export interface WorldOptions {
  readonly adminLimits?: Limits;
  /** Each session's admin budget (apart from its key's). */
  readonly adminSessionLimits?: Limits;
  readonly dataLimits?: Limits;
  readonly upstreamTimeoutMs?: number;
  /** `ERPLINK_UPSTREAM_CONNECTIONS`: most requests in flight to one instance's back end. */
  readonly upstreamConnections?: number;
  /** `ERPLINK_PUBLIC_URL`: the base URL clients use. */
  readonly publicUrl?: string;
  /** `ERPLINK_CORS_ORIGINS`: origins allowed to call the RPC endpoints from browsers. */
  readonly corsOrigins?: readonly string[];
  /** Replaces the store check behind `/readyz` and gRPC health (to simulate an unreachable store). */
  readonly ready?: () => Promise<void>;
  /** How often gRPC health Watch streams re-check the store (ms). */
  readonly healthWatchIntervalMs?: number;
  /** `ERPLINK_EXT_AUTHZ_TOKEN`: lets Envoy's Check inject back-end credentials. */
  readonly extAuthzToken?: string;
  /** Listen (when the test calls `app.listen`) on the one-port server, so that gRPC clients (h2c) reach it too. */
  readonly dualProtocol?: boolean;
}

/** Builds a world. Errors the services mask are collected in `errors`. */
export async function createWorld(options: WorldOptions = {}): Promise<World & { readonly errors: unknown[] }> {
  const store = await openTestStore();
  const errors: unknown[] = [];
  const world = {
    now: new Date("2026-01-02T03:04:05.000Z"),
  } as World & { errors: unknown[] };
  const clock = () => new Date(world.now.getTime());
  const layer = createServiceLayer(store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: options.adminLimits ?? { perMinute: 100_000, perDay: 1_000_000 },
    adminSessionLimits: options.adminSessionLimits ?? { perMinute: 100_000, perDay: 1_000_000 },
    dataLimits: options.dataLimits ?? { perMinute: 100_000, perDay: 1_000_000 },
    logRetentionMs: 30 * 86_400_000,
    clock,
    log: { error: (fields) => errors.push(fields.err) },
  });
  const transport = createRouterTransport(layer.routes, { router: { interceptors: [...layer.inProcessInterceptors] } });
  const app = await createGateway({
    transport,
    connect: { routes: layer.routes, interceptors: layer.publicInterceptors },
    admit: (a) => layer.admitRest(a),
    record: (entry) => layer.logWriter.record(entry),
    data: layer.dataPlane,
    upstreamTimeoutMs: options.upstreamTimeoutMs ?? 2_000,
    ...(options.upstreamConnections !== undefined ? { upstreamConnections: options.upstreamConnections } : {}),
    bindDiagnostics: (port) => layer.bindDiagnostics(port),
    ready: () => store.ping(),
    logger: false,
    bodyLimit: 1024 * 1024,
    clock,
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
    ...(options.ready !== undefined ? { ready: options.ready } : {}),
    corsOrigins: options.corsOrigins,
    healthWatchIntervalMs: options.healthWatchIntervalMs,
    ...(options.extAuthzToken !== undefined ? { extAuthz: { injectionToken: options.extAuthzToken } } : {}),
    ...(options.dualProtocol === true
      ? { serverFactory: (handler) => createDualProtocolServer(handler, { firstByteTimeoutMs: 5_000, keepAliveTimeoutMs: 5_000, http2SessionTimeoutMs: 5_000 }) }
      : {}),
  });
  // Clients of the public router: authenticated with the master key and
  // counted, as a remote gRPC caller would be.
  const authed = createRouterTransport(layer.routes, {
    router: { interceptors: [...layer.publicInterceptors] },
    transport: { interceptors: [(next) => (req) => (req.header.set("authorization", AUTH.authorization), next(req))] },
  });
  return Object.assign(world, {
    store,
    layer,
    transport,
    app,
    errors,
    client: <S extends DescService>(service: S) => createClient(service, authed),
    close: async () => {
      await app.close();
      await layer.stop();
      await store.dispose();
    },
  });
}
