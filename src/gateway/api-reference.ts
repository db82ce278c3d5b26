/**
 * The API reference: the OpenAPI document at `/api-reference/openapi.json`
 * and Swagger UI under `/api-reference/`.
 *
 * The page shares the dashboard's origin, so a script running there could
 * read the dashboard's CSRF cookie and call `/admin` with the browser's
 * session: every answer under `/api-reference` (the page, Swagger UI's
 * files, the document, errors) carries a strict Content-Security-Policy
 * (Swagger UI's own files only: no inline or eval'd script, no inline style,
 * nothing from another origin, never framed), `nosniff` and `no-referrer`.
 */
import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { pagePathOf } from "./page-path.js";

/**
 * The style element Swagger UI's standalone preset renders in its top bar
 * logo (an SVG with `<style>`), allowed by its hash so that the page loads
 * without a policy violation; the rule only colours the logo.
 */
const SWAGGER_LOGO_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";

/** The API reference's Content-Security-Policy. */
export const API_REFERENCE_CSP =
  `default-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self' ${SWAGGER_LOGO_STYLE}; img-src 'self' data:; font-src 'self' data:; ` +
  "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";

/** Headers on every API reference answer. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": API_REFERENCE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** Whether a request URL is `/api-reference` or below it, as the router reads paths (up to the first `?` or `#`, percent-decoded). */
function underApiReference(url: string): boolean {
  // Most requests: a path whose first character decodes to anything but `a` (only `a` or a percent-escape can).
  const first = url.charCodeAt(1);
  if (first !== 97 /* a */ && first !== 37 /* % */) return false;
  if (!url.startsWith("/api-reference") && !url.includes("%")) return false;
  return /^\/api-reference(?:\/|$)/.test(pagePathOf(url));
}

/**
 * The security headers of an answer to `url`: the API reference's for a URL
 * under /api-reference, else undefined. Set by the gateway's root onSend hook,
 * and by its framework-error handler on answers sent before routing, which
 * skip the hooks.
 */
export function apiReferenceHeaders(url: string): Readonly<Record<string, string>> | undefined {
  return underApiReference(url) ? SECURITY_HEADERS : undefined;
}

/** Registers the OpenAPI document and Swagger UI under `/api-reference`. */
export async function registerApiReference(app: FastifyInstance, openapi: object): Promise<void> {
  // The security headers are set by the gateway's one root onSend hook
  // (`apiReferenceHeaders`, src/gateway/app.ts), registered before these
  // plugins: Swagger UI's routes get them, and so do the gateway's 404 and
  // 405 answers for paths below /api-reference.
  app.get("/api-reference/openapi.json", async () => openapi);
  await app.register(fastifySwagger, { mode: "static", specification: { document: openapi as never } });
  await app.register(fastifySwaggerUi, {
    routePrefix: "/api-reference",
    uiConfig: { url: "/api-reference/openapi.json", deepLinking: true, validatorUrl: null },
    // Swagger UI's own hook sets the same policy on its routes.
    staticCSP: API_REFERENCE_CSP,
  });
}
