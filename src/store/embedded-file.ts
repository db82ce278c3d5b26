/**
 * One collection's data file of the embedded store, in nedb's format (one
 * JSON document per line; a later line for an `_id` replaces an earlier one,
 * `{"$$deleted":true,"_id":…}` removes it; `$$indexCreated` and
 * `$$indexRemoved` lines declare indexes), written here rather than by nedb
 * so that:
 *
 * - an append is acknowledged only once it is on disk (written at the known
 *   end of the file, then `fdatasync`), and one that fails is cut back
 *   (`ftruncate`) to the length the file had before it: no half line is
 *   left for the next append to be glued to. Should the cut fail too, the
 *   next append makes it first, or fails;
 * - at open, a torn or unterminated tail (a write cut short by a crash or a
 *   full disk, zeros a power loss left) is cut back to the last complete
 *   record, and the caller is told what was cut;
 * - a rewrite (compaction) goes to a temporary file, flushed, then renamed
 *   over the file: the file is whole at every moment.
 */
import { open, readFile, rename, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname } from "node:path";

/** nedb's own (de)serialization: Dates as `{"$$date": ms}`. */
const model = createRequire(import.meta.url)("@seald-io/nedb/lib/model.js") as {
  serialize(doc: object): string;
  deserialize(line: string): Record<string, unknown>;
};

/** Serializes a document (or an index declaration) as one line of a data file, without the newline. */
export function serializeLine(doc: object): string {
  return model.serialize(doc);
}

/** The file operations the store's writes go through: node's FileHandle, or a stand-in that fails as a disk would. */
export interface DataFileHandle {
  write(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/** Opens a file for writing: `r+` an existing one, `w` a new or emptied one. */
export type OpenDataFile = (path: string, flags: "r+" | "w") => Promise<DataFileHandle>;

/** node:fs/promises' `open`. */
export const openDataFile: OpenDataFile = (path, flags) => open(path, flags);

/** What {@link DataFile.open} cut from the end of the file. */
export interface CutTail {
  /** Bytes cut. */
  readonly bytes: number;
  /** Lines cut, the unterminated one included. */
  readonly lines: number;
}

/** Bytes read from the end of the file at a time when looking for its last complete record. */
const TAIL_CHUNK = 64 * 1024;

/** Whether a line (without its newline) is a complete record: empty (nedb skips those) or a JSON object. */
function isRecord(line: string): boolean {
  if (line === "") return true;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === "object" && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** Writes all of `buffer` at `position`, however many writes that takes. */
async function writeAll(fh: DataFileHandle, buffer: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buffer.length) {
    const { bytesWritten } = await fh.write(buffer, done, buffer.length - done, position + done);
    if (bytesWritten <= 0) throw new Error(`a write of ${buffer.length - done} bytes wrote nothing`);
    done += bytesWritten;
  }
}

/** Flushes a directory's entries (a rename in it), where the platform allows. */
async function syncDirectory(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** A collection's data file. Its methods must not overlap (nedb's executor runs one operation at a time). */
export class DataFile {
  /** Bytes of whole records: where the next append goes. */
  private length = 0;
  /** Whether bytes past {@link length} may be in the file (an append that failed and could not be cut back). */
  private dirty = false;

  constructor(
    readonly path: string,
    private readonly openFile: OpenDataFile,
    /** Whether an append is flushed to the disk before it is acknowledged. */
    private readonly flush = true,
  ) {}

  /**
   * Makes the file ready: creates it when absent (taking the temporary file
   * of a rewrite that was renamed no further, as nedb does), and cuts a torn
   * or unterminated tail back to the last complete record.
   */
  async open(): Promise<CutTail | undefined> {
    const size = await this.sizeOrCreate();
    const end = await this.lastCompleteEnd(size);
    this.length = end.offset;
    this.dirty = false;
    if (end.offset === size) return undefined;
    const fh = await this.openFile(this.path, "r+");
    try {
      await fh.truncate(end.offset);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    return { bytes: size - end.offset, lines: end.cutLines };
  }

  /** Appends `text` (whole lines) and flushes it; on failure the file is cut back to where it was, or will be before the next append. */
  async append(text: string): Promise<void> {
    const buffer = Buffer.from(text, "utf8");
    const fh = await this.openFile(this.path, "r+");
    try {
      if (this.dirty) {
        await fh.truncate(this.length);
        this.dirty = false;
      }
      try {
        await writeAll(fh, buffer, this.length);
        if (this.flush) await fh.datasync();
      } catch (err) {
        // Part of it may be in the file, or in the page cache only: cut it.
        this.dirty = true;
        await fh.truncate(this.length).then(
          () => (this.dirty = false),
          () => undefined,
        );
        throw err;
      }
    } finally {
      await fh.close().catch(() => undefined);
    }
    this.length += buffer.length;
  }

  /** Replaces the file's content with `lines`: a temporary file, flushed, renamed over it. */
  async rewrite(lines: readonly string[]): Promise<void> {
    const tmp = `${this.path}~`;
    let text = "";
    for (const line of lines) text += `${line}\n`;
    const buffer = Buffer.from(text, "utf8");
    try {
      const fh = await this.openFile(tmp, "w");
      try {
        await writeAll(fh, buffer, 0);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.path);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
    this.length = buffer.length;
    this.dirty = false;
    // The file is whole either way; this makes the rename itself durable.
    await syncDirectory(dirname(this.path)).catch(() => undefined);
  }

  /** The documents the file holds (its complete records, replayed in order), as nedb loads them. */
  async documents(): Promise<Record<string, unknown>[]> {
    const bytes = await readFile(this.path);
    const text = bytes.toString("utf8", 0, Math.min(this.length, bytes.length));
    const byId = new Map<unknown, Record<string, unknown>>();
    for (const line of text.split("\n")) {
      if (line === "") continue;
      let doc: Record<string, unknown>;
      try {
        doc = model.deserialize(line);
      } catch {
        continue; // nedb skips such a line at load too
      }
      if (!doc._id) continue;
      if (doc.$$deleted === true) byId.delete(doc._id);
      else byId.set(doc._id, doc);
    }
    return [...byId.values()];
  }

  /** The file's size, creating it (or taking a rewrite's temporary file) when absent. */
  private async sizeOrCreate(): Promise<number> {
    try {
      return (await stat(this.path)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    try {
      await rename(`${this.path}~`, this.path);
      return (await stat(this.path)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    const fh = await this.openFile(this.path, "w");
    await fh.close();
    await syncDirectory(dirname(this.path)).catch(() => undefined);
    return 0;
  }

  /** Where the last complete record ends, and how many lines follow it, reading the file from its end. */
  private async lastCompleteEnd(size: number): Promise<{ offset: number; cutLines: number }> {
    const fh = await open(this.path, "r");
    try {
      for (let chunk = TAIL_CHUNK; ; chunk *= 2) {
        const from = Math.max(0, size - chunk);
        const buffer = Buffer.alloc(size - from);
        let read = 0;
        while (read < buffer.length) {
          const { bytesRead } = await fh.read(buffer, read, buffer.length - read, from + read);
          if (bytesRead === 0) break;
          read += bytesRead;
        }
        const found = lastComplete(buffer.subarray(0, read), from === 0);
        if (found !== undefined) return { offset: from + found.offset, cutLines: found.cutLines };
      }
    } finally {
      await fh.close();
    }
  }
}

/**
 * In `buffer` (the end of a file; its start when `whole`), where the last
 * complete record ends and how many lines follow it; undefined when the
 * buffer does not reach far enough back to tell.
 */
function lastComplete(buffer: Buffer, whole: boolean): { offset: number; cutLines: number } | undefined {
  let end = buffer.lastIndexOf(0x0a) + 1;
  let cutLines = end < buffer.length ? 1 : 0;
  if (end === 0) return whole ? { offset: 0, cutLines } : undefined;
  for (;;) {
    // The line ending at `end` (its newline at end - 1) starts after the newline before it.
    const start = end >= 2 ? buffer.lastIndexOf(0x0a, end - 2) + 1 : 0;
    if (start === 0 && !whole) return undefined; // it may begin before the buffer
    if (isRecord(buffer.toString("utf8", start, end - 1))) return { offset: end, cutLines };
    cutLines++;
    end = start;
    if (end === 0) return { offset: 0, cutLines };
  }
}
