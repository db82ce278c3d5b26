/**
 * Audit: the trail of administrative changes (`GET /admin/audit`) with its
 * filters, newest first, paged, each change shown as one readable line
 * (`permissions › prod › API_BP › A_BusinessPartner: list → list, get`).
 * The view lives in the page URL's query, like the Logs screen's.
 */
import { AUDIT_FILTERS, formatChange, fromLocalInput, opsApi, toLocalInput, when } from "../api-ops.js";
import { useEffect } from "preact/hooks";
import { loadNames } from "../names.js";
import { InstanceIdRef, KeyRef, SystemRef } from "./links.js";
import { Pager, usePage, useUrlView } from "./url-view.js";
import "./ops.css";

const PAGE_SIZE = 50;
/** Resource types as people read them. */
const RESOURCE_NAMES: Readonly<Record<string, string>> = { system: "system", instance: "instance", api_key: "API key", session: "session" };
const STATE = [...AUDIT_FILTERS, "page_token"] as const;

export function Audit() {
  const { view, draft, setDraft, go } = useUrlView(STATE, AUDIT_FILTERS);
  const { items: entries, next, error } = usePage(() => opsApi.listAudit(view, PAGE_SIZE), JSON.stringify(view));
  const set = (name: string) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) =>
    setDraft({ ...draft, [name]: e.currentTarget.value });
  const { page_token: _token, ...filters } = view;
  const filtered = AUDIT_FILTERS.some((n) => (view[n] ?? "") !== "");
  useEffect(() => {
    void loadNames(["keys", "instances", "systems"]);
  }, []);

  return (
    <section aria-labelledby="audit-title" class="ops">
      <h1 id="audit-title">Audit</h1>
      <p>Every administrative change (systems, instances, API keys, sessions), who made it and exactly what changed, newest first. Secrets read [redacted].</p>
      <form
        class="filters"
        aria-label="Audit filters"
        onSubmit={(e) => {
          e.preventDefault();
          go({ ...draft });
        }}
      >
        <div class="field">
          <label for="audit-from">From</label>
          <input id="audit-from" type="datetime-local" value={toLocalInput(draft.from ?? "")} onInput={(e) => setDraft({ ...draft, from: fromLocalInput(e.currentTarget.value) })} />
        </div>
        <div class="field">
          <label for="audit-to">To (before)</label>
          <input id="audit-to" type="datetime-local" value={toLocalInput(draft.to ?? "")} onInput={(e) => setDraft({ ...draft, to: fromLocalInput(e.currentTarget.value) })} />
        </div>
        <div class="field">
          <label for="audit-actor">Actor</label>
          <input id="audit-actor" value={draft.actor ?? ""} onInput={set("actor")} aria-describedby="audit-actor-hint" />
          <small id="audit-actor-hint">master, key_…, or ses_… (one session's changes)</small>
        </div>
        <div class="field">
          <label for="audit-resource_type">Resource type</label>
          <select id="audit-resource_type" value={draft.resource_type ?? ""} onChange={set("resource_type")}>
            <option value="">any</option>
            <option value="system">system</option>
            <option value="instance">instance</option>
            <option value="api_key">API key</option>
            <option value="session">session</option>
          </select>
        </div>
        <div class="field">
          <label for="audit-resource_id">Resource id</label>
          <input id="audit-resource_id" value={draft.resource_id ?? ""} onInput={set("resource_id")} aria-describedby="audit-resource_id-hint" />
          <small id="audit-resource_id-hint">sys_…, ins_…, key_… or ses_…</small>
        </div>
        <div class="field">
          <label for="audit-action">Action</label>
          <select id="audit-action" value={draft.action ?? ""} onChange={set("action")}>
            <option value="">any</option>
            {["create", "update", "delete", "revoke"].map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setDraft(Object.fromEntries(AUDIT_FILTERS.map((n) => [n, ""])));
              go({});
            }}
          >
            Clear filters
          </button>
        </div>
      </form>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {entries === undefined ? (
        error === "" && <p aria-busy="true">Loading the audit trail…</p>
      ) : entries.length === 0 ? (
        <p>{filtered ? "No changes match these filters." : "No administrative changes yet."}</p>
      ) : (
        <ol class="audit-entries" aria-label={`${entries.length === 1 ? "1 change" : `${entries.length} changes`}, newest first`}>
          {entries.map((e) => (
            <li key={e.id} aria-labelledby={`${e.id}-title`}>
              <h2 id={`${e.id}-title`} class="entry-title">
                {e.action} {RESOURCE_NAMES[e.resource_type] ?? e.resource_type} <ResourceRef type={e.resource_type} id={e.resource_id} />
                {e.state === "pending" ? " (pending)" : ""}
              </h2>
              <p class="entry-meta">
                <time dateTime={e.timestamp}>{when(e.timestamp)}</time> by <KeyRef id={e.actor} />
                {e.session_id ? ` (session ${e.session_id})` : ""}
                {e.request_id ? `, request ${e.request_id}` : ""}
              </p>
              {(e.changes ?? []).length === 0 ? (
                <p>No field changed.</p>
              ) : (
                <ul class="changes" aria-label={`Changes of ${e.resource_id}`}>
                  {(e.changes ?? []).map((c, i) => (
                    <li key={i}>{formatChange(c)}</li>
                  ))}
                </ul>
              )}
            </li>
          ))}
        </ol>
      )}
      <Pager
        label="Audit pages"
        noun="changes"
        pageToken={view.page_token ?? ""}
        next={next}
        loaded={entries !== undefined}
        onPage={(page_token) => go({ ...filters, page_token })}
      />
    </section>
  );
}

/** The resource of an entry, named and linked where it is a key, an instance or a system. */
function ResourceRef({ type, id }: { readonly type: string; readonly id: string }) {
  if (type === "api_key") return <KeyRef id={id} />;
  if (type === "instance") return <InstanceIdRef id={id} />;
  if (type === "system") return <SystemRef id={id} />;
  return <>{id}</>;
}
