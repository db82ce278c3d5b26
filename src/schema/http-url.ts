/**
 * The form of a back-end URL (the `http_url` field rule), as one regular
 * expression shared by the services (which enforce it) and the gateway
 * (which publishes it in the OpenAPI document), so that both agree on
 * every string: whatever matches is accepted, whatever does not is refused.
 *
 * An absolute `http` or `https` URL whose host is a DNS name (ASCII labels
 * of letters, digits and `_`, joined by single `-`; the last starting with
 * a letter or `_`), an IPv4 address or a bracketed IPv6 address; an optional
 * port up to 65535; then a path and query of the characters RFC 3986
 * allows there, other characters percent-encoded (`%20`); no fragment, no
 * user credentials. Every match is a URI (RFC 3986) that the WHATWG parser
 * reads as written (no `xn--` labels it could reject, no host it would read
 * as a malformed IPv4 address).
 */

const LABEL = "[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*";
const LAST_LABEL = "[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*";
const DNS_NAME = `(?:${LABEL}\\.)*${LAST_LABEL}\\.?`;
const OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const IPV4 = `(?:${OCTET}\\.){3}${OCTET}`;
const H16 = "[0-9A-Fa-f]{1,4}";
const IPV6 = [
  `(?:${H16}:){7}${H16}`,
  `(?:${H16}:){1,7}:`,
  `(?:${H16}:){1,6}:${H16}`,
  `(?:${H16}:){1,5}(?::${H16}){1,2}`,
  `(?:${H16}:){1,4}(?::${H16}){1,3}`,
  `(?:${H16}:){1,3}(?::${H16}){1,4}`,
  `(?:${H16}:){1,2}(?::${H16}){1,5}`,
  `${H16}:(?::${H16}){1,6}`,
  `:(?:(?::${H16}){1,7}|:)`,
].join("|");
const PORT = "(?:[0-9]{1,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
const REST = "(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*";

/** The ECMAScript pattern (anchored) every back-end URL matches. */
export const HTTP_URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://(?:${IPV4}|${DNS_NAME}|\\[(?:${IPV6})\\])(?::${PORT}?)?(?:[/?]${REST})?$`;
