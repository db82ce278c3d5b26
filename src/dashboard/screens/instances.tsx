/**
 * A system's instances: list, create, edit, delete, and the step-by-step
 * connection test. Back-end credentials are write-only: the list and the
 * form show their type and "set", never a secret; a secret is sent only
 * when typed, and the credentials can be kept, replaced or removed.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, type System } from "../api.js";
import {
  instancesApi,
  type AuthType,
  type BackendAuth,
  type BackendAuthInput,
  type ConnectionTest,
  type Instance,
  type InstanceInput,
} from "../api-instances.js";
import { useConfirm } from "./confirm-dialog.js";
import { FieldMessage, describedBy, formFailure } from "./form-messages.js";
import { keysNaming, loadNames } from "../names.js";
import { ConflictBox } from "./conflict-box.js";
import { withRequestId } from "./sign-in.js";
import { unlessUnsaved, useUnsavedChanges } from "../unsaved.js";
import "./instances.css";

const AUTH_LABELS: Readonly<Record<AuthType, string>> = {
  none: "None",
  basic: "Basic (user name and password)",
  bearer: "Bearer token",
  oauth2_client_credentials: "OAuth 2.0 client credentials",
};

/** How the credentials are shown: the type and, for types with a secret, "set". */
export function describeAuth(auth: BackendAuth | undefined): string {
  const type = auth?.type ?? "none";
  if (type === "none") return "none";
  if (type === "basic") return `basic (${auth?.username ?? ""}), password set`;
  if (type === "bearer") return "bearer, token set";
  return `OAuth 2.0 client credentials (${auth?.client_id ?? ""}), secret set`;
}

/** The services map as text, one `NAME = path` a line. */
function servicesText(services: Instance["services"]): string {
  return Object.entries(services ?? {})
    .map(([name, route]) => `${name} = ${route.path}`)
    .join("\n");
}

/** Parses the services text; throws a message naming the bad line. */
function parseServices(text: string): Record<string, { path: string }> {
  const out: Record<string, { path: string }> = {};
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "") return;
    const eq = line.indexOf("=");
    if (eq <= 0 || line.slice(eq + 1).trim() === "") throw new Error(`Service paths, line ${i + 1}: write NAME = path`);
    out[line.slice(0, eq).trim()] = { path: line.slice(eq + 1).trim() };
  });
  return out;
}

type AuthChoice = "keep" | AuthType;

/** Which form field shows a server field's error ("" for the banner). */
function placeInstanceField(field: string): string {
  const top = field.split(".")[0]!;
  switch (top) {
    case "name":
    case "environment":
      return top;
    case "base_url":
      return "base-url";
    case "services":
      return "services";
    case "sap_client":
      return "sap-client";
    case "upstream_connections":
      return "connections";
    case "auth": {
      const inner = field.slice("auth.".length);
      if (inner === "username") return "username";
      if (inner === "password" || inner === "token" || inner === "client_secret") return "secret";
      if (inner === "token_url") return "token-url";
      if (inner === "client_id") return "client-id";
      if (inner === "scope") return "scope";
      return "auth";
    }
    default:
      return "";
  }
}

/**
 * The system that holds the instance named `name` (instance names are unique
 * across all systems), or undefined when none is found.
 */
async function systemHolding(name: string): Promise<System | undefined> {
  let token = "";
  do {
    const page = await api.listSystems(token);
    for (const system of page.data) {
      let inner = "";
      do {
        const instances = await instancesApi.list(system.id, inner);
        if (instances.data.some((i) => i.name === name)) return system;
        inner = instances.nextPageToken ?? "";
      } while (inner !== "");
    }
    token = page.nextPageToken ?? "";
  } while (token !== "");
  return undefined;
}

interface FormState {
  readonly name: string;
  readonly environment: string;
  readonly baseUrl: string;
  readonly sapClient: string;
  readonly connections: string;
  readonly services: string;
  readonly auth: AuthChoice;
  readonly username: string;
  readonly secret: string;
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly scope: string;
}

const EMPTY: FormState = {
  name: "",
  environment: "",
  baseUrl: "",
  sapClient: "",
  connections: "",
  services: "",
  auth: "none",
  username: "",
  secret: "",
  tokenUrl: "",
  clientId: "",
  scope: "",
};

function fromInstance(i: Instance): FormState {
  const hasAuth = (i.auth?.type ?? "none") !== "none";
  return {
    ...EMPTY,
    name: i.name,
    environment: i.environment ?? "",
    baseUrl: i.base_url,
    sapClient: i.sap_client ?? "",
    connections: i.upstream_connections ? String(i.upstream_connections) : "",
    services: servicesText(i.services),
    auth: hasAuth ? "keep" : "none",
    username: i.auth?.username ?? "",
    tokenUrl: i.auth?.token_url ?? "",
    clientId: i.auth?.client_id ?? "",
    scope: i.auth?.scope ?? "",
  };
}

function authInput(f: FormState): BackendAuthInput | null | undefined {
  switch (f.auth) {
    case "keep":
      return undefined;
    case "none":
      return null;
    case "basic":
      return { type: "basic", username: f.username, password: f.secret };
    case "bearer":
      return { type: "bearer", token: f.secret };
    case "oauth2_client_credentials":
      return {
        type: "oauth2_client_credentials",
        token_url: f.tokenUrl,
        client_id: f.clientId,
        client_secret: f.secret,
        ...(f.scope.trim() === "" ? {} : { scope: f.scope.trim() }),
      };
  }
}

export function Instances({ system }: { readonly system: System }) {
  const [instances, setInstances] = useState<readonly Instance[] | undefined>(undefined);
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  /** The instance being edited, "new" for the create form, or undefined. */
  const [editing, setEditing] = useState<Instance | "new" | undefined>(undefined);
  const [testing, setTesting] = useState<Instance | undefined>(undefined);
  const [confirm, confirmDialog] = useConfirm();

  const load = async () => {
    try {
      const all: Instance[] = [];
      let token = "";
      do {
        const page = await instancesApi.list(system.id, token);
        all.push(...page.data);
        token = page.nextPageToken ?? "";
      } while (token !== "");
      setInstances(all);
      // The connection test shows the instance as it is now: a changed instance starts a new panel, without the old result.
      setTesting((t) => (t === undefined ? t : all.find((i) => i.id === t.id)));
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    }
  };
  useEffect(() => {
    setInstances(undefined);
    setEditing(undefined);
    setTesting(undefined);
    void load();
  }, [system.id]);

  const remove = async (instance: Instance) => {
    // The keys that name it, read now (one list call), so the admin knows what stops working.
    await loadNames(["keys"], { fresh: true });
    const yes = await confirm({
      title: `Delete instance ${instance.name}?`,
      message: <p>{`${namingKeys(instance.name)} This cannot be undone.`}</p>,
      confirm: "Delete instance",
      danger: true,
    });
    if (!yes) return;
    setError("");
    setStatus("");
    try {
      await instancesApi.remove(instance.id, instance.etag);
      setInstances((all) => all?.filter((i) => i.id !== instance.id));
      setStatus(`Instance ${instance.name} deleted.`);
      if (testing?.id === instance.id) setTesting(undefined);
      await load();
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    }
  };

  const title = `instances-title-${system.id}`;
  return (
    <section class="instances" aria-labelledby={title}>
      <h2 id={title}>Instances of {system.name}</h2>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="status" role="status">
        {status}
      </p>
      {confirmDialog}
      {instances === undefined ? (
        error === "" && <p aria-busy="true">Loading instances…</p>
      ) : instances.length === 0 ? (
        <p>No instances yet.</p>
      ) : (
        <table>
          <caption>{instances.length === 1 ? "1 instance" : `${instances.length} instances`}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Environment</th>
              <th scope="col">Base URL</th>
              <th scope="col">Credentials</th>
              <th scope="col">SAP client</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {instances.map((i) => (
              <tr key={i.id}>
                <th scope="row">{i.name}</th>
                <td>{i.environment ?? ""}</td>
                <td class="instances-url">{i.base_url}</td>
                <td>{describeAuth(i.auth)}</td>
                <td>{i.sap_client ?? ""}</td>
                <td class="instances-actions">
                  <button
                    type="button"
                    class="secondary"
                    onClick={() =>
                      unlessUnsaved(
                        "Leave without saving",
                        () => {
                          setStatus("");
                          setEditing(i);
                        },
                        ["instance"],
                      )
                    }
                    aria-label={`Edit instance ${i.name}`}
                  >
                    Edit
                  </button>
                  <button type="button" class="secondary" onClick={() => setTesting(i)} aria-label={`Test connection of ${i.name}`}>
                    Test connection
                  </button>
                  <button type="button" class="danger" onClick={() => remove(i)} aria-label={`Delete instance ${i.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing === undefined ? (
        <button type="button" onClick={() => setEditing("new")}>
          New instance
        </button>
      ) : (
        <InstanceForm
          key={editing === "new" ? "new" : editing.id}
          system={system}
          instance={editing === "new" ? undefined : editing}
          onDone={async (message) => {
            setEditing(undefined);
            setError("");
            // Announced once the list shows the change, not before.
            setStatus("");
            await load();
            setStatus(message);
          }}
          onCancel={() => unlessUnsaved("Discard changes", () => setEditing(undefined), ["instance"])}
        />
      )}
      {testing !== undefined && <ConnectionTestPanel key={`${testing.id} ${testing.etag ?? testing.updated_at}`} instance={testing} onClose={() => setTesting(undefined)} />}
    </section>
  );
}

interface FormProps {
  readonly system: System;
  readonly instance: Instance | undefined;
  readonly onDone: (message: string) => void | Promise<void>;
  readonly onCancel: () => void;
}

/**
 * The fields of an edit that differ from the instance as the form was opened
 * on it (credentials always: they are never shown, so a secret typed is a change).
 */
function changedFields(instance: Instance, body: InstanceInput): InstanceInput {
  const before: Record<string, unknown> = {
    name: instance.name,
    environment: instance.environment,
    base_url: instance.base_url,
    services: instance.services,
    sap_client: instance.sap_client === undefined || instance.sap_client === "" ? null : instance.sap_client,
    upstream_connections: instance.upstream_connections ?? 0,
  };
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(body)) {
    if (field === "auth" || JSON.stringify(value) !== JSON.stringify(before[field])) out[field] = value;
  }
  return out as InstanceInput;
}

/** The fields (in words) in which two versions of an instance differ. */
function differences(a: Instance, b: Instance): string[] {
  const words: [string, (i: Instance) => unknown][] = [
    ["name", (i) => i.name],
    ["environment", (i) => i.environment ?? ""],
    ["base URL", (i) => i.base_url],
    ["service paths", (i) => i.services ?? {}],
    ["SAP client", (i) => i.sap_client ?? ""],
    ["connections", (i) => i.upstream_connections ?? 0],
    ["credentials", (i) => i.auth ?? {}],
  ];
  return words.filter(([, of]) => JSON.stringify(of(a)) !== JSON.stringify(of(b))).map(([word]) => word);
}

function InstanceForm({ system, instance: opened, onDone, onCancel }: FormProps) {
  /** The version the form edits: the one opened, or the one reloaded after a conflict. */
  const [instance, setInstance] = useState(opened);
  const initial = instance === undefined ? EMPTY : fromInstance(instance);
  const [f, setF] = useState<FormState>(initial);
  const [error, setError] = useState("");
  const [errors, setErrors] = useState<Readonly<Record<string, string>>>({});
  const [busy, setBusy] = useState(false);
  /** A save refused because the instance changed meanwhile: the instance as it is now, and what changed. */
  const [conflict, setConflict] = useState<{ readonly current: Instance; readonly changed: readonly string[] } | undefined>(undefined);
  useUnsavedChanges(JSON.stringify(f) !== JSON.stringify(initial), instance === undefined ? `a new instance of ${system.name}` : `instance ${instance.name}`, "instance");
  const set = (patch: Partial<FormState>) => setF((prev) => ({ ...prev, ...patch }));
  const id = (field: string) => `instance-${field}`;
  const hasAuth = instance !== undefined && (instance.auth?.type ?? "none") !== "none";

  const submit = (event: Event) => {
    event.preventDefault();
    void saveAgainst();
  };
  /** Drops the admin's edits and shows the instance as it is now. */
  const reload = () => {
    if (conflict === undefined) return;
    setInstance(conflict.current);
    setF(fromInstance(conflict.current));
    setConflict(undefined);
    setError("");
  };
  /**
   * Saves the fields the admin changed, against the version the form edits
   * (`If-Match` its etag), or, to overwrite, against `over` (the version that
   * refused the first save).
   */
  const saveAgainst = async (over?: Instance) => {
    setError("");
    setErrors({});
    let services: Record<string, { path: string }>;
    try {
      services = parseServices(f.services);
    } catch (err) {
      setError(`Not ${instance === undefined ? "created" : "saved"}: correct the marked field.`);
      setErrors({ services: (err as Error).message });
      return;
    }
    const auth = authInput(f);
    const body: InstanceInput = {
      name: f.name.trim(),
      environment: f.environment.trim(),
      base_url: f.baseUrl.trim(),
      services,
      // Empty: none. A create omits it (the API refuses null there); an edit clears it.
      ...(f.sapClient.trim() !== "" ? { sap_client: f.sapClient.trim() } : instance === undefined ? {} : { sap_client: null }),
      // Empty: the process default (0).
      ...(f.connections.trim() !== "" ? { upstream_connections: Number(f.connections.trim()) } : instance === undefined ? {} : { upstream_connections: 0 }),
      ...(auth === undefined || (auth === null && instance === undefined) ? {} : { auth }),
    };
    const changed = instance === undefined ? body : changedFields(instance, body);
    if (instance !== undefined && Object.keys(changed).length === 0) {
      await onDone(`Instance ${instance.name}: nothing to save, no field was changed.`);
      return;
    }
    setBusy(true);
    try {
      // An edit sends the fields the admin changed, against the version the form was opened on.
      const { data } =
        instance === undefined ? await instancesApi.create(system.id, body) : await instancesApi.update(instance.id, changed, (over ?? instance).etag);
      setConflict(undefined);
      // Saved: nothing is left unsaved, so onDone may close the form without asking.
      setF(fromInstance(data));
      setInstance(data);
      await onDone(`Instance ${data.name} ${instance === undefined ? "created" : "saved"}.`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412 && instance !== undefined) {
        // Changed by someone else since it was opened: say what, and let the admin choose. Nothing was saved.
        try {
          const { data: current } = await instancesApi.get(instance.id);
          setConflict({ current, changed: differences(instance, current) });
        } catch (again) {
          if (again instanceof ApiError) setError(withRequestId(again));
        }
      } else if (err instanceof ApiError && err.status === 409 && err.details.some((d) => d.field === "name")) {
        // Instance names are unique across all systems: say which system has this one.
        const name = body.name ?? "";
        const holder = await systemHolding(name).catch(() => undefined);
        const where = holder === undefined ? "another system" : holder.id === system.id ? `this system (${system.name})` : `system ${holder.name}`;
        setError(
          `Not ${instance === undefined ? "created" : "saved"}: another instance already has the name ${name}, in ${where}. Instance names are unique across all systems, because API keys and /odata/${name}/… address an instance by its name: choose another name.${err.requestId === "" ? "" : ` (request ${err.requestId})`}`,
        );
        setErrors({ name: `Already used by an instance of ${where}.` });
      } else if (err instanceof ApiError) {
        const failure = formFailure(err, placeInstanceField, `Not ${instance === undefined ? "created" : "saved"}`);
        setError(failure.banner);
        setErrors(failure.fields);
      }
    } finally {
      setBusy(false);
    }
  };

  const secretLabel = f.auth === "basic" ? "Password" : f.auth === "bearer" ? "Token" : "Client secret";
  return (
    <form class="inline-form instances-form" onSubmit={submit} aria-labelledby={id("form-title")} noValidate>
      <h3 id={id("form-title")}>{instance === undefined ? `New instance of ${system.name}` : `Edit instance ${instance.name}`}</h3>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <label for={id("name")}>Instance name</label>
      <input id={id("name")} value={f.name} onInput={(e) => set({ name: e.currentTarget.value })} required {...describedBy(errors.name, id("name-error"), id("name-help"))} />
      <small id={id("name-help")}>Unique across all systems; API keys and /odata/&lt;name&gt;/… address the instance by it.</small>
      <FieldMessage id={id("name-error")} error={errors.name} />
      <label for={id("environment")}>Environment</label>
      <input id={id("environment")} value={f.environment} onInput={(e) => set({ environment: e.currentTarget.value })} placeholder="production" {...describedBy(errors.environment, id("environment-error"))} />
      <FieldMessage id={id("environment-error")} error={errors.environment} />
      <label for={id("base-url")}>Base URL</label>
      <input
        id={id("base-url")}
        type="url"
        value={f.baseUrl}
        onInput={(e) => set({ baseUrl: e.currentTarget.value })}
        required
        {...describedBy(errors["base-url"], id("base-url-error"), id("base-url-help"))}
      />
      <small id={id("base-url-help")}>The back end's OData root, e.g. https://s4.example.com/sap/opu/odata4/ (no credentials in it).</small>
      <FieldMessage id={id("base-url-error")} error={errors["base-url"]} />
      <label for={id("services")}>Service paths</label>
      <textarea
        id={id("services")}
        rows={3}
        value={f.services}
        onInput={(e) => set({ services: e.currentTarget.value })}
        {...describedBy(errors["services"], id("services-error"), id("services-help"))}
      />
      <small id={id("services-help")}>
        Optional, one a line: NAME = path under the base URL. A service not listed is reached at base URL/NAME.
      </small>
      <FieldMessage id={id("services-error")} error={errors["services"]} />
      <label for={id("sap-client")}>SAP client</label>
      <input
        id={id("sap-client")}
        value={f.sapClient}
        onInput={(e) => set({ sapClient: e.currentTarget.value })}
        inputMode="numeric"
        pattern="[0-9]{3}"
        {...describedBy(errors["sap-client"], id("sap-client-error"), id("sap-client-help"))}
      />
      <small id={id("sap-client-help")}>Optional, three digits (e.g. 100); empty for the back end's default.</small>
      <FieldMessage id={id("sap-client-error")} error={errors["sap-client"]} />
      <label for={id("connections")}>Connections to the back end</label>
      <input
        id={id("connections")}
        type="number"
        min={1}
        max={4096}
        value={f.connections}
        onInput={(e) => set({ connections: e.currentTarget.value })}
        {...describedBy(errors["connections"], id("connections-error"), id("connections-help"))}
      />
      <small id={id("connections-help")}>
        Optional: most requests in flight to this back end at once, shared between its services; empty for erplink's default (64).
      </small>
      <FieldMessage id={id("connections-error")} error={errors["connections"]} />
      <fieldset class="instances-auth">
        <legend>Back-end credentials</legend>
        {hasAuth && (
          <p id={id("auth-current")}>
            Current: {describeAuth(instance?.auth)}. Secrets are never shown; choose a type to replace them, or None to remove them.
          </p>
        )}
        <label for={id("auth")}>Credentials</label>
        <select id={id("auth")} {...describedBy(errors.auth, id("auth-error"))} value={f.auth} onChange={(e) => set({ auth: e.currentTarget.value as AuthChoice, secret: "" })}>
          {hasAuth && <option value="keep">Keep the current credentials</option>}
          {(Object.keys(AUTH_LABELS) as AuthType[]).map((t) => (
            <option key={t} value={t}>
              {t === "none" && hasAuth ? "None (remove the credentials)" : AUTH_LABELS[t]}
            </option>
          ))}
        </select>
        <FieldMessage id={id("auth-error")} error={errors.auth} />
        {f.auth === "basic" && (
          <>
            <label for={id("username")}>User name</label>
            <input id={id("username")} value={f.username} onInput={(e) => set({ username: e.currentTarget.value })} required autoComplete="off" {...describedBy(errors.username, id("username-error"))} />
            <FieldMessage id={id("username-error")} error={errors.username} />
          </>
        )}
        {f.auth === "oauth2_client_credentials" && (
          <>
            <label for={id("token-url")}>Token URL</label>
            <input id={id("token-url")} type="url" value={f.tokenUrl} onInput={(e) => set({ tokenUrl: e.currentTarget.value })} required {...describedBy(errors["token-url"], id("token-url-error"))} />
            <FieldMessage id={id("token-url-error")} error={errors["token-url"]} />
            <label for={id("client-id")}>Client id</label>
            <input id={id("client-id")} value={f.clientId} onInput={(e) => set({ clientId: e.currentTarget.value })} required autoComplete="off" {...describedBy(errors["client-id"], id("client-id-error"))} />
            <FieldMessage id={id("client-id-error")} error={errors["client-id"]} />
            <label for={id("scope")}>Scope</label>
            <input id={id("scope")} value={f.scope} onInput={(e) => set({ scope: e.currentTarget.value })} {...describedBy(errors.scope, id("scope-error"))} />
            <FieldMessage id={id("scope-error")} error={errors.scope} />
          </>
        )}
        {f.auth !== "keep" && f.auth !== "none" && (
          <>
            <label for={id("secret")}>{secretLabel}</label>
            <input
              id={id("secret")}
              type="password"
              value={f.secret}
              onInput={(e) => set({ secret: e.currentTarget.value })}
              required
              autoComplete="new-password"
              {...describedBy(errors["secret"], id("secret-error"), id("secret-help"))}
            />
            <small id={id("secret-help")}>Write-only: stored encrypted and never shown again.</small>
      <FieldMessage id={id("secret-error")} error={errors["secret"]} />
          </>
        )}
      </fieldset>
      {conflict !== undefined && instance !== undefined && (
        <ConflictBox what="instance" changed={conflict.changed} id={id("conflict-title")} busy={busy} onReload={reload} onOverwrite={() => void saveAgainst(conflict.current)} />
      )}
      <div class="instances-buttons">
        <button type="submit" disabled={busy}>
          {busy ? "Saving…" : instance === undefined ? "Create instance" : "Save instance"}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function ConnectionTestPanel({ instance, onClose }: { readonly instance: Instance; readonly onClose: () => void }) {
  const [service, setService] = useState(Object.keys(instance.services ?? {})[0] ?? "");
  const [result, setResult] = useState<ConnectionTest | undefined>(undefined);
  /** The service the shown result is of ("" for the base URL). */
  const [tested, setTested] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const run = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError("");
    setResult(undefined);
    try {
      const named = service.trim();
      setResult((await instancesApi.test(instance.id, named)).data);
      setTested(named);
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    } finally {
      setBusy(false);
    }
  };

  const heading = `connection-test-${instance.id}`;
  return (
    <section class="inline-form instances-test" aria-labelledby={heading}>
      <h3 id={heading}>Connection test of {instance.name}</h3>
      <form onSubmit={run}>
        <label for="connection-test-service">Service to test (optional)</label>
        <input
          id="connection-test-service"
          value={service}
          onInput={(e) => {
            setService(e.currentTarget.value);
            // The result shown was of another service.
            setResult(undefined);
          }}
          aria-describedby="connection-test-service-help"
        />
        <small id="connection-test-service-help">With a service, its $metadata is fetched; without, only the base URL is reached.</small>
        <div class="instances-buttons">
          <button type="submit" disabled={busy}>
            {busy ? "Testing…" : "Run test"}
          </button>
          <button type="button" class="secondary" onClick={onClose}>
            Close
          </button>
        </div>
      </form>
      {busy && <p aria-busy="true">Reaching the back end…</p>}
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div role="status">
        {result !== undefined && (
          <>
            <p class={result.ok === true ? "instances-ok" : "error"}>
              {result.ok === true
                ? `Connection OK in ${Math.round(result.duration_ms ?? 0)} ms${result.odata_version ? ` (OData ${result.odata_version})` : ""}.`
                : `Connection failed: ${result.error ?? ""}`}
            </p>
            <ol class="instances-steps" aria-label="Steps">
              {(result.steps ?? []).map((s) => (
                <li key={s.name} class={s.ok === true ? "step-ok" : "step-failed"}>
                  <strong>
                    {s.name}: {s.ok === true ? "passed" : "failed"}
                  </strong>{" "}
                  <span class="instances-duration">({Math.round((s.duration_ms ?? 0) * 10) / 10} ms)</span>
                  {s.detail !== undefined && s.detail !== "" && <span> — {s.detail}</span>}
                </li>
              ))}
            </ol>
            {result.url !== undefined && result.url !== "" && (
              <p>
                Requested <code>{result.url}</code>
                {result.http_status ? `, HTTP ${result.http_status}` : ""}
                {result.csrf_token === true ? "; the back end issued a CSRF token" : ""}.
              </p>
            )}
            {tested === "" && result.http_status === 404 && (
              <p class="notice">
                HTTP 404 at the base URL does not mean it is wrong: many OData back ends (SAP Gateway among them) have nothing at their root. Name a
                service above, such as API_BUSINESS_PARTNER, and run the test again: erplink then fetches that service's $metadata.
              </p>
            )}
          </>
        )}
      </div>
    </section>
  );
}

/** "3 keys name this instance: a, b, c. They stop reaching it." (or that none does). */
export function namingKeys(name: string): string {
  const keys = keysNaming(name);
  if (keys.length === 0) return "No API key names this instance.";
  const list = keys.map((k) => k.name).join(", ");
  return `${keys.length === 1 ? "1 key names" : `${keys.length} keys name`} this instance: ${list}. ${keys.length === 1 ? "It stops" : "They stop"} reaching it.`;
}
