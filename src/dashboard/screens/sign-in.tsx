/**
 * Sign in: the master key or an admin key is pasted once and exchanged for
 * a cookie session; the key is sent in one request and kept nowhere (no
 * storage, no signal: the field is cleared as soon as it is sent).
 */
import { useRef, useState } from "preact/hooks";
import { ApiError, api } from "../api.js";
import { signInNotice, signedIn } from "../state.js";
import { describedBy } from "./form-messages.js";

export function SignIn() {
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
      signedIn.value = true;
    } catch (err) {
      field.value = "";
      setError(err instanceof ApiError ? signInError(err) : "Signing in failed.");
      field.focus();
    } finally {
      setBusy(false);
    }
  };

  const notice = signInNotice.value;
  return (
    <main class="sign-in">
      <h1>erplink</h1>
      <form onSubmit={submit} aria-describedby="sign-in-help" autocomplete="off" noValidate>
        <h2>Sign in</h2>
        <p id="sign-in-help">
          Paste the master key or an admin key. It is exchanged for a session and not kept by this browser.
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
