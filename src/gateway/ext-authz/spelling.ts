/**
 * Whether the client's request target is spelt as erplink writes it. On the
 * data path the back end never reads the client's spelling: `forward` writes
 * the target from the canonical request with erplink's own encoder
 * (`../odata/target.ts`), which encodes everything some back end could read
 * as structure (a `;` some split the query on, a `+` some read as a space,
 * `%`, `#`, `?`, a `'`, `&` or `=` inside a value). Envoy forwards the
 * client's bytes instead, so its check requires that they be erplink's, up to
 * differences no reader can tell apart:
 *
 * - the case of percent-encoding hex digits, and unreserved characters
 *   (RFC 3986 §2.3: letters, digits, `- . _ ~`) written encoded or not;
 * - in query values also `' $ ( ) , / : @ * ! =` encoded or not (no parser
 *   splits a query on them, and every OData reader decodes a value before
 *   parsing it), so that what `encodeURIComponent` writes passes;
 * - `sap-client=<the instance's>` as an option of its own.
 *
 * Option names are compared exactly (`$filter`, not `%24filter`, `$FILTER` or
 * `filter`), in the same order, as are structure characters of the path (a
 * raw `;` starts SAP Gateway's matrix parameters, `;o=<system alias>`). A
 * `/` after the resource path, which the analyzer drops, is a difference,
 * except on GET and HEAD (the SAP Cloud SDK fetches its CSRF token with a
 * HEAD on `<entity set>/`): SAP CAP reads an empty segment there (a POST to
 * `Products/` as one to an entity), which on a read is still a read of the
 * same resource.
 *
 * Pure: no I/O.
 */

/** RFC 3986 unreserved characters: the same encoded or not, anywhere. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
/** In a query value: unreserved, and what erplink's encoder writes raw there (and `'`, `=`, which clients leave raw). */
const VALUE_ALIKE = /^[A-Za-z0-9\-._~'$(),/:@*!=]$/;

/** `s` with every `%XX` of a character in `alike` decoded and every other one's hex in upper case. */
function normalized(s: string, alike: RegExp): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return alike.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
}

function splitPair(pair: string): [string, string | undefined] {
  const eq = pair.indexOf("=");
  return eq < 0 ? [pair, undefined] : [pair.slice(0, eq), pair.slice(eq + 1)];
}

/**
 * Whether the client's target below the service root (`method`: the analyzed one; `rawPath`: `""` or
 * starting with `/`; `rawQuery` without `?`) is `forward` (the canonical
 * target as erplink writes it, relative to the root, `../data/exchange.ts`)
 * spelt another way than the module comment allows.
 */
export function spelledOtherwise(method: string, rawPath: string, rawQuery: string, forward: string, sapClient: string | undefined): boolean {
  const q = forward.indexOf("?");
  const path = q < 0 ? forward : forward.slice(0, q);
  const query = q < 0 ? "" : forward.slice(q + 1);
  // The service root is its document with or without the `/` (`placeOf` and `splitTarget` give `""` or `/`).
  let client = rawPath.startsWith("/") ? rawPath.slice(1) : rawPath;
  if ((method === "GET" || method === "HEAD") && client.endsWith("/") && !path.endsWith("/")) client = client.slice(0, -1);
  if (normalized(client, UNRESERVED) !== normalized(path, UNRESERVED)) return true;
  const own = sapClient === undefined || sapClient === "" ? undefined : `sap-client=${sapClient}`;
  const pairs = rawQuery === "" ? [] : rawQuery.split("&").filter((p) => p !== own);
  const expected = query === "" ? [] : query.split("&");
  if (pairs.length !== expected.length) return true;
  return pairs.some((pair, i) => {
    const [name, value] = splitPair(pair);
    const [wantName, wantValue] = splitPair(expected[i]!);
    if (name !== wantName || (value === undefined) !== (wantValue === undefined)) return true;
    return value !== undefined && normalized(value, VALUE_ALIKE) !== normalized(wantValue!, VALUE_ALIKE);
  });
}
