/**
 * The `(erplink.options.v1.field)` rules of a field, decoded once. Shared by
 * the services (which enforce them) and the gateway (which publishes them
 * and hides write-only fields); depends only on the generated code.
 */
import { getOption, type DescField } from "@bufbuild/protobuf";
import { field as fieldRulesOption, type FieldRules } from "../gen/erplink/options/v1/field_rules_pb.js";

// getOption decodes the option from its binary form on every call.
const cache = new WeakMap<DescField, FieldRules>();

/** The rules declared on a field (all defaults when none are). */
export function rulesOf(field: DescField): FieldRules {
  let rules = cache.get(field);
  if (rules === undefined) {
    rules = getOption(field, fieldRulesOption);
    cache.set(field, rules);
  }
  return rules;
}
