/**
 * The catalog's functions and actions (InstanceService.GetServiceCatalog,
 * `./diagnostics.ts`): each operation of a service's `$metadata` by the name
 * a key's permissions grant it by (`invoke`), with what a call of it needs
 * besides: `get`/`list` of the set it is called on (bound operations) and
 * of every set its result lies in. Read from the model with the analyzer's
 * own answers (`step` for where a bound operation applies, `returnedSets`
 * for its result), so the catalog names what the data path will ask for.
 */
import { create } from "@bufbuild/protobuf";
import { CatalogOperationSchema, type CatalogOperation } from "../../gen/erplink/admin/v1/diagnostics_pb.js";
import type { OperationInfo, Overload, Position, ServiceModel } from "../odata/metadata.js";

/** Deepest containment followed looking for where a bound operation applies (as the catalog's navigations: four levels). */
const MAX_CONTAINMENT_DEPTH = 4;

/**
 * Every position a bound operation may be called at, by the set whose
 * permissions apply there: each entity set's collection and entities, each
 * singleton, and what their containment navigations reach (contained
 * entities have their container's set), with a cast to the binding type
 * where it derives from the type there. Each with the overloads that bind
 * there, as the analyzer's own `step` answers.
 */
function bindingPlaces(model: ServiceModel, operation: OperationInfo): { position: Position; overloads: readonly Overload[] }[] {
  const out: { position: Position; overloads: readonly Overload[] }[] = [];
  const bindingTypes = [...new Set(operation.overloads.flatMap((o) => (o.binding === undefined ? [] : [o.binding.type])))];
  const at = (position: Position) => {
    const candidates = [position];
    for (const type of bindingTypes) {
      if (type === position.type) continue;
      const cast = model.step(position, type);
      if (cast.kind === "cast") candidates.push({ ...cast.position, collection: position.collection });
    }
    for (const candidate of candidates) {
      const step = model.step(candidate, operation.name);
      if ((step.kind === "function" || step.kind === "action") && step.operation === operation && step.overloads.length > 0) {
        out.push({ position: candidate, overloads: step.overloads });
      }
    }
  };
  const visit = (position: Position, depth: number) => {
    at(position);
    if (!position.collection) {
      // Containment stays in the set: what a contained navigation reaches is another place of it.
      if (depth >= MAX_CONTAINMENT_DEPTH) return;
      for (const path of model.navigationPaths(position)) {
        const target = navigationStep(model, position, path);
        if (target?.kind === "navigation" && target.contained && target.target !== undefined) {
          visit({ ...target.target, collection: true }, depth + 1);
          visit({ ...target.target, collection: false }, depth + 1);
        }
      }
    }
  };
  for (const name of [...model.entitySets, ...model.singletons]) {
    const found = model.root(name);
    if (found === undefined || (found.kind !== "entitySet" && found.kind !== "singleton")) continue;
    if (found.position.collection) visit(found.position, 0);
    visit({ ...found.position, collection: false }, 0);
  }
  return out;
}

/** A function or action as the catalog shows it: its grant name and what a call of it needs. */
export function catalogOperation(model: ServiceModel, operation: OperationInfo): CatalogOperation {
  const bindingSets = new Set<string>();
  const resultSets = new Set<string>();
  let resultUnknown = false;
  const results = (overload: Overload, binding?: Position) => {
    const sets = model.returnedSets(operation, overload, binding);
    if (sets === undefined) resultUnknown = true;
    else for (const s of sets) resultSets.add(s.entitySet);
  };
  if (operation.bound) {
    for (const { position, overloads } of bindingPlaces(model, operation)) {
      bindingSets.add(position.entitySet);
      for (const overload of overloads) results(overload, position);
    }
  } else {
    for (const overload of operation.overloads) results(overload);
  }
  return create(CatalogOperationSchema, {
    name: operation.name,
    kind: operation.kind,
    bound: operation.bound,
    bindingEntitySets: [...bindingSets],
    resultEntitySets: [...resultSets],
    httpMethod: operation.httpMethod ?? "",
    resultUnknown,
  });
}

/** The step a navigation path from an entity ends with (through complex properties and casts), or undefined. */
function navigationStep(model: ServiceModel, from: Position, path: readonly string[]) {
  let at = from;
  for (const [i, name] of path.entries()) {
    const step = model.step(at, name);
    if (i === path.length - 1) return step;
    if ((step.kind === "property" || step.kind === "cast") && step.position !== undefined) at = step.position;
    else return undefined;
  }
  return undefined;
}
