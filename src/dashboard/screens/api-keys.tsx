/**
 * API keys: the list (search, type, prefix, last used, expiry with keys
 * expiring within 7 days highlighted), create (the secret shown once, with
 * copy, a ready curl line and a confirmation before closing), edit (name,
 * rate limits, expiry, permissions with the editor and the Explain panel),
 * revoke with confirmation. The editor of one key is its own address,
 * `/dashboard/api-keys/<id>` (bookmarkable; Back closes it).
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { sameValue } from "../permission-draft.js";
import { ApiError } from "../api.js";
import { keysApi, SET_OPERATIONS, type ApiKey, type ApiKeyInput, type CreatedApiKey, type Permissions } from "../api-keys.js";
import { navigate, route } from "../state.js";
import { unlessUnsaved, useUnsavedChanges } from "../unsaved.js";
import { keyHref, keysById, keysNaming, loadNames, logsHref, setKeys as setKnownKeys, type ListedKey } from "../names.js";
import { ExplainPanel } from "./explain-panel.js";
import { KeyUsage } from "./key-usage.js";
import { Link } from "./links.js";
import { PermissionEditor } from "./permission-editor.js";
import { useSortedPages, type SortColumn } from "./sorted-pages.js";
import { shellQuote } from "../shell-quote.js";
import { useConfirm } from "./confirm-dialog.js";
import { CopyButton } from "./copy-button.js";
import { FieldMessage, describedBy, formFailure } from "./form-messages.js";
import { ConflictBox } from "./conflict-box.js";
import { withRequestId } from "./sign-in.js";
import "./api-keys.css";

const DAY_MS = 24 * 60 * 60 * 1000;
/** Keys expiring within this many days are highlighted. */
const SOON_DAYS = 7;

function when(ts: string | undefined, none: string): string {
  return ts === undefined || ts === "" ? none : new Date(ts).toLocaleString();
}

/** "expired", "expires in N days" (within 7 days), or "". */
function expiryNote(ts: string | undefined, now: number): { text: string; soon: boolean } {
  if (ts === undefined || ts === "") return { text: "", soon: false };
  const left = Date.parse(ts) - now;
  if (left <= 0) return { text: "expired", soon: true };
  if (left > SOON_DAYS * DAY_MS) return { text: "", soon: false };
  const days = Math.ceil(left / DAY_MS);
  return { text: days <= 1 ? "expires within a day" : `expires in ${days} days`, soon: true };
}

/** `2027-01-31T10:00` (a datetime-local value, read as UTC) ↔ RFC 3339. */
function toLocalInput(ts: string | undefined): string {
  return ts === undefined || ts === "" ? "" : ts.slice(0, 16);
}
function fromLocalInput(v: string): string | null {
  return v === "" ? null : new Date(`${v}:00Z`).toISOString().replace(".000Z", "Z");
}

/** The form's fields (shared by create and edit). */
interface Draft {
  name: string;
  type: "data" | "admin";
  perMinute: string;
  perDay: string;
  expires: string;
  permissions: Permissions;
}

function draftOf(key: ApiKey): Draft {
  return {
    name: key.name,
    type: key.type,
    perMinute: key.rate_limits?.per_minute === undefined ? "" : String(key.rate_limits.per_minute),
    perDay: key.rate_limits?.per_day === undefined ? "" : String(key.rate_limits.per_day),
    expires: toLocalInput(key.expires_at),
    permissions: key.permissions ?? {},
  };
}
const EMPTY: Draft = { name: "", type: "data", perMinute: "", perDay: "", expires: "", permissions: {} };

/** Problems the form finds itself, by form field (`per-minute`, `per-day`, `expires`). */
type Problems = Readonly<Record<string, string>>;

/** What the form refuses to send, by form field. */
interface Refusal {
  readonly problems: Problems;
}

/** Whether `value` is the form's refusal rather than an input. */
const isRefusal = (value: ApiKeyInput | Refusal): value is Refusal => "problems" in value;

/** Which form field shows a server field's error ("" for the banner: permissions are shown by their editor). */
function placeKeyField(field: string): string {
  if (field === "name") return "name";
  if (field === "rate_limits.per_minute") return "per-minute";
  if (field === "rate_limits.per_day") return "per-day";
  if (field === "expires_at") return "expires";
  return "";
}

/** An expiry that has already passed, in words (empty and future ones are fine). */
function pastExpiry(d: Draft, now: number): Problems {
  const at = fromLocalInput(d.expires);
  if (at === null || Date.parse(at) > now) return {};
  return { expires: "This moment has already passed: choose a time in the future, or leave it empty so that the key never expires." };
}

function inputOf(d: Draft, creating: boolean): ApiKeyInput | Refusal {
  const limits: { per_minute?: number; per_day?: number } = {};
  const problems: Record<string, string> = {};
  for (const [field, text, id] of [["per_minute", d.perMinute, "per-minute"], ["per_day", d.perDay, "per-day"]] as const) {
    if (text.trim() === "") continue;
    const n = Number(text);
    if (!Number.isInteger(n) || n <= 0) {
      problems[id] = "Write a whole number above 0, or leave it empty for the default.";
      continue;
    }
    limits[field] = n;
  }
  if (Object.keys(problems).length > 0) return { problems };
  const hasLimits = Object.keys(limits).length > 0;
  const out: ApiKeyInput = { name: d.name.trim() };
  if (creating) {
    out.type = d.type;
    if (hasLimits) out.rate_limits = limits;
    if (d.expires !== "") out.expires_at = fromLocalInput(d.expires);
  } else {
    out.rate_limits = hasLimits ? limits : null;
    out.expires_at = fromLocalInput(d.expires);
  }
  if (d.type === "data") out.permissions = d.permissions;
  return out;
}

/** The fields of an update, by the words the dashboard shows for them. */
const FIELD_WORDS: Readonly<Record<keyof ApiKeyInput, string>> = {
  name: "name",
  type: "type",
  permissions: "permissions",
  rate_limits: "rate limits",
  expires_at: "expiry",
};

/**
 * The fields of `draft` that differ from `base` (the key as it was opened):
 * all an update sends, so that it changes nothing else (its update mask).
 */
function changedInput(base: ApiKey, draft: Draft): ApiKeyInput | Refusal {
  const next = inputOf(draft, false);
  if (isRefusal(next)) return next;
  const before = inputOf(draftOf(base), false) as ApiKeyInput;
  const out: Record<string, unknown> = {};
  for (const field of Object.keys(next) as (keyof ApiKeyInput)[]) {
    if (JSON.stringify(next[field]) !== JSON.stringify(before[field])) out[field] = next[field];
  }
  // A new expiry must lie ahead; one left as it was may have passed (the key is then expired, and may be edited).
  if ("expires_at" in out) {
    const past = pastExpiry(draft, Date.now());
    if (Object.keys(past).length > 0) return { problems: past };
  }
  return out as ApiKeyInput;
}

/** The fields (in words) in which two versions of a key differ. */
function differences(a: ApiKey, b: ApiKey): string[] {
  const x = inputOf(draftOf(a), false) as ApiKeyInput;
  const y = inputOf(draftOf(b), false) as ApiKeyInput;
  return (Object.keys(FIELD_WORDS) as (keyof ApiKeyInput)[]).filter((f) => JSON.stringify(x[f]) !== JSON.stringify(y[f])).map((f) => FIELD_WORDS[f]);
}

/** A save refused because the key changed meanwhile: the key as it is now, and what changed. */
interface Conflict {
  readonly current: ApiKey;
  readonly changed: readonly string[];
}

/** The curl line for the first named (instance, service, entity set) of the key, or placeholders. */
function curlLine(key: CreatedApiKey): string {
  let path = "<instance>/<service>/<entity set>";
  outer: for (const [inst, services] of Object.entries(key.permissions ?? {})) {
    for (const [service, sets] of Object.entries(services)) {
      if (service === "*") continue;
      for (const [entity, ops] of Object.entries(sets)) {
        // An entry granting only invoke names a function or action, which is called, not listed.
        if (entity === "*" || !ops.some((op) => (SET_OPERATIONS as readonly string[]).includes(op))) continue;
        path = `${inst}/${service}/${entity}`;
        break outer;
      }
    }
  }
  return `curl -s -H ${shellQuote(`Authorization: Bearer ${key.key}`)} ${shellQuote(`${location.origin}/odata/${path}?$top=5`)}`;
}

function KeyForm({ draft, setDraft, creating, idPrefix, errors }: { draft: Draft; setDraft: (d: Draft) => void; creating: boolean; idPrefix: string; errors: Problems }) {
  const set = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });
  const err = (field: string, help?: string) => describedBy(errors[field], `${idPrefix}-${field}-error`, help);
  return (
    <div class="key-fields">
      <div>
        <label for={`${idPrefix}-name`}>Name</label>
        <input id={`${idPrefix}-name`} value={draft.name} onInput={(e) => set({ name: e.currentTarget.value })} required maxLength={100} {...err("name")} />
        <FieldMessage id={`${idPrefix}-name-error`} error={errors.name} />
      </div>
      {creating && (
        <div>
          <label for={`${idPrefix}-type`}>Type</label>
          <select id={`${idPrefix}-type`} value={draft.type} onChange={(e) => set({ type: e.currentTarget.value as Draft["type"] })} aria-describedby={`${idPrefix}-type-help`}>
            <option value="data">data: reaches ERP data within its permissions</option>
            <option value="admin">admin: manages erplink</option>
          </select>
          <small id={`${idPrefix}-type-help`}>The type cannot change later.</small>
        </div>
      )}
      <div>
        <label for={`${idPrefix}-per-minute`}>Requests per minute</label>
        <input id={`${idPrefix}-per-minute`} inputMode="numeric" value={draft.perMinute} onInput={(e) => set({ perMinute: e.currentTarget.value })} {...err("per-minute", `${idPrefix}-limits-help`)} />
        <FieldMessage id={`${idPrefix}-per-minute-error`} error={errors["per-minute"]} />
      </div>
      <div>
        <label for={`${idPrefix}-per-day`}>Requests per day</label>
        <input id={`${idPrefix}-per-day`} inputMode="numeric" value={draft.perDay} onInput={(e) => set({ perDay: e.currentTarget.value })} {...err("per-day", `${idPrefix}-limits-help`)} />
        <small id={`${idPrefix}-limits-help`}>Empty: the service default.</small>
        <FieldMessage id={`${idPrefix}-per-day-error`} error={errors["per-day"]} />
      </div>
      <div>
        <label for={`${idPrefix}-expires`}>Expires at (UTC)</label>
        <input id={`${idPrefix}-expires`} type="datetime-local" value={draft.expires} onInput={(e) => set({ expires: e.currentTarget.value })} {...err("expires", `${idPrefix}-expires-help`)} />
        <small id={`${idPrefix}-expires-help`}>Empty: never expires.</small>
        <FieldMessage id={`${idPrefix}-expires-error`} error={errors.expires} />
      </div>
    </div>
  );
}

/** The secret, shown once: copy, curl, and a confirmation before closing. */
function SecretDialog({ created, onClose }: { created: CreatedApiKey; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [copied, setCopied] = useState("");
  const [confirm, confirmDialog] = useConfirm();
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  const close = async () => {
    const yes = await confirm({
      title: "Close without the secret?",
      message: <p>The secret cannot be shown again: make sure you have stored it.</p>,
      confirm: "Close, I stored it",
      cancel: "Keep it open",
    });
    if (!yes) return;
    ref.current?.close();
    onClose();
  };
  const copy = async (text: string, what: string) => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(`${what} copied to the clipboard.`);
    } catch {
      setCopied(`The browser refused the clipboard: select the ${what.toLowerCase()} and copy it yourself.`);
    }
  };
  const curl =
    created.type === "data" ? curlLine(created) : `curl -s -H ${shellQuote(`Authorization: Bearer ${created.key}`)} ${shellQuote(`${location.origin}/admin/systems`)}`;
  return (
    <>
    <dialog
      ref={ref}
      class="secret-dialog"
      aria-labelledby="secret-title"
      onCancel={(e) => {
        e.preventDefault();
        void close();
      }}
    >
      <h2 id="secret-title">Key {created.name} created</h2>
      <p class="warn">This is the only time the secret is shown. erplink keeps only its hash: store it now.</p>
      <label for="secret-value">Secret</label>
      <input id="secret-value" readOnly value={created.key} spellcheck={false} onFocus={(e) => e.currentTarget.select()} />
      <button type="button" onClick={() => void copy(created.key, "Secret")}>
        Copy secret
      </button>
      <label for="secret-curl">Try it with curl</label>
      <textarea id="secret-curl" readOnly rows={3} value={curl} spellcheck={false} />
      <button type="button" class="secondary" onClick={() => void copy(curl, "Command")}>
        Copy command
      </button>
      <p class="status" role="status">
        {copied}
      </p>
      <button type="button" onClick={() => void close()}>
        Close
      </button>
    </dialog>
    {confirmDialog}
    </>
  );
}

export function ApiKeys() {
  const [keys, setKeys] = useState<readonly ListedKey[] | undefined>(undefined);
  /** Whether revoked keys are listed too (they are kept, read-only, as long as the audit trail). */
  const [showRevoked, setShowRevoked] = useState(false);
  /** A revoked key opened by its address: shown read-only. */
  const [revokedView, setRevokedView] = useState<ListedKey | undefined>(undefined);
  /** The page address's query (`instance`, `explain_method`, `explain_url`), read again on Back and Forward. */
  const [query, setQuery] = useState(() => new URLSearchParams(location.search));
  useEffect(() => {
    const onPop = () => setQuery(new URLSearchParams(location.search));
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);
  const instanceFilter = query.get("instance") ?? "";
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [search, setSearch] = useState("");
  const [creating, setCreating] = useState(false);
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedApiKey | undefined>(undefined);
  const [editing, setEditing] = useState<ApiKey | undefined>(undefined);
  const [editDraft, setEditDraft] = useState<Draft>(EMPTY);
  /** Why the edited permissions' JSON view cannot be applied, or "". */
  const [editJsonError, setEditJsonError] = useState("");
  const [conflict, setConflict] = useState<Conflict | undefined>(undefined);
  // While the permissions JSON does not parse, the tree holds the last valid permissions: saving would save those, not what is shown.
  const [newJsonError, setNewJsonError] = useState("");
  /** Field errors of the new-key form and of the editor. */
  const [newErrors, setNewErrors] = useState<Problems>({});
  const [editErrors, setEditErrors] = useState<Problems>({});
  const [confirm, confirmDialog] = useConfirm();

  const load = async () => {
    try {
      // One list, revoked keys included: it also names keys on the other screens.
      const all = await keysApi.listWithRevoked();
      setKnownKeys(all);
      setKeys(all);
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    }
  };
  useEffect(() => {
    void load();
  }, []);

  // The address names the key being edited: open it (a link, a reload, Forward) or close it (Back).
  const routedId = /^api-keys\/([^/]+)$/.exec(route.value)?.[1] ?? "";
  useEffect(() => {
    if (routedId === "") {
      setEditing(undefined);
      setRevokedView(undefined);
      return;
    }
    if (editing?.id === routedId) return;
    let live = true;
    const id = decodeURIComponent(routedId);
    keysApi.get(id).then(
      ({ data }) => {
        if (!live) return;
        setRevokedView(undefined);
        setEditing(data);
        setEditDraft(draftOf(data));
      },
      async (err: unknown) => {
        if (!live) return;
        setEditing(undefined);
        // A revoked key is no longer one to read: it is shown, read-only, as the list of keys has it.
        if (err instanceof ApiError && err.status === 404) {
          if (!keysById.value.has(id)) await loadNames(["keys"], { fresh: true });
          const listed = keysById.value.get(id);
          if (live && listed?.revoked_at !== undefined) {
            setRevokedView(listed);
            return;
          }
        }
        if (live) fail(err);
      },
    );
    return () => {
      live = false;
    };
  }, [routedId]);

  const fail = (err: unknown) => setError(err instanceof ApiError ? withRequestId(err) : String(err));
  /** A refused form: the banner in words, each field's message beside it. */
  const refuse = (err: unknown, notDone: string, setFields: (p: Problems) => void) => {
    if (!(err instanceof ApiError)) return fail(err);
    const failure = formFailure(err, placeKeyField, notDone);
    setError(failure.banner);
    setFields(failure.fields);
  };
  const problems = (found: Problems, notDone: string, setFields: (p: Problems) => void) => {
    const n = Object.keys(found).length;
    setError(`${notDone}: ${n === 1 ? "correct the marked field." : `correct the ${n} marked fields.`}`);
    setFields(found);
  };

  const create = async (event: Event) => {
    event.preventDefault();
    setError("");
    setStatus("");
    setNewErrors({});
    const input = inputOf(draft, true);
    if (isRefusal(input)) return problems(input.problems, "Not created", setNewErrors);
    const past = pastExpiry(draft, Date.now());
    if (Object.keys(past).length > 0) return problems(past, "Not created", setNewErrors);
    setBusy(true);
    try {
      const { data } = await keysApi.create(input);
      setCreated(data);
      setCreating(false);
      setDraft(EMPTY);
      setStatus(`Key ${data.name} created.`);
      await load();
    } catch (err) {
      refuse(err, "Not created", setNewErrors);
    } finally {
      setBusy(false);
    }
  };

  const startEdit = (key: ListedKey) =>
    unlessUnsaved(
      "Leave without saving",
      () => {
        if (key.revoked_at !== undefined) {
          setEditing(undefined);
          setRevokedView(key);
          if (routedId !== key.id) navigate(`api-keys/${encodeURIComponent(key.id)}`, { asked: true });
          return;
        }
        setEditing(key);
        setEditDraft(draftOf(key));
        setEditJsonError("");
        setEditErrors({});
        setConflict(undefined);
        setError("");
        setStatus("");
        if (routedId !== key.id) navigate(`api-keys/${encodeURIComponent(key.id)}`, { asked: true });
      },
      ["key-edit"],
    );
  /** Closes the key editor; unless `asked`, asks first when it holds unsaved edits. */
  const closeEditor = (asked = false) => {
    if (!asked) return unlessUnsaved("Close without saving", () => closeEditor(true), ["key-edit"]);
    setEditing(undefined);
    setRevokedView(undefined);
    if (routedId !== "") navigate("api-keys", { asked: true });
  };

  /**
   * Saves the fields the admin changed, against the version they opened
   * (`If-Match` its etag), or, to overwrite, against `over` (the version
   * that refused the first save).
   */
  const saveAgainst = async (over?: ApiKey) => {
    if (editing === undefined) return;
    setError("");
    setStatus("");
    setEditErrors({});
    if (editJsonError !== "") return setError(`Fix the permissions JSON first: ${editJsonError}`);
    const input = changedInput(editing, editDraft);
    if (isRefusal(input)) return problems(input.problems, "Not saved", setEditErrors);
    if (Object.keys(input).length === 0) return setStatus("Nothing to save: no field was changed.");
    setBusy(true);
    try {
      const { data } = await keysApi.update(editing.id, input, (over ?? editing).etag);
      setEditing(data);
      setEditDraft(draftOf(data));
      setConflict(undefined);
      setStatus(`Key ${data.name} saved.`);
      await load();
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) {
        // Changed by someone else since it was opened: say what, and let the admin choose. Nothing was saved.
        try {
          const { data: current } = await keysApi.get(editing.id);
          setConflict({ current, changed: differences(editing, current) });
        } catch (again) {
          fail(again);
        }
      } else refuse(err, "Not saved", setEditErrors);
    } finally {
      setBusy(false);
    }
  };
  const save = (event: Event) => {
    event.preventDefault();
    void saveAgainst();
  };
  /** Drops the admin's edits and shows the key as it is now. */
  const reloadKey = () => {
    if (conflict === undefined) return;
    setEditing(conflict.current);
    setEditDraft(draftOf(conflict.current));
    setConflict(undefined);
    setStatus(`Key ${conflict.current.name} reloaded: your edits were dropped.`);
  };

  const revoke = async (key: ApiKey) => {
    const yes = await confirm({
      title: `Revoke key ${key.name}?`,
      message: (
        <p>
          The key <code>{key.prefix}…</code> stops working at once; this cannot be undone.
        </p>
      ),
      confirm: "Revoke key",
      danger: true,
    });
    if (!yes) return;
    setError("");
    setStatus("");
    try {
      await keysApi.revoke(key.id, key.etag);
      // Revoked: what the editor held cannot be saved any more.
      if (editing?.id === key.id) closeEditor(true);
      // The server confirmed: the row goes with the message, not one list round trip later.
      setKeys((ks) => ks?.filter((k) => k.id !== key.id));
      setStatus(`Key ${key.name} revoked.`);
      await load();
    } catch (err) {
      fail(err);
    }
  };

  // Input not saved yet: leaving the screen, Back, Cancel and sign-out ask first.
  // The saved version as a draft, made once per version (not per render), to compare the edits with.
  const savedDraft = useMemo(() => (editing === undefined ? undefined : draftOf(editing)), [editing]);
  useUnsavedChanges(creating && (newJsonError !== "" || !sameValue(draft, EMPTY)), "a new API key", "key-new");
  useUnsavedChanges(
    savedDraft !== undefined && (editJsonError !== "" || !sameValue(editDraft, savedDraft)),
    `key ${editing?.name ?? ""}`,
    "key-edit",
  );

  const now = Date.now();
  const q = search.trim().toLowerCase();
  const naming = instanceFilter === "" ? undefined : new Set(keysNaming(instanceFilter, new Map((keys ?? []).map((k) => [k.id, k]))).map((k) => k.id));
  const listed = (keys ?? []).filter((k) => (showRevoked || k.revoked_at === undefined) && (naming === undefined || naming.has(k.id)));
  const revokedCount = (keys ?? []).filter((k) => k.revoked_at !== undefined).length;
  const shownAll = listed.filter((k) => q === "" || k.name.toLowerCase().includes(q) || k.prefix.toLowerCase().includes(q) || k.id.toLowerCase().includes(q) || k.type.includes(q));
  const { rows: shown, header, ariaSort, pager } = useSortedPages(shownAll, KEY_COLUMNS, "keys", `${q} ${showRevoked} ${instanceFilter}`);
  const explainRequest = query.get("explain_url") === null ? undefined : { method: query.get("explain_method") ?? "GET", url: query.get("explain_url") ?? "" };
  // The permissions being edited, when they differ from the saved ones: what Explain explains.
  const permissionsDraft = savedDraft !== undefined && !sameValue(editDraft.permissions, savedDraft.permissions) ? editDraft.permissions : undefined;

  return (
    <section aria-labelledby="keys-title" class="api-keys">
      <h1 id="keys-title">API keys</h1>
      <p>Data keys let client applications read and write ERP data through /odata within their permissions; admin keys manage erplink.</p>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="status" role="status">
        {status}
      </p>
      {confirmDialog}
      {created !== undefined && <SecretDialog created={created} onClose={() => setCreated(undefined)} />}
      {!creating ? (
        <button
          type="button"
          onClick={() =>
            unlessUnsaved(
              "Close without saving",
              () => {
                setCreating(true);
                closeEditor(true);
              },
              ["key-edit"],
            )
          }
        >
          New API key
        </button>
      ) : (
        <form class="inline-form key-form" onSubmit={create} aria-labelledby="new-key-title" noValidate>
          <h2 id="new-key-title">New API key</h2>
          <KeyForm draft={draft} setDraft={setDraft} creating idPrefix="new-key" errors={newErrors} />
          {draft.type === "data" && (
            <PermissionEditor value={draft.permissions} onChange={(p) => setDraft({ ...draft, permissions: p })} idPrefix="new-perm" onJsonError={setNewJsonError} />
          )}
          <div class="actions">
            <button type="submit" disabled={busy || (draft.type === "data" && newJsonError !== "")} aria-describedby={newJsonError !== "" ? "new-perm-json-status" : undefined}>
              {busy ? "Creating…" : "Create key"}
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() =>
                unlessUnsaved(
                  "Discard the new key",
                  () => {
                    setCreating(false);
                    setDraft(EMPTY);
                    setNewJsonError("");
                  },
                  ["key-new"],
                )
              }
            >
              Cancel
            </button>
          </div>
        </form>
      )}
      {editing !== undefined && (
        <div class="inline-form key-form">
          <form onSubmit={save} aria-labelledby="edit-key-title" noValidate>
            <h2 id="edit-key-title">Edit key {editing.name}</h2>
            <p class="hint">
              {editing.type} key <code>{editing.prefix}…</code> <CopyButton text={editing.prefix} what="key prefix" /> ({editing.id}){" "}
              <CopyButton text={editing.id} what="key id" />
            </p>
            <KeyForm draft={editDraft} setDraft={setEditDraft} creating={false} idPrefix="edit-key" errors={editErrors} />
            {editing.type === "data" && (
              <PermissionEditor value={editDraft.permissions} onChange={(p) => setEditDraft({ ...editDraft, permissions: p })} idPrefix="edit-perm" onJsonError={setEditJsonError} />
            )}
            {conflict !== undefined && (
              <ConflictBox what="key" changed={conflict.changed} id="key-conflict-title" busy={busy} onReload={reloadKey} onOverwrite={() => void saveAgainst(conflict.current)} />
            )}
            <div class="actions">
              <button type="submit" disabled={busy || editJsonError !== ""} aria-describedby={editJsonError !== "" ? "edit-perm-json-status" : undefined}>
                {busy ? "Saving…" : "Save changes"}
              </button>
              <button type="button" class="secondary" onClick={() => closeEditor()}>
                Close editor
              </button>
            </div>
          </form>
          {editing.type === "data" && (
            <ExplainPanel
              key={`${editing.id} ${explainRequest?.method ?? ""} ${explainRequest?.url ?? ""}`}
              keyId={editing.id}
              keyName={editing.name}
              draft={permissionsDraft}
              draftError={editJsonError}
              version={editing.updated_at ?? ""}
              initial={explainRequest}
            />
          )}
          <KeyUsage keyId={editing.id} keyName={editing.name} />
        </div>
      )}
      {revokedView !== undefined && editing === undefined && <RevokedKey keyRecord={revokedView} onClose={closeEditor} />}
      {instanceFilter !== "" && (
        <p class="key-filter" role="status">
          Keys whose permissions name instance <strong>{instanceFilter}</strong>.{" "}
          <Link href="/dashboard/api-keys">Show every key</Link>
        </p>
      )}
      <div class="key-search">
        <label for="key-search">Search keys</label>
        <input id="key-search" type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} placeholder="name, prefix, id or type" />
        <label class="show-revoked">
          <input type="checkbox" checked={showRevoked} onChange={(e) => setShowRevoked(e.currentTarget.checked)} />
          Show revoked keys{revokedCount > 0 ? ` (${revokedCount})` : ""}
        </label>
      </div>
      {keys === undefined ? (
        error === "" && <p aria-busy="true">Loading keys…</p>
      ) : listed.length === 0 ? (
        <p>{instanceFilter !== "" ? `No key names instance ${instanceFilter}.` : keys.length === 0 ? "No API keys yet: create the first one above." : "Every key is revoked: tick “Show revoked keys” to see them."}</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption>{q === "" ? `${listed.length} ${listed.length === 1 ? "key" : "keys"}` : `${shownAll.length} of ${listed.length} keys match “${search.trim()}”`}</caption>
            <thead>
              <tr>
                <th scope="col" aria-sort={ariaSort("name")}>
                  {header("name", "Name")}
                </th>
                <th scope="col">Id</th>
                <th scope="col" aria-sort={ariaSort("type")}>
                  {header("type", "Type")}
                </th>
                <th scope="col">Prefix</th>
                <th scope="col" aria-sort={ariaSort("last_used")}>
                  {header("last_used", "Last used")}
                </th>
                <th scope="col" aria-sort={ariaSort("expires")}>
                  {header("expires", "Expires")}
                </th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((k) => {
                const note = expiryNote(k.expires_at, now);
                return (
                  <tr key={k.id} class={k.revoked_at !== undefined ? "revoked" : note.soon ? "expiring" : undefined}>
                    <th scope="row">
                      {k.name}
                      {k.revoked_at !== undefined && <strong class="revoked-tag"> revoked {when(k.revoked_at, "")}</strong>}
                    </th>
                    <td>
                      <Link href={keyHref(k.id)}>{k.id}</Link>
                    </td>
                    <td>{k.type}</td>
                    <td>
                      <code>{k.prefix}…</code> <CopyButton text={k.prefix} what={`prefix of ${k.name}`} />
                    </td>
                    <td>{when(k.last_used_at, "never")}</td>
                    <td>
                      {when(k.expires_at, "never")}
                      {note.text !== "" && <strong class="soon"> ({note.text})</strong>}
                    </td>
                    <td class="row-actions">
                      <Link href={logsHref({ api_key_id: k.id })} class="button-link" aria-label={`Logs of key ${k.name}`}>
                        Logs
                      </Link>
                      {k.revoked_at !== undefined ? (
                        <button type="button" class="secondary" onClick={() => startEdit(k)} aria-label={`View revoked key ${k.name}`}>
                          View
                        </button>
                      ) : (
                        <>
                          <button type="button" class="secondary" onClick={() => startEdit(k)} aria-label={`Edit key ${k.name}`}>
                            Edit
                          </button>
                          <button type="button" class="danger" onClick={() => void revoke(k)} aria-label={`Revoke key ${k.name}`}>
                            Revoke
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {pager}
        </div>
      )}
    </section>
  );
}

/** The key list's sortable columns (a time never set sorts last). */
const KEY_COLUMNS: readonly SortColumn<ListedKey>[] = [
  { id: "name", value: (k) => k.name.toLowerCase() },
  { id: "type", value: (k) => k.type },
  { id: "last_used", value: (k) => (k.last_used_at === undefined ? undefined : Date.parse(k.last_used_at)) },
  { id: "expires", value: (k) => (k.expires_at === undefined ? undefined : Date.parse(k.expires_at)) },
];

/** A revoked key, read-only: what it was, when it was revoked, its usage and its log entries. */
function RevokedKey({ keyRecord: k, onClose }: { readonly keyRecord: ListedKey; readonly onClose: () => void }) {
  const grants = Object.keys(k.permissions ?? {});
  return (
    <section class="inline-form key-form revoked-key" aria-labelledby="revoked-key-title">
      <h2 id="revoked-key-title">Revoked key {k.name}</h2>
      <p class="hint">
        {k.type} key {k.prefix}… ({k.id}), revoked {when(k.revoked_at, "")}. It no longer works and cannot be changed; requests made with it are refused and logged under its id.
      </p>
      <dl class="key-facts">
        <div>
          <dt>Created</dt>
          <dd>{when(k.created_at, "")}</dd>
        </div>
        <div>
          <dt>Last used</dt>
          <dd>{when(k.last_used_at, "never")}</dd>
        </div>
        <div>
          <dt>Instances it named</dt>
          <dd>{grants.length === 0 ? "(none)" : grants.join(", ")}</dd>
        </div>
      </dl>
      <KeyUsage keyId={k.id} keyName={k.name} />
      <button type="button" class="secondary" onClick={onClose}>
        Close
      </button>
    </section>
  );
}
