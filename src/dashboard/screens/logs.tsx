/**
 * Logs: the request log with every filter of `GET /admin/logs`, newest
 * first, paged; the view (filters, page, the entry opened) lives in the page
 * URL's query, so it can be shared and survives a reload.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "../api.js";
import { OPERATIONS } from "../api-keys.js";
import {
  LOG_FILTERS,
  fromLocalInput,
  opsApi,
  toLocalInput,
  when,
  type RequestLog,
} from "../api-ops.js";
import { explainHref, instancesByName, keysById, loadNames, namesError } from "../names.js";
import { InstanceRef, KeyRef, Link } from "./links.js";
import { withRequestId } from "./sign-in.js";
import { Pager, usePage, useUrlView } from "./url-view.js";
import "./ops.css";

const PAGE_SIZE = 50;
const STATE = [...LOG_FILTERS, "page_token", "id"] as const;

/** The text filters: parameter, label, hint. */
const TEXT_FILTERS: readonly (readonly [string, string, string])[] = [
  ["service", "Service", "e.g. API_BUSINESS_PARTNER"],
  ["entity", "Entity set or operation", "e.g. A_BusinessPartner, or Sales.Approve for its calls"],
  ["status", "Status", "exact (404) or a class (4xx)"],
  ["request_id", "Request id", "req_…"],
];

export function Logs() {
  const { view, draft, setDraft, go } = useUrlView(STATE, LOG_FILTERS);
  const { id, ...query } = view;
  const { items: logs, next, error, setError } = usePage(() => opsApi.queryLogs(query, PAGE_SIZE), JSON.stringify(query));
  const [detail, setDetail] = useState<RequestLog | undefined>(undefined);
  const detailHeading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    void loadNames(["keys", "instances"]);
  }, []);
  const keyOptions: PickerOption[] = [
    { value: "master", label: "master key (master)" },
    ...[...keysById.value.values()].map((k) => ({ value: k.id, label: `${k.name} (${k.id})${k.revoked_at === undefined ? "" : " revoked"}` })),
  ];
  const instanceOptions: PickerOption[] = [...instancesByName.value.values()].map((i) => ({ value: i.name, label: `${i.name} (${i.id})` }));

  useEffect(() => {
    if (id === undefined || id === "") {
      setDetail(undefined);
      return;
    }
    let live = true;
    opsApi
      .getLog(id)
      .then((res) => {
        if (!live) return;
        setDetail(res.data);
        requestAnimationFrame(() => detailHeading.current?.focus());
      })
      .catch((err) => live && err instanceof ApiError && setError(withRequestId(err)));
    return () => {
      live = false;
    };
  }, [id]);

  const apply = (event: Event) => {
    event.preventDefault();
    go({ ...draft });
  };
  const clear = () => {
    const empty = Object.fromEntries(LOG_FILTERS.map((n) => [n, ""]));
    setDraft(empty);
    go({});
  };
  const set = (name: string) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) =>
    setDraft({ ...draft, [name]: e.currentTarget.value });
  const filtered = LOG_FILTERS.some((n) => (view[n] ?? "") !== "");

  return (
    <section aria-labelledby="logs-title" class="ops">
      <h1 id="logs-title">Logs</h1>
      <p>One entry per request: every data request and every administrative call, newest first.</p>
      <form class="filters" onSubmit={apply} aria-label="Log filters">
        <div class="field">
          <label for="logs-from">From</label>
          <input id="logs-from" type="datetime-local" value={toLocalInput(draft.from ?? "")} onInput={(e) => setDraft({ ...draft, from: fromLocalInput(e.currentTarget.value) })} />
        </div>
        <div class="field">
          <label for="logs-to">To (before)</label>
          <input id="logs-to" type="datetime-local" value={toLocalInput(draft.to ?? "")} onInput={(e) => setDraft({ ...draft, to: fromLocalInput(e.currentTarget.value) })} />
        </div>
        <Picker id="logs-api_key_id" label="API key" noun="keys" options={keyOptions} value={draft.api_key_id ?? ""} onChange={(v) => setDraft({ ...draft, api_key_id: v })} />
        <Picker id="logs-instance" label="Instance" noun="instances" options={instanceOptions} value={draft.instance ?? ""} onChange={(v) => setDraft({ ...draft, instance: v })} />
        {TEXT_FILTERS.map(([name, label, hint]) => (
          <div class="field" key={name}>
            <label for={`logs-${name}`}>{label}</label>
            <input id={`logs-${name}`} value={draft[name] ?? ""} onInput={set(name)} aria-describedby={`logs-${name}-hint`} />
            <small id={`logs-${name}-hint`}>{hint}</small>
          </div>
        ))}
        <div class="field">
          <label for="logs-operation">Operation</label>
          <select id="logs-operation" value={draft.operation ?? ""} onChange={set("operation")}>
            <option value="">any</option>
            {OPERATIONS.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="logs-method">Method</label>
          <select id="logs-method" value={draft.method ?? ""} onChange={set("method")}>
            <option value="">any</option>
            {["GET", "POST", "PUT", "PATCH", "MERGE", "DELETE"].map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </div>
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button type="button" class="secondary" onClick={clear}>
            Clear filters
          </button>
        </div>
      </form>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {namesError.value !== "" && <p class="hint">{namesError.value}</p>}
      {detail !== undefined && <LogDetail log={detail} headingRef={detailHeading} onClose={() => go({ ...query })} />}
      {logs === undefined ? (
        error === "" && <p aria-busy="true">Loading logs…</p>
      ) : logs.length === 0 ? (
        <p>{filtered ? "No entries match these filters." : "No requests logged yet (entries are written about a second after the request)."}</p>
      ) : (
        <div class="table-scroll">
          <table>
            <caption>
              {logs.length === 1 ? "1 entry" : `${logs.length} entries`}
              {view.page_token !== "" ? " (a later page)" : ""}, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Method</th>
                <th scope="col">Path</th>
                <th scope="col">Status</th>
                <th scope="col">Key</th>
                <th scope="col">Instance</th>
                <th scope="col">Duration</th>
                <th scope="col">
                  <span class="visually-hidden">Details</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {logs.map((l) => (
                <tr key={l.id} class={l.id === id ? "selected" : undefined}>
                  <td>
                    <time dateTime={l.timestamp}>{when(l.timestamp)}</time>
                  </td>
                  <td>{l.method}</td>
                  <td class="path">{l.path}</td>
                  <td class={l.status >= 400 ? "failed" : undefined}>
                    {l.status}
                    {l.error_code ? ` ${l.error_code}` : ""}
                  </td>
                  <td>
                    <KeyRef id={l.api_key_id} />
                  </td>
                  <td>
                    <InstanceRef name={l.instance} />
                  </td>
                  <td>{l.duration_ms === undefined ? "" : `${Math.round(l.duration_ms)} ms`}</td>
                  <td>
                    <button type="button" class="secondary" onClick={() => go({ ...query, id: l.id })} aria-label={`Details of ${l.method} ${l.path} (${l.request_id})`}>
                      Details
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager
        label="Log pages"
        noun="entries"
        pageToken={view.page_token ?? ""}
        next={next}
        loaded={logs !== undefined}
        onPage={(page_token) => go({ ...query, page_token })}
      />
    </section>
  );
}

function LogDetail(props: { log: RequestLog; headingRef: { current: HTMLHeadingElement | null }; onClose: () => void }) {
  const l = props.log;
  const rows: [string, ComponentChildren][] = [
    ["Time", when(l.timestamp)],
    ["Request id", l.request_id],
    ["Method and path", `${l.method} ${l.path}`],
    ["Status", `${l.status}${l.error_code ? ` ${l.error_code}` : ""}`],
    ["Message", l.error_message ?? ""],
    ["Duration", l.duration_ms === undefined ? "" : `${l.duration_ms} ms`],
    ["API key", l.api_key_id ? <KeyRef id={l.api_key_id} /> : "(none recognised)"],
    ["Session", l.session_id || "(none)"],
    ["Instance", l.instance ? <InstanceRef name={l.instance} /> : ""],
    ["Service", l.service ?? ""],
    ["Accesses", (l.accesses ?? []).map((a) => `${a.entity}: ${a.operation}`).join("; ") || "(none)"],
    ["Denial step", l.denial_step || "(not denied)"],
    ["Upstream status", l.upstream_status ? String(l.upstream_status) : "(not forwarded)"],
    ["Upstream time", l.upstream_duration_ms ? `${l.upstream_duration_ms} ms` : ""],
    ["Upstream request", l.upstream_url ? `${l.upstream_method ?? ""} ${l.upstream_url}` : "(nothing sent)"],
    ["Answer sent", `${l.response_bytes ?? "0"} bytes`],
    ["Client", `${l.client_ip ?? ""} ${l.user_agent ?? ""}`.trim()],
  ];
  return (
    <section class="detail" aria-labelledby="log-detail-title">
      <h2 id="log-detail-title" tabIndex={-1} ref={props.headingRef}>
        Entry {l.id}
      </h2>
      <dl>
        {rows
          .filter(([, v]) => v !== "")
          .map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
      </dl>
      {explainable(l) && (
        <p>
          <Link href={explainHref(l.api_key_id!, l.method, l.path)}>Explain this request with its key</Link>
        </p>
      )}
      <button type="button" class="secondary" onClick={props.onClose}>
        Close details
      </button>
    </section>
  );
}

/** Whether Explain can replay an entry: a data request made with a data key still listed and in force. */
function explainable(l: RequestLog): boolean {
  if (!l.path.startsWith("/odata/") || l.api_key_id === undefined || l.api_key_id === "") return false;
  const key = keysById.value.get(l.api_key_id);
  return key !== undefined && key.type === "data" && key.revoked_at === undefined;
}

/** One choice of a {@link Picker}: the filter's value and what people read. */
interface PickerOption {
  readonly value: string;
  readonly label: string;
}

/**
 * A searchable select: a search box narrowing a list of choices (by name or
 * id), and the select itself; "any" clears the filter. A value not among
 * the choices (an id typed into the address) stays selectable.
 */
function Picker(props: {
  readonly id: string;
  readonly label: string;
  readonly noun: string;
  readonly options: readonly PickerOption[];
  readonly value: string;
  readonly onChange: (value: string) => void;
}) {
  const [search, setSearch] = useState("");
  const q = search.trim().toLowerCase();
  const shown = props.options.filter((o) => q === "" || o.label.toLowerCase().includes(q) || o.value === props.value);
  if (props.value !== "" && !props.options.some((o) => o.value === props.value)) shown.unshift({ value: props.value, label: props.value });
  return (
    <div class="field picker">
      <label for={`${props.id}-search`}>Search {props.noun}</label>
      <input
        id={`${props.id}-search`}
        type="search"
        value={search}
        onInput={(e) => {
          const text = e.currentTarget.value;
          setSearch(text);
          // One match: it is the one meant.
          const t = text.trim().toLowerCase();
          const matches = props.options.filter((o) => t !== "" && o.label.toLowerCase().includes(t));
          if (matches.length === 1) props.onChange(matches[0]!.value);
        }}
        aria-controls={props.id}
      />
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {shown.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}
