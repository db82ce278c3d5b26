/**
 * The service layer, assembled: dependencies, routes, the admin gate and
 * the interceptors of the public server and of the gateway's in-process
 * transport. `src/app.ts` and the tests build it the same way.
 */
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import type { Store } from "../store/index.js";
import { createAdminGate, createAdminInterceptor, createAuthenticator, type AdminGate } from "./auth.js";
import { createServiceDeps, type ServiceDeps, type ServiceSettings } from "./context.js";
import { createErrorLogInterceptor, type ErrorLog } from "./errors.js";
import type { Limits } from "./rate-limiter.js";
import { PUBLIC_SERVICES, createRoutes } from "./routes.js";

/** Options of {@link createServiceLayer}. */
export interface ServiceLayerOptions extends Omit<ServiceSettings, "onBackgroundError"> {
  readonly masterKey: string;
  /** Budget of each admin token. */
  readonly adminLimits: Limits;
  /** Where masked errors and failed background writes are reported. */
  readonly log: ErrorLog;
}

/** The assembled service layer. */
export interface ServiceLayer {
  readonly deps: ServiceDeps;
  readonly routes: (router: ConnectRouter) => void;
  readonly gate: AdminGate;
  /** For the public server: admin calls are authenticated and counted. */
  readonly publicInterceptors: readonly Interceptor[];
  /**
   * For the gateway's in-process transport: admin calls are authenticated
   * only, since the gateway counted them before reading the body.
   */
  readonly inProcessInterceptors: readonly Interceptor[];
}

/** Assembles the service layer over a store. */
export function createServiceLayer(store: Store, options: ServiceLayerOptions): ServiceLayer {
  const deps = createServiceDeps(store, {
    ...options,
    onBackgroundError: (err) => options.log.error({ err }, "background write failed"),
  });
  const gate = createAdminGate({
    authenticator: createAuthenticator({ masterKey: options.masterKey, keys: deps.keys, usage: deps.usage, clock: deps.clock }),
    limiter: deps.limiter,
    limits: options.adminLimits,
    clock: deps.clock,
  });
  const errorLog = createErrorLogInterceptor(options.log);
  return {
    deps,
    routes: createRoutes(deps),
    gate,
    publicInterceptors: [errorLog, createAdminInterceptor(gate, { count: true, publicServices: PUBLIC_SERVICES })],
    inProcessInterceptors: [errorLog, createAdminInterceptor(gate, { count: false, publicServices: PUBLIC_SERVICES })],
  };
}
