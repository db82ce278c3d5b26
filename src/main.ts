/**
 * Entry point: reads the environment, composes erplink, listens, and shuts
 * down gracefully on SIGTERM/SIGINT. The only module that reads process.env.
 */
import { ConfigError, loadConfig } from "./config.js";
import { createErplink } from "./app.js";

/**
 * The dashboard's address as a browser on this machine opens it: under
 * `ERPLINK_PUBLIC_URL` when set, else on the host erplink listens on
 * (`localhost` for a wildcard address).
 */
function dashboardUrl(publicUrl: string | undefined, host: string, port: number): string {
  if (publicUrl !== undefined) return `${publicUrl.replace(/\/+$/, "")}/dashboard/`;
  const name = host === "" || host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host;
  return `http://${name}:${port}/dashboard/`;
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`erplink: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const erplink = await createErplink(config);
  const { logger } = erplink;
  if (erplink.generatedMasterKey) {
    // Printed once, on the terminal only; it is never logged.
    process.stderr.write(
      "\n  ERPLINK_MASTER_KEY is not set; generated a master key for this run:\n\n" +
        `    ${erplink.masterKey}\n\n` +
        "  It changes at every start. Set ERPLINK_MASTER_KEY to keep one.\n\n",
    );
    logger.warn("ERPLINK_MASTER_KEY is not set: using a generated master key, printed once on stderr");
  }
  await erplink.app.listen({ host: config.host, port: config.port });
  const addresses = erplink.app.addresses().map((a) => (typeof a === "string" ? { address: a, port: config.port } : a));
  const dashboard = dashboardUrl(config.publicUrl, config.host, addresses[0]?.port ?? config.port);
  logger.info(
    { store: erplink.store.kind, address: addresses.map((a) => `${a.address}:${a.port}`), dashboard },
    "erplink listening (HTTP/1.1 REST + Connect, and h2c gRPC, on one port)",
  );
  // For the person who just ran `npm start`: where to go next.
  process.stderr.write(`\n  Dashboard: ${dashboard}  (sign in with the master key)\n\n`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    erplink.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((err: unknown) => {
  const reason = err instanceof Error ? err.message : String(err);
  process.stderr.write(`erplink: failed to start: ${reason}\n`);
  process.exit(1);
});
