/**
 * Unsaved edits. A form that holds input it has not saved says so with
 * {@link useUnsavedChanges}; while any does, leaving it (another screen,
 * Back, Cancel, sign-out) first asks in the page's own dialog, and closing
 * or reloading the tab asks through the browser's. Nothing is kept in
 * storage: a session that ends while a form is open keeps the form in the
 * page, behind the sign-in dialog (see main.tsx).
 */
import { signal } from "@preact/signals";
import { useLayoutEffect } from "preact/hooks";

/** A form holding unsaved input: what it edits, in words, and which form it is (for actions that drop only that one). */
interface Holder {
  readonly what: string;
  readonly form: string;
}

/** The forms holding unsaved input, each by a registration token. */
const holders = new Map<object, Holder>();

/** What the open forms with unsaved input edit ("key orders-reader", "a new instance of S4"), in the order they were changed. */
export const unsavedForms = signal<readonly string[]>([]);

function publish(): void {
  unsavedForms.value = [...new Set([...holders.values()].map((h) => h.what))];
}

/**
 * Marks the calling form as holding unsaved input while `dirty` holds;
 * `what` names what it edits, `form` which form it is (see {@link unlessUnsaved}).
 */
export function useUnsavedChanges(dirty: boolean, what: string, form: string): void {
  // Layout, not passive, effect: registered as the keystroke is rendered, not
  // a frame later, so that a Back or a close right after typing is asked about.
  useLayoutEffect(() => {
    if (!dirty) return;
    const token = {};
    holders.set(token, { what, form });
    publish();
    return () => {
      holders.delete(token);
      publish();
    };
  }, [dirty, what, form]);
}

/** A question the page asks before an action would drop unsaved input. */
export interface LeaveQuestion {
  /** What would be lost, as {@link unsavedForms}. */
  readonly forms: readonly string[];
  /** The button that goes ahead, in words ("Leave without saving", "Sign out without saving"). */
  readonly confirm: string;
  readonly proceed: () => void;
}

/** The question being asked, or undefined (the shell shows it as a dialog). */
export const leaveQuestion = signal<LeaveQuestion | undefined>(undefined);

/**
 * Runs `proceed` at once when no form it would drop holds unsaved input
 * (those named in `forms`, or every form, as leaving the screen does);
 * otherwise asks first, and runs it only when the admin confirms.
 */
export function unlessUnsaved(confirm: string, proceed: () => void, forms?: readonly string[]): void {
  const lost = [...new Set([...holders.values()].filter((h) => forms === undefined || forms.includes(h.form)).map((h) => h.what))];
  if (lost.length === 0) {
    proceed();
    return;
  }
  leaveQuestion.value = {
    forms: lost,
    confirm,
    proceed: () => {
      leaveQuestion.value = undefined;
      proceed();
    },
  };
}

/** Closes the question without acting: the admin stays with their input. */
export function stay(): void {
  leaveQuestion.value = undefined;
}

// Closing or reloading the tab: only the browser may ask (its own words).
addEventListener("beforeunload", (event) => {
  if (unsavedForms.value.length === 0) return;
  event.preventDefault();
  // Chromium before 119 asks only when returnValue is set.
  event.returnValue = "";
});
