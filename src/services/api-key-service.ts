/**
 * erplink.admin.v1.ApiKeyService: issuing, changing and revoking API keys.
 * Secrets are generated here, returned once, and stored only as hashes.
 */
import { create, toJson, type JsonObject } from "@bufbuild/protobuf";
import { TimestampSchema, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  ApiKeySchema,
  ApiKeyType,
  CreateApiKeyResponseSchema,
  DeleteApiKeyResponseSchema,
  ExplainApiKeyResponseSchema,
  GetApiKeyResponseSchema,
  ListApiKeysResponseSchema,
  RateLimitsSchema,
  UpdateApiKeyResponseSchema,
  type ApiKey,
  type ApiKeyService,
  type CreateApiKeyRequest,
  type DeleteApiKeyRequest,
  type ExplainApiKeyRequest,
  type GetApiKeyRequest,
  type ListApiKeysRequest,
  type UpdateApiKeyRequest,
} from "../gen/erplink/admin/v1/api_key_pb.js";
import { DataRequestSchema } from "../gen/erplink/admin/v1/diagnostics_pb.js";
import { formatEtag } from "../schema/etag.js";
import type { ApiKeyRecord, StoredPermissions } from "../store/index.js";
import { SHOWN_PREFIX_LENGTH, generateApiKeySecret, hashApiKey } from "./api-key-secret.js";
import { actorOf, redact, snapshotOf, type AuditSnapshot } from "./audit.js";
import type { ServiceDeps } from "./context.js";
import { rateLimitStatus } from "./authorization-service.js";
import { readDataRequest, requireDiagnostics } from "./diagnostics.js";
import { dataKeyLimits } from "./key-registry.js";
import { translate, validationError, type Violation } from "./errors.js";
import { nextPageToken, readPaging } from "./paging.js";
import { parsePermissions } from "./permissions.js";
import { expectedRevision, notFound, requireId, requireResource } from "./resource.js";
import { assertValidForCreate, assertValidForUpdate } from "./validation.js";

const names = { singular: "API key" };

/** The one mapping of a stored key to its message (never the secret or its hash). */
export function apiKeyToMessage(rec: ApiKeyRecord, pendingUse?: Date): ApiKey {
  const lastUsed = pendingUse ?? rec.lastUsedAt;
  return create(ApiKeySchema, {
    id: rec.id,
    name: rec.name,
    type: rec.type === "admin" ? ApiKeyType.ADMIN : ApiKeyType.DATA,
    permissions: rec.type === "admin" ? undefined : (rec.permissions as JsonObject),
    rateLimits: create(RateLimitsSchema, rec.rateLimits),
    prefix: rec.prefix,
    expiresAt: rec.expiresAt ? timestampFromDate(rec.expiresAt) : undefined,
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
    lastUsedAt: lastUsed ? timestampFromDate(lastUsed) : undefined,
    etag: formatEtag(rec.revision ?? 0),
    revokedAt: rec.revokedAt ? timestampFromDate(rec.revokedAt) : undefined,
  });
}

/**
 * A key as the audit trail shows it: never its secret or hash (its secret
 * is `key`, a redacted marker), without `last_used_at` (no administrative
 * change), and with `revoked_at` once revoked.
 */
export function apiKeySnapshot(rec: ApiKeyRecord): AuditSnapshot {
  const snapshot = snapshotOf(ApiKeySchema, apiKeyToMessage(rec), {
    omit: ["last_used_at"],
    secrets: [[["key"], redact(rec.keyHash)]],
  });
  if (rec.revokedAt === undefined) return snapshot;
  return { ...snapshot, revoked_at: toJson(TimestampSchema, timestampFromDate(rec.revokedAt)) as string };
}

/**
 * Validates the permissions of a key of `type` (a Struct's JSON, `{}` when
 * unset) and returns them normalized. Permissions for an admin key are
 * `invalid_argument` in a create (the request contradicts itself) and
 * `failed_precondition` for an existing key (an update or an explained
 * draft: the request is valid; the key's type, which it cannot change,
 * refuses it).
 */
function readPermissions(value: JsonObject, type: "data" | "admin", existing = false): StoredPermissions {
  if (type === "admin") {
    if (Object.keys(value).length > 0) {
      const description = "admin keys have no permissions: they manage erplink, not data";
      if (existing) throw new ConnectError(`permissions: ${description}`, Code.FailedPrecondition);
      throw validationError([{ field: "permissions", description }]);
    }
    return {};
  }
  const parsed = parsePermissions(value);
  if (!parsed.ok) throw validationError(parsed.violations);
  return parsed.permissions;
}

function readRateLimits(key: ApiKey): ApiKeyRecord["rateLimits"] {
  const limits = key.rateLimits;
  return {
    ...(limits?.perMinute !== undefined ? { perMinute: limits.perMinute } : {}),
    ...(limits?.perDay !== undefined ? { perDay: limits.perDay } : {}),
  };
}

/** Implements ApiKeyService. */
export class ApiKeyServiceImpl implements ServiceImpl<typeof ApiKeyService> {
  constructor(private readonly deps: ServiceDeps) {}

  private toMessage(rec: ApiKeyRecord): ApiKey {
    return apiKeyToMessage(rec, this.deps.usage.pendingUse(rec.id));
  }

  getApiKey(req: GetApiKeyRequest) {
    return translate(names, async () => {
      requireId("key", req.id);
      const rec = await this.deps.store.apiKeys.get(req.id);
      if (rec === undefined) throw notFound("key", req.id);
      return create(GetApiKeyResponseSchema, { apiKey: this.toMessage(rec) });
    });
  }

  listApiKeys(req: ListApiKeysRequest) {
    return translate(names, async () => {
      const paging = readPaging(req.pageSize, req.pageToken, "key");
      const page = await this.deps.store.apiKeys.list(paging, { showRevoked: req.showRevoked });
      return create(ListApiKeysResponseSchema, {
        apiKeys: page.items.map((r) => this.toMessage(r)),
        nextPageToken: nextPageToken(page),
      });
    });
  }

  createApiKey(req: CreateApiKeyRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const key = requireResource(req.apiKey, "api_key");
      const now = this.deps.clock();
      assertValidForCreate(ApiKeySchema, key, now);
      const type = key.type === ApiKeyType.ADMIN ? "admin" : "data";
      const permissions = readPermissions(key.permissions ?? {}, type);
      const secret = generateApiKeySecret();
      const record: ApiKeyRecord = {
        id: this.deps.newId("key"),
        name: key.name,
        type,
        keyHash: hashApiKey(secret),
        prefix: secret.slice(0, SHOWN_PREFIX_LENGTH),
        permissions,
        rateLimits: readRateLimits(key),
        ...(key.expiresAt ? { expiresAt: timestampDate(key.expiresAt) } : {}),
        createdAt: now,
        updatedAt: now,
        revision: 1,
      };
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        { action: "create", resourceType: "api_key", resourceId: record.id, before: null, after: apiKeySnapshot(record) },
        () => this.deps.store.apiKeys.create(record),
        apiKeySnapshot,
      );
      this.deps.keys.remember(rec);
      return create(CreateApiKeyResponseSchema, { apiKey: this.toMessage(rec), key: secret });
    });
  }

  updateApiKey(req: UpdateApiKeyRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const key = requireResource(req.apiKey, "api_key");
      requireId("key", key.id);
      const now = this.deps.clock();
      const fields = assertValidForUpdate(ApiKeySchema, key, req.updateMask?.paths ?? [], now);
      const current = await this.deps.store.apiKeys.get(key.id);
      if (current === undefined) throw notFound("key", key.id);
      const patch: Partial<ApiKeyRecord> = { updatedAt: now };
      const violations: Violation[] = [];
      for (const field of fields) {
        switch (field.name) {
          case "name":
            Object.assign(patch, { name: key.name });
            break;
          case "permissions":
            Object.assign(patch, { permissions: readPermissions(key.permissions ?? {}, current.type, true) });
            break;
          case "rate_limits":
            Object.assign(patch, { rateLimits: readRateLimits(key) });
            break;
          case "expires_at":
            Object.assign(patch, { expiresAt: key.expiresAt ? timestampDate(key.expiresAt) : undefined });
            break;
          default:
            violations.push({ field: field.name, description: "cannot be changed" });
        }
      }
      if (violations.length > 0) throw validationError(violations);
      // After every check of the request: an invalid change is 400 whatever its etag.
      const expected = expectedRevision(names, key.etag, current);
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        {
          action: "update",
          resourceType: "api_key",
          resourceId: key.id,
          before: apiKeySnapshot(current),
          after: apiKeySnapshot({ ...current, ...patch }),
        },
        async () => {
          const updated = await this.deps.store.apiKeys.revise(key.id, patch, expected);
          if (updated.revokedAt !== undefined) {
            // Revoked between the read above and this write: it stays
            // revoked, and the update counts as refused (its entry goes).
            this.deps.keys.forget(updated.keyHash, updated.id);
            throw notFound("key", key.id);
          }
          return updated;
        },
        apiKeySnapshot,
      );
      this.deps.keys.remember(rec);
      return create(UpdateApiKeyResponseSchema, { apiKey: this.toMessage(rec) });
    });
  }

  explainApiKey(req: ExplainApiKeyRequest) {
    return translate(names, async () => {
      requireId("key", req.id);
      const data = requireResource(req.dataRequest, "data_request");
      assertValidForCreate(DataRequestSchema, data);
      const { method, headers } = readDataRequest(data);
      const saved = await this.deps.store.apiKeys.get(req.id);
      if (saved === undefined) throw notFound("key", req.id);
      // A draft is checked as an update would check it, and explained as
      // the same key holding it: type, expiry and limits stay the saved
      // key's. Nothing is written (an explanation is a read).
      const key = req.permissions === undefined ? saved : { ...saved, permissions: readPermissions(req.permissions, saved.type, true) };
      const diagnostics = requireDiagnostics(this.deps);
      // The data path's admit stage, looked at without counting (as Authorize's dry_run).
      const limits = key.type === "data" ? await this.deps.limiter.peek(`data:${key.id}`, dataKeyLimits(key, this.deps.dataLimits)) : undefined;
      const explanation = await diagnostics.explain({
        key,
        instance: data.instance,
        service: data.service,
        method,
        url: data.url,
        headers,
        body: data.body,
        withinRateLimits: limits?.allowed ?? true,
      });
      if (limits !== undefined) explanation.rateLimit = rateLimitStatus(limits);
      return create(ExplainApiKeyResponseSchema, { explanation });
    });
  }

  deleteApiKey(req: DeleteApiKeyRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      requireId("key", req.id);
      const current = await this.deps.store.apiKeys.get(req.id);
      if (current === undefined) throw notFound("key", req.id);
      const expected = expectedRevision(names, req.etag, current);
      const at = this.deps.clock();
      const revoked = (r: ApiKeyRecord) => apiKeySnapshot({ ...r, revokedAt: at, updatedAt: at });
      // Revoked, not removed: other processes learn of it by polling changes.
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        { action: "revoke", resourceType: "api_key", resourceId: req.id, before: apiKeySnapshot(current), after: revoked(current) },
        () => this.deps.store.apiKeys.revoke(req.id, at, expected),
        revoked,
      );
      this.deps.keys.forget(rec.keyHash, rec.id);
      return create(DeleteApiKeyResponseSchema, { apiKey: this.toMessage(rec) });
    });
  }
}
