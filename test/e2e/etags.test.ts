/**
 * Etags over the RPC protocols, on a real port: gRPC (@grpc/grpc-js, and
 * connect-node's gRPC transport) and Connect, for systems, instances and
 * API keys. A stale or malformed etag on an update or a delete fails with
 * `aborted` (its `erplink-etag-mismatch` metadata holding the etag now) and
 * changes nothing (the resource and the audit trail stay as they were); the
 * current etag and an empty one succeed, each change making a new etag.
 */
import { create, type DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { Http2SessionManager, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type * as grpc from "@grpc/grpc-js";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiKeyService } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { AuditService } from "../../src/gen/erplink/admin/v1/audit_pb.js";
import { InstanceService } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { createGrpcJsClient, startErplink, type RunningErplink } from "../../test-support/e2e.js";

/** Clients of one protocol. */
interface Clients {
  systems: Client<typeof SystemService>;
  instances: Client<typeof InstanceService>;
  keys: Client<typeof ApiKeyService>;
  audit: Client<typeof AuditService>;
}

/** A grpc-js client behind the Connect client's shape, its errors as ConnectErrors. */
function grpcJsClient<S extends DescService>(service: S, server: RunningErplink, closers: (() => void)[]): Client<S> {
  const grpcJs = createGrpcJsClient(service, server.address);
  closers.push(() => grpcJs.close());
  const client: Record<string, unknown> = {};
  for (const method of service.methods) {
    client[method.localName] = async (init: unknown) => {
      const call = (grpcJs.call as unknown as Record<string, (req: unknown, md: Record<string, string>) => Promise<unknown>>)[method.localName]!;
      try {
        return await call(create(method.input, init as Record<string, unknown>), { authorization: server.authorization });
      } catch (err) {
        const e = err as grpc.ServiceError;
        const metadata = new Headers();
        for (const [key, value] of Object.entries(e.metadata?.getMap() ?? {})) metadata.set(key, String(value));
        // grpc-js percent-decodes grpc-message with decodeURI, which leaves `,` and `:` (%2C, %3A) as
        // connect-es encodes them; the gRPC spec says percent-decode: done here.
        throw new ConnectError(decodeURIComponent(e.details), e.code as number as Code, metadata);
      }
    };
  }
  return client as Client<S>;
}

const PROTOCOLS: readonly { name: string; clients(server: RunningErplink, closers: (() => void)[]): Clients }[] = [
  {
    name: "gRPC (grpc-js)",
    clients: (server, closers) => ({
      systems: grpcJsClient(SystemService, server, closers),
      instances: grpcJsClient(InstanceService, server, closers),
      keys: grpcJsClient(ApiKeyService, server, closers),
      audit: grpcJsClient(AuditService, server, closers),
    }),
  },
  {
    name: "gRPC (connect-node)",
    clients: (server, closers) => {
      const sessions = new Http2SessionManager(server.baseUrl);
      closers.push(() => sessions.abort());
      const transport = createGrpcTransport({
        baseUrl: server.baseUrl,
        sessionManager: sessions,
        interceptors: [(next) => (req) => (req.header.set("authorization", server.authorization), next(req))],
      });
      return {
        systems: createClient(SystemService, transport),
        instances: createClient(InstanceService, transport),
        keys: createClient(ApiKeyService, transport),
        audit: createClient(AuditService, transport),
      };
    },
  },
  {
    name: "Connect",
    clients: (server) => {
      const transport = createConnectTransport({
        baseUrl: server.baseUrl,
        httpVersion: "1.1",
        interceptors: [(next) => (req) => (req.header.set("authorization", server.authorization), next(req))],
      });
      return {
        systems: createClient(SystemService, transport),
        instances: createClient(InstanceService, transport),
        keys: createClient(ApiKeyService, transport),
        audit: createClient(AuditService, transport),
      };
    },
  },
];

/** One kind of resource, through the clients: what a test needs of it. */
interface Kind {
  readonly singular: string;
  create(c: Clients, n: number): Promise<{ id: string; etag: string }>;
  /** The resource's etag and the value of the field `update` sets. */
  read(c: Clients, id: string): Promise<{ etag: string; value: string }>;
  update(c: Clients, id: string, value: string, etag: string): Promise<{ etag: string }>;
  remove(c: Clients, id: string, etag: string): Promise<{ etag: string }>;
  /** Whether the resource is gone (deleted, or revoked). */
  gone(c: Clients, id: string): Promise<boolean>;
}

async function notFound(p: Promise<unknown>): Promise<boolean> {
  try {
    await p;
    return false;
  } catch (err) {
    return err instanceof ConnectError && err.code === Code.NotFound;
  }
}

const KINDS: readonly Kind[] = [
  {
    singular: "system",
    async create(c, n) {
      const { system } = await c.systems.createSystem({ system: { name: `erp-${n}` } });
      return { id: system!.id, etag: system!.etag };
    },
    async read(c, id) {
      const { system } = await c.systems.getSystem({ id });
      return { etag: system!.etag, value: system!.description };
    },
    async update(c, id, value, etag) {
      const { system } = await c.systems.updateSystem({ system: { id, description: value, etag }, updateMask: { paths: ["description"] } });
      return { etag: system!.etag };
    },
    async remove(c, id, etag) {
      const { system } = await c.systems.deleteSystem({ id, etag });
      return { etag: system!.etag };
    },
    gone: (c, id) => notFound(c.systems.getSystem({ id })),
  },
  {
    singular: "instance",
    async create(c, n) {
      const { system } = await c.systems.createSystem({ system: { name: `erp-of-instance-${n}` } });
      const { instance } = await c.instances.createInstance({
        systemId: system!.id,
        instance: { name: `prod-${n}`, baseUrl: "https://erp.example.com/odata/" },
      });
      return { id: instance!.id, etag: instance!.etag };
    },
    async read(c, id) {
      const { instance } = await c.instances.getInstance({ id });
      return { etag: instance!.etag, value: instance!.environment };
    },
    async update(c, id, value, etag) {
      const { instance } = await c.instances.updateInstance({ instance: { id, environment: value, etag }, updateMask: { paths: ["environment"] } });
      return { etag: instance!.etag };
    },
    async remove(c, id, etag) {
      const { instance } = await c.instances.deleteInstance({ id, etag });
      return { etag: instance!.etag };
    },
    gone: (c, id) => notFound(c.instances.getInstance({ id })),
  },
  {
    singular: "API key",
    async create(c, n) {
      const { apiKey } = await c.keys.createApiKey({ apiKey: { name: `app-${n}` } });
      return { id: apiKey!.id, etag: apiKey!.etag };
    },
    async read(c, id) {
      const { apiKey } = await c.keys.getApiKey({ id });
      return { etag: apiKey!.etag, value: apiKey!.name };
    },
    async update(c, id, value, etag) {
      const { apiKey } = await c.keys.updateApiKey({ apiKey: { id, name: value, etag }, updateMask: { paths: ["name"] } });
      return { etag: apiKey!.etag };
    },
    async remove(c, id, etag) {
      const { apiKey } = await c.keys.deleteApiKey({ id, etag });
      return { etag: apiKey!.etag };
    },
    gone: (c, id) => notFound(c.keys.getApiKey({ id })),
  },
];

/** Awaits a call that must fail with `aborted` for a stale etag, and checks its message and metadata. */
async function assertStale(p: Promise<unknown>, singular: string, given: string, now: string): Promise<void> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  assert.instance(caught, ConnectError, "the call fails");
  const err = caught as ConnectError;
  assert.equal(
    { code: Code[err.code], message: err.rawMessage, now: err.metadata.get("erplink-etag-mismatch") },
    { code: Code[Code.Aborted], message: `the ${singular} changed since it was read (etag ${given}, now ${now}): read it again and retry`, now },
  );
}

async function auditCount(c: Clients): Promise<number> {
  return (await c.audit.listAuditEntries({ pageSize: 500 })).auditEntries.length;
}

const test = suite<{ server: RunningErplink; closers: (() => void)[] }>("e2e: etags over gRPC and Connect");

test.before(async (ctx) => {
  // Each test makes some twenty admin calls: more than the default minute's budget in all.
  ctx.server = await startErplink({ ERPLINK_ADMIN_RATE_PER_MINUTE: "10000" });
  ctx.closers = [];
});

test.after(async (ctx) => {
  for (const close of ctx.closers ?? []) close();
  await ctx.server?.close();
});

let n = 0;
for (const protocol of PROTOCOLS) {
  for (const kind of KINDS) {
    test(`${protocol.name}, ${kind.singular}: a stale or malformed etag on update and delete is aborted and changes nothing; the current etag and none succeed with a new etag`, async (ctx) => {
      const c = protocol.clients(ctx.server, ctx.closers);
      const { id, etag: created } = await kind.create(c, ++n);
      assert.is(created, '"1"');
      assert.equal((await kind.update(c, id, "first", "")).etag, '"2"', "no etag: unconditional, a new etag");
      const before = await kind.read(c, id);
      assert.equal(before, { etag: '"2"', value: "first" });
      const audit = await auditCount(c);

      await assertStale(kind.update(c, id, "stale", created), kind.singular, '"1"', '"2"');
      await assertStale(kind.update(c, id, "malformed", "2"), kind.singular, "2 (not an etag erplink gave)", '"2"');
      await assertStale(kind.remove(c, id, created), kind.singular, '"1"', '"2"');
      assert.equal(await kind.read(c, id), before, "nothing changed");
      assert.is(await auditCount(c), audit, "nothing recorded");

      assert.equal((await kind.update(c, id, "second", before.etag)).etag, '"3"', "the current etag: applied");
      assert.equal(await kind.read(c, id), { etag: '"3"', value: "second" });
      assert.equal((await kind.remove(c, id, '"3"')).etag, '"3"', "deleted as it was");
      assert.ok(await kind.gone(c, id), "deleted");
    });
  }
}

test.run();
