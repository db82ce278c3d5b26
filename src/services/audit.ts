/**
 * The audit trail's writing side: every administrative change goes through
 * {@link AuditRecorder.record}, which writes the entry first and makes the
 * change second, so that no change is made without its entry.
 *
 * Neither store gives multi-document transactions, so one change is three
 * writes: the entry (`pending`, with the resource before and as the change
 * will leave it), the change, then the entry again (`applied`, with the
 * resource as the change did leave it). If the first write fails, the change
 * is not attempted and the call fails (`unavailable` when the store is
 * unreachable). If the change is refused (a taken name, a missing resource,
 * a rule), the entry is removed. If the change fails for a reason that does
 * not say whether it was made (the store went away mid-write), or the
 * process stops between the writes, the entry stays `pending`: it may
 * describe a change that was not made, never the other way round.
 *
 * Snapshots are the resource as the REST API shows it (without its etag), with secrets replaced
 * by {@link Redacted} markers: they compare by a keyed digest, so a diff can
 * say that a secret changed, and they serialize as `"[redacted]"`.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { toJson, type DescField, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { kRequestId } from "../schema/call-facts.js";
import { ETAG_FIELD } from "../schema/etag.js";
import { rulesOf } from "../schema/field-rules.js";
import { DuplicateKeyError, NotFoundError, RevisionMismatchError, type AuditChangeRecord, type AuditJson, type AuditStore } from "../store/index.js";
import { kPrincipal, principalId, type Principal } from "./auth.js";
import type { IdGenerator } from "./ids.js";

/** How a secret reads in every snapshot, diff, response and log line. */
export const REDACTED = "[redacted]";

// Digests of secrets are compared in memory only, never stored or sent; a
// per-process key keeps them from being a reusable hash of the secret.
const FINGERPRINT_KEY = randomBytes(32);

/**
 * A secret in a snapshot: holds only a keyed digest of the value, compares
 * in constant time, and serializes as `"[redacted]"`.
 */
export class Redacted {
  readonly #digest: Buffer;
  /** Use {@link redact}. */
  constructor(digest: Buffer) {
    this.#digest = digest;
  }
  /** Whether both stand for the same secret (constant time). */
  equals(other: Redacted): boolean {
    return timingSafeEqual(this.#digest, other.#digest);
  }
  toJSON(): string {
    return REDACTED;
  }
  toString(): string {
    return REDACTED;
  }
}

/** The marker of a secret (a key's hash, a password, a token) in a snapshot. */
export function redact(secret: string): Redacted {
  return new Redacted(createHmac("sha256", FINGERPRINT_KEY).update(secret, "utf8").digest());
}

/** A value of a snapshot: JSON, with secrets as markers. */
export type SnapshotValue =
  | null
  | boolean
  | number
  | string
  | Redacted
  | readonly SnapshotValue[]
  | { readonly [key: string]: SnapshotValue };

/** A resource as the audit trail shows it: top-level fields by their REST (proto) names. */
export type AuditSnapshot = { readonly [field: string]: SnapshotValue };

/** Options of {@link snapshotOf}. */
export interface SnapshotOptions {
  /** Top-level fields left out (bookkeeping such as `last_used_at`). */
  readonly omit?: readonly string[];
  /** Secrets to show, as redacted markers, by path (`["auth", "password"]`). */
  readonly secrets?: readonly (readonly [path: readonly string[], secret: Redacted])[];
}

/**
 * A message as the REST API shows it (proto field names, enum values in
 * lower case without their prefix, no write-only fields, no empty strings in
 * nested messages), with the given secrets added as markers.
 */
export function snapshotOf<D extends DescMessage>(desc: D, message: MessageShape<D>, options: SnapshotOptions = {}): AuditSnapshot {
  const json = toJson(desc, message, { useProtoFieldName: true, alwaysEmitImplicit: true }) as JsonObject;
  const out = restForm(desc, json, false) as Record<string, SnapshotValue>;
  // The etag is bookkeeping, as `updated_at` is: the entry's own order says which change came first.
  delete out[ETAG_FIELD];
  for (const field of options.omit ?? []) delete out[field];
  for (const [path, secret] of options.secrets ?? []) {
    let target = out as Record<string, SnapshotValue>;
    for (const key of path.slice(0, -1)) {
      const next = target[key];
      if (!isObject(next)) target[key] = {};
      target = target[key] as Record<string, SnapshotValue>;
    }
    target[path[path.length - 1]!] = secret;
  }
  return out;
}

function restForm(desc: DescMessage, value: JsonValue, nested: boolean): JsonValue {
  // Well-known types (Struct, Timestamp) have JSON forms of their own.
  if (!isJsonObject(value) || desc.typeName.startsWith("google.protobuf.")) return value;
  const out: JsonObject = {};
  for (const field of desc.fields) {
    const v = value[field.name];
    if (v === undefined || rulesOf(field).secret || (nested && v === "" && field.fieldKind === "scalar")) continue;
    out[field.name] = restField(field, v);
  }
  return out;
}

function restField(field: DescField, value: JsonValue): JsonValue {
  const enumName = (v: JsonValue) => {
    const e = field.enum?.values.find((x) => x.name === v);
    return e === undefined ? v : e.localName.toLowerCase();
  };
  switch (field.fieldKind) {
    case "enum":
      return enumName(value);
    case "message":
      return restForm(field.message, value, true);
    case "list":
      if (!Array.isArray(value)) return value;
      if (field.listKind === "enum") return value.map(enumName);
      if (field.listKind === "message") return value.map((v) => restForm(field.message, v, true));
      return value;
    case "map":
      if (!isJsonObject(value) || field.mapKind === "scalar") return value;
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, field.mapKind === "enum" ? enumName(v) : restForm(field.message, v, true)]),
      );
    default:
      return value;
  }
}

function isJsonObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isObject(v: SnapshotValue | undefined): v is { readonly [key: string]: SnapshotValue } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Redacted);
}

/** A snapshot value as stored and shown: markers become `"[redacted]"`, absent (or anything that is not JSON) becomes null. */
export function rendered(value: SnapshotValue | undefined): AuditJson {
  if (value === undefined || value === null) return null;
  if (value instanceof Redacted) return REDACTED;
  if (Array.isArray(value)) return value.map(rendered);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rendered(v)]));
  return typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value)) ? value : null;
}

/**
 * The value under an object's own key. Snapshots hold user keys (label
 * keys, permission names such as `constructor` or `__proto__`), which must
 * never read an inherited member.
 */
function own(obj: { readonly [key: string]: SnapshotValue }, key: string): SnapshotValue | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

function same(a: SnapshotValue | undefined, b: SnapshotValue | undefined): boolean {
  if (a === undefined || a === null || b === undefined || b === null) return (a ?? null) === (b ?? null);
  if (a instanceof Redacted || b instanceof Redacted) return a instanceof Redacted && b instanceof Redacted && a.equals(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => same(v, b[i]));
  }
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && same(own(a, k), own(b, k)));
  }
  return a === b;
}

/** Fields a diff leaves out: the entry's own timestamp says when. */
const UNDIFFED = new Set(["updated_at"]);

/**
 * Every field that differs between two snapshots (null: the resource did
 * not exist), in field order. Objects (messages, maps) present on both
 * sides are compared key by key; an object present on one side only (an
 * instance added to a key's permissions, or removed from it) is one change
 * holding it whole, as are lists; secrets compare by their digests. A
 * created or deleted resource lists its fields. Applying the changes to
 * `before` (set each path to `after`, remove it where `after` is null) gives
 * `after` exactly: removing a map entry and emptying it are different changes.
 */
export function diffSnapshots(before: AuditSnapshot | null, after: AuditSnapshot | null): AuditChangeRecord[] {
  const changes: AuditChangeRecord[] = [];
  const walk = (path: string[], a: SnapshotValue | undefined, b: SnapshotValue | undefined) => {
    // Below the resource itself, descending into a one-sided object would
    // record its leaves only, and removing them leaves the object behind.
    const descend =
      (isObject(a) && isObject(b)) ||
      (path.length === 0 && isObject(a) && Object.keys(a).length > 0 && (b === undefined || b === null)) ||
      (path.length === 0 && isObject(b) && Object.keys(b).length > 0 && (a === undefined || a === null));
    if (descend) {
      const objA = isObject(a) ? a : {};
      const objB = isObject(b) ? b : {};
      const keys = [...Object.keys(objA), ...Object.keys(objB).filter((k) => !Object.hasOwn(objA, k))];
      for (const key of keys) {
        if (path.length === 0 && UNDIFFED.has(key)) continue;
        walk([...path, key], own(objA, key), own(objB, key));
      }
      return;
    }
    if (!same(a, b)) changes.push({ path, before: rendered(a), after: rendered(b) });
  };
  walk([], before ?? undefined, after ?? undefined);
  return changes;
}

/** What an entry records about a change. */
export type AuditAction = "create" | "update" | "delete" | "revoke";
/** The kinds of resource the audit trail covers. */
export type AuditResourceType = "system" | "instance" | "api_key" | "session";

/** One change, as the service about to make it describes it. */
export interface AuditEvent {
  readonly action: AuditAction;
  readonly resourceType: AuditResourceType;
  readonly resourceId: string;
  /** The resource before the change; null for a creation. */
  readonly before: AuditSnapshot | null;
  /** The resource as the change will leave it; null for a deletion. */
  readonly after: AuditSnapshot | null;
}

/** Who makes a change, and in which call. */
export interface AuditActor {
  /** The administrator; undefined for a change erplink makes itself (recorded as `internal`). */
  readonly principal: Principal | undefined;
  /** The call's request id (`X-Request-Id`), or "". */
  readonly requestId: string;
}

/** How an entry names a change made without an administrator's call. */
export const INTERNAL_ACTOR = "internal";

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The actor of a service call: the administrator the admin interceptor
 * admitted (with the dashboard session it came through, if any), and the
 * request id the gateway passed (or the in-process transport's header).
 */
export function actorOf(ctx: HandlerContext): AuditActor {
  const requestId = ctx.values.get(kRequestId) || ctx.requestHeader.get("x-request-id") || "";
  return { principal: ctx.values.get(kPrincipal), requestId: REQUEST_ID.test(requestId) ? requestId : "" };
}

/**
 * Whether a failed change certainly changed nothing: it was refused (a rule,
 * a taken name, a missing resource). Anything else (the store unreachable,
 * an unexpected error) leaves the outcome open.
 */
function isRefusal(err: unknown): boolean {
  if (err instanceof DuplicateKeyError || err instanceof NotFoundError || err instanceof RevisionMismatchError) return true;
  if (!(err instanceof ConnectError)) return false;
  return [
    Code.InvalidArgument,
    Code.NotFound,
    Code.AlreadyExists,
    Code.FailedPrecondition,
    // A stale etag: refused before anything was written.
    Code.Aborted,
    Code.PermissionDenied,
    Code.Unauthenticated,
    Code.OutOfRange,
  ].includes(err.code);
}

/**
 * The error to throw when a compensation inside a recorded change fails: a
 * refusal (a taken name, a missing document) is made `internal`, since the
 * change it was undoing was made and its entry must stay; other errors pass.
 */
export function uncertain(err: unknown): unknown {
  return isRefusal(err) ? new ConnectError("internal error", Code.Internal, undefined, undefined, err) : err;
}

/** Options of {@link AuditRecorder}. */
export interface AuditRecorderOptions {
  readonly store: AuditStore;
  readonly clock: () => Date;
  readonly newId: IdGenerator;
  /** How long entries are kept (ms); undefined keeps them for ever. */
  readonly retentionMs?: number | undefined;
  /** Reports a follow-up write that failed (the entry then stays `pending`). */
  readonly onError: (err: unknown, message: string) => void;
}

/** Writes the audit trail around every administrative change. */
export class AuditRecorder {
  constructor(private readonly options: AuditRecorderOptions) {}

  /**
   * Makes a change recorded: writes the entry (`pending`), runs `change`,
   * then marks the entry `applied` with the resource as `afterOf` reads it
   * from the change's result (default: `event.after`). Returns what `change`
   * returns.
   *
   * If the entry cannot be written, `change` is not run and the error is
   * thrown (a StoreUnavailableError becomes `unavailable` in the services'
   * translation). If `change` is refused, the entry is removed and the
   * refusal thrown. Compensations inside `change` that fail should throw
   * {@link uncertain}`(err)`, so that the entry stays.
   */
  async record<T>(
    actor: AuditActor,
    event: AuditEvent,
    change: () => Promise<T>,
    afterOf?: (result: T) => AuditSnapshot | null,
  ): Promise<T> {
    const { store } = this.options;
    const id = this.options.newId("aud");
    await store.append({
      id,
      timestamp: this.options.clock(),
      actor: actor.principal === undefined ? INTERNAL_ACTOR : principalId(actor.principal),
      sessionId: actor.principal?.sessionId ?? "",
      action: event.action,
      resourceType: event.resourceType,
      resourceId: event.resourceId,
      requestId: actor.requestId,
      state: "pending",
      before: rendered(event.before),
      after: rendered(event.after),
      changes: diffSnapshots(event.before, event.after),
    });
    let result: T;
    try {
      result = await change();
    } catch (err) {
      if (isRefusal(err)) {
        await store.remove(id).catch((removeErr: unknown) =>
          this.options.onError(removeErr, `audit entry ${id} of a refused change could not be removed; it stays pending`),
        );
      }
      throw err;
    }
    let after = event.after;
    try {
      if (afterOf !== undefined) after = afterOf(result);
      await store.markApplied(id, { after: rendered(after), changes: diffSnapshots(event.before, after) });
    } catch (err) {
      // The change is made and its entry written: the call succeeds, and
      // the entry says the change was not confirmed.
      this.options.onError(err, `audit entry ${id} could not be marked applied; it stays pending`);
    }
    return result;
  }

  /** The oldest time the audit trail keeps at `now`, or undefined when it keeps everything. */
  cutoff(now: Date): Date | undefined {
    const { retentionMs } = this.options;
    return retentionMs === undefined ? undefined : new Date(now.getTime() - retentionMs);
  }

  /** Removes entries past the audit trail's own retention (none when it is unlimited); returns how many. */
  async purge(now: Date): Promise<number> {
    const cutoff = this.cutoff(now);
    return cutoff === undefined ? 0 : this.options.store.purge(cutoff);
  }
}
