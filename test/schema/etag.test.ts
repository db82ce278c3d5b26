/**
 * Entity tags: the etags erplink gives, the ones it reads back, and
 * `If-Match` field values as RFC 9110 writes them.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { formatEtag, parseEtag, parseIfMatch, shownEtag } from "../../src/schema/etag.js";

const Etag = suite("etags");

Etag("an etag is the revision as a strong entity tag, and reads back as it; anything else names no revision", () => {
  for (const revision of [0, 1, 42, 999_999_999_999_999]) assert.is(parseEtag(formatEtag(revision)), revision);
  for (const other of ["", "1", '"01"', '"-1"', 'W/"1"', '"1" ', ' "1"', '"1.5"', '"1e3"', '"abc"', '"1000000000000000"', '""']) {
    assert.is(parseEtag(other), undefined, other);
  }
});

Etag("If-Match: *, one tag, a list (spaces, empty elements, commas inside a tag), weak tags marked; anything else is undefined", () => {
  assert.equal(parseIfMatch("*"), { any: true });
  assert.equal(parseIfMatch(" * "), { any: true });
  assert.equal(parseIfMatch('"1"'), { any: false, tags: [{ weak: false, tag: '"1"' }] });
  assert.equal(parseIfMatch(' "1" ,, W/"2","a,b" , '), {
    any: false,
    tags: [
      { weak: false, tag: '"1"' },
      { weak: true, tag: '"2"' },
      { weak: false, tag: '"a,b"' },
    ],
  });
  for (const bad of ["", ",", "1", '"1', '"1" "2"', '*, "1"', 'w/"1"', '"a"b"', 'W/ "1"', '"\x7f"']) {
    assert.is(parseIfMatch(bad), undefined, JSON.stringify(bad));
  }
});

Etag("a client's etag reads in messages as sent when it is an entity tag, else escaped and said not to be one", () => {
  assert.is(shownEtag('"3"'), '"3"');
  assert.is(shownEtag('W/"3"'), 'W/"3"');
  assert.is(shownEtag("3"), "3 (not an etag erplink gave)");
  assert.is(shownEtag('x"\n'), 'x\\"\\n (not an etag erplink gave)');
  assert.is(shownEtag("a".repeat(70)), `${"a".repeat(64)}… (not an etag erplink gave)`);
});

Etag.run();
