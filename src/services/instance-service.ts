/**
 * erplink.admin.v1.InstanceService over the instances store.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import {
  BatchGetServiceCatalogsRequestSchema,
  BatchGetServiceCatalogsResponseSchema,
  CreateInstanceResponseSchema,
  DeleteInstanceResponseSchema,
  GetInstanceResponseSchema,
  GetServiceCatalogResponseSchema,
  InstanceSchema,
  ListInstancesResponseSchema,
  ServiceCatalogErrorSchema,
  ServiceCatalogResultSchema,
  TestInstanceConnectionResponseSchema,
  UpdateInstanceResponseSchema,
  type BatchGetServiceCatalogsRequest,
  type CreateInstanceRequest,
  type DeleteInstanceRequest,
  type GetInstanceRequest,
  type GetServiceCatalogRequest,
  type Instance,
  type InstanceService,
  type ListInstancesRequest,
  type ServiceCatalogResult,
  type TestInstanceConnectionRequest,
  type UpdateInstanceRequest,
} from "../gen/erplink/admin/v1/instance_pb.js";
import { ConnectionTestOptionsSchema } from "../gen/erplink/admin/v1/diagnostics_pb.js";
import { formatEtag } from "../schema/etag.js";
import type { InstanceRecord, Patch } from "../store/index.js";
import { actorOf, redact, snapshotOf, uncertain, type AuditSnapshot, type SnapshotOptions } from "./audit.js";
import { backendAuthToMessage, sealBackendAuth } from "./backend-auth.js";
import type { ServiceDeps } from "./context.js";
import { upstreamInstance } from "./data-plane.js";
import { requireDiagnostics } from "./diagnostics.js";
import { translate, validationError } from "./errors.js";
import { nextPageToken, readPaging } from "./paging.js";
import type { SecretBox } from "./secret-box.js";
import { expectedRevision, notFound, requireId, requireResource, toPatch } from "./resource.js";
import { DELETION_MARK_TTL_MS } from "./system-service.js";
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

/** The record's connection limit of a message's: 0 (the process default) is kept as absent. */
function upstreamConnectionsOf(instance: Instance): { upstreamConnections?: number } {
  return instance.upstreamConnections === 0 ? {} : { upstreamConnections: instance.upstreamConnections };
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
    upstreamConnections: rec.upstreamConnections ?? 0,
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
    etag: formatEtag(rec.revision ?? 0),
  });
}

/**
 * An instance as the audit trail shows it: its back-end secrets (password,
 * token, client secret) as redacted markers, opened only to compare them.
 */
export function instanceSnapshot(rec: InstanceRecord, box: SecretBox): AuditSnapshot {
  const secrets: NonNullable<SnapshotOptions["secrets"]>[number][] = [];
  const sealed = rec.auth?.sealed;
  if (sealed !== undefined) {
    let opened: Record<string, string> | undefined;
    try {
      opened = JSON.parse(box.open(sealed, rec.id)) as Record<string, string>;
    } catch {
      // Sealed under another key: shown as one secret, compared as sealed.
      secrets.push([["auth", "secrets"], redact(`sealed:${sealed}`)]);
    }
    for (const [name, value] of Object.entries(opened ?? {})) secrets.push([["auth", name], redact(value)]);
  }
  return snapshotOf(InstanceSchema, instanceToMessage(rec), { secrets });
}

/** Implements InstanceService. */
export class InstanceServiceImpl implements ServiceImpl<typeof InstanceService> {
  constructor(private readonly deps: ServiceDeps) {}

  /** Throws `not_found` unless the system exists. */
  private async requireSystem(systemId: string): Promise<void> {
    requireId("sys", systemId, "system_id");
    if ((await this.deps.store.systems.get(systemId)) === undefined) throw notFound("sys", systemId);
  }

  getInstance(req: GetInstanceRequest) {
    return translate(names, async () => {
      requireId("ins", req.id);
      const rec = await this.deps.store.instances.get(req.id);
      if (rec === undefined) throw notFound("ins", req.id);
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

  createInstance(req: CreateInstanceRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      const instance = requireResource(req.instance, "instance");
      assertValidForCreate(InstanceSchema, instance);
      await this.requireSystem(req.systemId);
      const now = this.deps.clock();
      const id = this.deps.newId("ins");
      const record: InstanceRecord = {
        id,
        systemId: req.systemId,
        name: instance.name,
        environment: instance.environment,
        baseUrl: instance.baseUrl,
        services: servicesOf(instance),
        ...(instance.auth ? { auth: sealBackendAuth(instance.auth, id, this.deps.secrets) } : {}),
        ...sapClientOf(instance),
        ...upstreamConnectionsOf(instance),
        createdAt: now,
        updatedAt: now,
        revision: 1,
      };
      const snapshot = (r: InstanceRecord) => instanceSnapshot(r, this.deps.secrets);
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        { action: "create", resourceType: "instance", resourceId: id, before: null, after: snapshot(record) },
        async () => {
          const { systems, instances } = this.deps.store;
          const created = await instances.create(record);
          // The system may be being deleted, or deleted since it was checked
          // (see DeleteSystem): its deletion's mark is looked for after the
          // insert, and then the system itself, in this order (a deletion
          // that ended between the two has deleted the system).
          const since = new Date(this.deps.clock().getTime() - DELETION_MARK_TTL_MS);
          const deleting = await systems.deletionInProgress(req.systemId, since);
          if (deleting || (await systems.get(req.systemId)) === undefined) {
            await instances.delete(created.id).catch((err: unknown) => {
              throw uncertain(err);
            });
            if (deleting) throw new ConnectError("system is being deleted", Code.FailedPrecondition);
            throw notFound("sys", req.systemId);
          }
          return created;
        },
        snapshot,
      );
      // A name looked up before it existed is remembered as unknown: no longer.
      this.deps.instanceChanges.changed(rec.name);
      return create(CreateInstanceResponseSchema, { instance: instanceToMessage(rec) });
    });
  }

  updateInstance(req: UpdateInstanceRequest, ctx: HandlerContext) {
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
        } else if (field.name === "upstream_connections") {
          // 0 (the default) stores no value.
          Object.assign(patch, { upstreamConnections: upstreamConnectionsOf(instance).upstreamConnections });
        } else Object.assign(patch, toPatch<InstanceRecord>(instance, [field]));
      }
      const current = await this.deps.store.instances.get(instance.id);
      if (current === undefined) throw notFound("ins", instance.id);
      const expected = expectedRevision(names, instance.etag, current);
      const snapshot = (r: InstanceRecord) => instanceSnapshot(r, this.deps.secrets);
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        {
          action: "update",
          resourceType: "instance",
          resourceId: instance.id,
          before: snapshot(current),
          after: snapshot({ ...current, ...patch }),
        },
        () => this.deps.store.instances.revise(instance.id, patch, expected),
        snapshot,
      );
      // In force at once in this process, under its old name and its new one.
      this.deps.instanceChanges.changed(current.name, rec.name);
      return create(UpdateInstanceResponseSchema, { instance: instanceToMessage(rec) });
    });
  }

  getServiceCatalog(req: GetServiceCatalogRequest) {
    return translate(names, async () => {
      requireId("ins", req.id);
      if (req.service === "") throw validationError([{ field: "service", description: "is required" }]);
      const rec = await this.deps.store.instances.get(req.id);
      if (rec === undefined) throw notFound("ins", req.id);
      const catalog = await requireDiagnostics(this.deps).catalog(upstreamInstance(rec, this.deps.secrets), req.service);
      return create(GetServiceCatalogResponseSchema, { catalog });
    });
  }

  batchGetServiceCatalogs(req: BatchGetServiceCatalogsRequest) {
    return translate(names, async () => {
      assertValidForCreate(BatchGetServiceCatalogsRequestSchema, req);
      const diagnostics = requireDiagnostics(this.deps);
      // Each instance is read once, however many of its services are asked for.
      const records = new Map<string, Promise<InstanceRecord | undefined>>();
      const instance = (id: string) => {
        let rec = records.get(id);
        if (rec === undefined) {
          rec = this.deps.store.instances.get(id);
          records.set(id, rec);
        }
        return rec;
      };
      // All at once: the $metadata fetches count against each instance's
      // connection limit (ERPLINK_UPSTREAM_CONNECTIONS or its own), which
      // bounds what one call asks of a back end, and a hung back end then
      // costs the call one upstream timeout, not one per service.
      const results = await Promise.all(
        req.services.map(async ({ instanceId, service }): Promise<ServiceCatalogResult> => {
          try {
            const catalog = await translate(names, async () => {
              requireId("ins", instanceId, "instance_id");
              if (service === "") throw validationError([{ field: "service", description: "is required" }]);
              const rec = await instance(instanceId);
              if (rec === undefined) throw notFound("ins", instanceId);
              return diagnostics.catalog(upstreamInstance(rec, this.deps.secrets), service);
            });
            return create(ServiceCatalogResultSchema, { instanceId, service, result: { case: "catalog", value: catalog } });
          } catch (err) {
            const ce = ConnectError.from(err);
            // Unexpected: the whole call fails, masked and logged, as any call's would.
            if (ce.code === Code.Internal || ce.code === Code.Unknown) throw ce;
            const error = create(ServiceCatalogErrorSchema, { code: codeToString(ce.code), message: ce.rawMessage });
            return create(ServiceCatalogResultSchema, { instanceId, service, result: { case: "error", value: error } });
          }
        }),
      );
      return create(BatchGetServiceCatalogsResponseSchema, { results });
    });
  }

  testInstanceConnection(req: TestInstanceConnectionRequest) {
    return translate(names, async () => {
      requireId("ins", req.id);
      if (req.options !== undefined) assertValidForCreate(ConnectionTestOptionsSchema, req.options);
      const service = req.options?.service ?? "";
      const rec = await this.deps.store.instances.get(req.id);
      if (rec === undefined) throw notFound("ins", req.id);
      const connectionTest = await requireDiagnostics(this.deps).testConnection(upstreamInstance(rec, this.deps.secrets), service);
      return create(TestInstanceConnectionResponseSchema, { connectionTest });
    });
  }

  deleteInstance(req: DeleteInstanceRequest, ctx: HandlerContext) {
    return translate(names, async () => {
      requireId("ins", req.id);
      const current = await this.deps.store.instances.get(req.id);
      if (current === undefined) throw notFound("ins", req.id);
      const expected = expectedRevision(names, req.etag, current);
      const rec = await this.deps.audit.record(
        actorOf(ctx),
        {
          action: "delete",
          resourceType: "instance",
          resourceId: req.id,
          before: instanceSnapshot(current, this.deps.secrets),
          after: null,
        },
        () => this.deps.store.instances.delete(req.id, expected),
      );
      this.deps.instanceChanges.changed(current.name);
      return create(DeleteInstanceResponseSchema, { instance: instanceToMessage(rec) });
    });
  }
}
