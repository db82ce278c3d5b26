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
 *
 * It stays fast at 10,000 entity sets (the most a key holds):
 * - a change replaces only the path it changes (permission-draft.ts), and
 *   instances, services and rows are components that render again only when
 *   their own part changed;
 * - catalogs are Sets and Maps, looked up per row, never scanned;
 * - the entity sets of a service are a virtualized list (or a virtualized
 *   matrix), narrowed by a filter; instances and services collapse, and
 *   start collapsed above {@link LARGE} entries;
 * - the JSON text is made only while the JSON view is open (closed by default
 *   above {@link LARGE} entries), and for a large tree a moment after the
 *   last change rather than on each.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ENTITY_NAME_PATTERN } from "../../schema/permission-names.js";
import { ApiError } from "../api.js";
import { keysApi, type CatalogOperation, type Instance } from "../api-keys.js";
import {
  INVOKE,
  SET_OPERATIONS,
  WILDCARD,
  entryCount,
  formatPermissions,
  isOperationEntry,
  parsePermissions,
  toggled,
  withEntry,
  withInstance,
  withService,
  type Permissions,
} from "../permission-draft.js";
import { memo } from "./memo.js";
import { PermissionMatrix } from "./permission-matrix.js";
import { withRequestId } from "./sign-in.js";
import { VIRTUAL_ABOVE, useVirtualRows } from "./use-virtual.js";
import "./permission-editor.css";

/** Above this many entries an instance or a service starts collapsed, and the JSON view starts closed. */
export const LARGE = 200;
/** Up to this many entries the open JSON view is rewritten on every change; above, once changes pause. */
const LIVE_JSON_MAX = 2000;
/** How long changes must pause before a large tree's JSON text is made again. */
const JSON_DELAY_MS = 250;

/** What the catalog of one (instance, service) said. */
export type CatalogState =
  | { readonly state: "loading" }
  | {
      readonly state: "ok";
      /** The entity sets, in the catalog's order. */
      readonly sets: readonly string[];
      readonly setNames: ReadonlySet<string>;
      /** The functions and actions, in the catalog's order. */
      readonly operations: readonly CatalogOperation[];
      readonly operationNames: ReadonlyMap<string, CatalogOperation>;
    }
  | { readonly state: "error"; readonly message: string };

/** One (instance, service) whose catalog the editor needs. */
export interface CatalogPair {
  readonly instanceId: string;
  readonly instance: string;
  readonly service: string;
}

/** The key of an (instance, service) pair in the editor's maps. */
export const catalogKey = (instance: string, service: string) => `${instance}\u0000${service}`;

/**
 * Reads the catalogs of `pairs` (each service's entity sets, functions and
 * actions from its `$metadata`): one state per pair, by {@link catalogKey};
 * a catalog that cannot be read is an `error` state with the reason.
 */
export async function loadCatalogs(pairs: readonly CatalogPair[]): Promise<Map<string, CatalogState>> {
  let states: CatalogState[];
  try {
    // One admin call for all of them (per hundred): each pair is answered with its catalog or its own error.
    const results = await keysApi.catalogs(pairs.map(({ instanceId, service }) => ({ instance_id: instanceId, service })));
    states = pairs.map((_, i): CatalogState => {
      const catalog = results[i]?.catalog;
      if (catalog === undefined) return { state: "error", message: results[i]?.error?.message ?? "The catalog could not be read." };
      const sets = (catalog.entity_sets ?? []).map((s) => s.name);
      const operations = catalog.operations ?? [];
      return { state: "ok", sets, setNames: new Set(sets), operations, operationNames: new Map(operations.map((o) => [o.name, o])) };
    });
  } catch (err) {
    const message = err instanceof ApiError ? withRequestId(err) : "The catalog could not be read.";
    states = pairs.map((): CatalogState => ({ state: "error", message }));
  }
  return new Map(pairs.map((p, i) => [catalogKey(p.instance, p.service), states[i]!]));
}

const ENTITY_NAME = new RegExp(ENTITY_NAME_PATTERN);

/** What an operation is, in words: its kind, where it is called and what it returns. */
function operationSummary(o: CatalogOperation): string {
  const where = o.bound ? `bound to ${(o.binding_entity_sets ?? []).join(", ") || "no entity set of this service"}` : "import";
  const method = o.http_method ? `, called with ${o.http_method}` : "";
  const results = o.result_entity_sets ?? [];
  const returns = o.result_unknown ? "returns entities $metadata does not place" : results.length > 0 ? `returns entities of ${results.join(", ")}` : "returns no entity";
  return `${o.kind} ${where}${method}; ${returns}`;
}

/** An element id under `prefix` from names (anything but `[A-Za-z0-9_-]` escaped). */
const makeId = (prefix: string, ...parts: string[]) => `${prefix}-${parts.map((p) => p.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0)}`)).join("-")}`;

/** `next` when its items differ from `prev`'s, else `prev` (so that what depends on it by identity stays put). */
function useStableList(next: readonly string[]): readonly string[] {
  const prev = useRef(next);
  const p = prev.current;
  if (p !== next && (p.length !== next.length || p.some((v, i) => v !== next[i]))) prev.current = next;
  return prev.current;
}

const onEnter = (action: () => void) => (e: KeyboardEvent) => {
  if (e.key === "Enter") {
    e.preventDefault();
    action();
  }
};

type Update = (change: (p: Permissions) => Permissions) => void;
type View = "tree" | "matrix";

/** A datalist's options; rendered again only when the list of names changes. */
const Options = memo(function Options({ id, names, wildcard }: { id: string; names: readonly string[]; wildcard: boolean }) {
  return (
    <datalist id={id}>
      {wildcard && <option value="*" />}
      {names.map((s) => (
        <option key={s} value={s} />
      ))}
    </datalist>
  );
});

/** The disclosure button of an instance or a service. */
function Disclosure({ expanded, controls, what, onToggle }: { expanded: boolean; controls: string; what: string; onToggle: () => void }) {
  return (
    <button type="button" class="secondary small" aria-expanded={expanded} aria-controls={controls} aria-label={`${expanded ? "Collapse" : "Expand"} ${what}`} onClick={onToggle}>
      {expanded ? "Collapse" : "Expand"}
    </button>
  );
}

const EntityRow = memo(function EntityRow(props: {
  inst: string;
  service: string;
  entity: string;
  ops: readonly string[];
  unknown: boolean;
  update: Update;
  idPrefix: string;
}) {
  const { inst, service, entity, ops, unknown, update, idPrefix } = props;
  const kept = ops.filter((o) => !(SET_OPERATIONS as readonly string[]).includes(o));
  return (
    <fieldset class="perm-entity">
      <legend>
        {entity === "*" ? "Entity set * (every entity set)" : `Entity set ${entity}`}
        <span class="visually-hidden">
          {" "}
          in {service} of {inst}
        </span>
      </legend>
      {entity === "*" && <p class="warn">* grants every entity set of this service, including ones added later, but never a function or action.</p>}
      {unknown && (
        <p class="warn">
          Not in $metadata: {service} has no entity set named {entity}.
        </p>
      )}
      {kept.length > 0 && <p class="hint">Also granted, kept as it is: {kept.join(", ")}.</p>}
      <div class="ops">
        {SET_OPERATIONS.map((op) => {
          const cid = makeId(idPrefix, "op", inst, service, entity, op);
          return (
            <span class="op" key={op}>
              <input
                type="checkbox"
                id={cid}
                checked={ops.includes(op)}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  update((p) => withEntry(p, inst, service, entity, toggled(p[inst]?.[service]?.[entity] ?? [], op, on)));
                }}
              />
              <label for={cid}>{op}</label>
            </span>
          );
        })}
        <button
          type="button"
          class="danger small"
          onClick={() => update((p) => withEntry(p, inst, service, entity, undefined))}
          aria-label={`Remove entity set ${entity} of ${service} on ${inst}`}
        >
          Remove
        </button>
      </div>
    </fieldset>
  );
});

/** The entity sets of one service as rows, virtualized. */
function EntityList(props: { inst: string; service: string; names: readonly string[]; sets: Readonly<Record<string, string[]>>; catalog: CatalogState | undefined; update: Update; idPrefix: string }) {
  const { inst, service, names, sets, catalog, update, idPrefix } = props;
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtual = names.length > VIRTUAL_ABOVE;
  const rows = useVirtualRows({ count: virtual ? names.length : 0, scrollElement: () => scrollRef.current, estimate: 72, key: (i) => names[i]!, initialHeight: 540 });
  const items = virtual ? rows.items : names.map((_, index) => ({ index }));
  return (
    <div class={virtual ? "perm-rows virtual" : "perm-rows"} ref={scrollRef}>
      <div class="perm-rows-inner" style={{ paddingTop: `${rows.before}px`, paddingBottom: `${rows.after}px` }}>
        {items.map((item) => {
          const entity = names[item.index]!;
          return (
            <div class="perm-row" key={entity} data-index={item.index} ref={virtual ? rows.measure : undefined}>
              <EntityRow
                inst={inst}
                service={service}
                entity={entity}
                ops={sets[entity] ?? []}
                unknown={catalog?.state === "ok" && entity !== "*" && !catalog.setNames.has(entity)}
                update={update}
                idPrefix={idPrefix}
              />
            </div>
          );
        })}
      </div>
    </div>
  );
}

interface ServiceProps {
  inst: string;
  service: string;
  sets: Readonly<Record<string, string[]>>;
  catalog: CatalogState | undefined;
  /** The filter, lower-cased ("" for none). */
  filter: string;
  /** The admin's choice, if any (else by size and filter). */
  expandedChoice: boolean | undefined;
  view: View;
  onExpanded: (key: string, expanded: boolean) => void;
  onView: (key: string, view: View) => void;
  update: Update;
  idPrefix: string;
}

const ServiceBlock = memo(function ServiceBlock(props: ServiceProps) {
  const { inst, service, sets, catalog, filter, view, update, idPrefix } = props;
  const ck = catalogKey(inst, service);
  const [newEntity, setNewEntity] = useState("");
  const [newOperation, setNewOperation] = useState("");
  const [addError, setAddError] = useState({ set: "", op: "" });
  const ok = catalog?.state === "ok" ? catalog : undefined;

  const { entityNames, operationRows, entries } = useMemo(() => {
    const names = Object.keys(sets);
    const lookups = ok === undefined ? undefined : { sets: ok.setNames, operations: ok.operationNames };
    const entities: string[] = [];
    const granted: string[] = [];
    for (const name of names) (isOperationEntry(name, sets[name]!, lookups) ? granted : entities).push(name);
    // The catalog's operations in its order, then the granted ones it does not have.
    const rows: { name: string; info: CatalogOperation | undefined }[] = [
      ...(ok?.operations ?? []).map((info) => ({ name: info.name, info })),
      ...granted.filter((name) => ok?.operationNames.has(name) !== true).map((name) => ({ name, info: undefined })),
    ];
    return { entityNames: entities, operationRows: rows, entries: names.length };
  }, [sets, ok]);
  const shownNames = useMemo(() => (filter === "" ? entityNames : entityNames.filter((n) => n.toLowerCase().includes(filter))), [entityNames, filter]);
  const offeredSets = useStableList(ok === undefined ? [] : ok.sets.filter((s) => sets[s] === undefined));
  const offeredOps = useStableList(ok === undefined ? [] : ok.operations.filter((o) => !(sets[o.name] ?? []).includes(INVOKE)).map((o) => o.name));
  const expanded = props.expandedChoice ?? (filter !== "" || entries <= LARGE);
  const bodyId = makeId(idPrefix, "service-body", inst, service);
  const setListId = makeId(idPrefix, "sets", inst, service);

  const addEntity = () => {
    const name = newEntity.trim();
    if (name === "") return;
    const operation = ok?.operationNames.get(name);
    if (operation !== undefined) {
      setAddError((e) => ({ ...e, set: `${name} is ${operation.kind === "action" ? "an action" : "a function"} in $metadata, not an entity set: grant it under Operations (invoke).` }));
      return;
    }
    setAddError((e) => ({ ...e, set: "" }));
    update((p) => (p[inst]?.[service]?.[name] !== undefined ? p : withEntry(p, inst, service, name, ["list", "get"])));
    setNewEntity("");
  };
  const addOperation = () => {
    const name = newOperation.trim();
    if (name === "") return;
    const problem =
      name === WILDCARD
        ? "'*' never includes functions or actions: name the operation."
        : !ENTITY_NAME.test(name)
          ? `${name} is no operation's name: an import's name (ReleaseOrder) or a bound operation's qualified name (API_SALES.Approve).`
          : "";
    setAddError((e) => ({ ...e, op: problem }));
    if (problem !== "") return;
    update((p) => withEntry(p, inst, service, name, toggled(p[inst]?.[service]?.[name] ?? [], INVOKE, true)));
    setNewOperation("");
  };

  return (
    <fieldset class="perm-service">
      <legend>Service {service === "*" ? "* (every service)" : service}</legend>
      {service === "*" && <p class="warn">* grants these entity sets in every service of {inst}, including services added later.</p>}
      {catalog?.state === "loading" && <p aria-busy="true">Reading the catalog from $metadata…</p>}
      {catalog?.state === "error" && <p class="warn">Catalog not available: {catalog.message}</p>}
      {ok !== undefined && <p class="hint">{ok.sets.length} entity sets in $metadata</p>}
      {ok !== undefined && ok.operations.length > 0 && <p class="hint">{ok.operations.length} functions and actions in $metadata</p>}
      <div class="perm-bar">
        <Disclosure expanded={expanded} controls={bodyId} what={`service ${service} of ${inst}`} onToggle={() => props.onExpanded(ck, !expanded)} />
        {expanded && (
          <button
            type="button"
            class="secondary small"
            aria-pressed={view === "matrix"}
            aria-label={`Matrix view of ${service} on ${inst}`}
            onClick={() => props.onView(ck, view === "matrix" ? "tree" : "matrix")}
          >
            Matrix view
          </button>
        )}
        <button type="button" class="danger small" onClick={() => update((p) => withService(p, inst, service, undefined))} aria-label={`Remove service ${service} of ${inst}`}>
          Remove
        </button>
      </div>
      {!expanded && (
        <p class="hint">
          Collapsed: {entityNames.length} {entityNames.length === 1 ? "entity set" : "entity sets"} and {entries - entityNames.length} granted{" "}
          {entries - entityNames.length === 1 ? "operation" : "operations"}.
        </p>
      )}
      {expanded && (
        <div id={bodyId}>
          {filter !== "" && (
            <p class="hint">
              {shownNames.length} of {entityNames.length} entity sets match the filter.
            </p>
          )}
          {view === "matrix" ? (
            <PermissionMatrix
              inst={inst}
              service={service}
              names={shownNames}
              sets={sets}
              filtered={filter !== ""}
              update={update}
              idPrefix={makeId(idPrefix, "matrix", inst, service)}
            />
          ) : (
            <EntityList inst={inst} service={service} names={shownNames} sets={sets} catalog={catalog} update={update} idPrefix={idPrefix} />
          )}
          <div class="perm-add">
            <label for={makeId(idPrefix, "add-set", inst, service)}>
              Add entity set to {service} on {inst}
            </label>
            <input
              id={makeId(idPrefix, "add-set", inst, service)}
              list={setListId}
              value={newEntity}
              onInput={(e) => setNewEntity(e.currentTarget.value)}
              onKeyDown={onEnter(addEntity)}
              placeholder="an entity set, or *"
            />
            <Options id={setListId} names={offeredSets} wildcard />
            <button type="button" class="secondary" onClick={addEntity}>
              Add entity set
            </button>
          </div>
          {addError.set !== "" && (
            <p class="error" role="alert">
              {addError.set}
            </p>
          )}
          <fieldset class="perm-operations">
            <legend>
              Operations
              <span class="visually-hidden">
                {" "}
                of {service} on {inst}
              </span>
            </legend>
            <p class="hint">
              Functions and actions are called only with <code>invoke</code> on their own entry; <code>*</code> never includes them. A call also needs get or
              list of the entity set it is called on and of the sets its result lies in. erplink cannot see what an action changes beyond its result: granting
              invoke trusts it with whatever it does.
            </p>
            {ok !== undefined && ok.operations.length === 0 && <p class="hint">No functions or actions in $metadata.</p>}
            {operationRows.map(({ name, info }) => {
              const ops = sets[name] ?? [];
              const kept = ops.filter((o) => o !== INVOKE);
              const cid = makeId(idPrefix, "invoke", inst, service, name);
              const needs = info === undefined ? [] : [...new Set([...(info.binding_entity_sets ?? []), ...(info.result_entity_sets ?? [])])];
              return (
                <fieldset class="perm-entity perm-op" key={name}>
                  <legend>
                    Operation {name}
                    <span class="visually-hidden">
                      {" "}
                      in {service} of {inst}
                    </span>
                  </legend>
                  {info !== undefined && <p class="hint">{operationSummary(info)}.</p>}
                  {info !== undefined && needs.length > 0 && <p class="hint">A call also needs get or list of {needs.join(", ")}.</p>}
                  {info?.result_unknown && <p class="warn">$metadata does not say which entity set its result lies in: erplink refuses calls of it.</p>}
                  {info === undefined && ok !== undefined && (
                    <p class="warn">
                      Not in $metadata: {service} has no function or action named {name}.
                    </p>
                  )}
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
                            const next = toggled(p[inst]?.[service]?.[name] ?? [], INVOKE, on);
                            // An entry must list an operation: one left with none is removed.
                            return withEntry(p, inst, service, name, next.length > 0 ? next : undefined);
                          });
                        }}
                      />
                      <label for={cid}>{INVOKE}</label>
                    </span>
                    {sets[name] !== undefined && (
                      <button
                        type="button"
                        class="danger small"
                        onClick={() => update((p) => withEntry(p, inst, service, name, undefined))}
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
              <label for={makeId(idPrefix, "add-op", inst, service)}>
                Add operation to {service} on {inst}
              </label>
              <input
                id={makeId(idPrefix, "add-op", inst, service)}
                list={makeId(idPrefix, "opnames", inst, service)}
                value={newOperation}
                onInput={(e) => setNewOperation(e.currentTarget.value)}
                onKeyDown={onEnter(addOperation)}
                placeholder="a function or action name"
              />
              <Options id={makeId(idPrefix, "opnames", inst, service)} names={offeredOps} wildcard={false} />
              <button type="button" class="secondary" onClick={addOperation}>
                Add operation
              </button>
            </div>
            {addError.op !== "" && (
              <p class="error" role="alert">
                {addError.op}
              </p>
            )}
          </fieldset>
        </div>
      )}
    </fieldset>
  );
});

interface InstanceProps {
  inst: string;
  services: Readonly<Record<string, Record<string, string[]>>>;
  /** The instance of that name, if any (undefined also while instances load). */
  found: Instance | undefined;
  instancesLoaded: boolean;
  catalogs: ReadonlyMap<string, CatalogState>;
  filter: string;
  expansion: ReadonlyMap<string, boolean>;
  views: ReadonlyMap<string, View>;
  onExpanded: (key: string, expanded: boolean) => void;
  onView: (key: string, view: View) => void;
  update: Update;
  idPrefix: string;
}

const InstanceBlock = memo(function InstanceBlock(props: InstanceProps) {
  const { inst, services, found, catalogs, filter, expansion, views, update, idPrefix } = props;
  const [newService, setNewService] = useState("");
  const serviceNames = Object.keys(services);
  const entries = useMemo(() => serviceNames.reduce((n, s) => n + Object.keys(services[s]!).length, 0), [services]);
  const key = `instance\u0000${inst}`;
  const expanded = expansion.get(key) ?? (filter !== "" || entries <= LARGE);
  const bodyId = makeId(idPrefix, "instance-body", inst);
  const serviceListId = makeId(idPrefix, "services", inst);
  const addService = () => {
    const name = newService.trim();
    if (name === "") return;
    update((p) => (p[inst]?.[name] !== undefined ? p : withService(p, inst, name, {})));
    setNewService("");
  };
  return (
    <fieldset class="perm-instance">
      <legend>Instance {inst}</legend>
      {props.instancesLoaded && found === undefined && <p class="warn">No instance is named {inst}: the key will reach it only once an instance of that name is created.</p>}
      <div class="perm-bar">
        <Disclosure expanded={expanded} controls={bodyId} what={`instance ${inst}`} onToggle={() => props.onExpanded(key, !expanded)} />
        <button type="button" class="danger small" onClick={() => update((p) => withInstance(p, inst, undefined))} aria-label={`Remove instance ${inst}`}>
          Remove
        </button>
      </div>
      {!expanded && (
        <p class="hint">
          Collapsed: {serviceNames.length} {serviceNames.length === 1 ? "service" : "services"}, {entries} {entries === 1 ? "entry" : "entries"}.
        </p>
      )}
      {expanded && (
        <div id={bodyId}>
          {serviceNames.map((service) => {
            const ck = catalogKey(inst, service);
            return (
              <ServiceBlock
                key={service}
                inst={inst}
                service={service}
                sets={services[service]!}
                catalog={catalogs.get(ck)}
                filter={filter}
                expandedChoice={expansion.get(ck)}
                view={views.get(ck) ?? "tree"}
                onExpanded={props.onExpanded}
                onView={props.onView}
                update={update}
                idPrefix={idPrefix}
              />
            );
          })}
          <div class="perm-add">
            <label for={makeId(idPrefix, "add-service", inst)}>Add service to {inst}</label>
            <input
              id={makeId(idPrefix, "add-service", inst)}
              list={serviceListId}
              value={newService}
              onInput={(e) => setNewService(e.currentTarget.value)}
              onKeyDown={onEnter(addService)}
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
            <button type="button" class="secondary" onClick={addService}>
              Add service
            </button>
          </div>
        </div>
      )}
    </fieldset>
  );
});

interface Props {
  readonly value: Permissions;
  readonly onChange: (next: Permissions) => void;
  /** An id prefix, unique on the page. */
  readonly idPrefix: string;
  /** Told why the JSON view cannot be applied ("" once it can), so that the page knows the draft is invalid. */
  readonly onJsonError?: (reason: string) => void;
}

/** Text typed into the JSON view, while it is what the view shows. */
interface TypedJson {
  readonly text: string;
  /** The permissions in force with it: what it parsed to, or (invalid) the tree's last valid ones. */
  readonly base: Permissions;
  readonly error: string;
}

export function PermissionEditor({ value, onChange, idPrefix, onJsonError }: Props) {
  const [instances, setInstances] = useState<readonly Instance[] | undefined>(undefined);
  const [instancesError, setInstancesError] = useState("");
  const [catalogs, setCatalogs] = useState<ReadonlyMap<string, CatalogState>>(new Map());
  const requested = useRef(new Set<string>());
  const [newInstance, setNewInstance] = useState("");
  const [filterText, setFilterText] = useState("");
  const [expansion, setExpansion] = useState<ReadonlyMap<string, boolean>>(new Map());
  const [views, setViews] = useState<ReadonlyMap<string, View>>(new Map());
  const size = useMemo(() => entryCount(value), [value]);
  const [jsonOpen, setJsonOpen] = useState(() => size <= LARGE);
  const [typed, setTyped] = useState<TypedJson | undefined>(undefined);
  /** The permissions whose text a large tree's JSON view shows (it follows `value` once changes pause). */
  const [jsonOf, setJsonOf] = useState(value);

  // Changes apply to the newest permissions, even to ones not yet rendered back.
  const latest = useRef({ value, onChange });
  latest.current.onChange = onChange;
  if (latest.current.value !== value) latest.current.value = value;
  const [update] = useState<Update>(() => (change: (p: Permissions) => Permissions) => {
    const { value: before, onChange: emit } = latest.current;
    const next = change(before);
    if (next === before) return;
    latest.current.value = next;
    emit(next);
  });
  const [onExpanded] = useState(() => (key: string, open: boolean) => setExpansion((m) => new Map(m).set(key, open)));
  const [onView] = useState(() => (key: string, view: View) => setViews((m) => new Map(m).set(key, view)));

  useEffect(() => {
    keysApi.instances().then(setInstances, (err: unknown) => {
      setInstancesError(err instanceof ApiError ? withRequestId(err) : "The instances could not be read.");
    });
  }, []);

  const instanceByName = useMemo(() => new Map((instances ?? []).map((i) => [i.name, i])), [instances]);

  // Read the catalog of every named (instance, service) pair once.
  useEffect(() => {
    const pairs: CatalogPair[] = [];
    for (const [inst, services] of Object.entries(value)) {
      const found = instanceByName.get(inst);
      if (found === undefined) continue;
      for (const service of Object.keys(services)) {
        const key = catalogKey(inst, service);
        if (service === WILDCARD || requested.current.has(key)) continue;
        requested.current.add(key);
        pairs.push({ instanceId: found.id, instance: inst, service });
      }
    }
    if (pairs.length === 0) return;
    setCatalogs((c) => new Map([...c, ...pairs.map((p): [string, CatalogState] => [catalogKey(p.instance, p.service), { state: "loading" }])]));
    void loadCatalogs(pairs).then((loaded) => setCatalogs((c) => new Map([...c, ...loaded])));
  }, [value, instanceByName]);

  // The JSON view: what was typed while it still applies, else the tree's text.
  const typedNow = typed !== undefined && typed.base === value ? typed : undefined;
  const jsonError = typedNow?.error ?? "";
  useEffect(() => onJsonError?.(jsonError), [jsonError]);
  const live = size <= LIVE_JSON_MAX;
  useEffect(() => {
    if (!jsonOpen || live || jsonOf === value) return;
    const timer = setTimeout(() => setJsonOf(latest.current.value), JSON_DELAY_MS);
    return () => clearTimeout(timer);
  }, [value, jsonOpen, jsonOf]);
  const textOf = live ? value : jsonOf;
  const generated = useMemo(() => (jsonOpen && typedNow === undefined ? formatPermissions(textOf) : ""), [jsonOpen, textOf, typedNow === undefined]);
  const catchingUp = jsonOpen && typedNow === undefined && textOf !== value;
  const shownJson = typedNow?.text ?? generated;

  const onJsonInput = (text: string) => {
    const parsed = parsePermissions(text);
    if (typeof parsed === "string") setTyped({ text, base: latest.current.value, error: parsed });
    else {
      setTyped({ text, base: parsed, error: "" });
      update(() => parsed);
    }
  };
  const toggleJson = () => {
    if (!jsonOpen) setJsonOf(latest.current.value);
    // Closed, an invalid text is dropped: the tree's permissions are the draft again.
    else setTyped(undefined);
    setJsonOpen(!jsonOpen);
  };

  const addInstance = () => {
    const name = newInstance.trim();
    if (name === "") return;
    update((p) => (p[name] !== undefined ? p : withInstance(p, name, {})));
    setNewInstance("");
  };

  const filter = filterText.trim().toLowerCase();
  const names = Object.keys(value);
  const instanceListId = `${idPrefix}-instances`;
  const jsonId = `${idPrefix}-json`;

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
          {names.length > 0 && (
            <div class="perm-filter">
              <label for={`${idPrefix}-filter`}>Filter entity sets</label>
              <input
                id={`${idPrefix}-filter`}
                type="search"
                value={filterText}
                onInput={(e) => setFilterText(e.currentTarget.value)}
                placeholder="part of a name"
                aria-describedby={`${idPrefix}-filter-help`}
              />
              <small id={`${idPrefix}-filter-help`}>
                {size} {size === 1 ? "entry" : "entries"}. Shows the entity sets whose name contains this (any case), and expands what holds them.
              </small>
            </div>
          )}
          {names.length === 0 && <p>No permissions yet: this key can reach nothing. Add an instance below.</p>}
          {names.map((inst) => (
            <InstanceBlock
              key={inst}
              inst={inst}
              services={value[inst]!}
              found={instanceByName.get(inst)}
              instancesLoaded={instances !== undefined}
              catalogs={catalogs}
              filter={filter}
              expansion={expansion}
              views={views}
              onExpanded={onExpanded}
              onView={onView}
              update={update}
              idPrefix={idPrefix}
            />
          ))}
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
          <div class="perm-bar">
            <button type="button" class="secondary small" aria-expanded={jsonOpen} aria-controls={`${jsonId}-view`} onClick={toggleJson}>
              {jsonOpen ? "Hide JSON" : "Show JSON"}
            </button>
          </div>
          {jsonOpen ? (
            <div id={`${jsonId}-view`}>
              <label for={jsonId}>Permissions as JSON</label>
              <textarea
                id={jsonId}
                rows={14}
                spellcheck={false}
                // Lines are not wrapped: a pasted document of 10,000 entries is laid out without measuring where each line breaks.
                wrap="off"
                value={shownJson}
                readOnly={catchingUp}
                onInput={(e) => onJsonInput(e.currentTarget.value)}
                aria-invalid={jsonError !== ""}
                aria-describedby={`${jsonId}-status`}
              />
              <p id={`${jsonId}-status`} class={jsonError === "" ? "hint" : "error"}>
                {jsonError !== ""
                  ? `${jsonError} (the tree keeps the last valid permissions; fix the JSON to save)`
                  : catchingUp
                    ? "Following the tree…"
                    : "In sync with the tree."}
              </p>
            </div>
          ) : (
            <p class="hint" id={`${jsonId}-view`}>
              The permissions as JSON, to read or to paste a whole document. It starts closed when the key holds more than {LARGE} entries, so that editing
              stays quick.
            </p>
          )}
        </div>
      </div>
    </div>
  );
}
