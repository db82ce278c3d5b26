/**
 * erplink.authz.v1.AuthorizationService: the decision engine behind every
 * data request. On a warm key it reads nothing from the store: the key comes
 * from the registry, the permissions are evaluated in memory, and only the
 * rate-limit counters (shared by every process) are written.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AuthorizationOutcome } from "../metrics/port.js";
import {
  AuthorizeResponseSchema,
  DenialStep,
  Operation as OperationEnum,
  RateLimitStatusSchema,
  RateLimitWindowSchema,
  type AuthorizationService,
  type AuthorizeRequest,
  type AuthorizeResponse,
  type RateLimitStatus,
} from "../gen/erplink/authz/v1/authorization_pb.js";
import { hashApiKey, isWellFormedApiKey } from "./api-key-secret.js";
import { dataKeyLimits, isExpired } from "./key-registry.js";
import type { ServiceDeps } from "./context.js";
import type { ApiKeyRecord } from "../store/index.js";
import { toConnectError, validationError, type Violation } from "./errors.js";
import { evaluate, type DenialStep as Step, type Operation } from "./permissions.js";
import { tightestWindow, type RateLimitResult } from "./rate-limiter.js";

const names = { singular: "API key" };

/** Longer than any secret erplink issues (`erpl_` and 49 characters). */
const MAX_SECRET_LENGTH = 64;

const OPERATIONS: Readonly<Partial<Record<OperationEnum, Operation>>> = {
  [OperationEnum.LIST]: "list",
  [OperationEnum.GET]: "get",
  [OperationEnum.CREATE]: "create",
  [OperationEnum.UPDATE]: "update",
  [OperationEnum.DELETE]: "delete",
  [OperationEnum.INVOKE]: "invoke",
};

const STEPS: Readonly<Record<Step, DenialStep>> = {
  instance: DenialStep.INSTANCE,
  service: DenialStep.SERVICE,
  entity: DenialStep.ENTITY,
  operation: DenialStep.OPERATION,
};

/**
 * A window's end as a Timestamp, made once per window: the limiter hands out
 * the same Date for a window until it ends. Frozen, since every answer of
 * the window shares it.
 */
const resetTimes = new WeakMap<Date, Timestamp>();
function resetTimeOf(end: Date): Timestamp {
  let t = resetTimes.get(end);
  if (t === undefined) {
    t = Object.freeze(timestampFromDate(end));
    resetTimes.set(end, t);
  }
  return t;
}

/** The rate-limit state of a result, as the response carries it. */
export function rateLimitStatus(result: RateLimitResult): RateLimitStatus | undefined {
  const tightest = tightestWindow(result);
  if (tightest === undefined) return undefined;
  return create(RateLimitStatusSchema, {
    limit: BigInt(tightest.limit),
    remaining: BigInt(tightest.remaining),
    resetTime: resetTimeOf(tightest.resetAt),
    retryAfter:
      !result.allowed && result.retryAfterSeconds !== undefined ? durationFromMs(result.retryAfterSeconds * 1000) : undefined,
    windows: result.windows.map((w) =>
      create(RateLimitWindowSchema, {
        name: w.name,
        limit: BigInt(w.limit),
        remaining: BigInt(w.remaining),
        resetTime: resetTimeOf(w.resetAt),
      }),
    ),
  });
}

/** A denial step as the metrics name the outcome. */
const OUTCOMES: Readonly<Record<DenialStep, AuthorizationOutcome>> = {
  [DenialStep.UNSPECIFIED]: "error",
  [DenialStep.KEY_INVALID]: "key_invalid",
  [DenialStep.KEY_EXPIRED]: "key_expired",
  [DenialStep.INSTANCE]: "instance",
  [DenialStep.SERVICE]: "service",
  [DenialStep.ENTITY]: "entity",
  [DenialStep.OPERATION]: "operation",
  [DenialStep.RATE_LIMITED]: "rate_limited",
};

function deny(step: DenialStep, code: string, message: string, keyId = "", rateLimit?: RateLimitStatus): AuthorizeResponse {
  return create(AuthorizeResponseSchema, { allowed: false, denialStep: step, code, message, keyId, rateLimit });
}

function checkName(field: string, value: string, out: Violation[]): void {
  if (value === "") out.push({ field, description: "is required" });
  else if (value === "*") out.push({ field, description: "must name one item, not '*'" });
  else if (value.length > 256) out.push({ field, description: "must be at most 256 characters" });
}

/** Implements AuthorizationService. */
export class AuthorizationServiceImpl implements ServiceImpl<typeof AuthorizationService> {
  constructor(private readonly deps: ServiceDeps) {}

  /**
   * Decides, and counts the outcome: one call, one outcome. A warm key's
   * call with places to spend is answered without a promise (Connect awaits
   * the answer either way); one that needs the store returns one.
   */
  authorize(req: AuthorizeRequest): AuthorizeResponse | Promise<AuthorizeResponse> {
    let res: AuthorizeResponse | Promise<AuthorizeResponse>;
    try {
      res = this.decide(req);
    } catch (err) {
      throw this.failed(err);
    }
    if (!(res instanceof Promise)) return this.decided(res);
    return res.then(
      (r) => this.decided(r),
      (err: unknown) => {
        throw this.failed(err);
      },
    );
  }

  private decided(res: AuthorizeResponse): AuthorizeResponse {
    this.deps.metrics.authorization.decided("authorize", res.allowed ? "allowed" : OUTCOMES[res.denialStep]);
    return res;
  }

  /** Counts a call that failed, and gives its error as the services report it (a store failure: a key lookup, a lease). */
  private failed(err: unknown): ConnectError {
    const invalid = err instanceof ConnectError && err.code === Code.InvalidArgument;
    this.deps.metrics.authorization.decided("authorize", invalid ? "invalid_request" : "error");
    return toConnectError(err, names);
  }

  private decide(req: AuthorizeRequest): AuthorizeResponse | Promise<AuthorizeResponse> {
    const violations: Violation[] = [];
    if (req.apiKey === "") violations.push({ field: "api_key", description: "is required" });
    checkName("instance", req.instance, violations);
    checkName("service", req.service, violations);
    checkName("entity", req.entity, violations);
    const operation = OPERATIONS[req.operation];
    if (operation === undefined) violations.push({ field: "operation", description: "must be LIST, GET, CREATE, UPDATE or DELETE" });
    if (violations.length > 0) throw validationError(violations);

    // A key this process holds is found by the hash of the secret alone,
    // as on the data path; only a miss pays for the format and checksum
    // check, and a malformed token is refused without a store lookup.
    // Nothing longer than a key is hashed.
    const hash = req.apiKey.length <= MAX_SECRET_LENGTH ? hashApiKey(req.apiKey) : undefined;
    const cached = hash === undefined ? undefined : this.deps.keys.cached(hash);
    if (cached !== undefined) return this.decideFor(cached, req, operation!);
    if (hash === undefined || !isWellFormedApiKey(req.apiKey)) return deny(DenialStep.KEY_INVALID, "UNAUTHORIZED", "invalid API key");
    const found = this.deps.keys.lookupHash(hash);
    return found instanceof Promise ? found.then((key) => this.decideFound(key, req, operation!)) : this.decideFound(found, req, operation!);
  }

  private decideFound(key: ApiKeyRecord | undefined, req: AuthorizeRequest, operation: Operation): AuthorizeResponse | Promise<AuthorizeResponse> {
    return key === undefined ? deny(DenialStep.KEY_INVALID, "UNAUTHORIZED", "invalid API key") : this.decideFor(key, req, operation);
  }

  /** The decision for a key found: expiry, type, permissions, then the rate limits. */
  private decideFor(key: ApiKeyRecord, req: AuthorizeRequest, operation: Operation): AuthorizeResponse | Promise<AuthorizeResponse> {
    if (isExpired(key, this.deps.clock())) {
      return deny(DenialStep.KEY_EXPIRED, "UNAUTHORIZED", "API key expired", key.id);
    }
    if (key.type !== "data") {
      return deny(DenialStep.KEY_INVALID, "FORBIDDEN", "API key is not a data key: data access needs a data key", key.id);
    }
    const decision = evaluate(key.permissions, {
      instance: req.instance,
      service: req.service,
      entity: req.entity,
      operation,
    });
    if (!decision.allowed) return deny(STEPS[decision.step], "FORBIDDEN", decision.message, key.id);

    this.deps.usage.touch(key.id);
    const limits = dataKeyLimits(key, this.deps.dataLimits);
    const subject = `data:${key.id}`;
    const result = req.dryRun ? this.deps.limiter.peek(subject, limits) : this.deps.limiter.consume(subject, limits);
    return result instanceof Promise ? result.then((r) => limited(key.id, r)) : limited(key.id, result);
  }
}

/** The answer once the rate limits are counted: allowed with their state, or refused by the exhausted window. */
function limited(keyId: string, result: RateLimitResult): AuthorizeResponse {
  const rateLimit = rateLimitStatus(result);
  if (!result.allowed) {
    const exhausted = result.windows.find((w) => w.remaining === 0);
    return deny(
      DenialStep.RATE_LIMITED,
      "RATE_LIMITED",
      `rate limit exceeded: ${exhausted?.limit ?? 0} requests per ${exhausted?.name ?? "window"}`,
      keyId,
      rateLimit,
    );
  }
  return create(AuthorizeResponseSchema, { allowed: true, keyId, rateLimit });
}
