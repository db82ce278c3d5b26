/**
 * The permission editor of a data key: a tree instance → service or `*` →
 * entity set or `*` → the five operations on entity sets as toggles, and
 * beside the entity sets the service's functions and actions ("Operations"),
 * each with its one `invoke` toggle. Services are offered from the
 * instance's configured services, entity sets and operations from the
 * service's catalog (its `$metadata`); free text is accepted and flagged
 * when the catalog does not have it. `*` and unknown instance names are
 * warned about. A toggle changes only its own operation: whatever else an
 * entry holds is kept. Drafts are checked as the server checks them
 * (`invoke` only on an entry that names the operation). A raw JSON view
 * stays in sync both ways (an invalid edit is shown, not applied).
 */
import { useEffect, useState } from "preact/hooks";
import { ENTITY_NAME_PATTERN } from "../../schema/permission-names.js";
import { ApiError } from "../api.js";
import { keysApi, type CatalogOperation, type Instance } from "../api-keys.js";
import { INVOKE, SET_OPERATIONS, WILDCARD, isOperationEntry, parsePermissions, toggled, type Permissions } from "../permission-draft.js";
import { withRequestId } from "./sign-in.js";

/** What the catalog of one (instance, service) said. */
type CatalogState =
  | { readonly state: "loading" }
  | { readonly state: "ok"; readonly sets: readonly string[]; readonly operations: readonly CatalogOperation[] }
  | { readonly state: "error"; readonly message: string };

const ENTITY_NAME = new RegExp(ENTITY_NAME_PATTERN);

/** Whether an entry of a service names a function or action (see {@link isOperationEntry}), with what its catalog says. */
const operationEntry = (name: string, ops: readonly string[], catalog: CatalogState | undefined) =>
  isOperationEntry(name, ops, catalog?.state === "ok" ? catalog : undefined);

/** What an operation is, in words: its kind, where it is called and what it returns. */
function operationSummary(o: CatalogOperation): string {
  const where = o.bound ? `bound to ${(o.binding_entity_sets ?? []).join(", ") || "no entity set of this service"}` : "import";
  const method = o.http_method ? `, called with ${o.http_method}` : "";
  const results = o.result_entity_sets ?? [];
  const returns = o.result_unknown ? "returns entities $metadata does not place" : results.length > 0 ? `returns entities of ${results.join(", ")}` : "returns no entity";
  return `${o.kind} ${where}${method}; ${returns}`;
}

interface Props {
  readonly value: Permissions;
  readonly onChange: (next: Permissions) => void;
  /** An id prefix, unique on the page. */
  readonly idPrefix: string;
  /** Told why the JSON view cannot be applied ("" once it can), so that the page knows the draft is invalid. */
  readonly onJsonError?: (reason: string) => void;
}

function clone(p: Permissions): Permissions {
  return JSON.parse(JSON.stringify(p)) as Permissions;
}

export function PermissionEditor({ value, onChange, idPrefix, onJsonError }: Props) {
  const [instances, setInstances] = useState<readonly Instance[] | undefined>(undefined);
  const [instancesError, setInstancesError] = useState("");
  const [catalogs, setCatalogs] = useState<Record<string, CatalogState>>({});
  const [json, setJson] = useState(JSON.stringify(value, null, 2));
  const [jsonError, setJsonError] = useState("");
  const [newInstance, setNewInstance] = useState("");
  const [newService, setNewService] = useState<Record<string, string>>({});
  const [newEntity, setNewEntity] = useState<Record<string, string>>({});
  const [newOperation, setNewOperation] = useState<Record<string, string>>({});
  /** Why the last "Add entity set" / "Add operation" of a service was refused, by `set`/`op` and service key. */
  const [addError, setAddError] = useState<Record<string, string>>({});

  useEffect(() => {
    keysApi.instances().then(setInstances, (err: unknown) => {
      setInstancesError(err instanceof ApiError ? withRequestId(err) : "The instances could not be read.");
    });
  }, []);

  // The tree changed (or a new value came in): the JSON view follows, unless it is the one being edited.
  useEffect(() => {
    const parsed = parsePermissions(json);
    if (typeof parsed === "string" || JSON.stringify(parsed) !== JSON.stringify(value)) {
      setJson(JSON.stringify(value, null, 2));
      setJsonError("");
    }
  }, [JSON.stringify(value)]);

  useEffect(() => onJsonError?.(jsonError), [jsonError]);

  const instanceByName = (name: string) => instances?.find((i) => i.name === name);

  // Fetch the catalog of every named (instance, service) pair once: all the new pairs in one call.
  useEffect(() => {
    const wanted: { key: string; instance_id: string; service: string }[] = [];
    for (const [inst, services] of Object.entries(value)) {
      const found = instanceByName(inst);
      if (found === undefined) continue;
      for (const service of Object.keys(services)) {
        if (service === "*") continue;
        const key = `${inst}\u0000${service}`;
        if (catalogs[key] !== undefined) continue;
        wanted.push({ key, instance_id: found.id, service });
      }
    }
    if (wanted.length === 0) return;
    const each = (state: (i: number) => CatalogState) => (c: Record<string, CatalogState>) => ({ ...c, ...Object.fromEntries(wanted.map((w, i) => [w.key, state(i)])) });
    setCatalogs(each(() => ({ state: "loading" })));
    keysApi.catalogs(wanted).then(
      (results) =>
        setCatalogs(
          each((i): CatalogState => {
            const r = results[i];
            return r?.catalog !== undefined
              ? { state: "ok", sets: (r.catalog.entity_sets ?? []).map((s) => s.name), operations: r.catalog.operations ?? [] }
              : { state: "error", message: r?.error?.message ?? "The catalog could not be read." };
          }),
        ),
      (err: unknown) => {
        const message = err instanceof ApiError ? withRequestId(err) : "The catalog could not be read.";
        setCatalogs(each(() => ({ state: "error", message })));
      },
    );
  }, [JSON.stringify(value), instances]);

  const update = (change: (p: Permissions) => void) => {
    const next = clone(value);
    change(next);
    onChange(next);
  };

  const addInstance = () => {
    const name = newInstance.trim();
    if (name === "") return;
    update((p) => {
      p[name] ??= {};
    });
    setNewInstance("");
  };
  const addService = (inst: string) => {
    const name = (newService[inst] ?? "").trim();
    if (name === "") return;
    update((p) => {
      p[inst]![name] ??= {};
    });
    setNewService((s) => ({ ...s, [inst]: "" }));
  };
  const addEntity = (inst: string, service: string) => {
    const k = `${inst}\u0000${service}`;
    const name = (newEntity[k] ?? "").trim();
    if (name === "") return;
    const catalog = catalogs[k];
    const operation = catalog?.state === "ok" ? catalog.operations.find((o) => o.name === name) : undefined;
    if (operation !== undefined) {
      setAddError((e) => ({ ...e, [`set\u0000${k}`]: `${name} is ${operation.kind === "action" ? "an action" : "a function"} in $metadata, not an entity set: grant it under Operations (invoke).` }));
      return;
    }
    setAddError((e) => ({ ...e, [`set\u0000${k}`]: "" }));
    update((p) => {
      p[inst]![service]![name] ??= ["list", "get"];
    });
    setNewEntity((s) => ({ ...s, [k]: "" }));
  };
  const addOperation = (inst: string, service: string) => {
    const k = `${inst}\u0000${service}`;
    const name = (newOperation[k] ?? "").trim();
    if (name === "") return;
    const problem =
      name === WILDCARD
        ? "'*' never includes functions or actions: name the operation."
        : !ENTITY_NAME.test(name)
          ? `${name} is no operation's name: an import's name (ReleaseOrder) or a bound operation's qualified name (API_SALES.Approve).`
          : "";
    setAddError((e) => ({ ...e, [`op\u0000${k}`]: problem }));
    if (problem !== "") return;
    update((p) => {
      p[inst]![service]![name] = toggled(p[inst]![service]![name] ?? [], INVOKE, true);
    });
    setNewOperation((s) => ({ ...s, [k]: "" }));
  };
  const onEnter = (action: () => void) => (e: KeyboardEvent) => {
    if (e.key === "Enter") {
      e.preventDefault();
      action();
    }
  };

  const onJsonInput = (text: string) => {
    setJson(text);
    const parsed = parsePermissions(text);
    if (typeof parsed === "string") setJsonError(parsed);
    else {
      setJsonError("");
      onChange(parsed);
    }
  };

  // Shown at once, not after the effect: the JSON view never lags the tree.
  const parsedJson = parsePermissions(json);
  const inSync = typeof parsedJson !== "string" && JSON.stringify(parsedJson) === JSON.stringify(value);
  const shownJson = inSync || jsonError !== "" ? json : JSON.stringify(value, null, 2);
  const id = (...parts: string[]) => `${idPrefix}-${parts.map((p) => p.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0)}`)).join("-")}`;
  const names = Object.keys(value);
  const instanceListId = `${idPrefix}-instances`;

  return (
    <div class="perm-editor">
      <h3>Permissions</h3>
      <p class="hint">
        A data key reaches only what is listed here: instance → service (or <code>*</code>) → entity set (or <code>*</code>) → operations, and the
        functions and actions it may call, each by name with <code>invoke</code>.
      </p>
      {instancesError !== "" && (
        <p class="error" role="alert">
          {instancesError}
        </p>
      )}
      <div class="perm-columns">
        <div class="perm-tree">
          {names.length === 0 && <p>No permissions yet: this key can reach nothing. Add an instance below.</p>}
          {names.map((inst) => {
            const found = instanceByName(inst);
            const services = value[inst]!;
            const serviceListId = id("services", inst);
            return (
              <fieldset class="perm-instance" key={inst}>
                <legend>Instance {inst}</legend>
                {instances !== undefined && found === undefined && (
                  <p class="warn">No instance is named {inst}: the key will reach it only once an instance of that name is created.</p>
                )}
                <button type="button" class="danger small" onClick={() => update((p) => void delete p[inst])} aria-label={`Remove instance ${inst}`}>
                  Remove
                </button>
                {Object.keys(services).map((service) => {
                  const ck = `${inst}\u0000${service}`;
                  const catalog = catalogs[ck];
                  const sets = services[service]!;
                  const setListId = id("sets", inst, service);
                  const entryNames = Object.keys(sets);
                  const entityNames = entryNames.filter((name) => !operationEntry(name, sets[name]!, catalog));
                  // The catalog's operations in its order, then the granted ones it does not have.
                  const catalogOps = catalog?.state === "ok" ? catalog.operations : [];
                  const operationRows: { name: string; info: CatalogOperation | undefined }[] = [
                    ...catalogOps.map((info) => ({ name: info.name, info })),
                    ...entryNames.filter((name) => operationEntry(name, sets[name]!, catalog) && !catalogOps.some((o) => o.name === name)).map((name) => ({ name, info: undefined })),
                  ];
                  return (
                    <fieldset class="perm-service" key={service}>
                      <legend>
                        Service {service === "*" ? "* (every service)" : service}
                      </legend>
                      {service === "*" && <p class="warn">* grants these entity sets in every service of {inst}, including services added later.</p>}
                      {catalog?.state === "loading" && <p aria-busy="true">Reading the catalog from $metadata…</p>}
                      {catalog?.state === "error" && <p class="warn">Catalog not available: {catalog.message}</p>}
                      {catalog?.state === "ok" && (
                        <p class="hint">
                          {catalog.sets.length} entity sets in $metadata
                        </p>
                      )}
                      {catalog?.state === "ok" && catalog.operations.length > 0 && (
                        <p class="hint">
                          {catalog.operations.length} functions and actions in $metadata
                        </p>
                      )}
                      <button type="button" class="danger small" onClick={() => update((p) => void delete p[inst]![service])} aria-label={`Remove service ${service} of ${inst}`}>
                        Remove
                      </button>
                      {entityNames.map((entity) => {
                        const ops = sets[entity]!;
                        const unknown = catalog?.state === "ok" && entity !== "*" && !catalog.sets.includes(entity);
                        const kept = ops.filter((o) => !(SET_OPERATIONS as readonly string[]).includes(o));
                        return (
                          <fieldset class="perm-entity" key={entity}>
                            <legend>
                              {entity === "*" ? "Entity set * (every entity set)" : `Entity set ${entity}`}
                              <span class="visually-hidden"> in {service} of {inst}</span>
                            </legend>
                            {entity === "*" && <p class="warn">* grants every entity set of this service, including ones added later, but never a function or action.</p>}
                            {unknown && <p class="warn">Not in $metadata: {service} has no entity set named {entity}.</p>}
                            {kept.length > 0 && <p class="hint">Also granted, kept as it is: {kept.join(", ")}.</p>}
                            <div class="ops">
                              {SET_OPERATIONS.map((op) => {
                                const cid = id("op", inst, service, entity, op);
                                return (
                                  <span class="op" key={op}>
                                    <input
                                      type="checkbox"
                                      id={cid}
                                      checked={ops.includes(op)}
                                      onChange={(e) => {
                                        const on = e.currentTarget.checked;
                                        update((p) => {
                                          p[inst]![service]![entity] = toggled(p[inst]![service]![entity]!, op, on);
                                        });
                                      }}
                                    />
                                    <label for={cid}>{op}</label>
                                  </span>
                                );
                              })}
                              <button
                                type="button"
                                class="danger small"
                                onClick={() => update((p) => void delete p[inst]![service]![entity])}
                                aria-label={`Remove entity set ${entity} of ${service} on ${inst}`}
                              >
                                Remove
                              </button>
                            </div>
                          </fieldset>
                        );
                      })}
                      <div class="perm-add">
                        <label for={id("add-set", inst, service)}>Add entity set to {service} on {inst}</label>
                        <input
                          id={id("add-set", inst, service)}
                          list={setListId}
                          value={newEntity[ck] ?? ""}
                          onInput={(e) => setNewEntity((s) => ({ ...s, [ck]: e.currentTarget.value }))}
                          onKeyDown={onEnter(() => addEntity(inst, service))}
                          placeholder="an entity set, or *"
                        />
                        <datalist id={setListId}>
                          <option value="*" />
                          {catalog?.state === "ok" && catalog.sets.filter((s) => sets[s] === undefined).map((s) => <option key={s} value={s} />)}
                        </datalist>
                        <button type="button" class="secondary" onClick={() => addEntity(inst, service)}>
                          Add entity set
                        </button>
                      </div>
                      {(addError[`set\u0000${ck}`] ?? "") !== "" && (
                        <p class="error" role="alert">
                          {addError[`set\u0000${ck}`]}
                        </p>
                      )}
                      <fieldset class="perm-operations">
                        <legend>
                          Operations<span class="visually-hidden"> of {service} on {inst}</span>
                        </legend>
                        <p class="hint">
                          Functions and actions are called only with <code>invoke</code> on their own entry; <code>*</code> never includes them. A call also
                          needs get or list of the entity set it is called on and of the sets its result lies in. erplink cannot see what an action changes
                          beyond its result: granting invoke trusts it with whatever it does.
                        </p>
                        {catalog?.state === "ok" && catalog.operations.length === 0 && <p class="hint">No functions or actions in $metadata.</p>}
                        {operationRows.map(({ name, info }) => {
                          const ops = sets[name] ?? [];
                          const kept = ops.filter((o) => o !== INVOKE);
                          const cid = id("invoke", inst, service, name);
                          const needs = info === undefined ? [] : [...new Set([...(info.binding_entity_sets ?? []), ...(info.result_entity_sets ?? [])])];
                          return (
                            <fieldset class="perm-entity perm-op" key={name}>
                              <legend>
                                Operation {name}
                                <span class="visually-hidden"> in {service} of {inst}</span>
                              </legend>
                              {info !== undefined && <p class="hint">{operationSummary(info)}.</p>}
                              {info !== undefined && needs.length > 0 && <p class="hint">A call also needs get or list of {needs.join(", ")}.</p>}
                              {info?.result_unknown && <p class="warn">$metadata does not say which entity set its result lies in: erplink refuses calls of it.</p>}
                              {info === undefined && catalog?.state === "ok" && <p class="warn">Not in $metadata: {service} has no function or action named {name}.</p>}
                              {kept.length > 0 && <p class="hint">Also granted, kept as it is: {kept.join(", ")}.</p>}
                              <div class="ops">
                                <span class="op">
                                  <input
                                    type="checkbox"
                                    id={cid}
                                    checked={ops.includes(INVOKE)}
                                    onChange={(e) => {
                                      const on = e.currentTarget.checked;
                                      update((p) => {
                                        const next = toggled(p[inst]![service]![name] ?? [], INVOKE, on);
                                        // An entry must list an operation: one left with none is removed.
                                        if (next.length > 0) p[inst]![service]![name] = next;
                                        else delete p[inst]![service]![name];
                                      });
                                    }}
                                  />
                                  <label for={cid}>{INVOKE}</label>
                                </span>
                                {sets[name] !== undefined && (
                                  <button
                                    type="button"
                                    class="danger small"
                                    onClick={() => update((p) => void delete p[inst]![service]![name])}
                                    aria-label={`Remove operation ${name} of ${service} on ${inst}`}
                                  >
                                    Remove
                                  </button>
                                )}
                              </div>
                            </fieldset>
                          );
                        })}
                        <div class="perm-add">
                          <label for={id("add-op", inst, service)}>Add operation to {service} on {inst}</label>
                          <input
                            id={id("add-op", inst, service)}
                            list={id("opnames", inst, service)}
                            value={newOperation[ck] ?? ""}
                            onInput={(e) => setNewOperation((s) => ({ ...s, [ck]: e.currentTarget.value }))}
                            onKeyDown={onEnter(() => addOperation(inst, service))}
                            placeholder="a function or action name"
                          />
                          <datalist id={id("opnames", inst, service)}>
                            {catalog?.state === "ok" && catalog.operations.filter((o) => !(sets[o.name] ?? []).includes(INVOKE)).map((o) => <option key={o.name} value={o.name} />)}
                          </datalist>
                          <button type="button" class="secondary" onClick={() => addOperation(inst, service)}>
                            Add operation
                          </button>
                        </div>
                        {(addError[`op\u0000${ck}`] ?? "") !== "" && (
                          <p class="error" role="alert">
                            {addError[`op\u0000${ck}`]}
                          </p>
                        )}
                      </fieldset>
                    </fieldset>
                  );
                })}
                <div class="perm-add">
                  <label for={id("add-service", inst)}>Add service to {inst}</label>
                  <input
                    id={id("add-service", inst)}
                    list={serviceListId}
                    value={newService[inst] ?? ""}
                    onInput={(e) => setNewService((s) => ({ ...s, [inst]: e.currentTarget.value }))}
                    onKeyDown={onEnter(() => addService(inst))}
                    placeholder="a service name, or *"
                  />
                  <datalist id={serviceListId}>
                    <option value="*" />
                    {Object.keys(found?.services ?? {})
                      .filter((s) => services[s] === undefined)
                      .map((s) => (
                        <option key={s} value={s} />
                      ))}
                  </datalist>
                  <button type="button" class="secondary" onClick={() => addService(inst)}>
                    Add service
                  </button>
                </div>
              </fieldset>
            );
          })}
          <div class="perm-add">
            <label for={`${idPrefix}-add-instance`}>Add instance</label>
            <input
              id={`${idPrefix}-add-instance`}
              list={instanceListId}
              value={newInstance}
              onInput={(e) => setNewInstance(e.currentTarget.value)}
              onKeyDown={onEnter(addInstance)}
              placeholder="an instance name"
            />
            <datalist id={instanceListId}>
              {(instances ?? [])
                .filter((i) => value[i.name] === undefined)
                .map((i) => (
                  <option key={i.id} value={i.name} />
                ))}
            </datalist>
            <button type="button" class="secondary" onClick={addInstance}>
              Add instance
            </button>
          </div>
        </div>
        <div class="perm-json">
          <label for={`${idPrefix}-json`}>Permissions as JSON</label>
          <textarea
            id={`${idPrefix}-json`}
            rows={14}
            spellcheck={false}
            value={shownJson}
            onInput={(e) => onJsonInput(e.currentTarget.value)}
            aria-invalid={jsonError !== ""}
            aria-describedby={`${idPrefix}-json-status`}
          />
          <p id={`${idPrefix}-json-status`} class={jsonError === "" ? "hint" : "error"}>
            {jsonError === "" ? "In sync with the tree." : `${jsonError} (the tree keeps the last valid permissions; fix the JSON to save)`}
          </p>
        </div>
      </div>
    </div>
  );
}
