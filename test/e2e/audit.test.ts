/**
 * The audit trail end to end over a real port: writes over REST (HTTP/1.1,
 * the master key) and over gRPC (@grpc/grpc-js, h2c, an admin key) are each
 * recorded with their actor; REST and gRPC read the same trail; neither
 * answer holds a secret; and the trail survives a restart on the same store
 * (an embedded store on disk, or a fresh MongoDB database when
 * ERPLINK_TEST_MONGODB_URL is set).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toJson } from "@bufbuild/protobuf";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import * as grpc from "@grpc/grpc-js";
import {
  ApiKeyService,
  ApiKeyType,
  CreateApiKeyRequestSchema,
  DeleteApiKeyRequestSchema,
  UpdateApiKeyRequestSchema,
} from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import {
  AuditEntrySchema,
  AuditService,
  GetAuditEntryRequestSchema,
  ListAuditEntriesRequestSchema,
} from "../../src/gen/erplink/admin/v1/audit_pb.js";
import { BackendAuthType, InstanceService, UpdateInstanceRequestSchema } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { createGrpcJsClient, grpcError, httpRequest, startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { dropMongoDatabase, freshMongoUrl, testMongoUrl } from "../../test-support/world.js";

interface Ctx {
  env: Record<string, string>;
  dir?: string;
  mongoUrl?: string;
  running?: RunningErplink;
}

const E2e = suite<Ctx>("audit trail end to end");

E2e.before.each(async (ctx) => {
  const base = testMongoUrl();
  if (base === undefined) {
    ctx.dir = await mkdtemp(join(tmpdir(), "erplink-audit-"));
    ctx.env = { ERPLINK_DATA_DIR: ctx.dir };
  } else {
    ctx.mongoUrl = freshMongoUrl(base);
    ctx.env = { MONGODB_URL: ctx.mongoUrl, ERPLINK_ENCRYPTION_KEY: "ab".repeat(32) };
  }
});
E2e.after.each(async (ctx) => {
  await ctx.running?.close();
  if (ctx.dir !== undefined) await rm(ctx.dir, { recursive: true, force: true });
  if (ctx.mongoUrl !== undefined) await dropMongoDatabase(ctx.mongoUrl);
});

/** A REST call with the master key; returns the parsed body after checking the status. */
async function rest(e: RunningErplink, method: string, path: string, body?: unknown, status = 200): Promise<{ text: string; json: any }> {
  const res = await httpRequest(`${e.baseUrl}${path}`, {
    method,
    headers: { authorization: e.authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.is(res.status, status, `${method} ${path}: ${res.text}`);
  return { text: res.text, json: res.json() };
}

E2e("REST and gRPC writes are recorded with their actors, read alike over both, without secrets, and kept across a restart", async (ctx) => {
  ctx.running = await startErplink(ctx.env);
  let e = ctx.running;

  // Over REST with the master key.
  const sys = (await rest(e, "POST", "/admin/systems", { name: "S/4HANA" }, 201)).json.data;
  const ins = (
    await rest(e, "POST", `/admin/systems/${sys.id}/instances`, {
      name: "s4-prod",
      base_url: "https://s4.example.com/odata/",
      auth: { type: "basic", username: "svc", password: "pw-one-hunter2" },
    }, 201)
  ).json.data;
  const admin = (await rest(e, "POST", "/admin/api-keys", { name: "ops", type: "admin" }, 201)).json.data;

  // Over gRPC with the admin key.
  const md = { authorization: `Bearer ${admin.key}` };
  const instances = createGrpcJsClient(InstanceService, e.address);
  const keys = createGrpcJsClient(ApiKeyService, e.address);
  const audit = createGrpcJsClient(AuditService, e.address);
  let dataSecret = "";
  let dataKeyId = "";
  try {
    await instances.call.updateInstance(
      create(UpdateInstanceRequestSchema, {
        instance: { id: ins.id, auth: { type: BackendAuthType.BASIC, username: "svc", password: "pw-two-hunter2" } },
        updateMask: { paths: ["auth"] },
      }),
      md,
    );
    const created = await keys.call.createApiKey(
      create(CreateApiKeyRequestSchema, {
        apiKey: { name: "invoices", type: ApiKeyType.DATA, permissions: { "s4-prod": { API_BP: { A_BP: ["list"] } } } },
      }),
      md,
    );
    dataSecret = created.key;
    dataKeyId = created.apiKey!.id;
    await keys.call.updateApiKey(
      create(UpdateApiKeyRequestSchema, {
        apiKey: { id: dataKeyId, permissions: { "s4-prod": { API_BP: { A_BP: ["list", "get"] } } } },
        updateMask: { paths: ["permissions"] },
      }),
      md,
    );
    await keys.call.deleteApiKey(create(DeleteApiKeyRequestSchema, { id: dataKeyId }), md);

    // REST reads the trail.
    const listed = await rest(e, "GET", "/admin/audit");
    const entries = listed.json.data as any[];
    assert.equal(
      entries.map((x) => [x.actor, x.action, x.resource_type, x.resource_id, x.state]),
      [
        [admin.id, "revoke", "api_key", dataKeyId, "applied"],
        [admin.id, "update", "api_key", dataKeyId, "applied"],
        [admin.id, "create", "api_key", dataKeyId, "applied"],
        [admin.id, "update", "instance", ins.id, "applied"],
        ["master", "create", "api_key", admin.id, "applied"],
        ["master", "create", "instance", ins.id, "applied"],
        ["master", "create", "system", sys.id, "applied"],
      ],
    );
    assert.equal(entries[1].changes, [{ path: ["permissions", "s4-prod", "API_BP", "A_BP"], before: ["list"], after: ["list", "get"] }]);
    assert.equal(entries[3].changes, [{ path: ["auth", "password"], before: "[redacted]", after: "[redacted]" }]);

    // gRPC reads the same trail, field for field.
    const page = await audit.call.listAuditEntries(create(ListAuditEntriesRequestSchema, { actor: admin.id }), md);
    const viaGrpc = page.auditEntries.map((x) => toJson(AuditEntrySchema, x, { useProtoFieldName: true, alwaysEmitImplicit: true }));
    assert.equal(viaGrpc, entries.slice(0, 4));
    const one = await audit.call.getAuditEntry(create(GetAuditEntryRequestSchema, { id: entries[6].id }), md);
    assert.equal(toJson(AuditEntrySchema, one.auditEntry!, { useProtoFieldName: true, alwaysEmitImplicit: true }), entries[6]);
    // Without a valid admin token, nothing.
    const denied = await grpcError(audit.call.listAuditEntries(create(ListAuditEntriesRequestSchema), { authorization: `Bearer ${admin.key}x` }));
    assert.is(denied.code, grpc.status.UNAUTHENTICATED);

    // No secret in either answer.
    const texts = [listed.text, JSON.stringify(viaGrpc)];
    for (const text of texts) {
      assert.not.match(text, /hunter2/);
      assert.not.ok(text.includes(admin.key), "the admin key's secret");
      assert.not.ok(text.includes(dataSecret), "the data key's secret");
      assert.not.ok(text.includes(dataSecret.slice(12)), "any part of a secret beyond its prefix");
    }

    // A restart on the same store keeps every entry as it was.
    await e.close();
    ctx.running = await startErplink(ctx.env);
    e = ctx.running;
    assert.equal((await rest(e, "GET", "/admin/audit")).json.data, entries);
  } finally {
    instances.close();
    keys.close();
    audit.close();
  }
});

E2e("a bad ERPLINK_AUDIT_RETENTION_DAYS stops the start, naming the variable", async (ctx) => {
  try {
    ctx.running = await startErplink({ ...ctx.env, ERPLINK_AUDIT_RETENTION_DAYS: "0" });
    assert.unreachable("started with a retention of 0 days");
  } catch (err) {
    assert.match(String(err), /ERPLINK_AUDIT_RETENTION_DAYS must be an integer from 1 to 36500 \(got "0"\)/);
  }
});

E2e.run();
