/**
 * The bearer secrets' format (src/schema/secret-format.ts): the checksum,
 * written with plain numbers, is the base62 of the body's CRC-32 exactly as
 * the BigInt arithmetic of earlier releases wrote it (keys and sessions
 * already issued stay well-formed), for any body; issued secrets are
 * well-formed, and one changed character is not.
 */
import { crc32 } from "node:zlib";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { checksum, secretFormat } from "../../src/schema/secret-format.js";
import { fuzzSeed } from "../../test-support/fuzz/harness.js";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** The reference: base62 by BigInt division, 6 digits. */
function bigIntChecksum(body: string): string {
  let value = BigInt(crc32(body));
  let out = "";
  for (let i = 0; i < 6; i++) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

const test = suite("secret format");

test("the checksum is the BigInt reference's, for any body", () => {
  // Bodies whose CRC-32 is 0 and 2^32 - 1 are hard to write down; these cover small and large values.
  for (const body of ["", "a", "erpl_", "erpls_", "x".repeat(1000)]) assert.is(checksum(body), bigIntChecksum(body), body);
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 80 }), (body) => {
      assert.is(checksum(body), bigIntChecksum(body));
    }),
    { seed: fuzzSeed(), numRuns: 5000 },
  );
});

test("issued secrets are well-formed; a changed character, another prefix or length is not", () => {
  const format = secretFormat("erpl_");
  for (let i = 0; i < 200; i++) {
    const secret = format.generate();
    assert.match(secret, /^erpl_[0-9A-Za-z]{49}$/);
    assert.ok(format.isWellFormed(secret));
    const at = 5 + (i % 49);
    const changed = secret.slice(0, at) + (secret[at] === "a" ? "b" : "a") + secret.slice(at + 1);
    assert.not.ok(format.isWellFormed(changed), changed);
    assert.not.ok(format.isWellFormed(`erpls_${secret.slice(5)}`));
    assert.not.ok(format.isWellFormed(`${secret}0`));
  }
});

test.run();
