/**
 * src/dashboard/permission-draft.ts, the permission editor's logic without
 * the page: a toggle changes its own operation and keeps every other one an
 * entry holds (`invoke` above all: the editor once rebuilt a grant from the
 * five operations it showed and dropped it); which entries are functions or
 * actions; and the JSON view's check against the server's own
 * (src/services/permissions.ts): it never refuses what the server accepts,
 * and refuses `invoke` on `*` exactly where and as the server does (fast-check).
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { OPERATIONS, isOperationEntry, parsePermissions, sameValue, toggled } from "../../src/dashboard/permission-draft.js";
import { parsePermissions as serverParse } from "../../src/services/permissions.js";

const test = suite("dashboard: permission drafts");

test("drafts compare as their JSON does, parts shared or not (fast-check)", () => {
  const json = fc.jsonValue({ maxDepth: 4 });
  fc.assert(
    fc.property(json, json, (a, b) => {
      // Key order does not make two objects different; JSON text of sorted keys is the reference.
      const canonical = (v: unknown): unknown =>
        Array.isArray(v) ? v.map(canonical) : v !== null && typeof v === "object" ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : 1)).map(([k, w]) => [k, canonical(w)])) : v;
      const equal = JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
      assert.is(sameValue(a, b), equal);
      assert.is(sameValue(a, structuredClone(a)), true);
      // A change of one part, the rest shared, is seen.
      const shared = { kept: a, changed: b };
      assert.is(sameValue(shared, { ...shared, changed: a }), equal);
    }),
    { numRuns: 500 },
  );
  assert.is(sameValue({ a: 1 }, { b: 1 }), false);
  assert.is(sameValue([1, [2]], [1, [2]]), true);
  assert.is(sameValue({ a: [] }, { a: {} }), false);
});

test("a toggle changes only its own operation: invoke and anything else the entry holds are kept, in the server's order", () => {
  assert.equal(OPERATIONS, ["list", "get", "create", "update", "delete", "invoke"]);
  assert.equal(toggled(["get", "invoke"], "list", true), ["list", "get", "invoke"]);
  assert.equal(toggled(["list", "get", "invoke"], "get", false), ["list", "invoke"]);
  assert.equal(toggled(["invoke"], "invoke", false), []);
  assert.equal(toggled([], "invoke", true), ["invoke"]);
  assert.equal(toggled(["delete", "list"], "list", true), ["list", "delete"], "already on: only ordered");
  // Something no operation list of this dashboard knows stays where it was, after the known ones.
  assert.equal(toggled(["future", "get"], "update", true), ["get", "update", "future"]);
});

test("entries that name functions or actions: the catalog's word first, else a qualified name or an invoke-only grant", () => {
  const catalog = { sets: ["SalesOrders", "Odd.Name"], operations: [{ name: "Search" }, { name: "Sales.Approve" }] };
  const cases: [string, string[], typeof catalog | undefined, boolean][] = [
    ["Search", ["list"], catalog, true],
    ["Sales.Approve", ["invoke"], catalog, true],
    ["SalesOrders", ["get", "invoke"], catalog, false],
    ["SalesOrders", ["invoke"], catalog, false],
    ["Odd.Name", ["list"], catalog, false],
    ["*", ["list"], catalog, false],
    ["*", ["invoke"], undefined, false],
    ["Sales.Later", ["invoke"], catalog, true],
    ["releaseApprovalRequest", ["invoke"], undefined, true],
    ["A_SalesOrder", ["list", "invoke"], undefined, false],
    ["A_SalesOrder", ["get"], undefined, false],
    ["API.secretOf", ["get"], undefined, true],
  ];
  for (const [name, ops, cat, expected] of cases) assert.is(isOperationEntry(name, ops, cat), expected, `${name} ${JSON.stringify(ops)}`);
});

/** Permission documents over a few names, `*`, operations (invoke among them) and a misspelt one. */
const documents = fc.dictionary(
  fc.constantFrom("prod", "qa"),
  fc.dictionary(
    fc.constantFrom("SALES", "*"),
    fc.dictionary(fc.constantFrom("SalesOrders", "*", "Search", "Sales.Approve"), fc.array(fc.constantFrom(...OPERATIONS, "read"), { maxLength: 4 }), { maxKeys: 4 }),
    { maxKeys: 2 },
  ),
  { maxKeys: 2 },
);

test("property: the JSON view never refuses what the server accepts, and refuses invoke on '*' where and as the server does", () => {
  const reason = "'invoke' must name the operation: '*' never includes functions or actions";
  fc.assert(
    fc.property(documents, (doc) => {
      const server = serverParse(doc);
      const mine = parsePermissions(JSON.stringify(doc));
      if (server.ok) {
        assert.equal(mine, JSON.parse(JSON.stringify(doc)), "accepted by the server, accepted as it is");
        return;
      }
      const wild = server.violations.filter((v) => v.description === reason);
      if (wild.length === 0) return;
      // The dashboard reports the first problem it finds; when it is this one, in the server's words at the server's place.
      assert.type(mine, "string", JSON.stringify(doc));
      const at = /^(.*): '(invoke)' must name the operation/.exec(mine as string);
      if (at !== null) {
        assert.ok(wild.some((v) => v.field === `permissions.${at[1]}`), `${mine as string} vs ${JSON.stringify(server.violations)}`);
        assert.ok((mine as string).endsWith(reason));
      } else {
        // Refused first for something else the server refuses too (a misspelt operation).
        assert.match(mine as string, /unknown operation "read"/);
      }
    }),
    { numRuns: 500 },
  );
  assert.is(parsePermissions('{"prod": {"SALES": {"*": ["list", "invoke"]}}}'), `prod.SALES.*: ${reason}`);
  assert.equal(parsePermissions('{"prod": {"*": {"Sales.Approve": ["invoke"], "*": ["get"]}}}'), { prod: { "*": { "Sales.Approve": ["invoke"], "*": ["get"] } } });
});

test.run();
