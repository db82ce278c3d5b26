/**
 * A service's root on the back end, and every URL erplink builds below it:
 * the forwarded request's (from the canonical target, `../odata/target.ts`),
 * `$metadata` and the CSRF fetch. The instance's own query options (its SAP
 * client) are appended to each of them here, once.
 */
import type { DataInstance } from "./ports.js";

/** One service of one instance, as erplink reaches it upstream. */
export class ServiceRoot {
  /** The root URL, normalized by the WHATWG URL parser, without a trailing `/`. */
  readonly url: string;
  /** `https://host[:port]`. */
  readonly origin: string;
  /** The root's path, without a trailing `/` (`/sap/opu/odata/sap/API_BP`). */
  readonly path: string;
  /** The instance's query options (`sap-client=100`), or `""`. */
  readonly instanceQuery: string;
  /** Identifies the root and the instance's options, for caches. */
  readonly key: string;
  /** Whether the root lies below the instance's base URL (a service name or path with dot segments would not). */
  readonly withinBase: boolean;

  constructor(
    instance: Pick<DataInstance, "baseUrl" | "servicePath" | "sapClient">,
    /** The service's name, as requests name it. */
    readonly service: string,
  ) {
    // The admin API validated both parts; the URL parser normalizes them once
    // here, so that every URL built below compares exactly with its re-parse.
    const parsed = new URL(`${instance.baseUrl}/${instance.servicePath(service)}`);
    this.origin = parsed.origin;
    this.path = parsed.pathname.replace(/\/+$/, "");
    this.url = `${this.origin}${this.path}`;
    this.instanceQuery = instance.sapClient ? `sap-client=${instance.sapClient}` : "";
    this.key = `${this.url}|${this.instanceQuery}`;
    const base = new URL(`${instance.baseUrl}/`);
    this.withinBase = parsed.origin === base.origin && `${this.path}/`.startsWith(base.pathname) && this.path.length >= base.pathname.length;
  }

  /**
   * The request target (path and query) for `forward`, a target relative to
   * the root as `../odata/target.ts` writes it (`""` is the service root,
   * written `<root>/`), with the instance's options last.
   */
  pathOf(forward: string): string {
    if (this.instanceQuery === "") return `${this.path}/${forward}`;
    return `${this.path}/${forward}${forward.includes("?") ? "&" : "?"}${this.instanceQuery}`;
  }

  /** The absolute URL for `forward` (see {@link pathOf}). */
  urlOf(forward: string): string {
    return `${this.origin}${this.pathOf(forward)}`;
  }
}
