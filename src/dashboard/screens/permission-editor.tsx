/**
 * The permission editor of a data key: a tree instance → service or `*` →
 * entity set or `*` → the five operations as toggles. Services are offered
 * from the instance's configured services and entity sets from the service's
 * catalog (its `$metadata`); free text is accepted and flagged when the
 * catalog does not have it. `*` and unknown instance names are warned about.
 * A raw JSON view stays in sync both ways (an invalid edit is shown, not applied).
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../api.js";
import { keysApi, OPERATIONS, type Instance, type Permissions } from "../api-keys.js";
import { withRequestId } from "./sign-in.js";

/** What the catalog of one (instance, service) said. */
type CatalogState = { readonly state: "loading" } | { readonly state: "ok"; readonly sets: readonly string[] } | { readonly state: "error"; readonly message: string };

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

/** Reads the JSON view: the permissions, or why not. */
export function parsePermissions(text: string): Permissions | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `Not valid JSON: ${(err as Error).message}`;
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(value)) return "The permissions must be an object: instance → service → entity set → operations.";
  for (const [i, services] of Object.entries(value)) {
    if (!isObject(services)) return `${i}: must be an object of services`;
    for (const [s, sets] of Object.entries(services)) {
      if (!isObject(sets)) return `${i}.${s}: must be an object of entity sets`;
      for (const [e, ops] of Object.entries(sets)) {
        if (!Array.isArray(ops)) return `${i}.${s}.${e}: must be a list of operations`;
        for (const op of ops) {
          if (!(OPERATIONS as readonly unknown[]).includes(op)) return `${i}.${s}.${e}: unknown operation ${JSON.stringify(op)} (use ${OPERATIONS.join(", ")})`;
        }
      }
    }
  }
  return value as Permissions;
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

  // Fetch the catalog of every named (instance, service) pair once.
  useEffect(() => {
    for (const [inst, services] of Object.entries(value)) {
      const found = instanceByName(inst);
      if (found === undefined) continue;
      for (const service of Object.keys(services)) {
        if (service === "*") continue;
        const key = `${inst}\u0000${service}`;
        if (catalogs[key] !== undefined) continue;
        setCatalogs((c) => ({ ...c, [key]: { state: "loading" } }));
        keysApi.catalog(found.id, service).then(
          ({ data }) => setCatalogs((c) => ({ ...c, [key]: { state: "ok", sets: (data.entity_sets ?? []).map((s) => s.name) } })),
          (err: unknown) =>
            setCatalogs((c) => ({ ...c, [key]: { state: "error", message: err instanceof ApiError ? withRequestId(err) : "The catalog could not be read." } })),
        );
      }
    }
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
    update((p) => {
      p[inst]![service]![name] ??= ["list", "get"];
    });
    setNewEntity((s) => ({ ...s, [k]: "" }));
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
        A data key reaches only what is listed here: instance → service (or <code>*</code>) → entity set (or <code>*</code>) → operations.
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
                      <button type="button" class="danger small" onClick={() => update((p) => void delete p[inst]![service])} aria-label={`Remove service ${service} of ${inst}`}>
                        Remove
                      </button>
                      {Object.keys(sets).map((entity) => {
                        const ops = sets[entity]!;
                        const unknown = catalog?.state === "ok" && entity !== "*" && !catalog.sets.includes(entity);
                        return (
                          <fieldset class="perm-entity" key={entity}>
                            <legend>
                              {entity === "*" ? "Entity set * (every entity set)" : `Entity set ${entity}`}
                              <span class="visually-hidden"> in {service} of {inst}</span>
                            </legend>
                            {entity === "*" && <p class="warn">* grants every entity set of this service, including ones added later.</p>}
                            {unknown && <p class="warn">Not in $metadata: {service} has no entity set named {entity}.</p>}
                            <div class="ops">
                              {OPERATIONS.map((op) => {
                                const cid = id("op", inst, service, entity, op);
                                return (
                                  <span class="op" key={op}>
                                    <input
                                      type="checkbox"
                                      id={cid}
                                      checked={ops.includes(op)}
                                      onChange={(e) =>
                                        update((p) => {
                                          const list = p[inst]![service]![entity]!.filter((o) => o !== op);
                                          if (e.currentTarget.checked) list.push(op);
                                          p[inst]![service]![entity] = OPERATIONS.filter((o) => list.includes(o));
                                        })
                                      }
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
            {jsonError === "" ? "In sync with the tree." : `${jsonError} (the tree keeps the last valid permissions)`}
          </p>
        </div>
      </div>
    </div>
  );
}
