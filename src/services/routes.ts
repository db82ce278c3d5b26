/**
 * The Connect routes of every service: one function shared by the public
 * server (gRPC, gRPC-Web, Connect), the gateway's in-process transport and
 * the tests.
 */
import type { ConnectRouter } from "@connectrpc/connect";
import { ApiKeyService } from "../gen/erplink/admin/v1/api_key_pb.js";
import { AuditService } from "../gen/erplink/admin/v1/audit_pb.js";
import { InstanceService } from "../gen/erplink/admin/v1/instance_pb.js";
import { LogService } from "../gen/erplink/admin/v1/request_log_pb.js";
import { SessionService } from "../gen/erplink/admin/v1/session_pb.js";
import { SystemService } from "../gen/erplink/admin/v1/system_pb.js";
import { UsageService } from "../gen/erplink/admin/v1/usage_pb.js";
import { AuthorizationService } from "../gen/erplink/authz/v1/authorization_pb.js";
import { Authorization as EnvoyAuthorization } from "../gen/envoy/service/auth/v3/external_auth_pb.js";
import { ApiKeyServiceImpl } from "./api-key-service.js";
import { AuditServiceImpl } from "./audit-service.js";
import { AuthorizationServiceImpl } from "./authorization-service.js";
import type { ServiceDeps } from "./context.js";
import { InstanceServiceImpl } from "./instance-service.js";
import { LogServiceImpl } from "./log-service.js";
import { SessionServiceImpl } from "./session-service.js";
import { SystemServiceImpl } from "./system-service.js";
import { UsageServiceImpl } from "./usage-service.js";

/**
 * Services whose callers present no admin credential: Authorize carries the
 * API key it checks in its request, and so does Envoy's ext_authz Check
 * (served by the gateway over the data path).
 */
export const PUBLIC_SERVICES: ReadonlySet<string> = new Set([AuthorizationService.typeName, EnvoyAuthorization.typeName]);

/** Registers every service on a router. */
export function createRoutes(deps: ServiceDeps): (router: ConnectRouter) => void {
  const systems = new SystemServiceImpl(deps);
  const instances = new InstanceServiceImpl(deps);
  const apiKeys = new ApiKeyServiceImpl(deps);
  const authorization = new AuthorizationServiceImpl(deps);
  const logs = new LogServiceImpl(deps);
  const audit = new AuditServiceImpl(deps);
  const sessions = new SessionServiceImpl(deps);
  const usage = new UsageServiceImpl(deps);
  return (router) => {
    router.service(SystemService, systems);
    router.service(InstanceService, instances);
    router.service(ApiKeyService, apiKeys);
    router.service(AuthorizationService, authorization);
    router.service(LogService, logs);
    router.service(AuditService, audit);
    router.service(SessionService, sessions);
    router.service(UsageService, usage);
  };
}
