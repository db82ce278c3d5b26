/**
 * Keyboard shortcuts of the signed-in dashboard: `/` focuses the current
 * screen's search or filter field, unless the admin is typing in a field
 * (where `/` is a character) or a dialog is open.
 */
import { useEffect } from "preact/hooks";

/** The current screen's search or filter field, in order of preference. */
const SEARCH_FIELD = [
  "main [data-search]",
  "main input[type='search']",
  "main form.filters input:not([type='datetime-local']):not([type='hidden'])",
].join(", ");

/** Whether the key press happens while typing in a field (or an editable element). */
function typing(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) return !["button", "checkbox", "radio", "submit", "reset", "file", "color", "range"].includes(target.type);
  return false;
}

/** Installs the `/` shortcut for as long as the calling component is shown. */
export function useSearchShortcut(): void {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
      if (typing(event.target) || document.querySelector("dialog[open]") !== null) return;
      const field = document.querySelector<HTMLInputElement>(SEARCH_FIELD);
      if (field === null) return;
      event.preventDefault();
      field.focus();
      field.select();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
}
