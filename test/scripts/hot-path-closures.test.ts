/**
 * The hot paths make no named closure per request. tsx (how `npm start`
 * runs erplink) compiles with esbuild's `keepNames`, which wraps every
 * arrow or function expression bound to a name (a `const`, an object
 * literal's member) in `__name(…)`, an `Object.defineProperty` each time the
 * closure is made: about 0.5 µs apiece, 1.8 % of the data path's main thread
 * with them on the hot paths (bench/README.md). Here each hot module is compiled as
 * tsx compiles it, and every `__name` call below the module's top level must
 * be one of those listed as made once (at start, per route, per batch).
 */
import { readFileSync } from "node:fs";
import { transformSync } from "esbuild";
import { suite } from "uvu";
import * as assert from "uvu/assert";

const test = suite("scripts: no named closure per request on the hot paths");

/** Hot modules, with the names their functions may give to closures they make once. */
const HOT: Readonly<Record<string, readonly string[]>> = {
  "src/gateway/data/admit.ts": [],
  "src/gateway/data/analysis-cache.ts": [],
  "src/gateway/data/analyze.ts": [],
  "src/gateway/data/authenticate.ts": [],
  "src/gateway/data/authorize.ts": [],
  "src/gateway/data/exchange.ts": [],
  "src/gateway/data/forward.ts": [],
  "src/gateway/data/forwarder.ts": [],
  "src/gateway/data/headers.ts": [],
  "src/gateway/data/record.ts": [],
  "src/gateway/data/resolve-instance.ts": [],
  // The route's handler, made when the route is registered.
  "src/gateway/data/route.ts": ["handler"],
  "src/gateway/data/verify.ts": [],
  "src/gateway/ext-authz/attributes.ts": [],
  "src/gateway/h2-stream.ts": [],
  "src/gateway/ext-authz/service.ts": [],
  "src/gateway/metrics.ts": [],
  "src/gateway/rpc/direct.ts": [],
  // The router's recording of each method, once at start.
  "src/gateway/rpc/unary.ts": ["add", "parse", "serialize"],
  "src/services/authorization-service.ts": [],
  "src/services/batched-uses.ts": [],
  // An instance's service paths, made when the instance is read from the store.
  "src/services/data-plane.ts": ["servicePath"],
  "src/services/key-registry.ts": [],
  "src/services/log-writer.ts": [],
  "src/services/permissions.ts": [],
  "src/services/rate-limiter.ts": [],
  // Per flush (a second), not per request.
  "src/services/rollups.ts": ["distinct", "deltas"],
  // Per query or trim.
  "src/store/memory-request-log.ts": ["take"],
};

/** The names given by `__name` calls below a module's top level, as tsx compiles it. */
function innerNames(file: string): string[] {
  const { code } = transformSync(readFileSync(file, "utf8"), { loader: "ts", format: "esm", keepNames: true, sourcefile: file });
  const names: string[] = [];
  for (const line of code.split("\n")) {
    // esbuild indents what is inside a function or class; `__name(this, …)` names a class, once.
    if (!/^\s/.test(line) || /__name\(this,/.test(line)) continue;
    // `const g = /* @__PURE__ */ __name((…) => …`, `g: /* @__PURE__ */ __name(…`, `__name(g, "g")` (a function declaration).
    const m = /(?:(?:const|let|var)\s+([\w$]+)\s*=|([\w$]+):)\s*\/\* @__PURE__ \*\/ __name\(|^\s*__name\(([\w$]+),/.exec(line);
    if (m !== null) names.push(m[1] ?? m[2] ?? m[3]!);
    else if (line.includes("__name(")) names.push(line.trim());
  }
  return names;
}

test("esbuild with keepNames names an arrow bound to a const inside a function (the check can fail)", () => {
  const { code } = transformSync("export function f(x: number) { const g = (y: number) => x + y; return g(1); }", { loader: "ts", keepNames: true });
  assert.match(code, /__name\(/);
});

for (const [file, allowed] of Object.entries(HOT)) {
  test(`${file}: no closure named per call`, () => {
    const named = innerNames(file).filter((n) => !allowed.includes(n));
    assert.equal(named, [], `make these from a module function instead (see referenceResolverOf in src/gateway/data/analyze.ts): ${named.join(", ")}`);
  });
}

test.run();
