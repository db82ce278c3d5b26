/**
 * Preloaded into an erplink process under test (`NODE_OPTIONS="--import tsx
 * --import <this file>"`) so that it can reach nothing beyond 127.0.0.1 and
 * ::1: a name other than `localhost` does not resolve (ENOTFOUND) and a
 * connection to any other address is refused (ECONNREFUSED), as a sandbox
 * without a network would answer. For suites that let a generator invent
 * back-end URLs (Schemathesis creates instances at `https://0.com` or at
 * random IP addresses): the connection test and the catalog then fail as
 * they would against an unreachable back end, and nothing leaves the host.
 */
import dns from "node:dns";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

function isLoopback(host: string): boolean {
  const ip = host.replace(/^\[|\]$/g, "");
  return ip === "::1" || /^127\./.test(ip) || /^::ffff:127\./i.test(ip);
}

function allowed(host: string): boolean {
  return host === "localhost" || (net.isIP(host.replace(/^\[|\]$/g, "")) !== 0 && isLoopback(host));
}

function refusal(code: "ENOTFOUND" | "ECONNREFUSED", host: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException & { hostname?: string } = new Error(
    `${code === "ENOTFOUND" ? "getaddrinfo" : "connect"} ${code} ${host} (loopback-only test process)`,
  );
  err.code = code;
  err.syscall = code === "ENOTFOUND" ? "getaddrinfo" : "connect";
  err.hostname = host;
  return err;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address?: unknown, family?: number) => void;

const realLookup = dns.lookup;
const patchedLookup = function (hostname: string, options: unknown, callback?: LookupCallback) {
  const cb = (typeof options === "function" ? options : callback) as LookupCallback;
  if (allowed(hostname)) return (realLookup as (...args: unknown[]) => unknown).call(dns, hostname, options, callback);
  process.nextTick(() => cb(refusal("ENOTFOUND", hostname)));
  return {};
};
(dns as { lookup: unknown }).lookup = patchedLookup;

const realPromisesLookup = dns.promises.lookup;
(dns.promises as { lookup: unknown }).lookup = async (hostname: string, options?: unknown) => {
  if (!allowed(hostname)) throw refusal("ENOTFOUND", hostname);
  return (realPromisesLookup as (...args: unknown[]) => unknown).call(dns.promises, hostname, options);
};

// Addresses given as literals skip the lookup: refuse them at connect.
const normalize = (net as unknown as { _normalizeArgs(args: unknown[]): [{ host?: string; path?: string }, unknown] })._normalizeArgs;
const realConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  // net.connect() and tls.connect() pass their arguments already normalized, as one array.
  const [options] = Array.isArray(args[0]) ? (args[0] as [{ host?: string; path?: string }]) : normalize(args);
  const host = options.host ?? "localhost";
  if (options.path === undefined && net.isIP(host) !== 0 && !isLoopback(host)) {
    process.nextTick(() => this.destroy(refusal("ECONNREFUSED", host)));
    return this;
  }
  return (realConnect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;

syncBuiltinESMExports();
