/**
 * A process that writes to an embedded store until it is killed, for
 * test/store/embedded-durability.test.ts: it inserts documents and deletes
 * every third one's oldest surviving predecessor, printing (stdout on a pipe
 * is synchronous on Linux, so a line the parent has not read was not yet
 * written) `delete <id>` before a delete, `ack insert|delete <id>` once a
 * write is acknowledged, `fail insert|delete <id> <error>` when it is
 * refused, and `visible <id>` should a refused insert be readable afterwards.
 *
 * Usage: node --import tsx test-support/embedded-writer.ts <data dir> <pad bytes> [faults]
 * With `faults`, every fifth write fails partway (./faulty-disk.ts).
 */
import { createEmbeddedBackend } from "../src/store/embedded.js";
import { faultyDisk } from "./faulty-disk.js";

const [dataDir, padArg, mode] = process.argv.slice(2);
if (dataDir === undefined) throw new Error("usage: embedded-writer.ts <data dir> <pad bytes> [faults]");
const pad = "x".repeat(Number(padArg ?? 0));
const disk = mode === "faults" ? faultyDisk() : undefined;
const backend = await createEmbeddedBackend({ dataDir, compactionIntervalMs: 0, openFile: disk?.openFile });
const items = await backend.collection({ name: "items", indexes: [] });

const say = (line: string) => process.stdout.write(`${line}\n`);
const why = (err: unknown) => (err as { name?: string; cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code ?? (err as Error).name;
const live: string[] = [];
say("ready");
for (let n = 0; ; n++) {
  if (disk !== undefined && n % 5 === 4) disk.fail(n % 10 === 4 ? "partial" : "sync", 1);
  const id = `doc-${String(n).padStart(7, "0")}`;
  try {
    await items.insert({ _id: id, n, pad });
    say(`ack insert ${id}`);
    live.push(id);
  } catch (err) {
    say(`fail insert ${id} ${why(err)}`);
    if ((await items.get(id)) !== undefined) say(`visible ${id}`);
  }
  if (n % 3 === 2 && live.length > 1) {
    const victim = live.shift()!;
    say(`delete ${victim}`);
    try {
      await items.delete(victim);
      say(`ack delete ${victim}`);
    } catch (err) {
      say(`fail delete ${victim} ${why(err)}`);
      live.unshift(victim);
    }
  }
  // Let the event loop breathe (and the parent read) between writes.
  await new Promise((resolve) => setImmediate(resolve));
}
