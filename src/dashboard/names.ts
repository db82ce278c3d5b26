/**
 * Names for ids: the API keys (revoked ones included), systems and
 * instances the dashboard names beside the ids it shows, loaded with one
 * list walk per resource kind when a screen opens (never one call per row:
 * the admin budget is counted per call), and kept in signals that every
 * screen reads.
 */
import { signal } from "@preact/signals";
import { listAll, type System } from "./api.js";
import type { ApiKey } from "./api-keys.js";
import type { Instance } from "./api-instances.js";

/** A key as listed with `show_revoked=true`: `revoked_at` is set once it is revoked. */
export interface ListedKey extends ApiKey {
  readonly revoked_at?: string;
}

/** What a screen needs named. */
export type NameKind = "keys" | "systems" | "instances";

/** Every key by id, revoked keys included (empty until loaded; the API keys screen sets it with {@link setKeys}). */
export const keysById = signal<ReadonlyMap<string, ListedKey>>(new Map());
/** Every system by id. */
export const systemsById = signal<ReadonlyMap<string, System>>(new Map());
/** Every instance by its name (the name the data path, the log and permissions use). */
export const instancesByName = signal<ReadonlyMap<string, Instance>>(new Map());
/** Whether the names of a kind have been loaded at least once. */
export const namesLoaded = signal<ReadonlySet<NameKind>>(new Set());
/** Why names could not be loaded, or "" (the screens still show ids). */
export const namesError = signal("");

const enc = encodeURIComponent;


/** Loads in flight, by kind: a second screen (or a second render) asking at once shares them. */
const inFlight = new Map<NameKind, Promise<void>>();
/** When each kind was last loaded (ms). */
const loadedAt = new Map<NameKind, number>();
/** Names this fresh are not read again when another screen opens (a reload or a change made here reads them anew). */
const FRESH_MS = 60_000;

function once(kind: NameKind, load: () => Promise<void>): Promise<void> {
  const running = inFlight.get(kind);
  if (running !== undefined) return running;
  const p = load()
    .then(() => {
      loadedAt.set(kind, Date.now());
      namesLoaded.value = new Set([...namesLoaded.value, kind]);
    })
    .finally(() => inFlight.delete(kind));
  inFlight.set(kind, p);
  return p;
}

const loaders: Record<NameKind, () => Promise<void>> = {
  keys: () =>
    once("keys", async () => {
      const keys = await listAll<ListedKey>("/admin/api-keys?show_revoked=true");
      keysById.value = new Map(keys.map((k) => [k.id, k]));
    }),
  systems: () =>
    once("systems", async () => {
      const systems = await listAll<System>("/admin/systems");
      systemsById.value = new Map(systems.map((s) => [s.id, s]));
    }),
  instances: () =>
    once("instances", async () => {
      const instances = await listAll<Instance>("/admin/instances");
      instancesByName.value = new Map(instances.map((i) => [i.name, i]));
    }),
};

/**
 * Loads the names of `kinds` (a screen calls it once when it opens; names
 * already loaded stay shown meanwhile), unless they were loaded within the
 * last minute; `fresh` reads them whatever their age (a count that must be
 * exact). A failure is kept in {@link namesError}: ids are shown without
 * names, nothing else fails.
 */
export async function loadNames(kinds: readonly NameKind[], options: { readonly fresh?: boolean } = {}): Promise<void> {
  const now = Date.now();
  const due = kinds.filter((k) => options.fresh === true || now - (loadedAt.get(k) ?? -Infinity) >= FRESH_MS);
  try {
    await Promise.all(due.map((k) => loaders[k]()));
    namesError.value = "";
  } catch (err) {
    namesError.value = `Names could not be loaded (ids are shown): ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** The keys whose permissions name the instance `name`, in list order (revoked keys left out). */
export function keysNaming(name: string, keys: ReadonlyMap<string, ListedKey> = keysById.value): ListedKey[] {
  return [...keys.values()].filter((k) => k.revoked_at === undefined && k.permissions !== undefined && Object.hasOwn(k.permissions, name));
}

/** The address of a key's page. */
export function keyHref(id: string): string {
  return `/dashboard/api-keys/${enc(id)}`;
}

/** The address of the request log filtered by a key (or any other log filters). */
export function logsHref(filters: Readonly<Record<string, string>>): string {
  const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== "")).toString();
  return `/dashboard/logs${q === "" ? "" : `?${q}`}`;
}

/** The address of the keys naming an instance in their permissions. */
export function instanceKeysHref(name: string): string {
  return `/dashboard/api-keys?instance=${enc(name)}`;
}

/** The address of a key's page with its Explain panel filled in with a request. */
export function explainHref(keyId: string, method: string, url: string): string {
  return `${keyHref(keyId)}?${new URLSearchParams({ explain_method: method, explain_url: url })}`;
}

/** Keeps the keys a screen listed itself (revoked ones included), so other screens need not list them again. */
export function setKeys(keys: readonly ListedKey[]): void {
  keysById.value = new Map(keys.map((k) => [k.id, k]));
  loadedAt.set("keys", Date.now());
  namesLoaded.value = new Set([...namesLoaded.value, "keys"]);
}

/** Names found missing this soon after a load wait for the next one. */
const MISSING_GAP_MS = 10_000;

/**
 * Tells that an id of `kind` was shown without its name (made since the
 * names were loaded, or gone): the names are read again, at most once per
 * ten seconds, and whatever shows them is drawn again.
 */
export function nameMissing(kind: NameKind, id: string): void {
  if (inFlight.has(kind) || pending.has(kind) || !namesLoaded.value.has(kind)) return;
  // Still missing after a load that began once it was noticed: it is gone, not new.
  const noticed = missingSince.get(id);
  if (noticed !== undefined && (loadedAt.get(kind) ?? 0) > noticed) return;
  if (noticed === undefined) missingSince.set(id, Date.now());
  const wait = Math.max(0, (loadedAt.get(kind) ?? 0) + MISSING_GAP_MS - Date.now());
  pending.add(kind);
  setTimeout(() => {
    pending.delete(kind);
    void loaders[kind]().catch(() => undefined);
  }, wait);
}

/** When each missing id was first noticed. */
const missingSince = new Map<string, number>();
/** Kinds whose reading again is scheduled. */
const pending = new Set<NameKind>();
