/**
 * The dashboard's routes: the Preact app in `src/dashboard/`, bundled by
 * esbuild in process on the first request (nothing is built at install and
 * no bundle is committed) and served from memory under `/dashboard/`.
 *
 * Assets get content-hashed names and are cached for a year; `index.html`
 * is never cached, so a new bundle is picked up on the next load. Every
 * dashboard answer (errors included) carries a strict Content-Security-Policy
 * with no inline script or style, `nosniff` and `no-referrer`. The app talks
 * only to `/admin` (session cookie + CSRF header): it adds no API of its own.
 */
import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";
import { GatewayError } from "./errors.js";
import { pagePathOf } from "./page-path.js";

/** The dashboard's Content-Security-Policy: its own scripts, styles and API only. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Headers on every dashboard answer. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** One built file, served from memory. */
interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

/** The built app: hashed assets by name, and the page that loads them. */
interface Bundle {
  readonly assets: ReadonlyMap<string, Asset>;
  readonly index: string;
}

/** The app's entry point. */
const ENTRY = fileURLToPath(new URL("../dashboard/main.tsx", import.meta.url));

/** Paths under `/dashboard/` that look like files: never the page (a missing asset is a 404, not HTML). */
const ASSET_LIKE = /\.[A-Za-z0-9]{1,8}$/;

const TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Bundles the app with esbuild into memory (about 50 ms). */
async function build(): Promise<Bundle> {
  // Imported here: only a server that serves the dashboard loads esbuild.
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    entryPoints: { app: ENTRY },
    bundle: true,
    write: false,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: false,
    jsx: "automatic",
    jsxImportSource: "preact",
    entryNames: "[name]-[hash]",
    outdir: "/dashboard-assets",
    logLevel: "silent",
    legalComments: "none",
  });
  const assets = new Map<string, Asset>();
  let script = "";
  let style = "";
  for (const file of result.outputFiles) {
    const ext = path.extname(file.path);
    const type = TYPES[ext];
    if (type === undefined) continue;
    const name = path.basename(file.path);
    assets.set(name, { body: Buffer.from(file.contents), type });
    if (ext === ".js") script = name;
    else style = name;
  }
  const index = [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>erplink dashboard</title>",
    style === "" ? "" : `<link rel="stylesheet" href="/dashboard/assets/${style}">`,
    `<script type="module" src="/dashboard/assets/${script}"></script>`,
    "</head>",
    "<body>",
    '<div id="app"></div>',
    '<noscript>The erplink dashboard needs JavaScript. The same tasks can be done with the admin API (see /api-reference).</noscript>',
    "</body>",
    "</html>",
    "",
  ]
    .filter((line) => line !== "")
    .join("\n");
  return { assets, index };
}

/**
 * Whether a request URL is `/dashboard` or below it, as the router reads
 * paths (up to the first `?` or `#`, percent-decoded: `/%64ashboard/` is
 * served the page too, and so is `/%64ashboard/x#%zz`).
 */
function underDashboard(url: string): boolean {
  // Most requests: a path whose first character decodes to anything but `d` (only `d` or a percent-escape can).
  const first = url.charCodeAt(1);
  if (first !== 100 /* d */ && first !== 37 /* % */) return false;
  return /^\/dashboard(?:\/|$)/.test(pagePathOf(url));
}

/**
 * The security headers of an answer to `url`: the dashboard's for a URL
 * under /dashboard, else undefined. The gateway's root onSend hook sets them on
 * every answer, and its framework-error handler on answers sent before
 * routing (a path that is not valid percent-encoding), which skip the hooks.
 */
export function dashboardHeaders(url: string): Readonly<Record<string, string>> | undefined {
  return underDashboard(url) ? SECURITY_HEADERS : undefined;
}

/** Registers `/dashboard`, `/dashboard/` and everything under it. */
export async function registerDashboard(app: FastifyInstance): Promise<void> {
  let bundle: Promise<Bundle> | undefined;
  // Built once, on first use; a failed build is retried on the next request.
  const current = (): Promise<Bundle> => {
    bundle ??= build().catch((err: unknown) => {
      bundle = undefined;
      throw err;
    });
    return bundle;
  };
  const sendIndex = async (reply: FastifyReply) => {
    const { index } = await current();
    return reply
      .header("cache-control", "no-store")
      .header("etag", `"${createHash("sha256").update(index).digest("base64url").slice(0, 16)}"`)
      .type("text/html; charset=utf-8")
      .send(index);
  };

  // The security headers of every answer under /dashboard, its own routes'
  // and the gateway's 404 and 405 answers alike, are set by the gateway's
  // one root onSend hook (`dashboardHeaders`, src/gateway/app.ts).
  await app.register(async (scope) => {
    scope.get("/dashboard", async (req, reply) => {
      const query = req.url.indexOf("?");
      return reply.redirect(query === -1 ? "/dashboard/" : `/dashboard/${req.url.slice(query)}`, 308);
    });
    scope.get("/dashboard/", async (_req, reply) => sendIndex(reply));
    scope.get("/dashboard/assets/:name", async (req, reply) => {
      const { name } = req.params as { name: string };
      const asset = (await current()).assets.get(name);
      if (asset === undefined) throw new GatewayError(404, `no dashboard asset ${JSON.stringify(name.slice(0, 100))}`);
      return reply
        .header("cache-control", "public, max-age=31536000, immutable")
        .type(asset.type)
        .send(asset.body);
    });
    // Client-side routes (`/dashboard/systems`) load the page; file-like paths do not.
    scope.get("/dashboard/*", async (req, reply) => {
      const rest = (req.params as { "*": string })["*"];
      if (ASSET_LIKE.test(rest) || rest.startsWith("assets/")) {
        throw new GatewayError(404, `no route for GET ${req.url.split("?")[0]!.slice(0, 200)}`);
      }
      return sendIndex(reply);
    });
  });
}
