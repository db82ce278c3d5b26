/**
 * erplink.admin.v1.InstanceService over the instances store.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  CreateInstanceResponseSchema,
  DeleteInstanceResponseSchema,
  GetInstanceResponseSchema,
  GetServiceCatalogResponseSchema,
  InstanceSchema,
  ListInstancesResponseSchema,
  TestInstanceConnectionResponseSchema,
  UpdateInstanceResponseSchema,
  type CreateInstanceRequest,
  type DeleteInstanceRequest,
  type GetInstanceRequest,
  type GetServiceCatalogRequest,
  type Instance,
  type InstanceService,
  type ListInstancesRequest,
  type TestInstanceConnectionRequest,
  type UpdateInstanceRequest,
} from "../gen/erplink/admin/v1/instance_pb.js";
import { ConnectionTestOptionsSchema } from "../gen/erplink/admin/v1/diagnostics_pb.js";
import type { InstanceRecord, Patch } from "../store/index.js";
import { backendAuthToMessage, sealBackendAuth } from "./backend-auth.js";
import type { ServiceDeps } from "./context.js";
import { upstreamInstance } from "./data-plane.js";
import { requireDiagnostics } from "./diagnostics.js";
import { translate, validationError } from "./errors.js";
import { nextPageToken, readPaging } from "./paging.js";
import { requireId, requireResource, toPatch } from "./resource.js";
import { assertValidForCreate, assertValidForUpdate } from "./validation.js";

const names = { singular: "instance" };

/** The services map of a message, as the record keeps it. */
function servicesOf(instance: Instance): InstanceRecord["services"] {
  return Object.fromEntries(Object.entries(instance.services).map(([name, route]) => [name, { path: route.path }]));
}

/** The record's SAP client of a message's: "" (none) is kept as absent. */
function sapClientOf(instance: Instance): { sapClient?: string } {
  return instance.sapClient === "" ? {} : { sapClient: instance.sapClient };
}

/** The one mapping of a stored instance to its message. */
export function instanceToMessage(rec: InstanceRecord): Instance {
  return create(InstanceSchema, {
    id: rec.id,
    systemId: rec.systemId,
    name: rec.name,
    environment: rec.environment,
    baseUrl: rec.baseUrl,
    services: Object.fromEntries(Object.entries(rec.services).map(([name, { path }]) => [name, { path }])),
    auth: rec.auth ? backendAuthToMessage(rec.auth) : undefined,
    sapClient: rec.sapClient ?? "",
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
  });
}

/** Implements InstanceService. */
export class InstanceServiceImpl implements ServiceImpl<typeof InstanceService> {
  constructor(private readonly deps: ServiceDeps) {}

  /** Throws `not_found` unless the system exists. */
  private async requireSystem(systemId: string): Promise<void> {
    requireId("sys", systemId, "system_id");
    if ((await this.deps.store.systems.get(systemId)) === undefined) {
      throw new ConnectError("system not found", Code.NotFound);
    }
  }

  getInstance(req: GetInstanceRequest) {
    return translate(names, async () => {
      requireId("ins", req.id);
      const rec = await this.deps.store.instances.get(req.id);
      if (rec === undefined) throw new ConnectError("instance not found", Code.NotFound);
      return create(GetInstanceResponseSchema, { instance: instanceToMessage(rec) });
    });
  }

  listInstances(req: ListInstancesRequest) {
    return translate(names, async () => {
      const paging = readPaging(req.pageSize, req.pageToken, "ins");
      if (req.systemId !== "") await this.requireSystem(req.systemId);
      const page = await this.deps.store.instances.list({
        ...paging,
        systemId: req.systemId === "" ? undefined : req.systemId,
      });
      return create(ListInstancesResponseSchema, {
        instances: page.items.map(instanceToMessage),
        nextPageToken: nextPageToken(page),
      });
    });
  }

  createInstance(req: CreateInstanceRequest) {
    return translate(names, async () => {
      const instance = requireResource(req.instance, "instance");
      assertValidForCreate(InstanceSchema, instance);
      await this.requireSystem(req.systemId);
      const now = this.deps.clock();
      const id = this.deps.newId("ins");
      const rec = await this.deps.store.instances.create({
        id,
        systemId: req.systemId,
        name: instance.name,
        environment: instance.environment,
        baseUrl: instance.baseUrl,
        services: servicesOf(instance),
        ...(instance.auth ? { auth: sealBackendAuth(instance.auth, id, this.deps.secrets) } : {}),
        ...sapClientOf(instance),
        createdAt: now,
        updatedAt: now,
      });
      // The system may have been deleted since it was checked: see DeleteSystem.
      if ((await this.deps.store.systems.get(req.systemId)) === undefined) {
        await this.deps.store.instances.delete(rec.id);
        throw new ConnectError("system not found", Code.NotFound);
      }
      return create(CreateInstanceResponseSchema, { instance: instanceToMessage(rec) });
    });
  }

  updateInstance(req: UpdateInstanceRequest) {
    return translate(names, async () => {
      const instance = requireResource(req.instance, "instance");
      requireId("ins", instance.id);
      const fields = assertValidForUpdate(InstanceSchema, instance, req.updateMask?.paths ?? []);
      const patch: Patch<InstanceRecord> = { updatedAt: this.deps.clock() };
      for (const field of fields) {
        if (field.name === "services") Object.assign(patch, { services: servicesOf(instance) });
        else if (field.name === "auth") {
          Object.assign(patch, {
            auth: instance.auth ? sealBackendAuth(instance.auth, instance.id, this.deps.secrets) : undefined,
          });
        } else if (field.name === "sap_client") {
          // Clearing stores no value (undefined clears), never "".
          Object.assign(patch, { sapClient: sapClientOf(instance).sapClient });
        } else Object.assign(patch, toPatch<InstanceRecord>(instance, [field]));
      }
      const rec = await this.deps.store.instances.update(instance.id, patch);
      return create(UpdateInstanceResponseSchema, { instance: instanceToMessage(rec) });
    });
  }

  getServiceCatalog(req: GetServiceCatalogRequest) {
    return translate(names, async () => {
      requireId("ins", req.id);
      if (req.service === "") throw validationError([{ field: "service", description: "is required" }]);
      const rec = await this.deps.store.instances.get(req.id);
      if (rec === undefined) throw new ConnectError("instance not found", Code.NotFound);
      const catalog = await requireDiagnostics(this.deps).catalog(upstreamInstance(rec, this.deps.secrets), req.service);
      return create(GetServiceCatalogResponseSchema, { catalog });
    });
  }

  testInstanceConnection(req: TestInstanceConnectionRequest) {
    return translate(names, async () => {
      requireId("ins", req.id);
      if (req.options !== undefined) assertValidForCreate(ConnectionTestOptionsSchema, req.options);
      const service = req.options?.service ?? "";
      const rec = await this.deps.store.instances.get(req.id);
      if (rec === undefined) throw new ConnectError("instance not found", Code.NotFound);
      const connectionTest = await requireDiagnostics(this.deps).testConnection(upstreamInstance(rec, this.deps.secrets), service);
      return create(TestInstanceConnectionResponseSchema, { connectionTest });
    });
  }

  deleteInstance(req: DeleteInstanceRequest) {
    return translate(names, async () => {
      requireId("ins", req.id);
      const rec = await this.deps.store.instances.delete(req.id);
      return create(DeleteInstanceResponseSchema, { instance: instanceToMessage(rec) });
    });
  }
}
