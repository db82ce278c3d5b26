/**
 * The Explain panel: an OData URL and a method, and what the data path would
 * decide for the key being edited (`POST /admin/api-keys/{id}/explain`), with
 * every access and its own decision. While its permissions are edited, the
 * unsaved draft is explained (sent as `permissions`; nothing is stored);
 * otherwise the saved permissions. Explains as you type (debounced), and
 * after every change of the draft.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "../api.js";
import { keysApi, type Explanation, type Permissions } from "../api-keys.js";
import { withRequestId } from "./sign-in.js";

const METHODS = ["GET", "POST", "PATCH", "PUT", "MERGE", "DELETE"];

/** The instance named by `/odata/<instance>/…` (or a full URL of that form), or "". */
function instanceOf(url: string): string {
  const path = url.replace(/^[a-z]+:\/\/[^/]+/i, "");
  const m = /^\/odata\/([^/?#]+)/.exec(path);
  if (m === null) return "";
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return m[1]!;
  }
}

/** What the panel explains: the saved permissions, or the draft being edited. */
type Explained = { readonly explanation: Explanation; readonly ofDraft: boolean };

interface ExplainPanelProps {
  readonly keyId: string;
  readonly keyName: string;
  /** The permissions being edited when they differ from the saved ones; undefined explains the saved ones. */
  readonly draft: Permissions | undefined;
  /** Why the draft cannot be read (its JSON view is invalid), or "": then nothing is explained. */
  readonly draftError: string;
  /** The saved key's version (`updated_at`): a save explains again. */
  readonly version: string;
  /** A request to explain at once (from a log entry's "Explain" link): its method and URL. */
  readonly initial?: { readonly method: string; readonly url: string };
}

export function ExplainPanel({ keyId, keyName, draft, draftError, version, initial }: ExplainPanelProps) {
  const [method, setMethod] = useState(initial !== undefined && METHODS.includes(initial.method) ? initial.method : "GET");
  const [url, setUrl] = useState(initial?.url ?? "");
  const [result, setResult] = useState<Explained | undefined>(undefined);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const seq = useRef(0);

  const explain = async () => {
    const instance = instanceOf(url.trim());
    if (url.trim() === "") {
      setResult(undefined);
      setError("");
      return;
    }
    if (instance === "") {
      setResult(undefined);
      setError("Write the URL as a client sends it: /odata/<instance>/<service>/<entity set>…");
      return;
    }
    const mine = ++seq.current;
    if (draftError !== "") {
      // The editor keeps the last valid permissions, but they are not what is being written: explain nothing.
      setResult(undefined);
      setError(`Your unsaved permissions are invalid, so they cannot be explained: ${draftError}`);
      setBusy(false);
      return;
    }
    const ofDraft = draft !== undefined;
    setBusy(true);
    try {
      const { data } = await keysApi.explain(keyId, { instance, method, url: url.trim(), ...(ofDraft ? { permissions: draft } : {}) });
      if (mine !== seq.current) return;
      setResult({ explanation: data, ofDraft });
      setError("");
    } catch (err) {
      if (mine !== seq.current) return;
      setResult(undefined);
      const draftRefused = ofDraft && err instanceof ApiError && err.details.some((d) => d.field === "permissions" || d.field.startsWith("permissions."));
      const message = err instanceof ApiError ? withRequestId(err) : "Explain failed.";
      setError(draftRefused ? `Your unsaved permissions are invalid, so they cannot be explained: ${message}` : message);
    } finally {
      if (mine === seq.current) setBusy(false);
    }
  };

  // Live: explain 400 ms after the last change (of the request or of the draft), and again when the key is saved (version).
  // A draft is a new object exactly when it changed (the editor shares what a change does not touch).
  useEffect(() => {
    const timer = setTimeout(() => void explain(), 400);
    return () => clearTimeout(timer);
  }, [method, url, keyId, version, draft, draftError]);

  return (
    <section class="explain" aria-labelledby="explain-title">
      <h3 id="explain-title">Explain</h3>
      <p class="hint">
        What the data path would decide for a request with {keyName}, now (nothing is forwarded or counted), with{" "}
        {draft !== undefined || draftError !== "" ? "your unsaved changes to its permissions (nothing is saved)" : "the saved permissions"}.
      </p>
      <form
        class="explain-form"
        onSubmit={(e) => {
          e.preventDefault();
          void explain();
        }}
      >
        <div>
          <label for="explain-method">Method</label>
          <select id="explain-method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
            {METHODS.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </div>
        <div class="grow">
          <label for="explain-url">OData URL</label>
          <input id="explain-url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="/odata/s4-prod/API_BUSINESS_PARTNER/A_BusinessPartner?$top=5" spellcheck={false} />
        </div>
        <button type="submit" disabled={busy}>
          {busy ? "Explaining…" : "Explain"}
        </button>
      </form>
      <div aria-live="polite">
        {error !== "" && <p class="error">{error}</p>}
        {result !== undefined && (
          <div class="explain-result">
            <p class="explained-what">{result.ofDraft ? "With your unsaved changes:" : "With the saved permissions:"}</p>
            {result.explanation.allowed ? (
              <p class="decision allowed">
                Allowed{result.explanation.request?.upstream_url !== undefined && result.explanation.request.upstream_url !== "" ? `: forwarded to ${result.explanation.request.upstream_url}` : ""}
              </p>
            ) : (
              <p class="decision denied">
                Denied with {result.explanation.status} {result.explanation.code}: {result.explanation.message}
                {result.explanation.denial_step !== undefined && result.explanation.denial_step !== "" ? ` (step: ${result.explanation.denial_step})` : ""}
              </p>
            )}
            {(result.explanation.accesses ?? []).length > 0 && (
              <table>
                <caption>Accesses of this request</caption>
                <thead>
                  <tr>
                    <th scope="col">Entity set or operation</th>
                    <th scope="col">Operation</th>
                    <th scope="col">Why</th>
                    <th scope="col">Decision</th>
                  </tr>
                </thead>
                <tbody>
                  {result.explanation.accesses!.map((a, i) => (
                    <tr key={i}>
                      <td>{a.entity_set}</td>
                      <td>{a.operation}</td>
                      <td>{a.reason}</td>
                      <td class={a.allowed ? "allowed" : "denied"}>{a.allowed ? "allowed" : `denied: ${a.message ?? a.denial_step ?? ""}`}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        )}
      </div>
    </section>
  );
}
