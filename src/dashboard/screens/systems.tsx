/**
 * Systems: the list (filter, labels as chips), create, delete (a system
 * with instances is not offered for deletion: the admin is told how many it
 * has first), and each system's own screen, `/dashboard/systems/<id>`, to
 * edit its name, description and labels (the fields changed, against the
 * version opened: a save over someone else's change is refused and
 * explained) and manage its instances.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { unlessUnsaved, useUnsavedChanges } from "../unsaved.js";
import { ApiError, api, type System } from "../api.js";
import { instancesApi } from "../api-instances.js";
import { systemsApi, type SystemInput } from "../api-systems.js";
import { navigate, route } from "../state.js";
import { useConfirm } from "./confirm-dialog.js";
import { CopyButton } from "./copy-button.js";
import { FieldMessage, describedBy, formFailure } from "./form-messages.js";
import { Instances } from "./instances.js";
import { ConflictBox } from "./conflict-box.js";
import { withRequestId } from "./sign-in.js";
import "./systems.css";

/** The labels as text, one `key = value` a line, sorted by key. */
function labelsText(labels: Readonly<Record<string, string>> | undefined): string {
  return Object.entries(labels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} = ${v}`)
    .join("\n");
}

/** Parses the labels text; a line without `=` is an error naming the line. */
function parseLabels(text: string): Record<string, string> | { readonly problem: string } {
  const out: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    const eq = line.indexOf("=");
    if (eq <= 0) return { problem: `Line ${i + 1}: write key = value, such as owner = finance.` };
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

/** Labels in a stable order, for comparing two versions. */
const sortedLabels = (labels: Readonly<Record<string, string>> | undefined) => JSON.stringify(Object.entries(labels ?? {}).sort(([a], [b]) => a.localeCompare(b)));

/** Which form field shows a server field's error. */
const placeSystemField = (field: string) =>
  field === "name" || field === "description" ? field : field === "labels" || field.startsWith("labels.") ? "labels" : "";

/** A system's labels as chips (nothing when it has none). */
export function LabelChips({ labels, of }: { readonly labels: Readonly<Record<string, string>> | undefined; readonly of: string }) {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return null;
  return (
    <ul class="chips" aria-label={`Labels of ${of}`}>
      {entries.map(([k, v]) => (
        <li key={k} class="chip">
          <b>{k}</b>
          {v === "" ? "" : `: ${v}`}
        </li>
      ))}
    </ul>
  );
}

interface Fields {
  readonly name: string;
  readonly description: string;
  readonly labels: string;
}

/** The name, description and labels fields, each with its error beside it. */
function SystemFields({ f, set, errors, idPrefix }: { f: Fields; set: (patch: Partial<Fields>) => void; errors: Readonly<Record<string, string>>; idPrefix: string }) {
  const id = (field: string) => `${idPrefix}-${field}`;
  return (
    <>
      <label for={id("name")}>Name</label>
      <input
        id={id("name")}
        value={f.name}
        onInput={(e) => set({ name: e.currentTarget.value })}
        required
        {...describedBy(errors.name, id("name-error"), id("name-help"))}
      />
      <small id={id("name-help")}>Unique, up to 100 characters, e.g. s4-prod.</small>
      <FieldMessage id={id("name-error")} error={errors.name} />
      <label for={id("description")}>Description</label>
      <input id={id("description")} value={f.description} onInput={(e) => set({ description: e.currentTarget.value })} {...describedBy(errors.description, id("description-error"))} />
      <FieldMessage id={id("description-error")} error={errors.description} />
      <label for={id("labels")}>Labels</label>
      <textarea
        id={id("labels")}
        rows={3}
        value={f.labels}
        onInput={(e) => set({ labels: e.currentTarget.value })}
        spellcheck={false}
        {...describedBy(errors.labels, id("labels-error"), id("labels-help"))}
      />
      <small id={id("labels-help")}>Optional, one a line: key = value, e.g. owner = finance.</small>
      <FieldMessage id={id("labels-error")} error={errors.labels} />
    </>
  );
}

export function Systems() {
  const routedId = /^systems\/([^/]+)$/.exec(route.value)?.[1];
  return routedId === undefined ? <SystemsList /> : <SystemScreen key={routedId} id={decodeURIComponent(routedId)} />;
}

const NO_FIELDS: Fields = { name: "", description: "", labels: "" };

function SystemsList() {
  const [systems, setSystems] = useState<readonly System[] | undefined>(undefined);
  const [error, setError] = useState("");
  const [fieldErrors, setFieldErrors] = useState<Readonly<Record<string, string>>>({});
  const [status, setStatus] = useState("");
  const [f, setF] = useState<Fields>(NO_FIELDS);
  const [filter, setFilter] = useState("");
  const [busy, setBusy] = useState(false);
  /** The system whose instances are shown. */
  const [selected, setSelected] = useState<System | undefined>(undefined);
  useUnsavedChanges(f.name.trim() !== "" || f.description.trim() !== "" || f.labels.trim() !== "", "a new system", "system-new");
  const [confirm, confirmDialog] = useConfirm();

  const load = async (): Promise<boolean> => {
    try {
      const all: System[] = [];
      let token = "";
      do {
        const page = await api.listSystems(token);
        all.push(...page.data);
        token = page.nextPageToken ?? "";
      } while (token !== "");
      setSystems(all);
      return true;
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
      return false;
    }
  };
  useEffect(() => {
    void load();
  }, []);
  // `?system=sys_…` (a link to a system) opens its instances.
  const wanted = new URLSearchParams(location.search).get("system");
  useEffect(() => {
    if (wanted !== null && selected === undefined) setSelected(systems?.find((s) => s.id === wanted));
  }, [systems, wanted]);

  /** A success: its message replaces whatever went wrong before. */
  const succeed = (message: string) => {
    setError("");
    setFieldErrors({});
    setStatus(message);
  };

  const create = async (event: Event) => {
    event.preventDefault();
    setStatus("");
    const labels = parseLabels(f.labels);
    if ("problem" in labels) {
      setError("Not created: correct the marked field.");
      setFieldErrors({ labels: labels.problem });
      return;
    }
    setBusy(true);
    try {
      const input: SystemInput = { name: f.name.trim(), description: f.description.trim(), ...(Object.keys(labels).length > 0 ? { labels } : {}) };
      const { data } = await systemsApi.create(input);
      setF(NO_FIELDS);
      await load();
      succeed(`System ${data.name} created.`);
    } catch (err) {
      if (err instanceof ApiError) {
        const failure = formFailure(err, placeSystemField, "Not created");
        setError(failure.banner);
        setFieldErrors(failure.fields);
      }
    } finally {
      setBusy(false);
    }
  };

  const remove = async (system: System) => {
    setStatus("");
    // A system with instances cannot be deleted: say so, with how many, instead of asking.
    let count: number;
    let more = false;
    try {
      const page = await instancesApi.list(system.id);
      count = page.data.length;
      more = (page.nextPageToken ?? "") !== "";
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
      return;
    }
    if (count > 0) {
      const n = `${more ? "more than " : ""}${count} instance${count === 1 && !more ? "" : "s"}`;
      setError(`${system.name} has ${n}: delete ${count === 1 && !more ? "it" : "them"} first (they are listed below), then the system.`);
      setSelected(system);
      return;
    }
    const yes = await confirm({
      title: `Delete system ${system.name}?`,
      message: <p>It has no instances. This cannot be undone.</p>,
      confirm: "Delete system",
      danger: true,
    });
    if (!yes) return;
    try {
      await api.deleteSystem(system.id, system.etag);
      if (selected?.id === system.id) setSelected(undefined);
      await load();
      succeed(`System ${system.name} deleted.`);
    } catch (err) {
      if (!(err instanceof ApiError)) return;
      setError(
        err.status === 409
          ? `${system.name} still has instances: delete its instances first, then the system. (${withRequestId(err)})`
          : err.status === 412
            ? `${system.name} was changed since this list was loaded: it was not deleted. Look at it again, then delete it if you still mean to.`
            : withRequestId(err),
      );
      // A refused delete of a changed system: the list shows it as it is now.
      if (err.status === 412) await load();
    }
  };

  const q = filter.trim().toLowerCase();
  const shown = (systems ?? []).filter(
    (s) =>
      q === "" ||
      s.name.toLowerCase().includes(q) ||
      s.description.toLowerCase().includes(q) ||
      s.id.toLowerCase().includes(q) ||
      Object.entries(s.labels ?? {}).some(([k, v]) => `${k}: ${v}`.toLowerCase().includes(q)),
  );
  return (
    <section aria-labelledby="systems-title">
      <h1 id="systems-title">Systems</h1>
      <p>A system is one ERP landscape (for example a production S/4HANA); its instances are the OData endpoints erplink forwards to.</p>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="status" role="status">
        {status}
      </p>
      {confirmDialog}
      <form class="inline-form" onSubmit={create} aria-labelledby="new-system-title" noValidate>
        <h2 id="new-system-title">New system</h2>
        <SystemFields f={f} set={(patch) => setF((prev) => ({ ...prev, ...patch }))} errors={fieldErrors} idPrefix="system" />
        <button type="submit" disabled={busy}>
          {busy ? "Creating…" : "Create system"}
        </button>
      </form>
      {systems === undefined ? (
        error === "" && <p aria-busy="true">Loading systems…</p>
      ) : systems.length === 0 ? (
        <p>No systems yet: create the first one above.</p>
      ) : (
        <>
          <div class="list-filter">
            <label for="systems-filter">Filter systems</label>
            <input id="systems-filter" type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} placeholder="name, description, label or id" />
          </div>
          <table>
            <caption>
              {q === "" ? (systems.length === 1 ? "1 system" : `${systems.length} systems`) : `${shown.length} of ${systems.length} systems match “${filter.trim()}”`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Description</th>
                <th scope="col">Labels</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((s) => (
                <tr key={s.id}>
                  <th scope="row">{s.name}</th>
                  <td>{s.description}</td>
                  <td>
                    <LabelChips labels={s.labels} of={s.name} />
                  </td>
                  <td>
                    <time dateTime={s.created_at}>{new Date(s.created_at).toLocaleString()}</time>
                  </td>
                  <td class="systems-actions">
                    <button
                      type="button"
                      class="secondary"
                      onClick={() => (selected?.id === s.id ? undefined : unlessUnsaved("Leave without saving", () => setSelected(s), ["instance"]))}
                      aria-label={`Instances of ${s.name}`}
                      aria-pressed={selected?.id === s.id}
                    >
                      Instances
                    </button>
                    <button type="button" class="secondary" onClick={() => navigate(`systems/${encodeURIComponent(s.id)}`)} aria-label={`Edit system ${s.name}`}>
                      Edit
                    </button>
                    <button type="button" class="danger" onClick={() => void remove(s)} aria-label={`Delete system ${s.name}`}>
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      {selected !== undefined && systems?.some((s) => s.id === selected.id) === true && <Instances system={selected} />}
    </section>
  );
}

/** The fields (in words) in which two versions of a system differ. */
function differences(a: System, b: System): string[] {
  const out: string[] = [];
  if (a.name !== b.name) out.push("name");
  if (a.description !== b.description) out.push("description");
  if (sortedLabels(a.labels) !== sortedLabels(b.labels)) out.push("labels");
  return out;
}

const fieldsOf = (s: System): Fields => ({ name: s.name, description: s.description, labels: labelsText(s.labels) });

/** One system: its id, labels, the edit form and its instances. */
function SystemScreen({ id }: { readonly id: string }) {
  const [system, setSystem] = useState<System | undefined>(undefined);
  const [f, setF] = useState<Fields>(NO_FIELDS);
  const [error, setError] = useState("");
  const [fieldErrors, setFieldErrors] = useState<Readonly<Record<string, string>>>({});
  const [status, setStatus] = useState("");
  const [busy, setBusy] = useState(false);
  const [conflict, setConflict] = useState<{ readonly current: System; readonly changed: readonly string[] } | undefined>(undefined);
  const heading = useRef<HTMLHeadingElement>(null);
  useUnsavedChanges(system !== undefined && JSON.stringify(f) !== JSON.stringify(fieldsOf(system)), `system ${system?.name ?? ""}`, "system-edit");

  const open = (s: System) => {
    setSystem(s);
    setF(fieldsOf(s));
  };
  useEffect(() => {
    let live = true;
    systemsApi.get(id).then(
      ({ data }) => {
        if (!live) return;
        open(data);
        requestAnimationFrame(() => heading.current?.focus());
      },
      (err: unknown) => live && err instanceof ApiError && setError(withRequestId(err)),
    );
    return () => {
      live = false;
    };
  }, [id]);

  /** The fields the admin changed since the version opened, or a problem with the labels. */
  const changes = (base: System): SystemInput | { readonly problem: string } => {
    const labels = parseLabels(f.labels);
    if ("problem" in labels) return labels;
    const out: { name?: string; description?: string; labels?: Record<string, string> } = {};
    if (f.name.trim() !== base.name) out.name = f.name.trim();
    if (f.description.trim() !== base.description) out.description = f.description.trim();
    if (sortedLabels(labels) !== sortedLabels(base.labels)) out.labels = labels;
    return out;
  };

  const saveAgainst = async (over?: System) => {
    if (system === undefined) return;
    setStatus("");
    const input = changes(system);
    if ("problem" in input) {
      setError("Not saved: correct the marked field.");
      setFieldErrors({ labels: input.problem });
      return;
    }
    if (Object.keys(input).length === 0) {
      setError("");
      setFieldErrors({});
      setStatus("Nothing to save: no field was changed.");
      return;
    }
    setBusy(true);
    try {
      const { data } = await systemsApi.update(system.id, input, (over ?? system).etag);
      open(data);
      setConflict(undefined);
      setError("");
      setFieldErrors({});
      setStatus(`System ${data.name} saved.`);
    } catch (err) {
      if (!(err instanceof ApiError)) return;
      if (err.status === 412) {
        // Changed by someone else since it was opened: say what, and let the admin choose. Nothing was saved.
        setError("");
        try {
          const { data: current } = await systemsApi.get(system.id);
          setConflict({ current, changed: differences(system, current) });
        } catch (again) {
          if (again instanceof ApiError) setError(withRequestId(again));
        }
      } else {
        const failure = formFailure(err, placeSystemField, "Not saved");
        setError(failure.banner);
        setFieldErrors(failure.fields);
      }
    } finally {
      setBusy(false);
    }
  };

  const reload = () => {
    if (conflict === undefined) return;
    open(conflict.current);
    setConflict(undefined);
    setFieldErrors({});
    setStatus(`System ${conflict.current.name} reloaded: your edits were dropped.`);
  };

  return (
    <section aria-labelledby="system-title">
      <p>
        <a
          href="/dashboard/systems"
          onClick={(e) => {
            if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
            e.preventDefault();
            navigate("systems");
          }}
        >
          All systems
        </a>
      </p>
      <h1 id="system-title" tabIndex={-1} ref={heading}>
        {system === undefined ? "System" : `System ${system.name}`}
      </h1>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="status" role="status">
        {status}
      </p>
      {system === undefined ? (
        error === "" && <p aria-busy="true">Loading the system…</p>
      ) : (
        <>
          <dl class="facts">
            <div>
              <dt>Id</dt>
              <dd>
                <code>{system.id}</code> <CopyButton text={system.id} what="system id" />
              </dd>
            </div>
            <div>
              <dt>Labels</dt>
              <dd>{Object.keys(system.labels ?? {}).length === 0 ? "none" : <LabelChips labels={system.labels} of={system.name} />}</dd>
            </div>
          </dl>
          <form
            class="inline-form"
            aria-labelledby="edit-system-title"
            noValidate
            onSubmit={(e) => {
              e.preventDefault();
              void saveAgainst();
            }}
          >
            <h2 id="edit-system-title">Edit system {system.name}</h2>
            <SystemFields f={f} set={(patch) => setF((prev) => ({ ...prev, ...patch }))} errors={fieldErrors} idPrefix="edit-system" />
            {conflict !== undefined && (
              <ConflictBox what="system" changed={conflict.changed} id="system-conflict-title" busy={busy} onReload={reload} onOverwrite={() => void saveAgainst(conflict.current)} />
            )}
            <button type="submit" disabled={busy}>
              {busy ? "Saving…" : "Save system"}
            </button>
          </form>
          <Instances system={system} />
        </>
      )}
    </section>
  );
}
