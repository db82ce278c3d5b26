/**
 * Helpers for tests that call the services through Connect clients.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Test } from "uvu";
import * as assert from "uvu/assert";
import { BadRequestSchema } from "../src/gen/erplink/errors/v1/bad_request_pb.js";
import { createWorld } from "./world.js";

/** A world as `createWorld` builds it. */
export type TestWorld = Awaited<ReturnType<typeof createWorld>>;

/**
 * Returns a registrar of tests that each run in a fresh world and fail on
 * any masked internal error.
 */
export function worldTests(test: Test): (name: string, fn: (w: TestWorld) => Promise<void>) => void {
  return (name, fn) =>
    test(name, async () => {
      const w = await createWorld();
      try {
        await fn(w);
        assert.equal(w.errors, [], "no masked internal errors");
      } finally {
        await w.close();
      }
    });
}

/** Awaits `p`, expecting a ConnectError with `code` (and `message`, if given). */
export async function rejects(p: Promise<unknown>, code: Code, message?: string): Promise<ConnectError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  if (caught === undefined) assert.unreachable(`expected ${Code[code]}, but the call succeeded`);
  assert.instance(caught, ConnectError);
  const err = caught as ConnectError;
  assert.is(Code[err.code], Code[code], `code (message: ${err.rawMessage})`);
  if (message !== undefined) assert.is(err.rawMessage, message);
  return err;
}

/** The field violations of an error's BadRequest details. */
export function violations(err: ConnectError): { field: string; description: string }[] {
  return err
    .findDetails(BadRequestSchema)
    .flatMap((d) => d.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
}

/** A timestamp in epoch milliseconds (asserting it is set). */
export function ms(ts: Timestamp | undefined): number {
  assert.ok(ts, "timestamp is set");
  return timestampDate(ts).getTime();
}

/** Moves a world's clock forward. */
export function tick(w: TestWorld, millis = 1000): void {
  w.now = new Date(w.now.getTime() + millis);
}
