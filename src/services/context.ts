/**
 * What every service is built with: injected, never global.
 */
import type { Store } from "../store/index.js";
import type { IdGenerator } from "./ids.js";

/** Dependencies shared by the services. */
export interface ServiceDeps {
  readonly store: Store;
  /** The current time; tests inject a fixed or stepping clock. */
  readonly clock: () => Date;
  readonly newId: IdGenerator;
}
