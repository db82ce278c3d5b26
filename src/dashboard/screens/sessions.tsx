/**
 * Sessions: the live sessions the caller may see (an admin key its own,
 * the master key all), revoked with confirmation. Revoking the session this
 * page uses signs out: the server clears its cookies, and the page returns to
 * sign-in. Which row is this page's session is learnt from the request log
 * (the list call's entry names its `session_id`), since the CSRF cookie does
 * not name the session.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, csrfToken } from "../api.js";
import { opsApi, when, type SessionInfo } from "../api-ops.js";
import { signInNotice, signedIn } from "../state.js";
import { useConfirm } from "./confirm-dialog.js";
import { CopyButton } from "./copy-button.js";
import { withRequestId } from "./sign-in.js";
import "./ops.css";

export function Sessions() {
  const [sessions, setSessions] = useState<readonly SessionInfo[] | undefined>(undefined);
  const [current, setCurrent] = useState("");
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [confirm, confirmDialog] = useConfirm();

  const load = async (): Promise<void> => {
    const all: SessionInfo[] = [];
    let token = "";
    do {
      const page = await opsApi.listSessions(token);
      all.push(...page.data);
      token = page.nextPageToken ?? "";
    } while (token !== "");
    setSessions(all);
    // The server marks the session this page's calls are made with.
    setCurrent(all.find((s) => s.current === true)?.id ?? "");
  };

  useEffect(() => {
    let live = true;
    load().catch((err: unknown) => {
      if (live && err instanceof ApiError) setError(withRequestId(err));
    });
    return () => {
      live = false;
    };
  }, []);

  const revoke = async (s: SessionInfo) => {
    const name = s.label ? `${s.label} (${s.id})` : s.id;
    const mine = s.id === current;
    const yes = await confirm({
      title: mine ? `Revoke your current session ${name}?` : `Revoke session ${name}?`,
      message: <p>{mine ? "You will be signed out." : "Whoever uses it is signed out at once."}</p>,
      confirm: mine ? "Revoke and sign out" : "Revoke session",
      danger: true,
    });
    if (!yes) return;
    setError("");
    setStatus("");
    try {
      await opsApi.revokeSession(s.id);
      // Revoking the session this page uses clears its cookies: back to sign-in.
      if (csrfToken() === "") {
        signInNotice.value = "You revoked your current session: you are signed out.";
        signedIn.value = false;
        return;
      }
      await load();
      setStatus(`Session ${name} revoked.`);
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    }
  };

  return (
    <section aria-labelledby="sessions-title" class="ops">
      <h1 id="sessions-title">Sessions</h1>
      <p>
        Live sessions: the master key sees every session, an admin key its own. A session acts for the key it was created with and ends when idle, at its
        absolute expiry, or when revoked here.
      </p>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="status" role="status">
        {status}
      </p>
      {confirmDialog}
      {sessions === undefined ? (
        error === "" && <p aria-busy="true">Loading sessions…</p>
      ) : sessions.length === 0 ? (
        <p>No live sessions.</p>
      ) : (
        <div class="table-scroll">
          <table>
            <caption>{sessions.length === 1 ? "1 live session" : `${sessions.length} live sessions`}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Acts for</th>
                <th scope="col">Kind</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Ends</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id} class={s.id === current ? "selected" : undefined}>
                  <th scope="row">
                    {s.label ? `${s.label} ` : ""}
                    <span class="id">{s.id}</span> <CopyButton text={s.id} what="session id" />
                    {s.id === current && <strong class="badge"> this session</strong>}
                  </th>
                  <td>{s.acts_for}</td>
                  <td>{s.cookie ? "browser" : "token"}</td>
                  <td>
                    <time dateTime={s.created_at}>{when(s.created_at)}</time>
                  </td>
                  <td>
                    <time dateTime={s.last_used_at}>{when(s.last_used_at)}</time>
                  </td>
                  <td>
                    idle at <time dateTime={s.idle_expires_at}>{when(s.idle_expires_at)}</time>, at the latest{" "}
                    <time dateTime={s.expires_at}>{when(s.expires_at)}</time>
                  </td>
                  <td>
                    <button type="button" class="danger" onClick={() => revoke(s)} aria-label={`Revoke session ${s.label ? `${s.label} ` : ""}${s.id}`}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
