/**
 * gRPC server reflection, `grpc.reflection.v1.ServerReflection` and its
 * older twin `grpc.reflection.v1alpha.ServerReflection` (grpcurl, Postman,
 * Kreya and grpcui use one or the other), without authentication. It lists
 * every service the server serves and answers with the protobuf-es
 * descriptors of their files (and every file they import), serialized as
 * `FileDescriptorProto`, plus the files of the error detail types
 * (`google.rpc.Status` in `grpc-status-details-bin`, and the
 * `erplink.errors.v1.BadRequest` it carries), so a client can decode them.
 *
 * As grpc-go's reflection does, an answer carries the requested file and
 * those of its transitive imports not yet sent on the same stream.
 */
import { create, toBinary, type DescFile, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection as ServerReflectionV1,
  ServerReflectionResponseSchema as ResponseV1,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflection as ServerReflectionV1alpha,
  ServerReflectionResponseSchema as ResponseV1alpha,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** Options of {@link createReflection}. */
export interface ReflectionOptions {
  /** The services served, read at each stream's start (services registered later are described too). */
  readonly services: () => Iterable<DescService>;
  /** Files described beyond those of the services (error detail types). */
  readonly extraFiles: readonly DescFile[];
}

/** The two versions of the reflection service. */
export interface Reflection {
  readonly v1: ServiceImpl<typeof ServerReflectionV1>;
  readonly v1alpha: ServiceImpl<typeof ServerReflectionV1alpha>;
  /**
   * Ends every open stream (status OK, after the answers already given) and
   * every stream opened from now on: an idle client's stream would
   * otherwise hold the server's close until its shutdown timeout.
   */
  shutdown(): void;
  /** How many streams are open (each ends with its client, its error or shutdown). */
  openStreams(): number;
}

/** The reflection streams open now, and whether {@link Reflection.shutdown} was called. */
interface OpenStreams {
  stopped: boolean;
  /** Each open stream's end. */
  readonly ends: Set<() => void>;
}

/**
 * The requests of a stream until shutdown: then it ends, whether or not the
 * client still sends. Each stream registers its own end, as health's Watch
 * streams do, rather than listening on one shared AbortSignal (which warns
 * past 10 listeners: more than 10 open streams are ordinary). Each wait gets
 * its own promise: racing every next() against one promise that settles only
 * at shutdown would add a reaction to it per request, each holding that
 * request, for as long as the stream is open (reflection is unauthenticated).
 */
async function* untilShutdown<T>(requests: AsyncIterable<T>, open: OpenStreams): AsyncGenerator<T> {
  if (open.stopped) return;
  const it = requests[Symbol.asyncIterator]();
  let wake: ((result: IteratorResult<T>) => void) | undefined;
  const end = () => wake?.({ done: true, value: undefined });
  open.ends.add(end);
  try {
    for (;;) {
      const next = await new Promise<IteratorResult<T>>((resolve, reject) => {
        wake = resolve;
        it.next().then(resolve, reject);
      });
      wake = undefined;
      if (next.done === true || open.stopped) return;
      yield next.value;
    }
  } finally {
    open.ends.delete(end);
  }
}

/** What one set of services and files answers: built once per set. */
interface Index {
  /** File name (`erplink/admin/v1/system.proto`) -> file. */
  readonly files: ReadonlyMap<string, DescFile>;
  /** Fully-qualified symbol (message, field, enum, enum value, service, method, extension) -> its file. */
  readonly symbols: ReadonlyMap<string, DescFile>;
  /** Extended message -> extension number -> the file declaring the extension. */
  readonly extensions: ReadonlyMap<string, ReadonlyMap<number, DescFile>>;
  /** Names of the services served, sorted. */
  readonly services: readonly string[];
}

/** Codes of reflection's `error_response` (gRPC status codes). */
const NOT_FOUND = Code.NotFound;

function buildIndex(services: readonly DescService[], extraFiles: readonly DescFile[]): Index {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  const extensions = new Map<string, Map<number, DescFile>>();
  const addExtension = (file: DescFile, ext: { typeName: string; number: number; extendee: DescMessage }) => {
    symbols.set(ext.typeName, file);
    let numbers = extensions.get(ext.extendee.typeName);
    if (numbers === undefined) extensions.set(ext.extendee.typeName, (numbers = new Map()));
    numbers.set(ext.number, file);
  };
  const addEnum = (file: DescFile, e: DescFile["enums"][number]) => {
    symbols.set(e.typeName, file);
    // Enum values are scoped like siblings of their enum (C++ scoping).
    const scope = e.parent?.typeName ?? file.proto.package;
    for (const v of e.values) symbols.set(scope === "" ? v.name : `${scope}.${v.name}`, file);
  };
  const addMessage = (file: DescFile, m: DescMessage) => {
    symbols.set(m.typeName, file);
    for (const f of m.fields) symbols.set(`${m.typeName}.${f.name}`, file);
    for (const o of m.oneofs) symbols.set(`${m.typeName}.${o.name}`, file);
    for (const n of m.nestedMessages) addMessage(file, n);
    for (const e of m.nestedEnums) addEnum(file, e);
    for (const x of m.nestedExtensions) addExtension(file, x);
  };
  const addFile = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const dep of file.dependencies) addFile(dep);
    for (const m of file.messages) addMessage(file, m);
    for (const e of file.enums) addEnum(file, e);
    for (const x of file.extensions) addExtension(file, x);
    for (const s of file.services) {
      symbols.set(s.typeName, file);
      for (const method of s.methods) symbols.set(`${s.typeName}.${method.name}`, file);
    }
  };
  for (const s of services) addFile(s.file);
  for (const f of extraFiles) addFile(f);
  return { files, symbols, extensions, services: [...new Set(services.map((s) => s.typeName))].sort() };
}

/** The request of either version (the same message in two packages). */
interface AnyRequest {
  readonly host: string;
  readonly messageRequest:
    | { readonly case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; readonly value: string }
    | { readonly case: "fileContainingExtension"; readonly value: { readonly containingType: string; readonly extensionNumber: number } }
    | { readonly case: undefined; readonly value?: undefined };
}

/** The `message_response` oneof of either version, as plain values. */
type Answer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** The serialized descriptors, made once per file. */
const encoded = new WeakMap<DescFile, Uint8Array>();

function encode(file: DescFile): Uint8Array {
  let bytes = encoded.get(file);
  if (bytes === undefined) encoded.set(file, (bytes = toBinary(FileDescriptorProtoSchema, file.proto)));
  return bytes;
}

/** The file, then those of its transitive imports not yet in `sent` (which it updates). */
function withDependencies(file: DescFile, sent: Set<string>): Answer {
  const out: Uint8Array[] = [];
  const visit = (f: DescFile, requested: boolean) => {
    if (!requested && sent.has(f.proto.name)) return;
    sent.add(f.proto.name);
    out.push(encode(f));
    for (const dep of f.dependencies) visit(dep, false);
  };
  visit(file, true);
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
}

function notFound(message: string): Answer {
  return { case: "errorResponse", value: { errorCode: NOT_FOUND, errorMessage: message } };
}

/** Answers one reflection request. */
function answer(index: Index, req: AnyRequest, sent: Set<string>): Answer {
  const r = req.messageRequest;
  switch (r.case) {
    case "fileByFilename": {
      const file = index.files.get(r.value);
      return file === undefined ? notFound(`file not found: ${r.value}`) : withDependencies(file, sent);
    }
    case "fileContainingSymbol": {
      const file = index.symbols.get(r.value);
      return file === undefined ? notFound(`symbol not found: ${r.value}`) : withDependencies(file, sent);
    }
    case "fileContainingExtension": {
      const file = index.extensions.get(r.value.containingType)?.get(r.value.extensionNumber);
      return file === undefined
        ? notFound(`extension not found: ${r.value.containingType} ${r.value.extensionNumber}`)
        : withDependencies(file, sent);
    }
    case "allExtensionNumbersOfType": {
      const file = index.symbols.get(r.value);
      const isMessage = file !== undefined && (file.messages.some((m) => isOrNests(m, r.value)));
      if (!isMessage) return notFound(`message type not found: ${r.value}`);
      const numbers = [...(index.extensions.get(r.value)?.keys() ?? [])].sort((a, b) => a - b);
      return { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } };
    }
    case "listServices":
      return { case: "listServicesResponse", value: { service: index.services.map((name) => ({ name })) } };
    default:
      // grpc-go answers an empty request the same way, ending the stream.
      throw new ConnectError("invalid reflection request: no message_request set", Code.InvalidArgument);
  }
}

/** Whether `m` is, or nests, the message named `typeName`. */
function isOrNests(m: DescMessage, typeName: string): boolean {
  return m.typeName === typeName || m.nestedMessages.some((n) => isOrNests(n, typeName));
}

/** Creates both versions of the reflection service. */
export function createReflection(options: ReflectionOptions): Reflection {
  let cached: { key: string; index: Index } | undefined;
  const index = (): Index => {
    const services = [...options.services()];
    const key = services.map((s) => s.typeName).join(",");
    if (cached?.key !== key) cached = { key, index: buildIndex(services, options.extraFiles) };
    return cached.index;
  };
  const open: OpenStreams = { stopped: false, ends: new Set() };
  return {
    shutdown() {
      open.stopped = true;
      for (const end of open.ends) end();
    },
    openStreams: () => open.ends.size,
    v1: {
      async *serverReflectionInfo(requests) {
        const ix = index();
        const sent = new Set<string>();
        for await (const req of untilShutdown(requests, open)) {
          yield create(ResponseV1, { validHost: req.host, originalRequest: req, messageResponse: answer(ix, req, sent) });
        }
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        const ix = index();
        const sent = new Set<string>();
        for await (const req of untilShutdown(requests, open)) {
          yield create(ResponseV1alpha, { validHost: req.host, originalRequest: req, messageResponse: answer(ix, req, sent) });
        }
      },
    },
  };
}
