/**
 * Navigations the service metadata gives no entity set (a V4 navigation
 * without a `NavigationPropertyBinding`, a V2 one without an
 * `AssociationSet` from where it starts): TripPin's `Person.Trips`, whose
 * trips a back end keeps wherever it likes.
 *
 * Decision: what such a navigation reads or writes is recorded against the
 * entity set `*` (the permission entry that covers every entity set of the
 * service), with the navigation named beside it. So only a key whose grant
 * has `*` at the entity level of the service, with the operation needed,
 * passes it; a key that names its sets one by one is refused at the entity
 * step, whichever sets it names, since nobody can tell which of them (or
 * which other) holds the data. Past the navigation, binding goes on at a
 * position of no named set (`*`): every further navigation from there is
 * unbound too, and recorded the same way.
 */
import type { Position, Step } from "../metadata.js";
import { denied, excerpt } from "../syntax.js";

/** The entity set accesses through an unbound navigation are recorded against: permissions' `*`, every entity set of the service. */
export const EVERY_ENTITY_SET = "*";

/** Why a key needs `*` for an unbound navigation, for messages and reasons. */
export const UNBOUND_WHY = "the service metadata does not say which entity set it leads to";

/** How an unbound navigation is named in accesses and messages: `navigation 'Trips' of 'People'`. */
export function unboundNavigation(label: string, from: Position): string {
  const source = from.entitySet === EVERY_ENTITY_SET ? `type '${from.type}'` : `'${from.entitySet}'`;
  return `navigation '${excerpt(label)}' of ${source}`;
}

/**
 * Where an unbound navigation leads: its target type in no named set. Denied
 * when the document does not even say the type (a V2 navigation whose
 * association is missing): then nothing past it can be checked.
 */
export function unboundTarget(step: Extract<Step, { kind: "navigation" }>, label: string, from: Position): Position {
  if (step.targetType === undefined) {
    denied(`cannot authorize navigation '${excerpt(label)}' of '${from.entitySet}': the service metadata does not say what it leads to`);
  }
  return { entitySet: EVERY_ENTITY_SET, type: step.targetType, bindingPath: [], collection: step.collection, complex: false };
}
