/**
 * A raw HTTP/1.1 client for the fuzzer: writes the request line, headers and
 * body byte for byte as generated (Node's and undici's clients, and
 * light-my-request's `inject`, parse and normalize the target with the
 * WHATWG URL parser first, which would hide exactly what the fuzzer looks
 * for), over a kept-alive connection, and reads the answer with a small
 * parser (Content-Length, chunked, or until close).
 */
import net from "node:net";

/** A request as it goes on the wire. */
export interface RawRequest {
  readonly method: string;
  /** The request-target, written as UTF-8 bytes (so non-ASCII goes raw). */
  readonly target: string;
  /** Header lines in order; `Host` and `Content-Length` are added unless given. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: Buffer;
}

/** An answer as read from the wire. */
export interface RawResponse {
  readonly status: number;
  /** Header names in lower case; repeated ones joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** Whether the server closed the connection after it. */
  readonly closed: boolean;
}

/** A client of one server; requests are sent one at a time. */
export class RawClient {
  #socket: net.Socket | undefined;
  #buffer: Buffer = Buffer.alloc(0);
  #waiter: (() => void) | undefined;
  #ended = false;

  constructor(
    readonly host: string,
    readonly port: number,
    readonly timeoutMs = 10_000,
  ) {}

  async #connect(): Promise<net.Socket> {
    if (this.#socket !== undefined && !this.#ended && !this.#socket.destroyed) return this.#socket;
    this.#buffer = Buffer.alloc(0);
    this.#ended = false;
    const socket = net.connect({ host: this.host, port: this.port });
    this.#socket = socket;
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    // Events of a connection given up earlier must not touch the current one.
    socket.on("data", (chunk: Buffer) => {
      if (this.#socket !== socket) return;
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#waiter?.();
    });
    const end = () => {
      if (this.#socket !== socket) return;
      this.#ended = true;
      this.#waiter?.();
    };
    socket.on("end", end);
    socket.on("close", end);
    socket.on("error", end);
    this.#socket = socket;
    return socket;
  }

  /** Waits until `ready()` holds or the connection ends; false on end. */
  async #until(ready: () => boolean, deadline: number): Promise<boolean> {
    while (!ready()) {
      if (this.#ended) return false;
      if (Date.now() > deadline) throw new Error("raw client: no answer in time");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#waiter = undefined;
    }
    return true;
  }

  /** Sends one request and reads its answer. */
  async send(req: RawRequest): Promise<RawResponse> {
    const socket = await this.#connect();
    const lines = [`${req.method} ${req.target} HTTP/1.1`];
    const names = new Set(req.headers.map(([n]) => n.toLowerCase()));
    if (!names.has("host")) lines.push(`Host: ${this.host}:${this.port}`);
    for (const [n, v] of req.headers) lines.push(`${n}: ${v}`);
    const body = req.body ?? Buffer.alloc(0);
    if (!names.has("content-length") && !names.has("transfer-encoding") && (body.length > 0 || !["GET", "HEAD", "DELETE"].includes(req.method))) {
      lines.push(`Content-Length: ${body.length}`);
    }
    const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "utf8");
    socket.write(body.length > 0 ? Buffer.concat([head, body]) : head);
    return this.#read(req.method === "HEAD");
  }

  async #read(isHead: boolean): Promise<RawResponse> {
    const deadline = Date.now() + this.timeoutMs;
    const headEnd = () => this.#buffer.indexOf("\r\n\r\n");
    if (!(await this.#until(() => headEnd() >= 0, deadline)) && this.#buffer.length === 0) {
      this.close();
      return { status: 0, headers: {}, body: Buffer.alloc(0), closed: true };
    }
    const he = headEnd();
    if (he < 0) {
      const rest = this.#buffer;
      this.close();
      return { status: 0, headers: {}, body: rest, closed: true };
    }
    const headText = this.#buffer.subarray(0, he).toString("latin1");
    this.#buffer = this.#buffer.subarray(he + 4);
    const [statusLine, ...headerLines] = headText.split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1] ?? 0);
    const headers: Record<string, string> = {};
    for (const line of headerLines) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    let body: Buffer;
    const noBody = isHead || status === 204 || status === 304 || (status >= 100 && status < 200);
    if (noBody) {
      body = Buffer.alloc(0);
    } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const parts: Buffer[] = [];
      for (;;) {
        await this.#until(() => this.#buffer.indexOf("\r\n") >= 0, deadline);
        const eol = this.#buffer.indexOf("\r\n");
        if (eol < 0) break;
        const size = parseInt(this.#buffer.subarray(0, eol).toString("latin1"), 16);
        if (!Number.isFinite(size)) throw new Error("raw client: malformed chunk size");
        await this.#until(() => this.#buffer.length >= eol + 2 + size + 2, deadline);
        parts.push(this.#buffer.subarray(eol + 2, eol + 2 + size));
        this.#buffer = this.#buffer.subarray(eol + 2 + size + 2);
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else if (headers["content-length"] !== undefined) {
      const n = Number(headers["content-length"]);
      await this.#until(() => this.#buffer.length >= n, deadline);
      body = this.#buffer.subarray(0, n);
      this.#buffer = this.#buffer.subarray(n);
    } else {
      await this.#until(() => false, deadline);
      body = this.#buffer;
      this.#buffer = Buffer.alloc(0);
    }
    const closed = /close/i.test(headers.connection ?? "") || this.#ended;
    if (closed) this.close();
    return { status, headers, body: Buffer.from(body), closed };
  }

  /** Closes the connection (a new one is opened by the next request). */
  close(): void {
    const socket = this.#socket;
    this.#socket = undefined;
    this.#ended = true;
    this.#buffer = Buffer.alloc(0);
    socket?.destroy();
  }
}
