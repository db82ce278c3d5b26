/**
 * The absolute URLs of an OData V2 answer, pointed back at erplink.
 *
 * A V2 back end writes into its answers the URLs a client follows: in JSON
 * `__metadata.uri`/`id`/`media_src`/`edit_media` (and those of a named
 * stream's `__mediaresource`), `__deferred.uri` and `__next`; in Atom
 * `xml:base`, `<id>`, `link/@href` and `content/@src` (and a service
 * document's `collection/@href`, a `$links` answer's `<uri>`). Back ends
 * that honour `X-Forwarded-*` (CAP's V2 adapter) write erplink's URLs there
 * already; SAP's Fiori elements mock server, and SAP Gateway systems behind
 * their own proxies, write their own host and path, so a client following
 * one would reach the back end directly, or a path erplink does not serve.
 *
 * Rewritten here: each URL in one of those places that lies under the back
 * end's service root (absolute, or host-relative `/path/…`), by
 * `./headers.ts`'s {@link clientUrl}, as the `Location` header is. Nothing
 * else: a string property holding a URL is data, and stays as it is.
 *
 * The answer streams through: a streaming JSON tokenizer
 * (`@streamparser/json`, which reports each token's byte offset) and a
 * streaming SAX parser (`sax`, which reports character positions) find the
 * places, and every byte outside the rewritten strings passes unchanged. What
 * is held back is at most one unfinished token or tag (or one `<id>`), never
 * the answer. An answer the parser cannot read (not JSON, not well-formed
 * XML, XML in another encoding than UTF-8) passes unchanged from there on.
 * A content-coded answer (gzip, deflate, br) is decoded first, and passed
 * without coding.
 */
import { StringDecoder } from "node:string_decoder";
import { Transform, pipeline, type Readable, type TransformCallback } from "node:stream";
import zlib from "node:zlib";
import { Tokenizer, TokenType } from "@streamparser/json";
import sax, { type QualifiedTag, type SAXParser } from "sax";
import { GatewayError } from "../errors.js";

/** Rewrites one URL (returns it unchanged when it is not the back end's). */
export type UrlRewrite = (url: string) => string;

/** Which rewriter reads an answer of this `Content-Type`, if any. */
export function v2AnswerFormat(contentType: string | undefined): "json" | "xml" | undefined {
  if (contentType === undefined) return undefined;
  const [type, ...params] = contentType.split(";");
  const charset = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith("charset="));
  if (charset !== undefined && !/^charset="?utf-?8"?$/.test(charset)) return undefined;
  switch (type!.trim().toLowerCase()) {
    case "application/json":
      return "json";
    case "application/atom+xml":
    case "application/xml":
      return "xml";
    default:
      return undefined;
  }
}

/** A stream rewriting the URLs of a V2 answer in the given format (see the module comment). */
export function v2UrlRewriter(format: "json" | "xml", rewrite: UrlRewrite): Transform {
  return format === "json" ? new JsonUrls(rewrite) : new XmlUrls(rewrite);
}

/** The decoders of the content codings a back end's answer may carry, by name. */
const DECODERS: Record<string, () => Transform> = {
  identity: () => new Transform({ transform: (chunk, _e, cb) => cb(null, chunk) }),
  gzip: () => zlib.createGunzip(),
  "x-gzip": () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/**
 * The V2 answer `body` with its URLs rewritten, and its headers (`headers`,
 * changed in place) fitting the rewritten body: no `Content-Length` (it is
 * sent chunked), no `Content-Encoding` (it is decoded), no `Content-MD5`.
 * Returns `body` itself when its format or coding is not one rewritten. An
 * error of `body` reaches the returned stream as it is; a coding that does
 * not decode is the back end's, a 502.
 */
export function rewriteV2Answer(body: Readable, headers: Record<string, string | string[]>, rewrite: UrlRewrite, rootPath = ""): Readable {
  const format = v2AnswerFormat(typeof headers["content-type"] === "string" ? headers["content-type"] : undefined);
  if (format === undefined) return body;
  const coding = headers["content-encoding"];
  const codings = coding === undefined ? [] : (Array.isArray(coding) ? coding.join(",") : coding).split(",").map((c) => c.trim().toLowerCase()).filter((c) => c !== "");
  if (codings.some((c) => DECODERS[c] === undefined)) return body;
  for (const name of ["content-length", "content-encoding", "content-md5"]) delete headers[name];
  const decoders = codings.reverse().map((c) => {
    const decoder = DECODERS[c]!();
    // A coding that does not decode is the back end's fault, not the client's.
    const destroy = decoder.destroy.bind(decoder);
    decoder.destroy = (err?: Error | null) =>
      destroy((err as NodeJS.ErrnoException | null | undefined)?.code?.startsWith("Z_") === true ? new GatewayError(502, "the back end's answer does not decode as its Content-Encoding says") : (err ?? undefined));
    return decoder;
  });
  // The root path as JSON may escape it (`\/`): any URL under the root holds one of them.
  const needles = rootPath === "" || rootPath === "/" ? [] : [rootPath, rootPath.replaceAll("/", "\\/")].map((n) => Buffer.from(n));
  const rewriter = needles.length === 0 ? v2UrlRewriter(format, rewrite) : new WhenNamed(needles, () => v2UrlRewriter(format, rewrite));
  pipeline([body, ...decoders, rewriter], () => {});
  return rewriter;
}

/** Most bytes of an answer held back to learn whether it names the back end's service root at all. */
export const PROBE_BYTES = 64 * 1024;

/**
 * Passes an answer through the rewriter that `make` makes only when its
 * first {@link PROBE_BYTES} (or all of it, when shorter) hold one of
 * `needles` (the back end's service root path, as written and with JSON's
 * escaped slashes, which every URL under that root holds): an answer of a back end that
 * honours `X-Forwarded-*` names erplink, not its own root, and passes at
 * the cost of one search of its first bytes instead of a tokenizer. V2 back
 * ends write an entry's `__metadata` before its data, and a feed's
 * `xml:base` first, so an answer that names its root does so at the start.
 */
class WhenNamed extends Transform {
  private held: Buffer[] = [];
  private size = 0;
  /** undefined while undecided; null to pass the answer through; else the rewriter it goes through. */
  private inner: Transform | null | undefined;

  constructor(
    private readonly needles: readonly Buffer[],
    private readonly make: () => Transform,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.inner === null) return done(null, chunk);
    if (this.inner !== undefined) return void this.inner.write(chunk, done);
    this.held.push(chunk);
    this.size += chunk.length;
    if (this.size < PROBE_BYTES) return done();
    this.decide(done);
  }

  override _flush(done: TransformCallback): void {
    if (this.inner !== undefined) return this.finishInner(done);
    this.decide((err, passed?: Buffer) => {
      if (err) return done(err);
      if (passed !== undefined) this.push(passed);
      this.finishInner(done);
    });
  }

  private decide(done: TransformCallback): void {
    const held = Buffer.concat(this.held);
    this.held = [];
    if (!this.needles.some((n) => held.includes(n))) {
      this.inner = null;
      return done(null, held);
    }
    const inner = this.make();
    this.inner = inner;
    inner.on("data", (out: Buffer) => this.push(out));
    inner.on("error", (err) => this.destroy(err));
    inner.write(held, done);
  }

  private finishInner(done: TransformCallback): void {
    const inner = this.inner;
    if (inner === null || inner === undefined) return done();
    inner.once("end", () => done());
    inner.end();
  }
}

/** The members whose string value is a URL, in the objects named by the member holding them. */
const JSON_URL_MEMBERS: Record<string, ReadonlySet<string>> = {
  __metadata: new Set(["uri", "id", "media_src", "edit_media"]),
  __mediaresource: new Set(["media_src", "edit_media"]),
  __deferred: new Set(["uri"]),
};

/** An object or array being read: an object's member read last, and the URL members of its kind. */
interface JsonFrame {
  readonly object: boolean;
  readonly urlMembers: ReadonlySet<string> | undefined;
  member: string | undefined;
  expectMember: boolean;
}

class JsonUrls extends Transform {
  private readonly tokenizer = new Tokenizer();
  private readonly stack: JsonFrame[] = [];
  /** Bytes not yet passed on, from the answer's byte {@link pendingStart}. */
  private pending: Buffer = Buffer.alloc(0);
  private pendingStart = 0;
  private received = 0;
  private out: Buffer[] = [];
  /** Set after the `:` of a URL member: its value is held back until it is read whole. */
  private holdFrom: number | undefined;
  private failed = false;
  /** Tokenizer offsets plus this are answer offsets: the tokenizer does not count a byte order mark. */
  private shift: number | undefined;

  constructor(private readonly rewrite: UrlRewrite) {
    super();
    this.tokenizer.onToken = ({ token, value, offset }) => {
      // The first token starts at the first byte that is neither a byte order mark nor white space.
      if (this.shift === undefined) {
        let first = 0;
        while (first < this.pending.length && [0xef, 0xbb, 0xbf, 0x20, 0x09, 0x0a, 0x0d].includes(this.pending[first]!)) first++;
        this.shift = this.pendingStart + first - offset;
      }
      this.token(token, value, offset + this.shift);
    };
    this.tokenizer.onError = (err) => {
      throw err;
    };
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.failed) return done(null, chunk);
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    this.received += chunk.length;
    try {
      this.tokenizer.write(chunk);
    } catch {
      // Not JSON (any more): what is left passes as it is.
      this.failed = true;
      this.holdFrom = undefined;
    }
    this.passUpTo(this.holdFrom ?? this.received);
    done();
  }

  override _flush(done: TransformCallback): void {
    this.passUpTo(this.received);
    done();
  }

  /** Passes on every byte before `end` (an answer offset). */
  private passUpTo(end: number): void {
    const cut = end - this.pendingStart;
    if (cut > 0) {
      this.out.push(cut === this.pending.length ? this.pending : this.pending.subarray(0, cut));
      this.pending = this.pending.subarray(cut);
      this.pendingStart = end;
    }
    if (this.out.length > 0) this.push(this.out.length === 1 ? this.out[0] : Buffer.concat(this.out));
    this.out = [];
  }

  private token(token: TokenType, value: unknown, offset: number): void {
    const top = this.stack[this.stack.length - 1];
    const held = this.holdFrom !== undefined;
    this.holdFrom = undefined;
    switch (token) {
      case TokenType.LEFT_BRACE:
      case TokenType.LEFT_BRACKET: {
        const object = token === TokenType.LEFT_BRACE;
        this.stack.push({ object, urlMembers: object && top?.object === true ? JSON_URL_MEMBERS[top.member!] : undefined, member: undefined, expectMember: object });
        return;
      }
      case TokenType.RIGHT_BRACE:
      case TokenType.RIGHT_BRACKET:
        this.stack.pop();
        return;
      case TokenType.COMMA:
        if (top?.object === true) top.expectMember = true;
        return;
      case TokenType.COLON:
        if (top !== undefined && (top.member === "__next" || top.urlMembers?.has(top.member!) === true)) this.holdFrom = offset + 1;
        return;
      case TokenType.STRING:
        if (top?.object === true && top.expectMember) {
          top.member = value as string;
          top.expectMember = false;
        } else if (held) {
          this.rewriteString(value as string, offset);
        }
        return;
      default:
    }
  }

  /** Replaces the string token at `start` (its opening quote, an answer offset) when its URL is rewritten. */
  private rewriteString(url: string, start: number): void {
    const rewritten = this.rewrite(url);
    if (rewritten === url) return;
    // The tokenizer reports a string once its closing quote is read: it is in `pending`.
    const from = start - this.pendingStart;
    let i = from + 1;
    while (this.pending[i] !== 0x22) i += this.pending[i] === 0x5c ? 2 : 1;
    this.out.push(this.pending.subarray(0, from), Buffer.from(JSON.stringify(rewritten)));
    this.pending = this.pending.subarray(i + 1);
    this.pendingStart += i + 1;
  }
}

const ATOM = "http://www.w3.org/2005/Atom";
const APP = "http://www.w3.org/2007/app";
const XML = "http://www.w3.org/XML/1998/namespace";
const DATASERVICES = "http://schemas.microsoft.com/ado/2007/08/dataservices";

/** sax's states outside any markup: nothing read since can be part of a tag. */
const OUTSIDE_MARKUP = new Set(["BEGIN", "BEGIN_WHITESPACE", "TEXT", "TEXT_ENTITY"].map((s) => sax.STATE[s]!));

/** The attribute of an element (by namespace and local name) that holds a URL, besides `xml:base` on any. */
function urlAttribute(tag: QualifiedTag): string | undefined {
  if (tag.uri === ATOM) return tag.local === "link" ? "href" : tag.local === "content" ? "src" : undefined;
  if (tag.uri === APP && tag.local === "collection") return "href";
  return undefined;
}

/** An element whose text is a URL: Atom's `<id>`, and the `<uri>` of a `$links` answer (never a property's). */
function urlText(tag: QualifiedTag, parent: QualifiedTag | undefined): boolean {
  if (tag.uri === ATOM) return tag.local === "id";
  return tag.uri === DATASERVICES && tag.local === "uri" && (parent === undefined || (parent.uri === DATASERVICES && parent.local === "links"));
}

function escapeXml(s: string, quote: string): string {
  return s.replace(quote === "'" ? /[&<']/g : /[&<"]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === '"' ? "&quot;" : "&apos;"));
}

class XmlUrls extends Transform {
  private readonly decoder = new StringDecoder("utf8");
  private readonly parser: SAXParser = sax.parser(true, { xmlns: true, position: true, trim: false, normalize: false });
  private readonly stack: QualifiedTag[] = [];
  /** Characters not yet passed on, from the answer's character {@link pendingStart}. */
  private pending = "";
  private pendingStart = 0;
  private out = "";
  /** The URL element being read: where its content starts, its text, and whether it holds more than text. */
  private capture: { start: number; depth: number; text: string; plain: boolean } | undefined;
  /** The first bytes, until the XML declaration's encoding is known. */
  private head: Buffer | undefined = Buffer.alloc(0);
  private failed = false;
  /** Set when the answer is not read at all (its encoding): its bytes pass as they come. */
  private unread = false;

  constructor(private readonly rewrite: UrlRewrite) {
    super();
    const p = this.parser;
    p.onopentag = (tag) => this.open(tag);
    p.onclosetag = () => this.close();
    p.ontext = (text) => {
      if (this.capture !== undefined) this.capture.text += text;
    };
    p.oncdata = () => {
      if (this.capture !== undefined) this.capture.plain = false;
    };
    p.onerror = () => {
      this.failed = true;
    };
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.head !== undefined) {
      this.head = Buffer.concat([this.head, chunk]);
      if (this.head.length < 256 && !this.head.includes("?>")) return done();
      chunk = this.takeHead();
    }
    if (this.unread) return done(null, chunk);
    this.parse(this.decoder.write(chunk));
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.head !== undefined) {
      const head = this.takeHead();
      if (this.unread) return done(null, head);
      this.parse(this.decoder.write(head));
    }
    if (this.unread) return done();
    const rest = this.decoder.end();
    if (rest !== "") this.parse(rest);
    this.capture = undefined;
    this.passUpTo(this.pendingStart + this.pending.length);
    done();
  }

  /** The first bytes, once the XML declaration's encoding is known from them: another than UTF-8 is not read. */
  private takeHead(): Buffer {
    const head = this.head!;
    this.head = undefined;
    const declared = /^(?:\u00EF\u00BB\u00BF)?<\?xml[^>]*?encoding\s*=\s*["']([^"']*)["']/.exec(head.subarray(0, 256).toString("latin1"));
    if (declared !== null && !/^utf-?8$/i.test(declared[1]!)) this.unread = true;
    return head;
  }

  private parse(s: string): void {
    this.pending += s;
    if (!this.failed) this.parser.write(s);
    if (this.failed) {
      // Not well-formed XML (any more): what is left passes as it is.
      this.capture = undefined;
      this.passUpTo(this.pendingStart + this.pending.length);
      return;
    }
    const p = this.parser;
    const end = this.capture !== undefined ? this.capture.start : OUTSIDE_MARKUP.has(p.state) || p.startTagPosition === undefined ? p.position : p.startTagPosition - 1;
    this.passUpTo(Math.max(end, this.pendingStart));
  }

  /** Passes on every character before `end` (an answer position). */
  private passUpTo(end: number): void {
    const cut = end - this.pendingStart;
    if (cut > 0) {
      this.out += this.pending.slice(0, cut);
      this.pending = this.pending.slice(cut);
      this.pendingStart = end;
    }
    if (this.out !== "") this.push(Buffer.from(this.out, "utf8"));
    this.out = "";
  }

  /** Replaces `pending` from `from` to `to` (answer positions) with `text`. */
  private replace(from: number, to: number, text: string): void {
    this.out += this.pending.slice(0, from - this.pendingStart) + text;
    this.pending = this.pending.slice(to - this.pendingStart);
    this.pendingStart = to;
  }

  private open(tag: QualifiedTag): void {
    const p = this.parser;
    const parent = this.stack[this.stack.length - 1];
    this.stack.push(tag);
    if (this.capture !== undefined) {
      this.capture.plain = false;
      this.capture.depth++;
      return;
    }
    const start = p.startTagPosition! - 1;
    const end = p.position;
    const named = urlAttribute(tag);
    let raw: string | undefined;
    for (const qname in tag.attributes) {
      const attr = tag.attributes[qname]!;
      if (!((attr.uri === XML && attr.local === "base") || (attr.uri === "" && attr.name === named))) continue;
      const rewritten = this.rewrite(attr.value);
      if (rewritten === attr.value) continue;
      raw ??= this.pending.slice(start - this.pendingStart, end - this.pendingStart);
      const escaped = qname.replace(/[.]/g, "\\.");
      raw = raw.replace(new RegExp(`(\\s${escaped}\\s*=\\s*)(?:"[^"]*"|'[^']*')`), (m, lead: string) => {
        const quote = m[lead.length]!;
        return `${lead}${quote}${escapeXml(rewritten, quote)}${quote}`;
      });
    }
    if (raw !== undefined) this.replace(start, end, raw);
    if (!tag.isSelfClosing && urlText(tag, parent)) this.capture = { start: end, depth: 0, text: "", plain: true };
  }

  private close(): void {
    this.stack.pop();
    const capture = this.capture;
    if (capture === undefined) return;
    if (capture.depth > 0) {
      capture.depth--;
      return;
    }
    this.capture = undefined;
    const raw = this.pending.slice(capture.start - this.pendingStart, this.parser.position - this.pendingStart);
    const contentEnd = capture.start + raw.lastIndexOf("</");
    const content = raw.slice(0, contentEnd - capture.start);
    // Only plain text is rewritten (an entity or a CDATA section would need writing anew).
    if (!capture.plain || content.includes("&")) return;
    const [, lead, url, trail] = /^(\s*)([^]*?)(\s*)$/.exec(content)!;
    const rewritten = this.rewrite(url!);
    if (rewritten !== url) this.replace(capture.start, contentEnd, `${lead}${escapeXml(rewritten, '"')}${trail}`);
  }
}
