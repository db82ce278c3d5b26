/**
 * Sign in: the master key or an admin key is pasted once and exchanged for
 * a cookie session; the key is sent in one request and kept nowhere (no
 * storage, no signal: the field is cleared as soon as it is sent).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api } from "../api.js";
import { sessionLost, shellEpoch, signInNotice, signedIn } from "../state.js";
import { unsavedForms } from "../unsaved.js";
import { describedBy } from "./form-messages.js";

/**
 * The sign-in form: a page of its own, or, with `over`, a modal dialog over
 * the page whose session ended, which keeps its open forms for after.
 */
export function SignIn({ over = false }: { readonly over?: boolean }) {
  const input = useRef<HTMLInputElement>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const field = input.current!;
    const key = field.value.trim();
    if (key === "") {
      setError("Paste the master key or an admin key.");
      field.focus();
      return;
    }
    setBusy(true);
    setError("");
    try {
      await api.signIn(key);
      field.value = "";
      signInNotice.value = "";
      // Nothing typed to keep: the page starts afresh (its failed loads again).
      if (over && unsavedForms.value.length === 0) shellEpoch.value++;
      sessionLost.value = false;
      signedIn.value = true;
    } catch (err) {
      field.value = "";
      setError(err instanceof ApiError ? signInError(err) : "Signing in failed.");
      field.focus();
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    if (over) input.current?.focus();
  }, [over]);

  const notice = signInNotice.value;
  const form = (
    <form onSubmit={submit} aria-describedby="sign-in-help" autocomplete="off" noValidate>
      <h2 id="sign-in-title">{over ? "Sign in again" : "Sign in"}</h2>
      <p id="sign-in-help">
        {over
          ? "Your session ended. Sign in again to go on: what you typed on this page is still here, not yet saved."
          : "Paste the master key or an admin key. It is exchanged for a session and not kept by this browser."}
      </p>
      {notice !== "" && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <label for="key">Admin key</label>
      <input id="key" ref={input} type="password" name="key" autocomplete="off" spellcheck={false} required {...describedBy(error, "sign-in-error")} />
      {error !== "" && (
        <p id="sign-in-error" class="error field-error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
  if (over) {
    return (
      <div class="sign-in-over">
        <div class="sign-in" role="dialog" aria-modal="true" aria-labelledby="sign-in-title">
          {form}
        </div>
      </div>
    );
  }
  return (
    <main class="sign-in">
      <h1>erplink</h1>
      {form}
    </main>
  );
}

/** An API error in words, with its request id to look it up in the logs. */
/** What a refused sign-in means, in words, with the request id to quote. */
function signInError(err: ApiError): string {
  const id = err.requestId === "" ? "" : ` (request ${err.requestId})`;
  if (err.status === 401) return `This is not a valid admin key: check that you pasted all of it, and that it has not been revoked or expired.${id}`;
  if (err.status === 403) return `This is a data key: the dashboard needs the master key or an admin key.${id}`;
  return withRequestId(err);
}

export function withRequestId(err: ApiError): string {
  return err.requestId === "" ? err.message : `${err.message} (request ${err.requestId})`;
}
