/**
 * src/dashboard/field-messages.ts: every pattern the admin API can name in a
 * `must match <pattern>` message (every pattern, key pattern and value
 * pattern rule of the protos without words of its own) has a translation,
 * and each translation describes its pattern truly: the values it accepts
 * and refuses are what the pattern accepts and refuses.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { DescMessage } from "@bufbuild/protobuf";
import { PATTERN_WORDS, fieldErrors, fieldMessage } from "../../src/dashboard/field-messages.js";
import { rulesOf } from "../../src/schema/field-rules.js";
import { file_erplink_admin_v1_api_key } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { file_erplink_admin_v1_audit } from "../../src/gen/erplink/admin/v1/audit_pb.js";
import { file_erplink_admin_v1_diagnostics } from "../../src/gen/erplink/admin/v1/diagnostics_pb.js";
import { file_erplink_admin_v1_instance } from "../../src/gen/erplink/admin/v1/instance_pb.js";
import { file_erplink_admin_v1_request_log } from "../../src/gen/erplink/admin/v1/request_log_pb.js";
import { file_erplink_admin_v1_session } from "../../src/gen/erplink/admin/v1/session_pb.js";
import { file_erplink_admin_v1_system } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { file_erplink_admin_v1_usage } from "../../src/gen/erplink/admin/v1/usage_pb.js";

const test = suite("dashboard: field messages");

const FILES = [
  file_erplink_admin_v1_api_key,
  file_erplink_admin_v1_audit,
  file_erplink_admin_v1_diagnostics,
  file_erplink_admin_v1_instance,
  file_erplink_admin_v1_request_log,
  file_erplink_admin_v1_session,
  file_erplink_admin_v1_system,
  file_erplink_admin_v1_usage,
];

/** Every `must match` message the services can send: patterns without their own words, as validation.ts writes them. */
function mustMatchMessages(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (message: DescMessage) => {
    for (const field of message.fields) {
      const r = rulesOf(field);
      if (r.pattern !== "" && r.patternMessage === "") out.set(`must match ${r.pattern}`, `${message.typeName}.${field.name}`);
      if (r.keyPattern !== "" && r.keyPatternMessage === "") out.set(`key must match ${r.keyPattern}`, `${message.typeName}.${field.name} keys`);
      if (r.valuePattern !== "" && r.valuePatternMessage === "") out.set(`must match ${r.valuePattern}`, `${message.typeName}.${field.name} values`);
    }
    for (const nested of message.nestedMessages) walk(nested);
  };
  for (const file of FILES) for (const message of file.messages) walk(message);
  return out;
}

test("every pattern the admin API can name in a message is translated into words", () => {
  const messages = mustMatchMessages();
  // Instance names, label keys, service names, the SAP client, service paths.
  assert.is(messages.size, 5, [...messages.values()].join(", "));
  for (const [message, where] of messages) {
    const words = fieldMessage(message);
    assert.ok(!words.includes("must match") && !words.includes("^"), `${where}: ${message} -> ${words}`);
    assert.is(words, PATTERN_WORDS[message.replace(/^(key )?must match /, "")], where);
  }
  // And no translation is left over for a pattern the server no longer sends.
  assert.equal(
    Object.keys(PATTERN_WORDS).sort(),
    [...messages.keys()].map((m) => m.replace(/^(key )?must match /, "")).sort(),
  );
});

test("the translations say what the patterns accept: examples on both sides of each rule", () => {
  const cases: readonly (readonly [string, readonly string[], readonly string[]])[] = [
    // Instance names: letters, digits, . _ -, first a letter or digit, up to 64.
    ["^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", ["s4-prod", "A.b_c-1", "x".repeat(64)], ["-s4", "_s4", "s4 prod", "s4/prod", "x".repeat(65), ""]],
    // Label keys: also /, up to 63.
    ["^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$", ["owner", "team/cost.centre_1-a", "x".repeat(63)], ["/owner", "cost centre", "x".repeat(64)]],
    // Service names: letters, digits, _ . ; = -, first a letter, digit or _, up to 128.
    ["^[A-Za-z0-9_][A-Za-z0-9_.;=-]{0,127}$", ["API_BUSINESS_PARTNER", "_x", "Z;v=0002", "x".repeat(128)], ["-x", ".x", "a b", "a/b", "x".repeat(129)]],
    ["^[0-9]{3}$", ["100", "001"], ["10", "1000", "abc"]],
    [
      "^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9_~!$&'()*+,;=:@.-]+(/[A-Za-z0-9_~!$&'()*+,;=:@.-]+)*$",
      ["sap/API_BUSINESS_PARTNER", "a.b/c", "x;v=2"],
      ["/sap", "sap/", "sap//x", "../x", "a/./b", "a/..", "a b"],
    ],
  ];
  assert.equal(cases.map(([p]) => p).sort(), Object.keys(PATTERN_WORDS).sort());
  for (const [pattern, good, bad] of cases) {
    const re = new RegExp(pattern, "u");
    for (const v of good) assert.ok(re.test(v), `${pattern} accepts ${v}`);
    for (const v of bad) assert.not.ok(re.test(v), `${pattern} refuses ${v}`);
  }
  assert.is(fieldMessage("must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"), "Use letters, digits, `.`, `_` or `-`, starting with a letter or digit, up to 64 characters.");
});

test("other messages read as sentences; unknown patterns are kept rather than lost", () => {
  assert.is(fieldMessage("is required"), "Required: fill this in.");
  assert.is(fieldMessage("must be at most 100 characters (got 120)"), "Use at most 100 characters (this has 120).");
  assert.is(fieldMessage("must be an absolute http or https URL"), "Must be an absolute http or https URL.");
  assert.is(fieldMessage("must match ^x$"), "Must match ^x$.");
  assert.is(fieldMessage(""), "This value is not accepted.");
});

test("map entries name the entry; errors of one form field are joined", () => {
  const place = (f: string) => (f.startsWith("labels") ? "labels" : f.startsWith("services") ? "services" : f === "name" ? "name" : "");
  assert.equal(
    fieldErrors(
      [
        { field: "labels.bad key", message: "key must match ^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$" },
        { field: "labels.owner", message: "must be at most 256 characters" },
        { field: "services.SALES.path", message: "must match ^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9_~!$&'()*+,;=:@.-]+(/[A-Za-z0-9_~!$&'()*+,;=:@.-]+)*$" },
        { field: "name", message: "already in use" },
        { field: "type", message: "cannot change" },
      ],
      place,
    ),
    {
      labels:
        "Label key “bad key”: Use letters, digits, `.`, `_`, `/` or `-`, starting with a letter or digit, up to 63 characters. Label “owner”: Use at most 256 characters.",
      services: `Path of service “SALES”: ${PATTERN_WORDS["^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9_~!$&'()*+,;=:@.-]+(/[A-Za-z0-9_~!$&'()*+,;=:@.-]+)*$"]}`,
      name: "Already in use.",
      "": "Cannot change.",
    },
  );
});

test.run();
