/** The signed-in frame: navigation, sign-out and the current screen. */
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, busyRetry } from "./api.js";
import type { ComponentType } from "preact";
import { ApiKeys } from "./screens/api-keys.js";
import { Audit } from "./screens/audit.js";
import { Logs } from "./screens/logs.js";
import { Overview } from "./screens/overview.js";
import { Sessions } from "./screens/sessions.js";
import { Systems } from "./screens/systems.js";
import { withRequestId } from "./screens/sign-in.js";
import { useSearchShortcut } from "./shortcuts.js";
import { navigate, route, sessionLost, signInNotice, signedIn } from "./state.js";
import { leaveQuestion, stay, unlessUnsaved } from "./unsaved.js";

/** The screens, in navigation order (the first is the default); each is one module under screens/. */
const SCREENS: readonly { readonly path: string; readonly title: string; readonly screen: ComponentType }[] = [
  { path: "", title: "Overview", screen: Overview },
  { path: "systems", title: "Systems", screen: Systems },
  { path: "api-keys", title: "API keys", screen: ApiKeys },
  { path: "logs", title: "Logs", screen: Logs },
  { path: "audit", title: "Audit", screen: Audit },
  { path: "sessions", title: "Sessions", screen: Sessions },
];

/** While a refused read waits to be retried: the countdown (its own component, so that only it renders each second). */
function BusyNotice() {
  const seconds = busyRetry.value;
  return seconds > 0 ? (
    <p class="notice" role="status">
      erplink is busy: retrying in {seconds} s
    </p>
  ) : null;
}

export function Shell() {
  const [error, setError] = useState("");
  useSearchShortcut();
  // The session may have expired or been revoked since the page was loaded:
  // one authenticated read finds out (a 401 returns to sign-in by itself).
  useEffect(() => {
    api.sessions().catch(() => {});
  }, []);

  const signOut = () => unlessUnsaved("Sign out without saving", () => void endSession());
  const endSession = async () => {
    try {
      await api.signOut();
      signInNotice.value = "You are signed out.";
      sessionLost.value = false;
      signedIn.value = false;
    } catch (err) {
      if (err instanceof ApiError && err.status !== 401) setError(withRequestId(err));
    }
  };

  const current = SCREENS.find((s) => s.path === route.value.split("/")[0]) ?? SCREENS[0]!;
  useEffect(() => {
    document.title = `${current.title} · erplink`;
  }, [current.title]);

  return (
    <div class="shell">
      <header>
        <span class="brand">erplink</span>
        <nav aria-label="Main">
          <ul>
            {SCREENS.map((s) => (
              <li key={s.path}>
                <a
                  href={`/dashboard/${s.path}`}
                  aria-current={s === current ? "page" : undefined}
                  onClick={(e) => {
                    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
                    e.preventDefault();
                    navigate(s.path);
                  }}
                >
                  {s.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <BusyNotice />
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <main>
        <current.screen />
      </main>
      <LeaveDialog />
    </div>
  );
}

/** Asks before an action drops unsaved input: Stay (the default) or go ahead. */
function LeaveDialog() {
  const dialog = useRef<HTMLDialogElement>(null);
  const question = leaveQuestion.value;
  useLayoutEffect(() => {
    const d = dialog.current;
    if (d === null) return;
    if (question !== undefined && !d.open) d.showModal();
    if (question === undefined && d.open) d.close();
  }, [question]);
  return (
    <dialog ref={dialog} class="confirm-dialog" aria-labelledby="leave-title" aria-describedby="leave-text" onCancel={stay} onClose={stay}>
      {question !== undefined && (
        <>
          <h2 id="leave-title">Unsaved changes</h2>
          <p id="leave-text">
            Your changes to {question.forms.join(", ")} are not saved. They are lost if you go on.
          </p>
          <div class="confirm-actions">
            <button type="button" autofocus onClick={stay}>
              Stay and keep editing
            </button>
            <button type="button" class="danger-solid" onClick={question.proceed}>
              {question.confirm}
            </button>
          </div>
        </>
      )}
    </dialog>
  );
}
