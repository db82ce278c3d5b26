import { suite } from "uvu";
import * as assert from "uvu/assert";
import { failingSuites } from "../../scripts/uvu-output.js";

const test = suite("scripts: failing suites from uvu's output");

// Lines as uvu 0.5 prints them with --color=false.
const OUT = [
  "dashboard/api-keys.test.ts",
  " dashboard: API keys  • • • • • • •   (7 / 7)",
  "",
  "dashboard/hostile.test.ts",
  " dashboard: hostile data    (0 / 5)",
  "",
  "gateway/data.test.ts",
  " data path  • ✘ •   (2 / 3)",
  " other suite  • •   (2 / 2)",
  "",
  "services/race.test.ts",
  " race  progress: 7 deleted",
  "• ✘   (1 / 2)",
  "",
  "  Total:     19",
  "  Passed:    12",
].join("\n");

test("lists each suite short of tests, with its file, and says when no test failed (a hook threw)", () => {
  assert.equal(failingSuites(OUT), [
    "dashboard/hostile.test.ts › dashboard: hostile data: 0 of 5 passed (no test failed: a before/after hook threw, and uvu does not print its error)",
    "gateway/data.test.ts › data path: 2 of 3 passed",
    "services/race.test.ts › (a suite whose line a test's output interrupted): 1 of 2 passed",
  ]);
});

test("nothing for a run where every suite passed", () => {
  assert.equal(failingSuites(" a  • •   (2 / 2)\n b  •   (1 / 1)\n"), []);
});

test.run();
