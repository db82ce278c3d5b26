/**
 * A disk that fails on demand, behind the embedded store's file layer
 * (`openFile` of src/store/embedded.ts): the real files, with chosen writes
 * cut short or refused as a failing disk refuses them (EIO).
 */
import { open } from "node:fs/promises";
import type { DataFileHandle } from "../src/store/embedded-file.js";

/**
 * How a write fails: `partial` writes half of what it was given, then fails;
 * `refused` writes nothing; `sync` writes everything but the flush fails;
 * `partial-stuck` is `partial` whose cut back (truncate) fails too.
 */
export type Fault = "partial" | "refused" | "sync" | "partial-stuck";

/** A disk whose next writes fail as told. */
export interface FaultyDisk {
  /** The store's `openFile`. */
  openFile(path: string, flags: "r+" | "w"): Promise<DataFileHandle>;
  /** The next `count` writes (default: every one until {@link heal}) fail with `fault`. */
  fail(fault: Fault, count?: number): void;
  /** Writes succeed again. */
  heal(): void;
  /** How many writes failed so far. */
  readonly failures: number;
}

function eio(syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EIO: i/o error, ${syscall}`), { code: "EIO", errno: -5, syscall });
}

/** A disk that fails nothing until told. */
export function faultyDisk(): FaultyDisk {
  let fault: Fault | undefined;
  let left = 0;
  let failures = 0;
  /** The fault the next write takes, if any. */
  const take = (): Fault | undefined => {
    if (fault === undefined || left <= 0) return undefined;
    left--;
    failures++;
    return fault;
  };
  return {
    get failures() {
      return failures;
    },
    fail(f, count = Infinity) {
      fault = f;
      left = count;
    },
    heal() {
      fault = undefined;
      left = 0;
    },
    async openFile(path, flags) {
      const fh = await open(path, flags);
      let current: Fault | undefined;
      return {
        async write(buffer, offset, length, position) {
          current = take();
          if (current === undefined) return fh.write(buffer, offset, length, position);
          if (current === "partial" || current === "partial-stuck") {
            await fh.write(buffer, offset, Math.max(1, Math.floor(length / 2)), position);
            throw eio("write");
          }
          if (current === "refused") throw eio("write");
          return fh.write(buffer, offset, length, position);
        },
        async datasync() {
          if (current === "sync") throw eio("fdatasync");
          return fh.datasync();
        },
        async truncate(len) {
          if (current === "partial-stuck") {
            current = undefined;
            throw eio("ftruncate");
          }
          return fh.truncate(len);
        },
        close: () => fh.close(),
      };
    },
  };
}
