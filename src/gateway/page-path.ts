/**
 * The path of a request URL as the router reads it, for deciding whether an
 * answer lies under one of erplink's pages (`/dashboard`, `/api-reference`)
 * and carries its security headers. find-my-way ends the path at the first
 * `?` or `#` and percent-decodes it; the pages' names are ASCII, so decoding
 * only ASCII escapes (`%00`–`%7F`) tells the same, and cannot fail on an
 * escape that is not valid UTF-8 or not an escape at all (`%zz`, `%E0%A4`):
 * such a path is still under the page when its name is (the router's 400
 * for it is the page's answer too).
 */

/** The first `?` or `#`: where find-my-way's path ends. */
const PATH_END = /[?#]/;
/** A percent-escape of an ASCII character. */
const ASCII_ESCAPE = /%[0-7][0-9A-Fa-f]/g;

/** `url`'s path as the router reads it, with its ASCII escapes decoded (once, as the router does). */
export function pagePathOf(url: string): string {
  const end = url.search(PATH_END);
  const path = end < 0 ? url : url.slice(0, end);
  return path.includes("%") ? path.replace(ASCII_ESCAPE, decodeAsciiEscape) : path;
}

/** `%XX` as its character. (A module function: see `referenceResolverOf` in src/gateway/data/analyze.ts.) */
function decodeAsciiEscape(escape: string): string {
  return String.fromCharCode(Number.parseInt(escape.slice(1), 16));
}
