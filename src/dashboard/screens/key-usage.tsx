/**
 * One key's usage on its page: its data requests over the last 30 days
 * (`GET /admin/usage?group_by=api_key`, the key's group among the 100 with
 * most requests), and links to its entries in the request log.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, call } from "../api.js";
import { count, type Usage } from "../api-overview.js";
import { logsHref } from "../names.js";
import { Link } from "./links.js";
import { withRequestId } from "./sign-in.js";

const number = new Intl.NumberFormat("en");
const DAYS = 30;

export function KeyUsage({ keyId, keyName }: { readonly keyId: string; readonly keyName: string }) {
  const [usage, setUsage] = useState<Usage | undefined>(undefined);
  const [error, setError] = useState("");
  useEffect(() => {
    let live = true;
    const from = new Date(Date.now() - DAYS * 86_400_000).toISOString();
    const query = new URLSearchParams({ from, bucket: "day", group_by: "api_key", group_limit: "100" });
    call<Usage>("GET", `/admin/usage?${query}`).then(
      ({ data }) => live && setUsage(data),
      (err: unknown) => live && setError(err instanceof ApiError ? withRequestId(err) : String(err)),
    );
    return () => {
      live = false;
    };
  }, [keyId]);

  const group = usage?.groups?.find((g) => g.key === keyId);
  let summary: string;
  if (usage === undefined) summary = error === "" ? "Loading usage…" : error;
  else if (group !== undefined) {
    const c = group.counts ?? {};
    summary = `${number.format(count(c.requests))} data requests in the last ${DAYS} days: ${number.format(count(c.allowed))} allowed, ${number.format(count(c.denied))} denied, ${number.format(count(c.rate_limited))} rate limited.`;
  } else if ((usage.more_groups ?? 0) > 0) summary = `Fewer data requests in the last ${DAYS} days than the 100 busiest keys: see its log entries.`;
  else summary = `No data requests in the last ${DAYS} days.`;

  return (
    <section class="key-usage" aria-labelledby="key-usage-title">
      <h3 id="key-usage-title">Usage of {keyName}</h3>
      <p aria-busy={usage === undefined && error === "" ? "true" : undefined}>{summary}</p>
      <p>
        <Link href={logsHref({ api_key_id: keyId })}>Log entries of {keyName}</Link>
        {" · "}
        <Link href={logsHref({ api_key_id: keyId, status: "4xx" })}>Refused requests of {keyName}</Link>
      </p>
    </section>
  );
}
