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
  InstanceSchema,
  ListInstancesResponseSchema,
  UpdateInstanceResponseSchema,
  type CreateInstanceRequest,
  type DeleteInstanceRequest,
  type GetInstanceRequest,
  type Instance,
  type InstanceService,
  type ListInstancesRequest,
  type UpdateInstanceRequest,
} from "../gen/erplink/admin/v1/instance_pb.js";
import type { InstanceRecord } from "../store/index.js";
import type { ServiceDeps } from "./context.js";
import { translate } from "./errors.js";
import { nextPageToken, readPaging } from "./paging.js";
import { requireId, requireResource, toPatch } from "./resource.js";
import { assertValidForCreate, assertValidForUpdate } from "./validation.js";

const names = { singular: "instance" };

/** The one mapping of a stored instance to its message. */
export function instanceToMessage(rec: InstanceRecord): Instance {
  return create(InstanceSchema, {
    id: rec.id,
    systemId: rec.systemId,
    name: rec.name,
    environment: rec.environment,
    baseUrl: rec.baseUrl,
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
      const rec = await this.deps.store.instances.create({
        id: this.deps.newId("ins"),
        systemId: req.systemId,
        name: instance.name,
        environment: instance.environment,
        baseUrl: instance.baseUrl,
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
      const rec = await this.deps.store.instances.update(instance.id, {
        ...toPatch<InstanceRecord>(instance, fields),
        updatedAt: this.deps.clock(),
      });
      return create(UpdateInstanceResponseSchema, { instance: instanceToMessage(rec) });
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
