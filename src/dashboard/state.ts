/** The app's state: signals only (no other global mutable state). */
import { signal } from "@preact/signals";
import { csrfToken, whenSignedOut } from "./api.js";
import { unlessUnsaved, unsavedForms } from "./unsaved.js";

/** Whether the browser holds a session (the CSRF cookie is readable; the session cookie is not). */
export const signedIn = signal(csrfToken() !== "");

/** Why the user is on the sign-in screen (a server message), or "". */
export const signInNotice = signal("");

/**
 * Whether the session ended while the page was open (a 401, not a sign-out):
 * sign-in is then asked for over the page, which keeps every open form as it
 * was, so that an edit can be saved once signed in again.
 */
export const sessionLost = signal(false);

/**
 * Counts the times the page was started afresh after signing in again over
 * it: with no unsaved input to keep, the screens are mounted anew, so that
 * what failed to load while the session was gone loads again.
 */
export const shellEpoch = signal(0);

/** The current client-side route, the path below `/dashboard/`. */
export const route = signal(currentRoute());

function currentRoute(): string {
  return location.pathname.replace(/^\/dashboard\/?/, "").replace(/\/$/, "");
}

/**
 * Goes to a screen (history entry; no reload), asking first when a form
 * holds unsaved input, unless the caller has already asked (`asked`).
 */
export function navigate(to: string, options: { readonly asked?: boolean } = {}): void {
  if (to === route.value) return;
  if (options.asked === true) go(to);
  else unlessUnsaved("Leave without saving", () => go(to));
}

function go(to: string): void {
  history.pushState(null, "", `/dashboard/${to}`);
  route.value = to;
}

addEventListener("popstate", () => {
  const target = currentRoute();
  if (target === route.value) return;
  if (unsavedForms.value.length === 0) {
    route.value = target;
    return;
  }
  // Back and Forward cannot be cancelled: the address is put back while the
  // admin is asked, and changed again only if they leave.
  history.pushState(null, "", `/dashboard/${route.value}`);
  unlessUnsaved("Leave without saving", () => go(target));
});

whenSignedOut((message) => {
  // A call answered after the user signed out (or after an earlier 401)
  // must not replace the message already shown.
  if (!signedIn.value) return;
  // The session is gone: drop its CSRF cookie too, so a reload opens sign-in directly.
  document.cookie = "__Host-erplink_csrf=; Max-Age=0; Path=/; Secure; SameSite=Strict";
  sessionLost.value = true;
  signedIn.value = false;
  signInNotice.value = message;
});
