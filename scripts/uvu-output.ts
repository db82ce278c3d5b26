/**
 * The uvu suites of a run's output (`--color=false`) that did not all pass,
 * as `<file> › <suite>: a of b passed`. uvu prints nothing when a suite's
 * `before` or `after` hook throws (its runner returns from `finally`), so a
 * suite short of tests without a single ✘ is said to have had a failing hook.
 */
export function failingSuites(out: string): string[] {
  const found: string[] = [];
  let file = "";
  for (const line of out.split("\n")) {
    if (/^\S+\.test\.ts$/.test(line)) file = line;
    const counts = /\((\d+) \/ (\d+)\)\s*$/.exec(line);
    if (counts === null || counts[1] === counts[2]) continue;
    // A test's console output can split the suite's line; its name is then on an earlier line.
    const name = /^ (.*?)\s{2}/.exec(line)?.[1]?.trim() ?? "(a suite whose line a test's output interrupted)";
    const hook = line.includes("✘") ? "" : " (no test failed: a before/after hook threw, and uvu does not print its error)";
    found.push(`${file} › ${name}: ${counts[1]} of ${counts[2]} passed${hook}`);
  }
  return found;
}
