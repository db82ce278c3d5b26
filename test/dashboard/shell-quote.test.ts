/**
 * src/dashboard/shell-quote.ts against a real POSIX shell: every hostile
 * value (quotes, command substitution, backticks, variables, globs, newlines,
 * semicolons) is passed to the command as exactly the one argument it is,
 * and nothing else runs.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { shellQuote } from "../../src/dashboard/shell-quote.js";

const test = suite("dashboard: shell quoting");

test("each value reaches the command as one argument, byte for byte, and runs nothing", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "erplink-shell-"));
  const marker = path.join(dir, "pwned");
  try {
    const values = [
      "",
      "plain",
      "Authorization: Bearer erpl_abc",
      "http://127.0.0.1:8080/odata/s4-prod/API_BP;v=2/A_BusinessPartner?$top=5",
      `';touch ${marker};'`,
      `$(touch ${marker})`,
      `\`touch ${marker}\``,
      `"; touch ${marker}; "`,
      `'"'"'$(touch ${marker})'"'`,
      "$HOME ${PATH} $0 $$ \\n \\' *  ? [a] ~",
      `a\nb\ttouch ${marker}\n`,
      "''''",
      "\\",
    ];
    for (const value of values) {
      // printf prints each argument followed by a NUL: one argument, unchanged.
      const out = execFileSync("sh", ["-c", `printf '%s\\0' ${shellQuote(value)}`], { encoding: "utf8" });
      assert.is(out, `${value}\0`, JSON.stringify(value));
    }
    // A whole curl-like line keeps its arguments apart.
    const argv = execFileSync("sh", ["-c", `printf '%s\\0' -s -H ${shellQuote(values[4]!)} ${shellQuote(values[5]!)}`], { encoding: "utf8" });
    assert.equal(argv.split("\0").slice(0, -1), ["-s", "-H", values[4], values[5]]);
    assert.not.ok(existsSync(marker), "a quoted value ran a command");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("safe values are written as before: one pair of single quotes", () => {
  assert.is(shellQuote("Authorization: Bearer erpl_abc"), "'Authorization: Bearer erpl_abc'");
  assert.is(shellQuote("it's"), "'it'\\''s'");
});

test.run();
