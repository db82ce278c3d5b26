/**
 * Typed SAP Cloud SDK clients generated from a `$metadata` document, for the
 * e2e suites: `@sap-cloud-sdk/generator`'s programmatic `generate()` writes
 * ESM TypeScript (`generateESM`, `.js` import specifiers that tsx maps to the
 * `.ts` files) into `.tmp/sdk-clients/<hash>/` (git-ignored), where `<hash>`
 * covers the metadata, the service name, the generator's version and this
 * recipe. A second run with the same metadata imports the cached client
 * (0.1–0.3 s, tsx compiling it); a cold generation of the V4 and V2 clients
 * takes about 1.8 s, most of it loading the generator (ts-morph, prettier),
 * 0.2–0.5 s per service after that.
 *
 * The generated files import `@sap-cloud-sdk/util` and `bignumber.js`,
 * which npm installed nested under the SDK packages (the overrides pin every
 * `@sap-cloud-sdk/*` package, so nothing is hoisted). The client directory
 * therefore gets a `node_modules/` of symlinks to the copies the matching
 * `@sap-cloud-sdk/odata-v2` or `-v4` package itself resolves.
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, relative, sep, posix } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Bumped whenever the way clients are generated or linked changes (invalidates the cache). */
const RECIPE = "sdk-client-v1";

/** Where generated clients are kept (git-ignored through `.tmp/`). */
export const SDK_CLIENTS_DIR = fileURLToPath(new URL("../../.tmp/sdk-clients", import.meta.url));

/** Bare modules the generated code imports besides the SDK package itself; linked from the SDK's own copies. */
const LINKED_MODULES = ["@sap-cloud-sdk/util", "bignumber.js", "moment"] as const;

/** Options of {@link loadSdkClient}. */
export interface SdkClientOptions {
  /** The service's `$metadata` document (EDMX, OData V2 or V4), as clients are served it. */
  readonly metadata: string;
  /** The service name (`API_BUSINESS_PARTNER`): the generated directory and service factory derive from it. */
  readonly serviceName: string;
  /**
   * The generated default base path of every request builder (`"/"`: the
   * destination's URL is the service root). SAP's own clients carry the
   * service path here (`/sap/opu/odata/sap/API_BUSINESS_PARTNER`).
   */
  readonly basePath?: string;
}

/** A loaded client. */
export interface SdkClient {
  /** The OData version the metadata declares. */
  readonly odataVersion: "v2" | "v4";
  /** The generated client's directory (`.tmp/sdk-clients/<hash>/client/<service>`). */
  readonly dir: string;
  /** True when this call generated the client, false when it came from the cache. */
  readonly generated: boolean;
  /** Milliseconds spent generating (0 from the cache). */
  readonly generationMs: number;
  /**
   * The generated module (`index.ts`): the service factory (`apiBusinessPartner()`),
   * entity classes, `batch`, `changeset`. Typed loosely: its path is only known at run time.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly module: Record<string, any>;
}

/** The OData version an EDMX document declares (`Version="1.0"` is V2, `"4.0"` V4). */
export function odataVersionOf(metadata: string): "v2" | "v4" {
  const m = /<edmx:Edmx\b[^>]*\bVersion="([^"]+)"/.exec(metadata);
  if (m === null) throw new Error("not an EDMX document: no <edmx:Edmx Version=…>");
  if (m[1] === "4.0" || m[1] === "4.01") return "v4";
  if (m[1] === "1.0") return "v2";
  throw new Error(`unsupported EDMX version ${m[1]}`);
}

/** The directories the generated code's bare imports must resolve to. */
function linkTargets(odataVersion: "v2" | "v4"): Record<string, string> {
  const sdkEntry = createRequire(import.meta.url).resolve(`@sap-cloud-sdk/odata-${odataVersion}`);
  const fromSdk = createRequire(sdkEntry);
  const targets: Record<string, string> = {};
  for (const name of LINKED_MODULES) targets[name] = dirname(fromSdk.resolve(`${name}/package.json`));
  return targets;
}

function generatorVersion(): string {
  const require = createRequire(import.meta.url);
  return (require("@sap-cloud-sdk/generator/package.json") as { version: string }).version;
}

/** Bare module specifiers imported by the `.ts` files of a directory. */
async function bareImports(dir: string): Promise<Set<string>> {
  const found = new Set<string>();
  for (const name of await readdir(dir)) {
    if (!name.endsWith(".ts")) continue;
    const text = await readFile(join(dir, name), "utf8");
    for (const m of text.matchAll(/\bfrom\s+'([^'.][^']*)'/g)) found.add(m[1]!);
  }
  return found;
}

/**
 * Generates (or takes from the cache) the typed client of a service and
 * imports it. Concurrent runs are safe: each generates into its own
 * temporary directory and renames it into place; the first rename wins.
 */
export async function loadSdkClient(options: SdkClientOptions): Promise<SdkClient> {
  const odataVersion = odataVersionOf(options.metadata);
  const basePath = options.basePath ?? "/";
  const targets = linkTargets(odataVersion);
  const hash = createHash("sha256")
    .update(JSON.stringify([RECIPE, generatorVersion(), options.serviceName, basePath, targets]))
    .update("\0")
    .update(options.metadata)
    .digest("hex")
    .slice(0, 20);
  const root = join(SDK_CLIENTS_DIR, hash);
  const clientDir = join(root, "client", options.serviceName);
  const done = join(root, "done.json");
  let generated = false;
  let generationMs = 0;

  if (!existsSync(done)) {
    const started = Date.now();
    const tmp = join(SDK_CLIENTS_DIR, `.${hash}-${process.pid}-${randomBytes(4).toString("hex")}`);
    try {
      await generateInto(tmp, options.serviceName, options.metadata, basePath, odataVersion, targets);
      await mkdir(SDK_CLIENTS_DIR, { recursive: true });
      try {
        await rename(tmp, root);
        generated = true;
      } catch (err) {
        // Another run put the same client in place first: use that one.
        if (!existsSync(done)) throw err;
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    generationMs = Date.now() - started;
  }
  const module = (await import(pathToFileURL(join(clientDir, "index.ts")).href)) as Record<string, unknown>;
  return { odataVersion, dir: clientDir, generated, generationMs, module };
}

async function generateInto(
  dir: string,
  serviceName: string,
  metadata: string,
  basePath: string,
  odataVersion: "v2" | "v4",
  targets: Record<string, string>,
): Promise<void> {
  const inputDir = join(dir, "input");
  const edmx = join(inputDir, `${serviceName}.edmx`);
  const optionsPerService = join(inputDir, "options-per-service.json");
  await mkdir(inputDir, { recursive: true });
  await writeFile(edmx, metadata);
  // Keyed by the input's path relative to the working directory, as the generator looks it up.
  const key = relative(process.cwd(), edmx).split(sep).join(posix.sep);
  await writeFile(
    optionsPerService,
    JSON.stringify({ [key]: { directoryName: serviceName, packageName: serviceName.toLowerCase().replace(/_/g, "-"), basePath } }),
  );
  // Loaded only on a cache miss: the generator (ts-morph, prettier) takes a while to import.
  const { generate } = await import("@sap-cloud-sdk/generator");
  await generate({
    input: edmx,
    outputDir: join(dir, "client"),
    optionsPerService,
    generateESM: true,
    overwrite: true,
    transpile: false,
    packageJson: false,
    readme: false,
    skipValidation: false,
  });
  const clientDir = join(dir, "client", serviceName);
  const own = `@sap-cloud-sdk/odata-${odataVersion}`;
  const unknown = [...(await bareImports(clientDir))].filter((s) => s !== own && !(s in targets));
  if (unknown.length > 0) throw new Error(`generated client imports modules this helper does not link: ${unknown.join(", ")}`);
  for (const [name, target] of Object.entries(targets)) {
    const link = join(dir, "node_modules", name);
    await mkdir(dirname(link), { recursive: true });
    await symlink(target, link, "dir");
  }
  await writeFile(join(dir, "done.json"), JSON.stringify({ recipe: RECIPE, serviceName, odataVersion, basePath, generatedAt: new Date().toISOString() }));
}
