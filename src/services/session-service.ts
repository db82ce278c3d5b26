/**
 * erplink.admin.v1.SessionService: sessions for the dashboard and scripts.
 * A session is created with the master key or an admin key, acts for it,
 * and its token is returned once and stored only as a hash.
 */
import { create, toJson } from "@bufbuild/protobuf";
import { TimestampSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  CreateSessionResponseSchema,
  DeleteSessionResponseSchema,
  ListSessionsResponseSchema,
  SessionSchema,
  type CreateSessionRequest,
  type DeleteSessionRequest,
  type ListSessionsRequest,
  type Session,
  type SessionService,
} from "../gen/erplink/admin/v1/session_pb.js";
import type { SessionRecord } from "../store/index.js";
import { actorOf, redact, snapshotOf, type AuditSnapshot } from "./audit.js";
import { kPrincipal, type Principal } from "./auth.js";
import type { ServiceDeps } from "./context.js";
import { translate } from "./errors.js";
import { isExpired } from "./key-registry.js";
import { nextPageToken, readPaging } from "./paging.js";
import { notFound, requireId } from "./resource.js";
import { csrfTokenOf, generateSessionToken, hashSessionToken } from "../schema/session-token.js";
import { assertValidForCreate } from "./validation.js";

const names = { singular: "session" };

/** The one mapping of a stored session to its message (never its token or hashes). */
export function sessionToMessage(rec: SessionRecord, lastUse: Date, idleMs: number): Session {
  const idle = new Date(Math.min(lastUse.getTime() + idleMs, rec.expiresAt.getTime()));
  return create(SessionSchema, {
    id: rec.id,
    label: rec.label,
    actsFor: rec.actsFor,
    cookie: rec.cookie,
    createdAt: timestampFromDate(rec.createdAt),
    lastUsedAt: timestampFromDate(lastUse),
    idleExpiresAt: timestampFromDate(idle),
    expiresAt: timestampFromDate(rec.expiresAt),
  });
}

/**
 * A session as the audit trail shows it: its token as a redacted marker
 * (`token`), without its use times (using a session is no administrative
 * change), and with `revoked_at` once revoked.
 */
export function sessionSnapshot(rec: SessionRecord, revokedAt?: Date): AuditSnapshot {
  const snapshot = snapshotOf(SessionSchema, sessionToMessage(rec, rec.lastUsedAt, 0), {
    omit: ["last_used_at", "idle_expires_at", "current"],
    secrets: [[["token"], redact(rec.tokenHash)]],
  });
  if (revokedAt === undefined) return snapshot;
  return { ...snapshot, revoked_at: toJson(TimestampSchema, timestampFromDate(revokedAt)) as string };
}

/** The caller of an admin call; the admin interceptor has set it. */
function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(kPrincipal);
  if (principal === undefined) throw new ConnectError("missing bearer token: send Authorization: Bearer <token>", Code.Unauthenticated);
  return principal;
}

function actsForOf(principal: Principal): string {
  return principal.kind === "master" ? "master" : principal.keyId;
}

/** Implements SessionService. */
export class SessionServiceImpl implements ServiceImpl<typeof SessionService> {
  constructor(private readonly deps: ServiceDeps) {}

  private toMessage(rec: SessionRecord): Session {
    return sessionToMessage(rec, this.deps.sessions.lastUse(rec), this.deps.sessionPolicy.idleMs);
  }

  createSession(req: CreateSessionRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const principal = principalOf(ctx);
      // A session cannot beget a session: that would outlive its absolute expiry.
      if (principal.sessionId !== undefined) {
        throw new ConnectError("sessions are created with the master key or an admin key, not with another session", Code.PermissionDenied);
      }
      const now = this.deps.clock();
      const session = req.session ?? create(SessionSchema, {});
      assertValidForCreate(SessionSchema, session, now);
      let principalHash = this.deps.sessionPolicy.masterFingerprint;
      let expiresAt = now.getTime() + this.deps.sessionPolicy.maxMs;
      if (principal.kind === "admin_key") {
        const key = await this.deps.store.apiKeys.get(principal.keyId);
        if (key === undefined || isExpired(key, now)) throw new ConnectError("API key not found", Code.Unauthenticated);
        principalHash = key.keyHash;
        // Never past the key's own expiry.
        if (key.expiresAt !== undefined) expiresAt = Math.min(expiresAt, key.expiresAt.getTime());
      }
      const token = generateSessionToken();
      const rec: SessionRecord = {
        id: this.deps.newId("ses"),
        label: session.label,
        actsFor: actsForOf(principal),
        tokenHash: hashSessionToken(token),
        principalHash,
        cookie: req.cookie,
        lastUsedAt: now,
        expiresAt: new Date(expiresAt),
        createdAt: now,
        updatedAt: now,
      };
      await this.deps.audit.record(
        actorOf(ctx),
        { action: "create", resourceType: "session", resourceId: rec.id, before: null, after: sessionSnapshot(rec) },
        () => this.deps.store.sessions.create(rec),
      );
      this.deps.sessions.remember(rec);
      return create(CreateSessionResponseSchema, { session: this.toMessage(rec), token, csrfToken: csrfTokenOf(token) });
    });
  }

  listSessions(req: ListSessionsRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const principal = principalOf(ctx);
      const paging = readPaging(req.pageSize, req.pageToken, "ses");
      const page = await this.deps.store.sessions.listNewest({
        ...(principal.kind === "master" ? {} : { actsFor: principal.keyId }),
        ...(paging.afterId !== undefined ? { beforeId: paging.afterId } : {}),
        limit: paging.limit,
        now: this.deps.clock(),
      });
      return create(ListSessionsResponseSchema, {
        sessions: page.items.map((r) => {
          const message = this.toMessage(r);
          message.current = r.id === principal.sessionId;
          return message;
        }),
        nextPageToken: nextPageToken(page),
      });
    });
  }

  deleteSession(req: DeleteSessionRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const principal = principalOf(ctx);
      let id = req.id;
      if (id === "current") {
        // No calling session: `current` names nothing (404, as any session id that names nothing).
        if (principal.sessionId === undefined) {
          throw new ConnectError("no current session: 'current' names the calling session, and this call was not made with a session token", Code.NotFound);
        }
        id = principal.sessionId;
      } else {
        requireId("ses", id);
      }
      const rec = await this.deps.store.sessions.get(id);
      // Another key's session is as good as absent to an admin key.
      if (rec === undefined || (principal.kind === "admin_key" && rec.actsFor !== principal.keyId)) {
        throw notFound("ses", id);
      }
      const at = this.deps.clock();
      const deleted = await this.deps.audit.record(
        actorOf(ctx),
        { action: "revoke", resourceType: "session", resourceId: id, before: sessionSnapshot(rec), after: sessionSnapshot(rec, at) },
        () => this.deps.store.sessions.delete(id),
        (r) => sessionSnapshot(r, at),
      );
      this.deps.sessions.forget(deleted);
      return create(DeleteSessionResponseSchema, { session: this.toMessage(deleted) });
    });
  }
}
