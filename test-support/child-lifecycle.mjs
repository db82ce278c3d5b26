/**
 * The child side of ./child-backend.ts: a test back end's server closes
 * and exits on SIGTERM and SIGINT, and, when `watchStdin`, when its parent
 * (which holds its stdin open) goes away.
 */
export function exitWithParent(server, watchStdin) {
  const shutdown = () => {
    server.closeAllConnections?.();
    server.close();
    process.exit(0);
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
  if (watchStdin) {
    process.stdin.on("end", shutdown);
    process.stdin.on("error", shutdown);
    process.stdin.resume();
  }
}
