/**
 * Unit tests of src/services/permissions.ts: the permission evaluator and the
 * parser of untrusted permission documents, table-driven.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Violation } from "../../src/services/errors.js";
import {
  evaluate,
  isOperation,
  OPERATIONS,
  parsePermissions,
  type AccessRequest,
  type Decision,
  type Operation,
  type Permissions,
} from "../../src/services/permissions.js";

const test = suite("permissions");

function req(instance: string, service: string, entity: string, operation: Operation): AccessRequest {
  return { instance, service, entity, operation };
}

const ALLOW: Decision = { allowed: true };
const noInstance = (name: string): Decision => ({
  allowed: false,
  step: "instance",
  message: `API key has no access to instance '${name}'`,
});
const noService = (name: string): Decision => ({
  allowed: false,
  step: "service",
  message: `API key has no access to service '${name}'`,
});
const noEntity = (name: string): Decision => ({
  allowed: false,
  step: "entity",
  message: `API key has no access to entity '${name}'`,
});
const noOperation = (operation: Operation, entity: string): Decision => ({
  allowed: false,
  step: "operation",
  message: `API key lacks permission '${operation}' for entity '${entity}'`,
});

// Object literals (Object.prototype objects), deliberately: the evaluator must
// not rely on the null-prototype objects that parsePermissions produces.
const P: Permissions = {
  // Additive across service entries: API_BP grants A_BusinessPartner `get`,
  // the `*` service grants it `list`.
  prod: {
    API_BP: { A_BusinessPartner: ["get"], A_Address: ["list", "get", "create", "update", "delete"] },
    "*": { A_BusinessPartner: ["list"], A_Product: ["get"] },
  },
  // Both wildcards together.
  dev: { "*": { "*": ["list"] } },
  // Additive across entity entries: A_SalesOrder `create`, every entity `get`.
  qa: { API_SO: { "*": ["get"], A_SalesOrder: ["create"] } },
  // Every one of the four (service entry, entity entry) pairs grants one operation.
  quad: { S: { E: ["get"], "*": ["create"] }, "*": { E: ["update"], "*": ["delete"] } },
  empty: {},
  hollow: { API_BP: {} },
  Case: { Svc: { Ent: ["list"] } },
  // Operations: granted by an entry naming them; a '*' entity, even one listing invoke (which validation refuses), never includes one.
  ops: { API_SO: { releaseApprovalRequest: ["invoke"], "Sales.Approve": ["invoke"], A_SalesOrder: ["get"], "*": ["list", "invoke"] }, "*": { countSecrets: ["invoke"] } },
};

const evaluateCases: [string, AccessRequest, Decision][] = [
  // --- instance step
  ["unknown instance", req("staging", "API_BP", "A_BusinessPartner", "get"), noInstance("staging")],
  ["instance name differs in case", req("Prod", "API_BP", "A_BusinessPartner", "get"), noInstance("Prod")],
  ["instance name in upper case", req("CASE", "Svc", "Ent", "list"), noInstance("CASE")],
  ["empty instance name", req("", "API_BP", "A_BusinessPartner", "get"), noInstance("")],
  ["'*' as instance is not a wildcard", req("*", "API_BP", "A_BusinessPartner", "get"), noInstance("*")],
  ["instance '__proto__'", req("__proto__", "API_BP", "A_BusinessPartner", "get"), noInstance("__proto__")],
  ["instance 'constructor'", req("constructor", "API_BP", "A_BusinessPartner", "get"), noInstance("constructor")],
  ["instance 'toString'", req("toString", "API_BP", "A_BusinessPartner", "get"), noInstance("toString")],
  ["instance 'hasOwnProperty'", req("hasOwnProperty", "x", "y", "get"), noInstance("hasOwnProperty")],
  // --- service step
  ["service not named and no '*'", req("qa", "API_BP", "A_SalesOrder", "get"), noService("API_BP")],
  ["service name differs in case", req("qa", "api_so", "A_SalesOrder", "get"), noService("api_so")],
  ["service name differs in case (Case)", req("Case", "svc", "Ent", "list"), noService("svc")],
  ["service '__proto__'", req("qa", "__proto__", "A_SalesOrder", "get"), noService("__proto__")],
  ["service 'constructor'", req("qa", "constructor", "A_SalesOrder", "get"), noService("constructor")],
  ["service 'toString'", req("qa", "toString", "A_SalesOrder", "get"), noService("toString")],
  ["instance with an empty object denies at the service step", req("empty", "API_BP", "A", "list"), noService("API_BP")],
  // --- entity step
  ["entity in neither the named nor the '*' service", req("prod", "API_BP", "A_Unknown", "get"), noEntity("A_Unknown")],
  ["entity name differs in case", req("prod", "API_BP", "a_businesspartner", "get"), noEntity("a_businesspartner")],
  ["entity name differs in case (Case)", req("Case", "Svc", "ENT", "list"), noEntity("ENT")],
  ["entity '__proto__'", req("prod", "API_BP", "__proto__", "get"), noEntity("__proto__")],
  ["entity 'constructor'", req("prod", "API_BP", "constructor", "get"), noEntity("constructor")],
  ["entity 'toString'", req("prod", "API_BP", "toString", "list"), noEntity("toString")],
  ["service with an empty object denies at the entity step", req("hollow", "API_BP", "A", "get"), noEntity("A")],
  ["'*' service lacks the entity", req("prod", "API_OTHER", "A_Address", "get"), noEntity("A_Address")],
  // --- operation step and additive grants across services
  ["named service grants get", req("prod", "API_BP", "A_BusinessPartner", "get"), ALLOW],
  ["'*' service adds list to the named service's get", req("prod", "API_BP", "A_BusinessPartner", "list"), ALLOW],
  ["create granted by neither", req("prod", "API_BP", "A_BusinessPartner", "create"), noOperation("create", "A_BusinessPartner")],
  ["update granted by neither", req("prod", "API_BP", "A_BusinessPartner", "update"), noOperation("update", "A_BusinessPartner")],
  ["delete granted by neither", req("prod", "API_BP", "A_BusinessPartner", "delete"), noOperation("delete", "A_BusinessPartner")],
  ["list does not imply get", req("prod", "API_OTHER", "A_BusinessPartner", "get"), noOperation("get", "A_BusinessPartner")],
  ["'*' service alone grants list", req("prod", "API_OTHER", "A_BusinessPartner", "list"), ALLOW],
  ["get does not imply list", req("prod", "API_OTHER", "A_Product", "list"), noOperation("list", "A_Product")],
  ["'*' service grants an entity the named service lacks", req("prod", "API_BP", "A_Product", "get"), ALLOW],
  ["all five granted: list", req("prod", "API_BP", "A_Address", "list"), ALLOW],
  ["all five granted: get", req("prod", "API_BP", "A_Address", "get"), ALLOW],
  ["all five granted: create", req("prod", "API_BP", "A_Address", "create"), ALLOW],
  ["all five granted: update", req("prod", "API_BP", "A_Address", "update"), ALLOW],
  ["all five granted: delete", req("prod", "API_BP", "A_Address", "delete"), ALLOW],
  ["requested service '*' gets only the wildcard grant", req("prod", "*", "A_BusinessPartner", "get"), noOperation("get", "A_BusinessPartner")],
  // --- both wildcards
  ["'*' service and '*' entity grant list", req("dev", "API_ANY", "AnyEntity", "list"), ALLOW],
  ["'*' service and '*' entity: get not granted", req("dev", "API_ANY", "AnyEntity", "get"), noOperation("get", "AnyEntity")],
  ["'*' service and '*' entity: update not granted", req("dev", "API_ANY", "AnyEntity", "update"), noOperation("update", "AnyEntity")],
  ["'*' everywhere still matches prototype names as plain names", req("dev", "constructor", "__proto__", "list"), ALLOW],
  // --- '*' entity and additive grants across entities
  ["named entity grants create", req("qa", "API_SO", "A_SalesOrder", "create"), ALLOW],
  ["'*' entity adds get to the named entity's create", req("qa", "API_SO", "A_SalesOrder", "get"), ALLOW],
  ["neither entity entry grants delete", req("qa", "API_SO", "A_SalesOrder", "delete"), noOperation("delete", "A_SalesOrder")],
  ["'*' entity alone grants get", req("qa", "API_SO", "A_Other", "get"), ALLOW],
  ["'*' entity does not grant the named entity's create", req("qa", "API_SO", "A_Other", "create"), noOperation("create", "A_Other")],
  // --- all four (service, entity) pairs
  ["named service, named entity", req("quad", "S", "E", "get"), ALLOW],
  ["named service, '*' entity", req("quad", "S", "E", "create"), ALLOW],
  ["'*' service, named entity", req("quad", "S", "E", "update"), ALLOW],
  ["'*' service, '*' entity", req("quad", "S", "E", "delete"), ALLOW],
  ["no pair grants list", req("quad", "S", "E", "list"), noOperation("list", "E")],
  ["other service: only the '*' service pairs apply (get)", req("quad", "S2", "E", "get"), noOperation("get", "E")],
  ["other service: only the '*' service pairs apply (update)", req("quad", "S2", "E", "update"), ALLOW],
  ["other entity: only the '*' entity pairs apply (update)", req("quad", "S", "E2", "update"), noOperation("update", "E2")],
  ["other entity: only the '*' entity pairs apply (create)", req("quad", "S", "E2", "create"), ALLOW],
  // --- operations are granted by name
  ["an import named with invoke", req("ops", "API_SO", "releaseApprovalRequest", "invoke"), ALLOW],
  ["a bound operation named by its qualified name", req("ops", "API_SO", "Sales.Approve", "invoke"), ALLOW],
  ["a '*' entity never invokes", req("ops", "API_SO", "rejectApprovalRequest", "invoke"), { allowed: false, step: "entity", message: "API key has no access to operation 'rejectApprovalRequest'" }],
  ["an entry without invoke", req("ops", "API_SO", "A_SalesOrder", "invoke"), { allowed: false, step: "operation", message: "API key lacks permission 'invoke' for operation 'A_SalesOrder'" }],
  ["a '*' service with a named operation", req("ops", "OTHER", "countSecrets", "invoke"), ALLOW],
  ["invoke is no read", req("ops", "API_SO", "Sales.Approve", "get"), noOperation("get", "Sales.Approve")],
  // --- exact names at every level
  ["exact names at every level", req("Case", "Svc", "Ent", "list"), ALLOW],
  ["exact names, operation not granted", req("Case", "Svc", "Ent", "get"), noOperation("get", "Ent")],
];

for (const [name, request, expected] of evaluateCases) {
  test(`evaluate: ${name}`, () => {
    assert.equal(evaluate(P, request), expected);
  });
}

test("evaluate: a name inherited through a polluted Object.prototype never matches", () => {
  const key = "erplinkPolluted";
  Object.defineProperty(Object.prototype, key, {
    value: { "*": { "*": ["list"] } },
    configurable: true,
    enumerable: false,
    writable: true,
  });
  try {
    assert.equal(evaluate(P, req(key, "x", "y", "list")), noInstance(key));
    assert.equal(evaluate(P, req("qa", key, "y", "list")), noService(key));
    assert.equal(evaluate(P, req("prod", "API_BP", key, "list")), noEntity(key));
  } finally {
    delete (Object.prototype as Record<string, unknown>)[key];
  }
});

// --- isOperation ------------------------------------------------------------

const operationCases: [string, boolean][] = [
  ...OPERATIONS.map((op): [string, boolean] => [op, true]),
  ["LIST", false],
  ["Get", false],
  ["read", false],
  ["", false],
  ["list ", false],
  ["toString", false],
  ["__proto__", false],
];

for (const [input, expected] of operationCases) {
  test(`isOperation(${JSON.stringify(input)}) is ${expected}`, () => {
    assert.is(isOperation(input), expected);
  });
}

// --- parsePermissions: violations --------------------------------------------

const ROOT_SHAPE = "must be an object of instance name -> service -> entity -> operations";
const INSTANCE_WILDCARD =
  "instances must be named: '*' is not allowed at the instance level, so that a key never gains future instances";
const INSTANCE_NAME = "must be an instance name (letters, digits, _ . -, at most 64 characters)";
const SERVICES_SHAPE = "must be an object of service name or '*' -> entities";
const SERVICE_NAME = "must be a service name or '*'";
const ENTITIES_SHAPE = "must be an object of entity name or '*' -> operations";
const ENTITY_NAME = "must be an entity set name, an operation's name or '*'";
const OPS_SHAPE = "must be an array of operations (list, get, create, update, delete, invoke)";
const OPS_EMPTY = "must list at least one operation";
const OP_VALUE = "must be one of list, get, create, update, delete, invoke";
const TOO_MANY = "has more than 10000 entries";

const v = (field: string, description: string): Violation => ({ field, description });

/** `count` entity entries named E0, E1, … each granting `list`. */
function entities(count: number, ops: unknown = ["list"]): Record<string, unknown> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`E${i}`, ops]));
}

const violationCases: [string, unknown, Violation[]][] = [
  ["null", null, [v("permissions", ROOT_SHAPE)]],
  ["an array", [], [v("permissions", ROOT_SHAPE)]],
  ["a string", "prod", [v("permissions", ROOT_SHAPE)]],
  ["a number", 1, [v("permissions", ROOT_SHAPE)]],
  ["a boolean", true, [v("permissions", ROOT_SHAPE)]],
  ["undefined", undefined, [v("permissions", ROOT_SHAPE)]],
  ["a class instance", new Map([["prod", {}]]), [v("permissions", ROOT_SHAPE)]],
  ["'*' instance", { "*": {} }, [v("permissions.*", INSTANCE_WILDCARD)]],
  ["instance name starting with '-'", { "-prod": {} }, [v("permissions.-prod", INSTANCE_NAME)]],
  ["instance name with a space", { "pr od": {} }, [v("permissions.pr od", INSTANCE_NAME)]],
  ["instance name with a slash", { "a/b": {} }, [v("permissions.a/b", INSTANCE_NAME)]],
  ["empty instance name", { "": {} }, [v("permissions.", INSTANCE_NAME)]],
  ["instance name of 65 characters", { ["i".repeat(65)]: {} }, [v(`permissions.${"i".repeat(65)}`, INSTANCE_NAME)]],
  ["'__proto__' instance (JSON key)", JSON.parse('{"__proto__": {}}'), [v("permissions.__proto__", INSTANCE_NAME)]],
  ["instance value null", { prod: null }, [v("permissions.prod", SERVICES_SHAPE)]],
  ["instance value an array", { prod: [] }, [v("permissions.prod", SERVICES_SHAPE)]],
  ["instance value a string", { prod: "*" }, [v("permissions.prod", SERVICES_SHAPE)]],
  ["service name with a slash", { prod: { "API/BP": {} } }, [v("permissions.prod.API/BP", SERVICE_NAME)]],
  ["service name starting with '.'", { prod: { ".API": {} } }, [v("permissions.prod..API", SERVICE_NAME)]],
  ["service name '**'", { prod: { "**": {} } }, [v("permissions.prod.**", SERVICE_NAME)]],
  ["empty service name", { prod: { "": {} } }, [v("permissions.prod.", SERVICE_NAME)]],
  [
    "service name of 129 characters",
    { prod: { ["s".repeat(129)]: {} } },
    [v(`permissions.prod.${"s".repeat(129)}`, SERVICE_NAME)],
  ],
  ["service value an array", { prod: { API_BP: ["list"] } }, [v("permissions.prod.API_BP", ENTITIES_SHAPE)]],
  ["service value null", { prod: { "*": null } }, [v("permissions.prod.*", ENTITIES_SHAPE)]],
  ["entity name starting with a digit", { prod: { API_BP: { "1A": ["get"] } } }, [v("permissions.prod.API_BP.1A", ENTITY_NAME)]],
  ["entity name with '-'", { prod: { API_BP: { "A-B": ["get"] } } }, [v("permissions.prod.API_BP.A-B", ENTITY_NAME)]],
  ["entity name with an empty part", { prod: { API_BP: { "A..B": ["get"] } } }, [v("permissions.prod.API_BP.A..B", ENTITY_NAME)]],
  ["entity name ending in '.'", { prod: { API_BP: { "A.": ["invoke"] } } }, [v("permissions.prod.API_BP.A.", ENTITY_NAME)]],
  ["invoke on '*', which never includes an operation", { prod: { API_BP: { "*": ["get", "invoke"] } } }, [v("permissions.prod.API_BP.*", "'invoke' must name the operation: '*' never includes functions or actions")]],
  ["entity name non-ASCII", { prod: { API_BP: { "Ä": ["get"] } } }, [v("permissions.prod.API_BP.Ä", ENTITY_NAME)]],
  [
    "entity name of 129 characters",
    { prod: { API_BP: { ["e".repeat(129)]: ["get"] } } },
    [v(`permissions.prod.API_BP.${"e".repeat(129)}`, ENTITY_NAME)],
  ],
  ["operations a string", { prod: { API_BP: { A: "list" } } }, [v("permissions.prod.API_BP.A", OPS_SHAPE)]],
  ["operations an object", { prod: { API_BP: { A: { 0: "list" } } } }, [v("permissions.prod.API_BP.A", OPS_SHAPE)]],
  ["operations null", { prod: { API_BP: { "*": null } } }, [v("permissions.prod.API_BP.*", OPS_SHAPE)]],
  ["operations empty", { prod: { API_BP: { A: [] } } }, [v("permissions.prod.API_BP.A", OPS_EMPTY)]],
  [
    "unknown operations, each at its index",
    { prod: { API_BP: { A_BusinessPartner: ["list", "read", "GET", 1, null, ["get"]] } } },
    [
      v("permissions.prod.API_BP.A_BusinessPartner[1]", OP_VALUE),
      v("permissions.prod.API_BP.A_BusinessPartner[2]", OP_VALUE),
      v("permissions.prod.API_BP.A_BusinessPartner[3]", OP_VALUE),
      v("permissions.prod.API_BP.A_BusinessPartner[4]", OP_VALUE),
      v("permissions.prod.API_BP.A_BusinessPartner[5]", OP_VALUE),
    ],
  ],
  [
    "several violations at once, in document order",
    {
      "*": {},
      prod: {
        API_BP: { A: [], "1B": ["get"], C: ["get", "nope"] },
        "bad service": {},
        API_SO: "x",
        "*": { D: "list", "*": ["list"] },
      },
      ok: { API_BP: { A: ["get"] } },
      "-bad": { API: { A: ["get"] } },
      qa: null,
    },
    [
      v("permissions.*", INSTANCE_WILDCARD),
      v("permissions.prod.API_BP.A", OPS_EMPTY),
      v("permissions.prod.API_BP.1B", ENTITY_NAME),
      v("permissions.prod.API_BP.C[1]", OP_VALUE),
      v("permissions.prod.bad service", SERVICE_NAME),
      v("permissions.prod.API_SO", ENTITIES_SHAPE),
      v("permissions.prod.*.D", OPS_SHAPE),
      v("permissions.-bad", INSTANCE_NAME),
      v("permissions.qa", SERVICES_SHAPE),
    ],
  ],
  [
    "nothing below an invalid name is checked",
    { "*": { "bad service": { "1A": [] } }, prod: { "bad service": { "1A": [] }, S: { "1A": [] } } },
    [
      v("permissions.*", INSTANCE_WILDCARD),
      v("permissions.prod.bad service", SERVICE_NAME),
      v("permissions.prod.S.1A", ENTITY_NAME),
    ],
  ],
  ["10,001 entries under one service", { prod: { S: entities(10_001) } }, [v("permissions", TOO_MANY)]],
  [
    "10,001 entries in total across instances and services",
    { a: { S: entities(5_000), T: entities(1) }, b: { S: entities(5_000) } },
    [v("permissions", TOO_MANY)],
  ],
  [
    "over the cap, the cap is the only violation reported",
    { "*": {}, prod: { S: entities(10_001, []) } },
    [v("permissions", TOO_MANY)],
  ],
];

for (const [name, input, expected] of violationCases) {
  test(`parsePermissions rejects: ${name}`, () => {
    const result = parsePermissions(input);
    assert.equal(result, { ok: false, violations: expected });
  });
}

// --- parsePermissions: accepted documents, normalized -------------------------

/** The parsed permissions as plain JSON (null-prototype objects do not deep-equal literals). */
function parsedJson(input: unknown): unknown {
  const result = parsePermissions(input);
  if (!result.ok) return assert.unreachable(`rejected: ${JSON.stringify(result.violations)}`);
  return JSON.parse(JSON.stringify(result.permissions));
}

const normalizeCases: [string, unknown, unknown][] = [
  ["empty document", {}, {}],
  ["instance with an empty object", { prod: {} }, { prod: {} }],
  ["service with an empty object", { prod: { API_BP: {} } }, { prod: { API_BP: {} } }],
  [
    "duplicates removed and sorted",
    { prod: { API_BP: { A: ["get", "list", "get"] } } },
    { prod: { API_BP: { A: ["list", "get"] } } },
  ],
  [
    "all five, reversed and repeated, in OPERATIONS order",
    { prod: { "*": { "*": ["delete", "update", "create", "get", "list", "delete", "list"] } } },
    { prod: { "*": { "*": ["list", "get", "create", "update", "delete"] } } },
  ],
  [
    "names differing only in case are distinct at every level",
    { prod: { S: { E: ["get"], e: ["list"] }, s: { E: ["delete"] } }, Prod: { S: { E: ["create"] } } },
    { prod: { S: { E: ["get"], e: ["list"] }, s: { E: ["delete"] } }, Prod: { S: { E: ["create"] } } },
  ],
  [
    "longest names and service punctuation",
    { ["i".repeat(64)]: { "API_BP;v=0002": { ["e".repeat(128)]: ["get"] }, ["s".repeat(128)]: {} } },
    { ["i".repeat(64)]: { "API_BP;v=0002": { ["e".repeat(128)]: ["get"] }, ["s".repeat(128)]: {} } },
  ],
  [
    "instance names with digits, '_', '.', '-'",
    { "0prod_eu-1.a": { "_svc.v-1": { _Entity_1: ["update"] } } },
    { "0prod_eu-1.a": { "_svc.v-1": { _Entity_1: ["update"] } } },
  ],
  ["exactly 10,000 entries", { prod: { S: entities(10_000) } }, { prod: { S: entities(10_000) } }],
  [
    "operations by name: an import and a bound operation's qualified name, with invoke",
    { prod: { API_SO: { releaseApprovalRequest: ["invoke"], "API_SALES_ORDER_SRV.Sales.Approve": ["invoke", "invoke"], "*": ["get"] } } },
    { prod: { API_SO: { releaseApprovalRequest: ["invoke"], "API_SALES_ORDER_SRV.Sales.Approve": ["invoke"], "*": ["get"] } } },
  ],
  [
    "names of inherited members (toString, valueOf) are ordinary names",
    JSON.parse('{"prod": {"toString": {"valueOf": ["get", "get"], "A": ["list"]}}}'),
    JSON.parse('{"prod": {"toString": {"valueOf": ["get"], "A": ["list"]}}}'),
  ],
];

for (const [name, input, expected] of normalizeCases) {
  test(`parsePermissions accepts: ${name}`, () => {
    assert.equal(parsedJson(input), expected);
  });
}

test("parsePermissions: the copy is frozen, null-prototype and independent of the input", () => {
  const input = { prod: { API_BP: { A: ["get", "list"] } } };
  const result = parsePermissions(input);
  if (!result.ok) return assert.unreachable("rejected");
  const { permissions } = result;
  const services = permissions.prod;
  const entities = services.API_BP;
  for (const o of [permissions, services, entities]) {
    assert.is(Object.getPrototypeOf(o), null);
    assert.ok(Object.isFrozen(o));
  }
  assert.ok(Object.isFrozen(entities.A));
  assert.is.not(permissions as unknown, input);
  input.prod.API_BP.A.push("delete");
  (input.prod as Record<string, unknown>).API_SO = { B: ["get"] };
  assert.equal(entities.A, ["list", "get"]);
  assert.not.ok(Object.hasOwn(services, "API_SO"));
});

test("parsePermissions: a '__proto__' service or entity set is refused as reserved, and pollutes no prototype", () => {
  const input: unknown = JSON.parse(
    '{"prod": {"__proto__": {"__proto__": ["get"]}, "API_BP": {"__proto__": ["delete"], "A": ["list"]}}}',
  );
  const result = parsePermissions(input);
  if (result.ok) return assert.unreachable("accepted");
  assert.equal(result.violations, [
    { field: "permissions.prod.__proto__", description: "'__proto__' is reserved (JSON parsers refuse it as a key)" },
    { field: "permissions.prod.API_BP.__proto__", description: "'__proto__' is reserved (JSON parsers refuse it as a key)" },
  ]);
  // Object.prototype gained nothing.
  assert.is(({} as Record<string, unknown>).get, undefined);
  assert.is(({} as Record<string, unknown>).A, undefined);
  // Names of other inherited members stay ordinary names.
  const ok = parsePermissions(JSON.parse('{"prod": {"constructor": {"toString": ["get"]}}}'));
  if (!ok.ok) return assert.unreachable(JSON.stringify(ok.violations));
  assert.equal(evaluate(ok.permissions, req("prod", "constructor", "toString", "get")), ALLOW);
  assert.equal(evaluate(ok.permissions, req("prod", "constructor", "valueOf", "get")), noEntity("valueOf"));
});

// --- round trip: parse, then evaluate -----------------------------------------

const roundTripDoc: unknown = JSON.parse(`{
  "prod": {
    "API_BP": { "A_BusinessPartner": ["get", "get"] },
    "*": { "A_BusinessPartner": ["list"], "*": ["get"] }
  },
  "qa": {},
  "Dev": { "API_SO": {} }
}`);

const roundTripCases: [string, AccessRequest, Decision][] = [
  ["named service grant", req("prod", "API_BP", "A_BusinessPartner", "get"), ALLOW],
  ["additive '*' service grant", req("prod", "API_BP", "A_BusinessPartner", "list"), ALLOW],
  ["'*' service, '*' entity", req("prod", "API_X", "A_Any", "get"), ALLOW],
  ["'*' service, '*' entity: list not granted", req("prod", "API_X", "A_Any", "list"), noOperation("list", "A_Any")],
  ["operation denied", req("prod", "API_BP", "A_BusinessPartner", "delete"), noOperation("delete", "A_BusinessPartner")],
  ["instance case", req("prod".toUpperCase(), "API_BP", "A_BusinessPartner", "get"), noInstance("PROD")],
  ["prototype name as instance", req("constructor", "API_BP", "A", "get"), noInstance("constructor")],
  ["empty instance", req("qa", "API_BP", "A", "get"), noService("API_BP")],
  ["empty service", req("Dev", "API_SO", "A", "get"), noEntity("A")],
  ["prototype name as service in an empty instance", req("qa", "toString", "A", "get"), noService("toString")],
];

for (const [name, request, expected] of roundTripCases) {
  test(`round trip: ${name}`, () => {
    const result = parsePermissions(roundTripDoc);
    if (!result.ok) return assert.unreachable(`rejected: ${JSON.stringify(result.violations)}`);
    assert.equal(evaluate(result.permissions, request), expected);
  });
}

test.run();
