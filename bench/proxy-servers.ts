/**
 * The servers of `bench/proxy.ts` that are not erplink, each run as its own
 * process so that none shares an event loop (or a core's accounting) with
 * another or with the load generator:
 *
 *   node --import tsx bench/proxy-servers.ts backend
 *   node --import tsx bench/proxy-servers.ts bare <back-end port>
 *
 * Each listens on 127.0.0.1 on an ephemeral port and prints `listening
 * <port>` on stdout once it does; it stops on SIGTERM or when its stdin
 * closes (so that it never outlives the benchmark).
 *
 * - `backend`: the OData back end of `./proxy-backend.ts`; `GET
 *   /__bench/counts` (no credentials) answers what it has counted.
 * - `bare`: the floor erplink is compared with, a bare Fastify proxy with
 *   `@fastify/reply-from` (undici): `GET /odata/bench/<service>/…` is sent
 *   to `<back end>/odata/<service>/…` with the back end's basic credentials
 *   in place of the client's and a `Forwarded` header, and the answer
 *   streamed back. No logging, no checks: what any Node proxy costs.
 */
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import replyFrom from "@fastify/reply-from";
import { BACKEND_AUTHORIZATION, PROXIED_PREFIX, startBackend } from "./proxy-backend.js";

async function bare(backendPort: number): Promise<{ port: number; close(): Promise<void> }> {
  const app = Fastify({ logger: false });
  await app.register(replyFrom, {
    base: `http://127.0.0.1:${backendPort}`,
    // As many upstream connections as the clients bring, kept alive.
    undici: { connections: 128, pipelining: 1, keepAliveTimeout: 120_000 },
  });
  app.get(`${PROXIED_PREFIX}/*`, (req, reply) => {
    const target = `/odata${req.url.slice(PROXIED_PREFIX.length)}`;
    return reply.from(target, {
      rewriteRequestHeaders: (_req, headers) => ({
        ...headers,
        authorization: BACKEND_AUTHORIZATION,
        forwarded: `for="${req.ip}";proto=http`,
      }),
    });
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
}

const [role, arg] = process.argv.slice(2);
const server =
  role === "backend" ? await startBackend({ countsPath: "/__bench/counts" }) : role === "bare" ? await bare(Number(arg)) : undefined;
if (server === undefined) {
  process.stderr.write("usage: proxy-servers.ts backend | bare <back-end port>\n");
  process.exit(2);
}
const stop = () => void server.close().finally(() => process.exit(0));
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();
process.stdout.write(`listening ${server.port}\n`);
