/**
 * A small typed client for erplink's `/admin` API, as the dashboard uses it:
 * the session cookie travels by itself (`credentials: "same-origin"`), the
 * CSRF header is read from the `__Host-erplink_csrf` cookie, the envelope is
 * unwrapped, a 401 sends the user back to sign-in with the server's words,
 * and a read refused with 429 waits the `Retry-After` it was given and tries
 * again by itself, while {@link busyRetry} counts the wait down for the page.
 */
import { signal } from "@preact/signals";

/** A field error from the envelope's `details`. */
export interface ErrorDetail {
  readonly field: string;
  readonly message: string;
}

/** An error answer of the admin API (or a network failure, status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string,
    readonly details: readonly ErrorDetail[] = [],
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** A success answer, unwrapped. */
export interface ApiResult<T> {
  readonly data: T;
  readonly requestId: string;
  readonly nextPageToken?: string;
}

/** A session as the API returns it (its token stays in the HttpOnly cookie). */
export interface Session {
  readonly id: string;
  readonly principal_id?: string;
  readonly created_at?: string;
  readonly expires_at?: string;
  readonly csrf_token?: string;
}

/** A system (an ERP landscape that groups instances). */
export interface System {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly created_at: string;
  readonly updated_at: string;
  /** Changes with every change: sent back as `If-Match`. */
  readonly etag?: string;
}

const CSRF_COOKIE = "__Host-erplink_csrf";

/** The CSRF token the server set next to the session cookie, or "". */
export function csrfToken(): string {
  for (const part of document.cookie.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === CSRF_COOKIE) return value.join("=");
  }
  return "";
}

/** The gateway's 403 messages for a missing or wrong `X-CSRF-Token` (src/gateway/session-cookies.ts). */
const CSRF_REFUSAL = /^(missing X-CSRF-Token header|the X-CSRF-Token header does not match the session)/;

/** Called when the session is gone (a 401, or a CSRF cookie that is not the session's): the app returns to sign-in with this message. */
let onSignedOut: (message: string) => void = () => {};

/** Sets what a 401 does (the app's sign-in state). */
export function whenSignedOut(handler: (message: string) => void): void {
  onSignedOut = handler;
}

interface RequestOptions {
  readonly body?: unknown;
  /** The bearer credential, for signing in only; every other call uses the cookie. */
  readonly bearer?: string;
  /** Do not treat a 401 as the end of the session (the sign-in form shows it itself). */
  readonly signingIn?: boolean;
  /** The etag the change was made against (`If-Match`): a resource changed meanwhile is refused with 412. */
  readonly ifMatch?: string;
  /** A read sent with POST (a batch get): retried after a 429 as a GET is. */
  readonly idempotent?: boolean;
}

/**
 * Seconds until the next retry of a read that erplink refused with 429
 * (the longest wait when several are pending); 0 when none waits. The
 * shell shows it: "erplink is busy: retrying in N s".
 */
export const busyRetry = signal(0);

/** Most retries of one read after 429s, and the most it waits in all (s). */
const MAX_RETRIES = 3;
const MAX_RETRY_WAIT_S = 60;

/** When each pending retry is due (ms since the epoch). */
const retriesDue = new Set<number>();
let ticker: ReturnType<typeof setInterval> | undefined;

/** Sets {@link busyRetry} from the pending retries; stops ticking when none is left. */
function tick(): void {
  const now = Date.now();
  let longest = 0;
  for (const due of retriesDue) longest = Math.max(longest, Math.ceil((due - now) / 1000));
  busyRetry.value = Math.max(longest, retriesDue.size > 0 ? 1 : 0);
  if (retriesDue.size === 0 && ticker !== undefined) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

/** Waits `seconds`, counted down in {@link busyRetry}. */
async function waitToRetry(seconds: number): Promise<void> {
  const due = Date.now() + seconds * 1000;
  retriesDue.add(due);
  ticker ??= setInterval(tick, 250);
  tick();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  retriesDue.delete(due);
  tick();
}

/** `Retry-After` in whole seconds (its delta-seconds form), or undefined. */
function retryAfterOf(res: Response): number | undefined {
  const value = res.headers.get("retry-after");
  return value !== null && /^\d{1,6}$/.test(value) ? Number(value) : undefined;
}

/**
 * One `/admin` call; resolves with the unwrapped data or throws {@link ApiError}.
 * A read (GET, or `idempotent`) refused with 429 and a `Retry-After` waits
 * that long and is sent again, at most {@link MAX_RETRIES} times and
 * {@link MAX_RETRY_WAIT_S} seconds in all; a write is never sent again by
 * itself: its error says how long to wait, in words.
 */
export async function call<T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResult<T>> {
  const retries = method === "GET" || options.idempotent === true;
  let waited = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      return await callOnce<T>(method, path, options);
    } catch (err) {
      if (!(err instanceof RateLimited)) throw err;
      const wait = err.retryAfter;
      if (!retries || wait === undefined || attempt >= MAX_RETRIES || waited + wait > MAX_RETRY_WAIT_S) throw err.error;
      waited += wait;
      await waitToRetry(wait);
    }
  }
}

/** A 429 answer: the error to show, and its `Retry-After` in seconds. */
class RateLimited extends Error {
  constructor(
    readonly error: ApiError,
    readonly retryAfter: number | undefined,
  ) {
    super(error.message);
  }
}

/** One exchange of {@link call}: throws {@link RateLimited} for a 429. */
async function callOnce<T>(method: string, path: string, options: RequestOptions): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
  else {
    const csrf = csrfToken();
    if (csrf !== "") headers["x-csrf-token"] = csrf;
  }
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.ifMatch !== undefined && options.ifMatch !== "") headers["if-match"] = options.ifMatch;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      cache: "no-store",
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
  } catch {
    throw new ApiError(0, "NETWORK", "erplink could not be reached; check that it is running and try again", "");
  }
  let envelope: unknown;
  try {
    envelope = await res.json();
  } catch {
    throw new ApiError(res.status, "BAD_RESPONSE", `erplink answered ${res.status} without a readable body`, res.headers.get("x-request-id") ?? "");
  }
  const env = envelope as {
    data?: T;
    meta?: { requestId?: string; nextPageToken?: string };
    error?: { code?: string; message?: string; requestId?: string; details?: ErrorDetail[] };
  };
  if (!res.ok || env.error !== undefined) {
    const e = env.error ?? {};
    const err = new ApiError(res.status, e.code ?? "ERROR", e.message ?? `erplink answered ${res.status}`, e.requestId ?? "", e.details ?? []);
    if (res.status === 401 && options.signingIn !== true) onSignedOut(err.message);
    // The CSRF cookie is not this session's (another page of this host, on
    // any port, can overwrite it): no call, sign-out included, can succeed,
    // so sign in again, which sets both cookies anew.
    else if (res.status === 403 && options.bearer === undefined && CSRF_REFUSAL.test(err.message)) onSignedOut(`${err.message}: sign in again`);
    if (res.status === 429) {
      const retryAfter = retryAfterOf(res);
      const write = method !== "GET" && options.idempotent !== true && options.signingIn !== true;
      // A write is not sent again blindly (it may be one of many changes): the admin decides, told how long to wait.
      const shown = write
        ? new ApiError(429, err.code, retryAfter === undefined ? "Too many changes at once: try again shortly" : `Too many changes at once: try again in ${retryAfter} s`, err.requestId, err.details)
        : err;
      throw new RateLimited(shown, retryAfter);
    }
    throw err;
  }
  return {
    data: env.data as T,
    requestId: env.meta?.requestId ?? "",
    ...(env.meta?.nextPageToken === undefined ? {} : { nextPageToken: env.meta.nextPageToken }),
  };
}

/** Every page of a list call (`GET path`), concatenated: 500 a page. */
export async function listAll<T>(path: string): Promise<T[]> {
  const out: T[] = [];
  let token = "";
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page: ApiResult<T[]> = await call<T[]>("GET", `${path}${sep}page_size=500${token === "" ? "" : `&page_token=${encodeURIComponent(token)}`}`);
    out.push(...page.data);
    token = page.nextPageToken ?? "";
  } while (token !== "");
  return out;
}

/** The admin calls the dashboard makes, typed. */
export const api = {
  /** Exchanges a key for a cookie session; the key is sent once and kept nowhere. */
  signIn: (key: string) => call<Session>("POST", "/admin/sessions?cookie=true", { bearer: key, signingIn: true }),
  /** Ends the calling session (the server clears the cookies). */
  signOut: () => call<Session>("DELETE", "/admin/sessions/current"),
  /** Whether the cookie still names a live session (any cheap authenticated read). */
  sessions: () => call<Session[]>("GET", "/admin/sessions?page_size=50"),
  listSystems: (pageToken = "") =>
    call<System[]>("GET", `/admin/systems?page_size=500${pageToken === "" ? "" : `&page_token=${encodeURIComponent(pageToken)}`}`),
  createSystem: (system: { name: string; description: string }) => call<System>("POST", "/admin/systems", { body: system }),
  deleteSystem: (id: string, etag?: string) => call<System>("DELETE", `/admin/systems/${encodeURIComponent(id)}`, { ifMatch: etag }),
};
