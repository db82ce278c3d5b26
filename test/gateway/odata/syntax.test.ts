/**
 * Unit tests of src/gateway/odata/syntax.ts: identifiers, quoted literals,
 * top-level splitting and calls, table-driven.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  Refusal,
  isQualifiedName,
  isSimpleIdentifier,
  skipDoubleQuoted,
  skipSingleQuoted,
  splitCall,
  splitTopLevel,
} from "../../../src/gateway/odata/syntax.js";

function refusal(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    assert.instance(error, Refusal);
    return (error as Refusal).message;
  }
}

const test = suite("syntax");

const identifiers: [string, boolean, boolean][] = [
  ["SalesOrders", true, false],
  ["_x1", true, false],
  ["Straße", true, false],
  ["1abc", false, false],
  ["a-b", false, false],
  ["", false, false],
  ["a".repeat(128), true, false],
  ["a".repeat(129), false, false],
  ["Sales.SalesOrder", false, true],
  ["A.B.C", false, true],
  ["Sales.", false, false],
  [".x", false, false],
];
for (const [s, simple, qualified] of identifiers) {
  test(`identifier '${s.slice(0, 20)}': simple ${simple}, qualified ${qualified}`, () => {
    assert.is(isSimpleIdentifier(s), simple);
    assert.is(isQualifiedName(s), qualified);
  });
}

const quoted: [string, number, number][] = [
  ["'abc'", 0, 5],
  ["'O''Neil' x", 0, 9],
  ["''''", 0, 4],
  ["x'a'", 1, 4],
  ["'abc", 0, -1],
  ["'a''", 0, -1],
];
for (const [s, at, end] of quoted) {
  test(`skipSingleQuoted ${s} from ${at} -> ${end}`, () => {
    assert.is(skipSingleQuoted(s, at), end);
  });
}

test("skipDoubleQuoted honours backslash escapes", () => {
  assert.is(skipDoubleQuoted('"a\\"b" x', 0), 6);
  assert.is(skipDoubleQuoted('"a\\"', 0), -1);
});

const splits: [string, string, string[] | string][] = [
  ["a,b,c", ",", ["a", "b", "c"]],
  ["", ",", [""]],
  ["a(b,c),d", ",", ["a(b,c)", "d"]],
  ["'x,y',z", ",", ["'x,y'", "z"]],
  ["'it''s,',z", ",", ["'it''s,'", "z"]],
  ['["a,b"],c', ",", ['["a,b"]', "c"]],
  ["$filter=a;$top=1", ";", ["$filter=a", "$top=1"]],
  ["a(b", ",", "unbalanced '(' in t"],
  ["a)b", ",", "unbalanced ')' in t"],
  ["a(]", ",", "unbalanced ']' in t"],
  ["'a", ",", "unterminated string literal in t"],
  [`${"(".repeat(33)}${")".repeat(33)}`, ",", "t is nested more than 32 levels deep"],
];
for (const [s, separator, expected] of splits) {
  test(`splitTopLevel ${s.slice(0, 30)} on '${separator}'`, () => {
    if (typeof expected === "string") assert.is(refusal(() => splitTopLevel(s, separator, "t")), expected);
    else assert.equal(splitTopLevel(s, separator, "t"), expected);
  });
}

const calls: [string, { name: string; args?: string } | string][] = [
  ["Orders", { name: "Orders" }],
  ["Orders(1)", { name: "Orders", args: "1" }],
  ["Orders()", { name: "Orders", args: "" }],
  ["F(a='x)',b=(1))", { name: "F", args: "a='x)',b=(1)" }],
  ["Orders(1)x", "unexpected characters after ')' in t"],
  ["Orders(1)(2)", "unexpected characters after ')' in t"],
  ["Or)ders(1)", "unbalanced ')' in t"],
  ["Or'ders(1)", "misplaced quote in t"],
];
for (const [s, expected] of calls) {
  test(`splitCall ${s}`, () => {
    if (typeof expected === "string") assert.is(refusal(() => splitCall(s, "t")), expected);
    else assert.equal(splitCall(s, "t"), expected);
  });
}

test.run();
