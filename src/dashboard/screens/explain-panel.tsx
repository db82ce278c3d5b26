/**
 * The Explain panel: an OData URL and a method, and what the data path would
 * decide for the key being edited (`POST /admin/api-keys/{id}/explain`), with
 * every access and its own decision. Explains as you type (debounced).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "../api.js";
import { keysApi, type Explanation } from "../api-keys.js";
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

export function ExplainPanel({ keyId, keyName, dirty, version }: { readonly keyId: string; readonly keyName: string; readonly dirty: boolean; readonly version: string }) {
  const [method, setMethod] = useState("GET");
  const [url, setUrl] = useState("");
  const [result, setResult] = useState<Explanation | undefined>(undefined);
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
    setBusy(true);
    try {
      const { data } = await keysApi.explain(keyId, { instance, method, url: url.trim() });
      if (mine !== seq.current) return;
      setResult(data);
      setError("");
    } catch (err) {
      if (mine !== seq.current) return;
      setResult(undefined);
      setError(err instanceof ApiError ? withRequestId(err) : "Explain failed.");
    } finally {
      if (mine === seq.current) setBusy(false);
    }
  };

  // Live: explain 400 ms after the last change, and again when the key is saved (version).
  useEffect(() => {
    const timer = setTimeout(() => void explain(), 400);
    return () => clearTimeout(timer);
  }, [method, url, keyId, version]);

  return (
    <section class="explain" aria-labelledby="explain-title">
      <h3 id="explain-title">Explain</h3>
      <p class="hint">
        What the data path would decide for a request with {keyName}, now (nothing is forwarded or counted).
        {dirty ? " It uses the saved permissions: save to explain your changes." : ""}
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
            {result.allowed ? (
              <p class="decision allowed">
                Allowed{result.request?.upstream_url !== undefined && result.request.upstream_url !== "" ? `: forwarded to ${result.request.upstream_url}` : ""}
              </p>
            ) : (
              <p class="decision denied">
                Denied with {result.status} {result.code}: {result.message}
                {result.denial_step !== undefined && result.denial_step !== "" ? ` (step: ${result.denial_step})` : ""}
              </p>
            )}
            {(result.accesses ?? []).length > 0 && (
              <table>
                <caption>Accesses of this request</caption>
                <thead>
                  <tr>
                    <th scope="col">Entity set</th>
                    <th scope="col">Operation</th>
                    <th scope="col">Why</th>
                    <th scope="col">Decision</th>
                  </tr>
                </thead>
                <tbody>
                  {result.accesses!.map((a, i) => (
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
