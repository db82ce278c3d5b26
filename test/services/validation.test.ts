/**
 * Unit tests of src/services/validation.ts: the `(erplink.options.v1.field)`
 * rules checked on System and Instance messages, table-driven.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { InstanceSchema, type Instance } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { SystemSchema, type System } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { BadRequestSchema } from "../../src/gen/erplink/errors/v1/bad_request_pb.js";
import fc from "fast-check";
import { ListAuditEntriesRequestSchema } from "../../src/gen/erplink/admin/v1/audit_pb.js";
import { QueryLogsRequestSchema } from "../../src/gen/erplink/admin/v1/request_log_pb.js";
import { GetUsageRequestSchema } from "../../src/gen/erplink/admin/v1/usage_pb.js";
import { HTTP_URL_PATTERN } from "../../src/schema/http-url.js";
import { INTERNAL_ACTOR } from "../../src/services/audit.js";
import { OPERATIONS } from "../../src/services/permissions.js";
import { GROUP_KINDS } from "../../src/services/rollups.js";
import { assertValidForCreate, assertValidForUpdate, httpUrlProblem, rulesOf } from "../../src/services/validation.js";

const test = suite("validation");

type SystemInit = MessageInitShape<typeof SystemSchema>;
type InstanceInit = MessageInitShape<typeof InstanceSchema>;
type V = { field: string; description: string };

const KEY_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$";
const SET_BY_SERVER = "is set by the server and cannot be written";

/** Runs `fn`; returns the violations of the invalid_argument error it throws, or [] if it returns. */
function violationsOf(fn: () => unknown): V[] {
  try {
    fn();
  } catch (err) {
    assert.instance(err, ConnectError);
    const ce = err as ConnectError;
    assert.is(Code[ce.code], Code[Code.InvalidArgument]);
    const vs = ce
      .findDetails(BadRequestSchema)
      .flatMap((d) => d.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
    assert.ok(vs.length > 0, "an invalid_argument error carries at least one violation");
    const first = vs[0];
    const expected = vs.length === 1 && first ? `${first.field}: ${first.description}` : `${vs.length} fields are invalid`;
    assert.is(ce.rawMessage, expected, "message summarises the violations");
    return vs;
  }
  return [];
}

function system(init: SystemInit): System {
  return create(SystemSchema, init);
}

function instance(init: InstanceInit): Instance {
  return create(InstanceSchema, { name: "prd", baseUrl: "https://erp.example.com/odata", ...init });
}

function labels(n: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]));
}

// --- assertValidForCreate on System ----------------------------------------

const systemCases: [string, SystemInit, V[]][] = [
  ["a plain system", { name: "erp" }, []],
  ["100 emoji (200 UTF-16 units) as name", { name: "🚀".repeat(100) }, []],
  [
    "101 emoji as name",
    { name: "🚀".repeat(101) },
    [{ field: "name", description: "must be at most 100 characters (got 101)" }],
  ],
  ["100 combining-free accented letters", { name: "é".repeat(100) }, []],
  ["missing name", {}, [{ field: "name", description: "is required" }]],
  ["description of 1000 emoji", { name: "x", description: "😀".repeat(1000) }, []],
  [
    "description of 1001 characters",
    { name: "x", description: "d".repeat(1001) },
    [{ field: "description", description: "must be at most 1000 characters (got 1001)" }],
  ],
  ["64 labels", { name: "x", labels: labels(64) }, []],
  [
    "65 labels",
    { name: "x", labels: labels(65) },
    [{ field: "labels", description: "must have at most 64 entries (got 65)" }],
  ],
  [
    "label key $ne",
    { name: "x", labels: { $ne: "1" } },
    [{ field: "labels.$ne", description: `key must match ${KEY_PATTERN}` }],
  ],
  [
    "label key with a space",
    { name: "x", labels: { "a b": "1" } },
    [{ field: "labels.a b", description: `key must match ${KEY_PATTERN}` }],
  ],
  ["empty label key", { name: "x", labels: { "": "1" } }, [{ field: "labels.", description: `key must match ${KEY_PATTERN}` }]],
  [
    "label key starting with a dot",
    { name: "x", labels: { ".a": "1" } },
    [{ field: "labels..a", description: `key must match ${KEY_PATTERN}` }],
  ],
  ["label key app.kubernetes.io/name", { name: "x", labels: { "app.kubernetes.io/name": "erp" } }, []],
  ["label key of 63 characters", { name: "x", labels: { ["k".repeat(63)]: "v" } }, []],
  [
    "label key of 64 characters",
    { name: "x", labels: { ["k".repeat(64)]: "v" } },
    [{ field: `labels.${"k".repeat(64)}`, description: `key must match ${KEY_PATTERN}` }],
  ],
  ["label value of 256 characters", { name: "x", labels: { k: "v".repeat(256) } }, []],
  ["label value of 256 emoji", { name: "x", labels: { k: "🚀".repeat(256) } }, []],
  ["empty label value", { name: "x", labels: { k: "" } }, []],
  [
    "label value of 257 characters",
    { name: "x", labels: { k: "v".repeat(257) } },
    [{ field: "labels.k", description: "must be at most 256 characters" }],
  ],
  [
    "every violation at once",
    { name: "", description: "d".repeat(1001), labels: { ok: "1", "a b": "1", long: "v".repeat(257) } },
    [
      { field: "name", description: "is required" },
      { field: "description", description: "must be at most 1000 characters (got 1001)" },
      { field: "labels.a b", description: `key must match ${KEY_PATTERN}` },
      { field: "labels.long", description: "must be at most 256 characters" },
    ],
  ],
  [
    "output-only id",
    { id: "sys_01J00000000000000000000000", name: "x" },
    [{ field: "id", description: SET_BY_SERVER }],
  ],
  [
    "output-only timestamps",
    { name: "x", createdAt: timestampFromDate(new Date(0)), updatedAt: timestampFromDate(new Date(0)) },
    [
      { field: "created_at", description: SET_BY_SERVER },
      { field: "updated_at", description: SET_BY_SERVER },
    ],
  ],
];

for (const [name, init, expected] of systemCases) {
  test(`assertValidForCreate(System): ${name}`, () => {
    assert.equal(
      violationsOf(() => assertValidForCreate(SystemSchema, system(init))),
      expected,
    );
  });
}

// --- assertValidForCreate on Instance ----------------------------------------

const NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";

const instanceCases: [string, InstanceInit, V[]][] = [
  ["a plain instance", {}, []],
  ["name of 64 characters", { name: "n".repeat(64) }, []],
  ["name of 65 characters", { name: "n".repeat(65) }, [{ field: "name", description: "must be at most 64 characters (got 65)" }]],
  ["name with ü", { name: "ü" }, [{ field: "name", description: `must match ${NAME_PATTERN}` }]],
  ["name ending in a newline", { name: "prd\n" }, [{ field: "name", description: `must match ${NAME_PATTERN}` }]],
  ["environment of 64 emoji", { environment: "🌍".repeat(64) }, []],
  [
    "environment of 65 characters",
    { environment: "e".repeat(65) },
    [{ field: "environment", description: "must be at most 64 characters (got 65)" }],
  ],
  ["missing base_url", { baseUrl: "" }, [{ field: "base_url", description: "is required" }]],
  [
    "base_url with credentials",
    { baseUrl: "https://u:p@erp.example.com" },
    [{ field: "base_url", description: "must not contain credentials; configure back-end credentials separately" }],
  ],
  [
    "output-only system_id",
    { systemId: "sys_01J00000000000000000000000" },
    [{ field: "system_id", description: SET_BY_SERVER }],
  ],
];

for (const [name, init, expected] of instanceCases) {
  test(`assertValidForCreate(Instance): ${name}`, () => {
    assert.equal(
      violationsOf(() => assertValidForCreate(InstanceSchema, instance(init))),
      expected,
    );
  });
}

// --- assertValidForUpdate ----------------------------------------------------

test("assertValidForUpdate returns the masked fields, once each, in mask order", () => {
  const fields = assertValidForUpdate(SystemSchema, system({ name: "x" }), ["labels", "name", "labels"]);
  assert.equal(
    fields.map((f) => f.name),
    ["labels", "name"],
  );
});

const updateCases: [string, SystemInit, string[], V[]][] = [
  ["valid name", { name: "new" }, ["name"], []],
  ["invalid value outside the mask is ignored", { name: "", labels: { "a b": "1" } }, ["description"], []],
  ["clearing description", {}, ["description"], []],
  ["clearing labels", {}, ["labels"], []],
  ["clearing name", {}, ["name"], [{ field: "name", description: "is required" }]],
  ["101 emoji as name", { name: "🚀".repeat(101) }, ["name"], [{ field: "name", description: "must be at most 100 characters (got 101)" }]],
  ["100 emoji as name", { name: "🚀".repeat(100) }, ["name"], []],
  ["65 labels", { labels: labels(65) }, ["labels"], [{ field: "labels", description: "must have at most 64 entries (got 65)" }]],
  ["bad label key", { labels: { $ne: "x" } }, ["labels"], [{ field: "labels.$ne", description: `key must match ${KEY_PATTERN}` }]],
  ["empty mask", { name: "x" }, [], [{ field: "update_mask", description: "must name at least one field to change" }]],
  ["unknown path", { name: "x" }, ["nope"], [{ field: "nope", description: "is not a field of this resource" }]],
  ["camelCase path", {}, ["createdAt"], [{ field: "createdAt", description: "is not a field of this resource" }]],
  ["nested path", {}, ["labels.team"], [{ field: "labels.team", description: "is not a field of this resource" }]],
  ["output-only id", { id: "sys_01J00000000000000000000000" }, ["id"], [{ field: "id", description: SET_BY_SERVER }]],
  ["output-only updated_at", {}, ["updated_at"], [{ field: "updated_at", description: SET_BY_SERVER }]],
  [
    "several problems at once",
    { name: "" },
    ["nope", "id", "name"],
    [
      { field: "nope", description: "is not a field of this resource" },
      { field: "id", description: SET_BY_SERVER },
      { field: "name", description: "is required" },
    ],
  ],
];

for (const [name, init, paths, expected] of updateCases) {
  test(`assertValidForUpdate(System, ${JSON.stringify(paths)}): ${name}`, () => {
    assert.equal(
      violationsOf(() => assertValidForUpdate(SystemSchema, system(init), paths)),
      expected,
    );
  });
}

test("assertValidForUpdate(Instance): system_id is output-only, base_url is checked", () => {
  assert.equal(
    violationsOf(() => assertValidForUpdate(InstanceSchema, instance({ baseUrl: "ftp://x" }), ["system_id", "base_url"])),
    [
      { field: "system_id", description: SET_BY_SERVER },
      { field: "base_url", description: "must be an absolute http or https URL" },
    ],
  );
});

// --- httpUrlProblem ----------------------------------------------------------

const ABSOLUTE = "must be an absolute http or https URL";
const CREDENTIALS = "must not contain credentials; configure back-end credentials separately";
const FRAGMENT = "must not contain a fragment";

const urlCases: [string, string | undefined][] = [
  ["https://erp.example.com/sap/opu/odata4/", undefined],
  ["http://10.0.0.1:8000/odata", undefined],
  ["http://[::1]:8000/odata", undefined],
  ["https://erp.example.com/odata?sap-client=100", undefined],
  ["ftp://x", ABSOLUTE],
  ["erp.example.com", ABSOLUTE],
  ["/sap/opu/odata4", ABSOLUTE],
  ["javascript:alert(1)", ABSOLUTE],
  ["data:text/plain,hi", ABSOLUTE],
  ["https://", ABSOLUTE],
  ["", ABSOLUTE],
  ["https://user:pw@erp.example.com", CREDENTIALS],
  ["https://user@erp.example.com", CREDENTIALS],
  ["https://:pw@erp.example.com", CREDENTIALS],
  ["https://erp.example.com/#frag", FRAGMENT],
  ["https://erp.example.com/#", FRAGMENT],
];

for (const [url, expected] of urlCases) {
  test(`httpUrlProblem(${JSON.stringify(url)})`, () => {
    assert.is(httpUrlProblem(url), expected);
  });
}

// Regression guard: the WHATWG parser silently repairs these strings (strips
// whitespace, tabs and newlines, adds the missing `//`, turns `\` into `/`),
// but the service stores the value as given, so a base URL with a trailing
// newline or an embedded tab would be accepted and kept verbatim.
test("httpUrlProblem rejects strings the URL parser has to repair (whitespace, tab, newline, missing //, backslashes)", () => {
  const repaired = [
    " https://erp.example.com",
    "https://erp.example.com\n",
    "https://erp.exa\tmple.com",
    "https:erp.example.com",
    "https:\\\\erp.example.com\\odata",
    "https:///erp.example.com",
  ];
  assert.equal(
    repaired.filter((url) => httpUrlProblem(url) === undefined),
    [],
    "accepted although not an absolute URL as written",
  );
});

// --- the published forms agree with the checks -----------------------------------

test("a back-end URL is accepted exactly when it matches the published pattern (property), and every match parses as written", () => {
  const re = new RegExp(HTTP_URL_PATTERN, "u");
  fc.assert(
    fc.property(fc.stringMatching(re), (url) => httpUrlProblem(url) === undefined && new URL(url).protocol.startsWith("http")),
    { numRuns: 3000, seed: 13 },
  );
  const near = fc.oneof(
    fc.string({ maxLength: 40 }).map((s) => `http://${s}`),
    fc.string({ maxLength: 40 }).map((s) => `https://erp.example.com/${s}`),
    fc.string({ maxLength: 20 }).map((s) => `http://h${s}.example.com:8080/`),
  );
  fc.assert(fc.property(near, (url) => (httpUrlProblem(url) === undefined) === re.test(url)), { numRuns: 3000, seed: 13 });
  // Hosts and paths the WHATWG parser would refuse or rewrite are refused, with a reason.
  for (const url of ["http://xn--zz/", "http://a.123/", "http://h:70000/", "http://ü.example/", "http://h/%zz", "http://h/a|b", "http://@h/"]) {
    assert.type(httpUrlProblem(url), "string", url);
  }
  assert.is(httpUrlProblem("http://@h/"), "must not contain credentials; configure back-end credentials separately");
});

test("the list filters' patterns (published in the OpenAPI document) admit exactly the values the services know", () => {
  const pattern = (desc: typeof QueryLogsRequestSchema | typeof ListAuditEntriesRequestSchema | typeof GetUsageRequestSchema, name: string) => {
    const field = desc.fields.find((f) => f.name === name)!;
    assert.type(rulesOf(field).patternMessage, "string");
    return new RegExp(rulesOf(field).pattern, "u");
  };
  const exactly = (re: RegExp, values: readonly string[], others: readonly string[]) => {
    assert.equal(values.filter((v) => !re.test(v)), [], `${re} admits every value`);
    assert.equal(others.filter((v) => re.test(v)), [], `${re} admits nothing else`);
  };
  exactly(pattern(QueryLogsRequestSchema, "operation"), OPERATIONS, ["LIST", "read", "", "list "]);
  exactly(pattern(GetUsageRequestSchema, "group_by"), GROUP_KINDS, ["key", "Instance", ""]);
  exactly(pattern(GetUsageRequestSchema, "bucket"), ["hour", "day"], ["week", "Hour", ""]);
  exactly(pattern(ListAuditEntriesRequestSchema, "action"), ["create", "update", "delete", "revoke"], ["drop", ""]);
  exactly(pattern(ListAuditEntriesRequestSchema, "resource_type"), ["system", "instance", "api_key", "session"], ["systems", ""]);
  exactly(pattern(ListAuditEntriesRequestSchema, "actor"), ["master", INTERNAL_ACTOR, `key_${"0".repeat(26)}`, "ses_abc"], ["root", "ses_", "key_short"]);
  exactly(pattern(QueryLogsRequestSchema, "status"), ["404", "4xx", "5XX", "100"], ["600", "40", "4x", "abc"]);
});

test("a message whose type says which fields apply (BackendAuth): each type's required fields, the others empty", () => {
  const auth = (init: Record<string, unknown>) => violationsOf(() => assertValidForCreate(InstanceSchema, create(InstanceSchema, { name: "i", baseUrl: "https://e.example/", auth: init })));
  assert.equal(auth({}), [{ field: "auth.type", description: "is required: none, basic, bearer or oauth2_client_credentials" }]);
  assert.equal(auth({ type: 2 }), [
    { field: "auth.username", description: "is required with type 'basic'" },
    { field: "auth.password", description: "is required with type 'basic'" },
  ]);
  assert.equal(auth({ type: 1, token: "t", scope: "s" }), [
    { field: "auth.token", description: "is not used with type 'none'" },
    { field: "auth.scope", description: "is not used with type 'none'" },
  ]);
  assert.equal(auth({ type: 4, tokenUrl: "https://idp.example/token", clientId: "c", clientSecret: "s", scope: "x" }), []);
  assert.equal(auth({ type: 4, tokenUrl: "", clientId: "c", clientSecret: "s" }), [{ field: "auth.token_url", description: "is required with type 'oauth2_client_credentials'" }]);
});

test.run();
