/** The app's state: signals only (no other global mutable state). */
import { signal } from "@preact/signals";
import { csrfToken, whenSignedOut } from "./api.js";

/** Whether the browser holds a session (the CSRF cookie is readable; the session cookie is not). */
export const signedIn = signal(csrfToken() !== "");

/** Why the user is on the sign-in screen (a server message), or "". */
export const signInNotice = signal("");

/** The current client-side route, the path below `/dashboard/`. */
export const route = signal(currentRoute());

function currentRoute(): string {
  return location.pathname.replace(/^\/dashboard\/?/, "").replace(/\/$/, "");
}

/** Goes to a screen (history entry; no reload). */
export function navigate(to: string): void {
  history.pushState(null, "", `/dashboard/${to}`);
  route.value = to;
}

addEventListener("popstate", () => {
  route.value = currentRoute();
});

whenSignedOut((message) => {
  // A call answered after the user signed out (or after an earlier 401)
  // must not replace the message already shown.
  if (!signedIn.value) return;
  // The session is gone: drop its CSRF cookie too, so a reload opens sign-in directly.
  document.cookie = "__Host-erplink_csrf=; Max-Age=0; Path=/; Secure; SameSite=Strict";
  signedIn.value = false;
  signInNotice.value = message;
});
