/**
 * A small tmpfs for tests of a full disk: mounted under the system's
 * temporary directory where this process may mount one (root, on a kernel
 * and container that allow it), unmounted when the process exits or is
 * stopped by SIGTERM or SIGINT. Elsewhere {@link mountTmpfs} says why not,
 * for the test to print and skip.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmdirSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A mounted tmpfs. */
export interface Tmpfs {
  /** Its mount point. */
  readonly dir: string;
  /** Writes a file that takes every free byte (until ENOSPC). */
  fill(): Promise<void>;
  /** Removes that file again. */
  free(): Promise<void>;
}

/** Mounts a tmpfs of `sizeKiB` KiB, or says why it cannot. */
export function mountTmpfs(sizeKiB: number): Tmpfs | { readonly skip: string } {
  if (process.platform !== "linux") return { skip: `tmpfs needs Linux (this is ${process.platform})` };
  if (process.getuid?.() !== 0) return { skip: `mounting a tmpfs needs root (uid ${process.getuid?.()})` };
  const dir = mkdtempSync(join(tmpdir(), "erplink-tmpfs-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeKiB}k`, "tmpfs", dir], { encoding: "utf8" });
  if (mounted.status !== 0) {
    rmdirSync(dir);
    return { skip: `mount -t tmpfs failed: ${(mounted.stderr || mounted.error?.message || `exit ${mounted.status}`).trim()}` };
  }
  const unmount = () => {
    spawnSync("umount", ["-l", dir]);
    try {
      rmdirSync(dir);
    } catch {
      // still busy: left for the system's cleanup
    }
  };
  process.on("exit", unmount);
  // A run stopped from outside (a timeout, ^C) unmounts too.
  for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
    process.once(signal, () => {
      unmount();
      process.exit(code);
    });
  }
  const filler = join(dir, "filler");
  return {
    dir,
    async fill() {
      try {
        await writeFile(filler, Buffer.alloc(sizeKiB * 1024));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
        return;
      }
      throw new Error(`the tmpfs at ${dir} took ${sizeKiB} KiB without filling up`);
    },
    async free() {
      await rm(filler, { force: true });
    },
  };
}
