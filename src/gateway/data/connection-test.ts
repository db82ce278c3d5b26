/**
 * The connection test of an instance's back end, step by step, within one
 * time budget (the upstream timeout): `dns` (the host's addresses), `tcp`
 * (a connection to the first), `tls` (https: the handshake and the
 * certificate, verified as the data path's connections verify it), `oauth`
 * (OAuth 2.0 client credentials: a token fetched now, with the data path's
 * own token request), `http` (the status of `GET <service root>/$metadata`
 * with the instance's credentials, or of the base URL when no service is
 * named), `odata_version` (from the `$metadata` document or the version
 * headers) and `csrf` (with a service: the SAP CSRF token fetch the data path
 * makes before modifying requests). No step runs after a failing one; the
 * first failure is the answer's `error`, in words.
 *
 * Fresh sessions are used (not the data path's cached tokens), so that the
 * test says whether the credentials work now. Nothing secret is reported:
 * neither the credentials nor the tokens and cookies obtained, and of URLs
 * the back end names (redirects, token endpoints) only origin and path; a
 * back end quoting what erplink sent it (in `$metadata`, a challenge) finds
 * the secrets replaced by `[redacted]` in every detail, and of its headers
 * only a version number and a known scheme name are repeated.
 */
import dns from "node:dns";
import net from "node:net";
import tls from "node:tls";
import { create } from "@bufbuild/protobuf";
import {
  ConnectionTestSchema,
  ConnectionTestStepSchema,
  type ConnectionTest,
  type ConnectionTestStep,
} from "../../gen/erplink/admin/v1/diagnostics_pb.js";
import type { DiagnosedInstance } from "../../schema/diagnostics.js";
import { GatewayError } from "../errors.js";
import { parseMetadata } from "../odata/metadata.js";
import { UpstreamSessions, isTimeout } from "../upstream-session.js";
import { MetadataTooLarge, readMetadataText } from "./metadata-cache.js";
import type { ServiceRoot } from "./service-root.js";

/** Options of {@link testConnection}. */
export interface ConnectionTestOptions {
  /** The whole test's budget (ms): the data path's upstream timeout. */
  readonly timeoutMs: number;
}

/** A step's failure, its message for people. */
class StepFailure extends Error {}

/** Error codes of the network layer, in words. */
const CODES: Readonly<Record<string, string>> = {
  ENOTFOUND: "no such host",
  EAI_AGAIN: "the name server did not answer",
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "timed out",
  EPIPE: "connection closed",
  UND_ERR_SOCKET: "connection closed",
  UND_ERR_CONNECT_TIMEOUT: "connect timed out",
  DEPTH_ZERO_SELF_SIGNED_CERT: "the certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "a certificate in the chain is self-signed and not trusted",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the certificate's issuer is not trusted",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the certificate's issuer is not trusted",
  CERT_HAS_EXPIRED: "the certificate has expired",
  CERT_NOT_YET_VALID: "the certificate is not yet valid",
  ERR_TLS_CERT_ALTNAME_INVALID: "the certificate is for another host name",
};

/** `<words> (<code>)` for a Node or undici error, looking through `cause`. */
function words(err: unknown): string {
  let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (let i = 0; i < 3 && e !== undefined && e !== null; i++) {
    if (typeof e.code === "string") {
      return CODES[e.code] ? `${CODES[e.code]} (${e.code})` : typeof e.message === "string" ? `${e.message} (${e.code})` : e.code;
    }
    e = e.cause as typeof e;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Origin and path of a URL (no query, no credentials), for messages. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "(an unreadable URL)";
  }
}

/** Runs `body` within `ms`; rejects with a StepFailure naming the budget otherwise. */
function within<T>(ms: number, what: string, body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(new DOMException("timed out", "TimeoutError"));
      reject(new StepFailure(`${what} did not finish within the upstream timeout`));
    }, ms);
  });
  return Promise.race([body(controller.signal), timeout]).finally(() => clearTimeout(timer));
}

/** Opens a connection (TCP, or TLS over it), resolves with what it says about itself, and closes it. */
function connect(host: string, port: number, signal: AbortSignal, secure?: { servername: string | undefined }): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = secure
      ? tls.connect({ host, port, ...(secure.servername ? { servername: secure.servername } : {}), ALPNProtocols: ["http/1.1"] })
      : net.connect({ host, port });
    const fail = (err: unknown) => {
      socket.destroy();
      reject(err);
    };
    signal.addEventListener("abort", () => fail(signal.reason), { once: true });
    socket.once("error", fail);
    socket.once(secure ? "secureConnect" : "connect", () => {
      let detail = `connected to ${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
      if (secure) {
        const t = socket as tls.TLSSocket;
        const cert = t.getPeerCertificate();
        const name = (n: Record<string, unknown> | undefined) => String(n?.CN ?? n?.O ?? "?");
        detail = `${t.getProtocol() ?? "TLS"}, certificate for ${name(cert.subject as never)} issued by ${name(cert.issuer as never)}, valid until ${cert.valid_to}`;
      }
      socket.destroy();
      resolve(detail);
    });
  });
}

/** The `OData-Version` (V4) or `DataServiceVersion` (V2) an answer names, without parameters; only a version number is taken. */
function versionHeader(headers: Headers): string | undefined {
  const v = headers.get("odata-version") ?? headers.get("dataserviceversion");
  const version = v?.split(";")[0]!.trim();
  return version !== undefined && /^[0-9]{1,2}\.[0-9]{1,2}$/.test(version) ? version : undefined;
}

/** Authentication schemes a `WWW-Authenticate` challenge is named by in a step's detail (others are not repeated). */
const SCHEMES = new Map(["Basic", "Bearer", "Digest", "Negotiate", "NTLM", "DPoP", "HOBA", "Mutual", "SAML", "SCRAM-SHA-256"].map((s) => [s.toLowerCase(), s]));

/** Secrets shorter than this are not searched for in the outcome (they would match ordinary words). */
const MIN_SCRUBBED = 4;

/**
 * Replaces every secret of `secrets` (as is, and percent-encoded) in `text`
 * with `[redacted]`: the back end may quote what erplink sent it (its
 * `$metadata`, a redirect, a challenge), and the outcome never shows it.
 */
function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join("[redacted]");
  }
  return out;
}

/** Tests the back end of `instance` (and the service at `root`, if any). */
export async function testConnection(instance: DiagnosedInstance, root: ServiceRoot | undefined, options: ConnectionTestOptions): Promise<ConnectionTest> {
  const started = performance.now();
  const deadline = started + options.timeoutMs;
  const remaining = () => Math.max(1, Math.round(deadline - performance.now()));
  const url = root !== undefined ? root.urlOf("$metadata") : `${instance.baseUrl}/${instance.sapClient ? `?sap-client=${instance.sapClient}` : ""}`;
  const out = create(ConnectionTestSchema, { url: shown(url) });
  const steps: ConnectionTestStep[] = [];
  // What erplink holds for this back end, and the credentials of each Authorization header it sends (added as sent).
  const { password, token, clientSecret } = instance.credentials;
  const secrets = [password, token, clientSecret].filter((v): v is string => v !== undefined && v.length >= MIN_SCRUBBED);
  const sent = (authorization: string | undefined) => {
    const credential = authorization?.slice(authorization.indexOf(" ") + 1);
    for (const v of [authorization, credential]) if (v !== undefined && v.length >= MIN_SCRUBBED) secrets.push(v);
    secrets.sort((a, b) => b.length - a.length);
  };

  /** Runs one step; false when it failed (and the test stops). */
  const step = async (name: string, body: (signal: AbortSignal) => Promise<string | { ok: false; detail: string }>): Promise<boolean> => {
    const t0 = performance.now();
    let ok = true;
    let detail: string;
    try {
      const result = await within(remaining(), name === "dns" ? "the name lookup" : `the ${name} step`, body);
      if (typeof result === "string") detail = result;
      else ({ ok, detail } = result);
    } catch (err) {
      ok = false;
      // The data path's own refusals (the OAuth token request's) are already in words.
      detail = err instanceof StepFailure || err instanceof GatewayError ? err.message : words(err);
    }
    detail = scrub(detail, secrets);
    steps.push(create(ConnectionTestStepSchema, { name, ok, durationMs: Math.round((performance.now() - t0) * 1000) / 1000, detail }));
    if (!ok && out.error === "") out.error = `${name}: ${detail}`;
    return ok;
  };

  const target = new URL(url);
  const host = target.hostname.replace(/^\[|\]$/g, "");
  const secure = target.protocol === "https:";
  const port = Number(target.port || (secure ? 443 : 80));
  let addresses = [host];
  let address = host;
  const run = async (): Promise<void> => {
    const resolved = await step("dns", async () => {
      if (net.isIP(host) !== 0) return `${host} is an IP address: nothing to resolve`;
      let found: dns.LookupAddress[];
      try {
        found = await dns.promises.lookup(host, { all: true });
      } catch (err) {
        throw new StepFailure(`cannot resolve ${host}: ${words(err)}`);
      }
      addresses = found.map((a) => a.address);
      return `resolved ${host} to ${addresses.join(", ")}`;
    });
    if (!resolved) return;
    const shownAddress = (a: string) => `${net.isIPv6(a) ? `[${a}]` : a}:${port}`;
    // Each address in turn, as the data path's connections try them (a host may listen on one family only).
    const tcp = await step("tcp", async (signal) => {
      let first: string | undefined;
      for (const candidate of addresses) {
        try {
          const detail = await connect(candidate, port, signal);
          address = candidate;
          return detail;
        } catch (err) {
          if (isTimeout(err) || signal.aborted) throw err;
          first ??= `cannot connect to ${shownAddress(candidate)}: ${words(err)}`;
        }
      }
      throw new StepFailure(`${first}${addresses.length > 1 ? ` (nor to any other address of ${host})` : ""}`);
    });
    if (!tcp) return;
    if (secure) {
      const handshake = await step("tls", async (signal) => {
        try {
          return await connect(address, port, signal, { servername: net.isIP(host) === 0 ? host : undefined });
        } catch (err) {
          if (isTimeout(err)) throw err;
          throw new StepFailure(`the TLS handshake with ${host} failed: ${words(err)}`);
        }
      });
      if (!handshake) return;
    }
    // The data path's own credential handling, in sessions of the test's own.
    const sessions = new UpstreamSessions({ timeoutMs: remaining() });
    let authorization: string | undefined;
    if (instance.credentials.type === "oauth2_client_credentials") {
      const token = await step("oauth", async () => {
        authorization = await sessions.authorization(instance);
        sent(authorization);
        return `obtained an access token from ${shown(instance.credentials.tokenUrl ?? "")}`;
      });
      if (!token) return;
    } else {
      authorization = await sessions.authorization(instance);
      sent(authorization);
    }
    let res: Response | undefined;
    let text = "";
    const http = await step("http", async (signal) => {
      const headers: Record<string, string> = { accept: root !== undefined ? "application/xml" : "application/json" };
      if (authorization !== undefined) headers.authorization = authorization;
      const t0 = performance.now();
      try {
        res = await fetch(url, { headers, redirect: "manual", signal });
        text = root !== undefined && res.ok ? await readMetadataText(res) : (await res.body?.cancel(), "");
      } catch (err) {
        if (err instanceof MetadataTooLarge) throw new StepFailure(`${err.message} (HTTP ${res?.status} from GET ${shown(url)})`);
        if (isTimeout(err)) throw new StepFailure(`GET ${shown(url)} was not answered within the upstream timeout`);
        throw new StepFailure(`GET ${shown(url)} failed: ${words(err)}`);
      }
      const ms = Math.round(performance.now() - t0);
      const status = res.status;
      out.httpStatus = status;
      const said = `HTTP ${status} from GET ${shown(url)} in ${ms} ms`;
      if (status === 401 || status === 407) {
        const scheme = SCHEMES.get(res.headers.get("www-authenticate")?.split(/[\s,]/)[0]?.toLowerCase() ?? "");
        return { ok: false, detail: `the back end refused the credentials: ${said}${scheme ? ` (it asks for ${scheme})` : ""}` };
      }
      if (status === 403) return { ok: false, detail: `the back end refused access: ${said}` };
      if (status >= 300 && status < 400) {
        const location = res.headers.get("location");
        return { ok: false, detail: `${said}, redirecting to ${location ? shown(new URL(location, url).href) : "nowhere"} (erplink does not follow redirects)` };
      }
      if (status >= 500) return { ok: false, detail: `the back end failed: ${said}` };
      if (root !== undefined && status !== 200) return { ok: false, detail: `the service's $metadata is not there: ${said}` };
      return root === undefined && status >= 400 ? `${said} (the base URL is reachable; name a service to fetch its $metadata)` : said;
    });
    if (!http || res === undefined) return;
    const answered: Response = res;
    const version = await step("odata_version", async () => {
      const header = versionHeader(answered.headers);
      if (root === undefined) {
        if (header === undefined) return "the base URL names no OData version; name a service to read its $metadata";
        out.odataVersion = header;
        return `OData ${header} (from the answer's version header)`;
      }
      let model;
      try {
        model = parseMetadata(text);
      } catch (err) {
        return { ok: false, detail: `the service's $metadata could not be read: ${(err as Error).message}` };
      }
      out.odataVersion = header ?? model.version;
      return `OData ${out.odataVersion}: $metadata with ${model.entitySets.length} entity sets, ${model.singletons.length} singletons, ${
        model.functionImports.length + model.actionImports.length
      } function and action imports`;
    });
    if (!version || root === undefined) return;
    await step("csrf", async (signal) => {
      const headers: Record<string, string> = { "x-csrf-token": "Fetch", accept: "application/json" };
      if (authorization !== undefined) headers.authorization = authorization;
      const csrfUrl = root.urlOf("");
      let answer: Response;
      try {
        answer = await fetch(csrfUrl, { headers, redirect: "manual", signal });
        await answer.body?.cancel();
      } catch (err) {
        if (isTimeout(err)) throw new StepFailure(`the CSRF token fetch (GET ${shown(csrfUrl)}) was not answered within the upstream timeout`);
        throw new StepFailure(`the CSRF token fetch (GET ${shown(csrfUrl)}) failed: ${words(err)}`);
      }
      if (!answer.ok) return { ok: false, detail: `the back end answered HTTP ${answer.status} to the CSRF token fetch (GET ${shown(csrfUrl)})` };
      const token = answer.headers.get("x-csrf-token");
      if (token === null || token.trim() === "" || token.trim().toLowerCase() === "required") {
        return "no CSRF token issued: the back end does not use them (modifying requests are sent without one)";
      }
      out.csrfToken = true;
      const cookies = answer.headers.getSetCookie().length;
      return `obtained a CSRF token${cookies > 0 ? ` with ${cookies} session cookie${cookies === 1 ? "" : "s"}` : ""}`;
    });
  };
  await run();
  out.steps = steps;
  out.ok = steps.every((s) => s.ok);
  out.durationMs = Math.round((performance.now() - started) * 1000) / 1000;
  return out;
}
