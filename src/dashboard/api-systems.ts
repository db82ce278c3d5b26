/**
 * The admin calls of the Systems screen beyond the list and delete in
 * api.ts: one system, create with labels, and update (the fields changed,
 * against the etag the form was opened on).
 */
import { call, type System } from "./api.js";

/** The fields of a system a form sends. */
export interface SystemInput {
  readonly name?: string;
  readonly description?: string;
  readonly labels?: Readonly<Record<string, string>>;
}

const enc = encodeURIComponent;

export const systemsApi = {
  get: (id: string) => call<System>("GET", `/admin/systems/${enc(id)}`),
  create: (input: SystemInput) => call<System>("POST", "/admin/systems", { body: input }),
  /** Changes only the fields in `input` (the update mask), and only if the system is still at `etag`. */
  update: (id: string, input: SystemInput, etag?: string) => call<System>("PATCH", `/admin/systems/${enc(id)}`, { body: input, ifMatch: etag }),
};
