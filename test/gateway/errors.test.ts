/**
 * The error model: the Connect code -> HTTP status -> envelope code table,
 * and masking of what was not meant for clients.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { BadRequestSchema } from "../../src/gen/erplink/errors/v1/bad_request_pb.js";
import { CODE_TABLE, fromConnectError } from "../../src/gateway/errors.js";
import { ETAG_MISMATCH_METADATA } from "../../src/schema/etag.js";
import { etagMismatch } from "../../src/services/errors.js";

const Table = suite("error table");

const EXPECTED: [Code, number, string][] = [
  [Code.InvalidArgument, 400, "VALIDATION_ERROR"],
  [Code.Unauthenticated, 401, "UNAUTHORIZED"],
  [Code.PermissionDenied, 403, "FORBIDDEN"],
  [Code.NotFound, 404, "NOT_FOUND"],
  [Code.AlreadyExists, 409, "CONFLICT"],
  [Code.Aborted, 409, "CONFLICT"],
  [Code.FailedPrecondition, 409, "CONFLICT"],
  [Code.ResourceExhausted, 429, "RATE_LIMITED"],
  [Code.Unavailable, 503, "UNAVAILABLE"],
  [Code.DeadlineExceeded, 504, "GATEWAY_TIMEOUT"],
  [Code.Internal, 500, "INTERNAL"],
  [Code.Unknown, 500, "INTERNAL"],
  [Code.DataLoss, 500, "INTERNAL"],
];

for (const [code, status, envelope] of EXPECTED) {
  Table(`${Code[code]} -> ${status} ${envelope}`, () => {
    assert.equal(CODE_TABLE[code], { status, code: envelope });
    const e = fromConnectError(new ConnectError("the message", code));
    assert.is(e.status, status);
    assert.is(e.code, envelope);
    assert.is(e.message, status === 500 ? "internal error" : "the message");
  });
}

Table("unauthenticated carries WWW-Authenticate: Bearer; others do not", () => {
  assert.equal(fromConnectError(new ConnectError("x", Code.Unauthenticated)).headers, { "www-authenticate": "Bearer" });
  assert.is(fromConnectError(new ConnectError("x", Code.NotFound)).headers, undefined);
});

Table("an aborted error marked as a stale etag is 412 PRECONDITION_FAILED; other aborted and failed_precondition errors stay 409 CONFLICT", () => {
  const stale = fromConnectError(etagMismatch({ singular: "system" }, '"1"', 2));
  assert.equal(
    { status: stale.status, code: stale.code, message: stale.message, headers: stale.headers },
    { status: 412, code: "PRECONDITION_FAILED", message: 'the system changed since it was read (etag "1", now "2"): read it again and retry', headers: undefined },
  );
  for (const code of [Code.Aborted, Code.FailedPrecondition]) {
    const other = fromConnectError(new ConnectError("busy", code));
    assert.equal([other.status, other.code], [409, "CONFLICT"], Code[code]);
  }
  // The mark means nothing on another code.
  const marked = fromConnectError(new ConnectError("gone", Code.NotFound, new Headers({ [ETAG_MISMATCH_METADATA]: '"2"' })));
  assert.equal([marked.status, marked.code], [404, "NOT_FOUND"]);
});

Table("internal errors are masked, details and all", () => {
  const err = new ConnectError("E11000 duplicate key error collection: erplink.systems", Code.Internal, undefined, [
    { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: [{ field: "x", description: "y" }] }) },
  ]);
  const e = fromConnectError(err);
  assert.is(e.message, "internal error");
  assert.is(e.details, undefined);
});

Table("BadRequest details become the envelope's details", () => {
  const err = new ConnectError("2 fields are invalid", Code.InvalidArgument, undefined, [
    {
      desc: BadRequestSchema,
      value: create(BadRequestSchema, {
        fieldViolations: [
          { field: "name", description: "is required" },
          { field: "labels.a b", description: "key must match x" },
        ],
      }),
    },
  ]);
  assert.equal(fromConnectError(err).details, [
    { field: "name", message: "is required" },
    { field: "labels.a b", message: "key must match x" },
  ]);
});

Table.run();
