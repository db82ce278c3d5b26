/**
 * The OData data path, `/odata/<instance>/<service>/<resource path>?<query>`,
 * as a pipeline of named stages over one request (Envoy's filter chain,
 * Kong's phases):
 *
 *   authenticate -> resolve instance -> client CSRF -> analyze -> authorize -> admit -> forward -> record
 *
 * (client CSRF: a write's `X-CSRF-Token` must be erplink's; a `HEAD` with
 * `X-CSRF-Token: Fetch` is answered there, after it is counted, and goes no
 * further: `./client-csrf.ts`.)
 * Each stage is its own module in this folder; a refusal is a
 * {@link GatewayError} (answered in the envelope by the gateway's error
 * handler), and every stage fills in the request log's facts (`./record.ts`),
 * which the gateway writes when the exchange ends (and not before the
 * handler has returned). The caches (`$metadata` models, back-end
 * sessions) and the upstream connections come from
 * `./resources.ts`, created once per gateway and shared with the diagnostics.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { admit, count } from "./admit.js";
import { analyze } from "./analyze.js";
import { authenticate } from "./authenticate.js";
import { authorize } from "./authorize.js";
import { clientCsrf, FETCH_ANSWER_HEADERS } from "./client-csrf.js";
import { forward } from "./forward.js";
import type { DataKey, DataLogFacts, DataPort } from "./ports.js";
import { receive } from "./record.js";
import { resolveInstance } from "./resolve-instance.js";
import type { DataResources } from "./resources.js";

export type { DataInstance, DataKey, DataLogFacts, DataPort } from "./ports.js";

/** Options of {@link registerDataRoutes}. */
export interface DataRouteOptions<K extends DataKey> {
  readonly port: DataPort<K>;
  /** The sessions, `$metadata` cache and connection pools (shared with the diagnostics). */
  readonly resources: DataResources;
  /** Where facts for the request log go. */
  readonly facts: WeakMap<object, DataLogFacts>;
  /** The base URL clients use (`ERPLINK_PUBLIC_URL`), if configured: the origin named to back ends. */
  readonly publicUrl?: string | undefined;
  /**
   * Called once the handler has returned or thrown, for every request that
   * reached it: an exchange whose client went away meanwhile is logged then,
   * with what was forwarded and how the back end answered.
   */
  readonly handled?: (req: FastifyRequest, reply: FastifyReply) => void;
}

/** The methods of the data path (MERGE: OData V2 updates). */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "MERGE"];

/** Registers the data routes in their own scope (bodies buffered for analysis, answers streamed). */
export async function registerDataRoutes<K extends DataKey>(app: FastifyInstance, options: DataRouteOptions<K>): Promise<void> {
  const { port } = options;
  const { sessions, metadata, analyses, forwarder, clientCsrf: tokens } = options.resources;
  const publicUrl = options.publicUrl === undefined ? undefined : new URL(options.publicUrl);

  await app.register(async (scope) => {
    // Bodies are buffered (within the body limit) so that they can be
    // authorized (deep inserts, binds, $batch parts) and sent once more when
    // the back end asks for a new CSRF or OAuth token.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));

    const { handled } = options;
    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      try {
        const incoming = receive(req, options.facts, publicUrl);
        const authenticated = await authenticate(incoming, port);
        const resolved = await resolveInstance(authenticated, port);
        if (clientCsrf(resolved, tokens, reply)) {
          await count(resolved, port, reply);
          return reply.code(200).headers(FETCH_ANSWER_HEADERS).send();
        }
        const analyzed = await analyze(resolved, port, metadata, analyses);
        const authorized = authorize(analyzed, port);
        const admitted = await admit(authorized, port, reply);
        await forward(admitted, { port, forwarder, sessions }, reply);
        return reply;
      } finally {
        handled?.(req, reply);
      }
    };
    scope.route({ method: METHODS, url: "/odata/:instance/:service", handler });
    scope.route({ method: METHODS, url: "/odata/:instance/:service/*", handler });
  });
}
