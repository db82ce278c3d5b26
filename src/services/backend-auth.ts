/**
 * Back-end credentials of an instance: checked per type, secrets sealed
 * with the instance id as additional data, and shown without secrets.
 */
import { create } from "@bufbuild/protobuf";
import {
  BackendAuthSchema,
  BackendAuthType,
  type BackendAuth,
} from "../gen/erplink/admin/v1/instance_pb.js";
import type { StoredBackendAuth } from "../store/index.js";
import { validationError, type Violation } from "./errors.js";
import type { SecretBox } from "./secret-box.js";
import { rulesOf, variantUse } from "./validation.js";

type AuthType = StoredBackendAuth["type"];

const TYPES: Readonly<Partial<Record<BackendAuthType, AuthType>>> = {
  [BackendAuthType.NONE]: "none",
  [BackendAuthType.BASIC]: "basic",
  [BackendAuthType.BEARER]: "bearer",
  [BackendAuthType.OAUTH2_CLIENT_CREDENTIALS]: "oauth2_client_credentials",
};


/** Proto names of the write-only fields, from the `secret` rule. */
const SECRET_FIELDS = BackendAuthSchema.fields.filter((f) => rulesOf(f).secret);

/** Credentials with their secrets, for the proxy. */
export interface BackendCredentials {
  readonly type: AuthType;
  readonly username?: string;
  readonly password?: string;
  readonly token?: string;
  readonly tokenUrl?: string;
  readonly clientId?: string;
  readonly clientSecret?: string;
  readonly scope?: string;
}

/**
 * Checks `auth` for its type (the fields each type needs and allows are
 * the `required_for` / `optional_for` rules of BackendAuth, which the
 * resource's validation has normally checked already) and seals its
 * secrets for the instance `owner`. Throws `invalid_argument`.
 */
export function sealBackendAuth(auth: BackendAuth, owner: string, box: SecretBox): StoredBackendAuth {
  const values = auth as unknown as Record<string, unknown>;
  const type = TYPES[auth.type];
  if (type === undefined) {
    throw validationError([
      { field: "auth.type", description: "is required: none, basic, bearer or oauth2_client_credentials" },
    ]);
  }
  const violations: Violation[] = [];
  for (const field of BackendAuthSchema.fields) {
    if (field.name === "type") continue;
    const set = values[field.localName] !== "";
    const use = variantUse(field, type);
    if (use === "required" && !set) {
      violations.push({ field: `auth.${field.name}`, description: `is required with type '${type}'` });
    } else if (set && use === "unused") {
      violations.push({ field: `auth.${field.name}`, description: `is not used with type '${type}'` });
    }
  }
  if (violations.length > 0) throw validationError(violations);
  const secrets: Record<string, string> = {};
  for (const field of SECRET_FIELDS) {
    const v = values[field.localName] as string;
    if (v !== "") secrets[field.name] = v;
  }
  return {
    type,
    ...(auth.username !== "" ? { username: auth.username } : {}),
    ...(auth.tokenUrl !== "" ? { tokenUrl: auth.tokenUrl } : {}),
    ...(auth.clientId !== "" ? { clientId: auth.clientId } : {}),
    ...(auth.scope !== "" ? { scope: auth.scope } : {}),
    ...(Object.keys(secrets).length > 0 ? { sealed: box.seal(JSON.stringify(secrets), owner) } : {}),
  };
}

/** The credentials as responses show them: the type and non-secret fields only. */
export function backendAuthToMessage(stored: StoredBackendAuth): BackendAuth {
  const type = Number(Object.entries(TYPES).find(([, t]) => t === stored.type)?.[0] ?? 0) as BackendAuthType;
  return create(BackendAuthSchema, {
    type,
    username: stored.username ?? "",
    tokenUrl: stored.tokenUrl ?? "",
    clientId: stored.clientId ?? "",
    scope: stored.scope ?? "",
  });
}

/** The credentials with their secrets opened, for calling the back end. */
export function openBackendAuth(stored: StoredBackendAuth, owner: string, box: SecretBox): BackendCredentials {
  const secrets = stored.sealed ? (JSON.parse(box.open(stored.sealed, owner)) as Record<string, string>) : {};
  return {
    type: stored.type,
    ...(stored.username !== undefined ? { username: stored.username } : {}),
    ...(stored.tokenUrl !== undefined ? { tokenUrl: stored.tokenUrl } : {}),
    ...(stored.clientId !== undefined ? { clientId: stored.clientId } : {}),
    ...(stored.scope !== undefined ? { scope: stored.scope } : {}),
    ...(secrets.password !== undefined ? { password: secrets.password } : {}),
    ...(secrets.token !== undefined ? { token: secrets.token } : {}),
    ...(secrets.client_secret !== undefined ? { clientSecret: secrets.client_secret } : {}),
  };
}
