/**
 * Quoting for the shell commands the dashboard offers to copy (the `curl`
 * line after a key is created): whatever a value holds, pasting the command
 * into a POSIX shell passes it as one argument and runs nothing else.
 */

/** `value` as one POSIX shell word: in single quotes, each `'` written as `'\''`. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
