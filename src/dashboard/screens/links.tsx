/**
 * Ids as people read them: a key, an instance or a system named beside its
 * id (`invoice app (key_…)`), the whole a link to where it leads (a key to
 * its page, an instance to the keys that name it, a system to its
 * instances). An id whose resource is gone links to its audit trail. Links
 * move within the dashboard without a reload; every screen re-reads the
 * address (Back and Forward work the same way).
 */
import type { ComponentChildren } from "preact";
import { instanceKeysHref, instancesByName, keyHref, keysById, nameMissing, systemsById } from "../names.js";

/** Goes to a dashboard address without a reload: the shell and the screen read it as after Back or Forward. */
export function go(href: string): void {
  history.pushState(null, "", href);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** A link within the dashboard (a plain link for a new tab or window). */
export function Link(props: { readonly href: string; readonly class?: string; readonly children: ComponentChildren; readonly "aria-label"?: string }) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-label={props["aria-label"]}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.altKey || e.button !== 0) return;
        e.preventDefault();
        go(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

const auditHref = (id: string) => `/dashboard/audit?resource_id=${encodeURIComponent(id)}`;

/** `name (id)`, or the id alone when there is no name. */
function named(name: string | undefined, id: string): string {
  return name === undefined || name === "" ? id : `${name} (${id})`;
}

/**
 * An API key by id: `invoice app (key_…)`, with `revoked` when it is,
 * linking to its page; `master` as the master key; "" as `none`.
 */
export function KeyRef({ id, none = "(none)" }: { readonly id: string | undefined; readonly none?: string }) {
  if (id === undefined || id === "") return <span>{none}</span>;
  if (id === "master") return <span>master key</span>;
  if (!id.startsWith("key_")) return <span>{id}</span>;
  const key = keysById.value.get(id);
  if (key === undefined) {
    nameMissing("keys", id);
    return <Link href={auditHref(id)}>{id}</Link>;
  }
  return (
    <Link href={keyHref(id)}>
      {named(key.name, id)}
      {key.revoked_at !== undefined && <span class="revoked-tag"> revoked</span>}
    </Link>
  );
}

/** An instance by name (as the log and permissions name it): `s4-prod (ins_…)`, linking to the keys that name it. */
export function InstanceRef({ name, none = "" }: { readonly name: string | undefined; readonly none?: string }) {
  if (name === undefined || name === "") return <span>{none}</span>;
  const instance = instancesByName.value.get(name);
  if (instance === undefined) nameMissing("instances", name);
  return <Link href={instanceKeysHref(name)}>{instance === undefined ? name : named(name, instance.id)}</Link>;
}

/** An instance by id (as the audit trail names it). */
export function InstanceIdRef({ id }: { readonly id: string }) {
  for (const instance of instancesByName.value.values()) if (instance.id === id) return <InstanceRef name={instance.name} />;
  nameMissing("instances", id);
  return <Link href={auditHref(id)}>{id}</Link>;
}

/** A system by id: `ERP (sys_…)`, linking to its instances. */
export function SystemRef({ id }: { readonly id: string }) {
  const system = systemsById.value.get(id);
  if (system === undefined) nameMissing("systems", id);
  if (system === undefined) return <Link href={auditHref(id)}>{id}</Link>;
  return <Link href={`/dashboard/systems?system=${encodeURIComponent(id)}`}>{named(system.name, id)}</Link>;
}
