/**
 * Unit tests of src/services/paging.ts and the page-token form in
 * src/schema/resource-ids.ts: the pattern the OpenAPI document publishes for
 * each list's `page_token` admits exactly the tokens that list takes, so a
 * client (or Schemathesis) that writes a token matching it is never refused.
 */
import { ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ID_ALPHABET, pageTokenPattern, type IdPrefix } from "../../src/schema/resource-ids.js";
import { createIdGenerator } from "../../src/services/ids.js";
import { nextPageToken, readPaging } from "../../src/services/paging.js";

const test = suite("paging");

const PREFIXES: readonly IdPrefix[] = ["sys", "ins", "key", "log", "ses", "aud"];

function accepts(token: string, prefix: IdPrefix): boolean {
  try {
    readPaging(0, token, prefix);
    return true;
  } catch (err) {
    assert.instance(err, ConnectError);
    return false;
  }
}

test("a list's next page token matches its published pattern and continues after the last item", () => {
  const newId = createIdGenerator();
  for (const prefix of PREFIXES) {
    const last = newId(prefix);
    const token = nextPageToken({ items: [{ id: newId(prefix) }, { id: last }], more: true });
    assert.match(token, new RegExp(pageTokenPattern(prefix)));
    assert.equal(readPaging(0, token, prefix), { limit: 50, afterId: last });
    assert.is(nextPageToken({ items: [{ id: last }], more: false }), "", "no token after the last page");
  }
});

test("every string the pattern matches is a token the list takes (property), and another list's tokens are not", () => {
  const body = fc.string({ unit: fc.constantFrom(...ID_ALPHABET.split("")), minLength: 26, maxLength: 26 });
  for (const prefix of PREFIXES) {
    const re = new RegExp(pageTokenPattern(prefix));
    fc.assert(
      fc.property(body, (b) => {
        const token = Buffer.from(`v1:${prefix}_${b}`).toString("hex");
        return re.test(token) && accepts(token, prefix) && readPaging(0, token, prefix).afterId === `${prefix}_${b}`;
      }),
      { numRuns: 200, seed: 13 },
    );
    const other = PREFIXES.find((p) => p !== prefix)!;
    const foreign = Buffer.from(`v1:${other}_${"0".repeat(26)}`).toString("hex");
    assert.is(re.test(foreign), false);
    assert.is(accepts(foreign, prefix), false);
  }
});

test("strings the pattern does not match are refused (property): hex of anything else, upper-case hex, other encodings", () => {
  const re = new RegExp(pageTokenPattern("sys"));
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 80 }), fc.string({ maxLength: 40 }).map((s) => Buffer.from(s).toString("hex"))), (token) =>
      token === "" || re.test(token) === accepts(token, "sys"),
    ),
    { numRuns: 2000, seed: 13 },
  );
  const valid = Buffer.from(`v1:sys_${"1".repeat(26)}`).toString("hex");
  for (const token of [valid.toUpperCase(), Buffer.from(`v1:sys_${"1".repeat(26)}`).toString("base64url"), `${valid}00`, valid.slice(2)]) {
    assert.is(re.test(token), false, token);
    assert.is(accepts(token, "sys"), false, token);
  }
});

test("page_size: 0 (or absent) is the default, up to the list's maximum; beyond it is refused", () => {
  assert.is(readPaging(0, "", "sys").limit, 50);
  assert.is(readPaging(500, "", "sys").limit, 500);
  assert.is(readPaging(0, "", "log", { default: 100, max: 1000 }).limit, 100);
  assert.throws(() => readPaging(501, "", "sys"), /page_size: must be between 1 and 500/);
  assert.throws(() => readPaging(-1, "", "sys"), /page_size/);
});

test.run();
