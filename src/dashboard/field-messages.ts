/**
 * The server's field errors in words a person can act on. Validation answers
 * carry `details[]` of `{field, message}`; where a field's rule is a pattern
 * without its own words, the message is `must match <pattern>` (or, for a key
 * of a map, `key must match <pattern>`). Each such pattern the admin API can
 * send is translated here, once; any other message is kept, with its first
 * letter capitalised and a full stop, so that it reads as a sentence.
 */

/** What to do, for each pattern the admin API names in a `must match` message. */
export const PATTERN_WORDS: Readonly<Record<string, string>> = {
  // Instance names (instance.proto `name`).
  "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$": "Use letters, digits, `.`, `_` or `-`, starting with a letter or digit, up to 64 characters.",
  // Label keys of a system (system.proto `labels`).
  "^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$": "Use letters, digits, `.`, `_`, `/` or `-`, starting with a letter or digit, up to 63 characters.",
  // Service names of an instance (instance.proto `services` keys).
  "^[A-Za-z0-9_][A-Za-z0-9_.;=-]{0,127}$": "Use letters, digits, `_`, `.`, `;`, `=` or `-`, starting with a letter, digit or `_`, up to 128 characters.",
  // The SAP client (instance.proto `sap_client`).
  "^[0-9]{3}$": "Use exactly three digits, such as 100, or leave it empty for the back end's default client.",
  // A service's path under the base URL (instance.proto `ServiceRoute.path`).
  "^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9_~!$&'()*+,;=:@.-]+(/[A-Za-z0-9_~!$&'()*+,;=:@.-]+)*$":
    "Use a path below the base URL, such as `sap/API_BUSINESS_PARTNER`: segments of letters, digits and `_ ~ ! $ & ' ( ) * + , ; = : @ . -` joined by single `/`, with no `.` or `..` segment and no `/` at either end.",
};

const MUST_MATCH = /^(key )?must match (.+)$/s;

/** The server's message for one field, in words (a `must match` pattern translated, anything else made a sentence). */
export function fieldMessage(message: string): string {
  const m = MUST_MATCH.exec(message);
  if (m !== null) {
    const words = PATTERN_WORDS[m[2]!];
    if (words !== undefined) return words;
  }
  const required = /^is required$/.exec(message);
  if (required !== null) return "Required: fill this in.";
  const tooLong = /^must be at most (\d+) characters(?: \(got (\d+)\))?$/.exec(message);
  if (tooLong !== null) return `Use at most ${tooLong[1]} characters${tooLong[2] === undefined ? "" : ` (this has ${tooLong[2]})`}.`;
  const trimmed = message.trim();
  if (trimmed === "") return "This value is not accepted.";
  const sentence = trimmed[0]!.toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
}

/** One field error of an answer, placed on a form field. */
export interface FieldError {
  /** The form field's key (as the form names it), or "" when no field of the form shows it. */
  readonly field: string;
  readonly message: string;
}

/**
 * Places the answer's field errors on a form's fields: `place` maps the
 * server's field path (`name`, `labels.owner`, `services.SALES.path`) to the
 * form field that shows it, or "" for none. Several errors of one form field
 * are joined.
 */
export function fieldErrors(
  details: readonly { readonly field: string; readonly message: string }[],
  place: (serverField: string) => string,
): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const d of details) {
    const field = place(d.field);
    const words = describe(d.field, d.message);
    out[field] = out[field] === undefined ? words : `${out[field]} ${words}`;
  }
  return out;
}

/** A map entry's error names the entry (`Label key "bad key": …`); a plain field's is its message in words. */
function describe(serverField: string, message: string): string {
  const words = fieldMessage(message);
  const dot = serverField.indexOf(".");
  if (dot < 0) return words;
  const head = serverField.slice(0, dot);
  const rest = serverField.slice(dot + 1);
  if (head === "labels") return `Label ${/^key /.test(message) ? "key " : ""}“${rest}”: ${words}`;
  if (head === "services") {
    const path = /\.path$/.exec(rest);
    return path !== null ? `Path of service “${rest.slice(0, path.index)}”: ${words}` : `Service “${rest}”: ${words}`;
  }
  if (head === "permissions") return `${rest}: ${words}`;
  return words;
}
