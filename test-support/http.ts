/**
 * Small helpers for `app.inject()` tests of the REST facade.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { AUTH } from "./world.js";

/** A well-formed system id. */
export const SYS_ID = /^sys_[0-9A-HJKMNP-TV-Z]{26}$/;
/** A well-formed instance id. */
export const INS_ID = /^ins_[0-9A-HJKMNP-TV-Z]{26}$/;
/** A request id the gateway generates. */
export const REQ_ID = /^req_[0-9a-f-]{36}$/;

/** The parsed JSON body of a response. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function json(res: LightMyRequestResponse): any {
  return JSON.parse(res.body);
}

/** POSTs a JSON body with the master key. */
export function post(app: FastifyInstance, url: string, body: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: "POST", url, headers: { ...AUTH, ...headers }, payload: body as object });
}

/** PATCHes a JSON body with the master key. */
export function patch(app: FastifyInstance, url: string, body: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: "PATCH", url, headers: { ...AUTH, ...headers }, payload: body as object });
}
