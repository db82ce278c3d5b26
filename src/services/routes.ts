/**
 * The Connect routes of every service: one function shared by the public
 * server (gRPC, gRPC-Web, Connect), the gateway's in-process transport and
 * the tests.
 */
import type { ConnectRouter } from "@connectrpc/connect";
import { InstanceService } from "../gen/erplink/admin/v1/instance_pb.js";
import { SystemService } from "../gen/erplink/admin/v1/system_pb.js";
import type { ServiceDeps } from "./context.js";
import { InstanceServiceImpl } from "./instance-service.js";
import { SystemServiceImpl } from "./system-service.js";

/** Registers every service on a router. */
export function createRoutes(deps: ServiceDeps): (router: ConnectRouter) => void {
  const systems = new SystemServiceImpl(deps);
  const instances = new InstanceServiceImpl(deps);
  return (router) => {
    router.service(SystemService, systems);
    router.service(InstanceService, instances);
  };
}
