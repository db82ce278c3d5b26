/**
 * The Overview: usage of the data path over the last 24 hours, 7 days or
 * 30 days (`GET /admin/usage`, twice: grouped by API key and by entity set),
 * drawn with uPlot, and the newest refused requests from the request log.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { ApiError } from "../api.js";
import { RANGES, count, overviewApi, type LogEntry, type RangeName, type Usage, type UsageCounts } from "../api-overview.js";
import { Chart, type Line } from "./chart.js";
import { loadNames, logsHref } from "../names.js";
import { KeyRef, Link } from "./links.js";
import { withRequestId } from "./sign-in.js";
import "./overview.css";

/** What each denial step means, in words (the request log names the step, the API key's check that refused). */
export const DENIAL_STEPS: Readonly<Record<string, string>> = {
  KEY_INVALID: "the API key was missing, unknown, revoked or expired, or not a data key",
  INSTANCE: "the key has no permission for this instance",
  SERVICE: "the key has no permission for this service",
  ENTITY: "the key has no permission for this entity set, function or action",
  OPERATION: "the key may not perform this operation on the entity set (invoke, on a function or action)",
  NOT_ALLOWED: "erplink never forwards this kind of request",
};

interface Loaded {
  readonly byKey: Usage;
  readonly byEntity: Usage;
  readonly denials: readonly LogEntry[];
}

const number = new Intl.NumberFormat("en");
const ms = (value: number | undefined) => (value === undefined || value === 0 ? "–" : `${number.format(Math.round(value * 10) / 10)} ms`);

export function Overview() {
  const [range, setRange] = useState<RangeName>("24h");
  const [loaded, setLoaded] = useState<Loaded | undefined>(undefined);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const load = async (which: RangeName) => {
    setBusy(true);
    setError("");
    try {
      const now = new Date();
      const [byKey, byEntity, denials] = await Promise.all([
        overviewApi.usage(which, "api_key", now),
        overviewApi.usage(which, "entity", now),
        overviewApi.recentDenials(which, now),
      ]);
      setLoaded({ byKey: byKey.data, byEntity: byEntity.data, denials: denials.data });
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    void load(range);
  }, [range]);
  useEffect(() => {
    void loadNames(["keys"]);
  }, []);

  return (
    <section aria-labelledby="overview-title" class="overview">
      <h1 id="overview-title">Overview</h1>
      <p>How the data path (<code>/odata/…</code>) was used: requests, refusals and the back ends' answer times.</p>
      <div class="overview-controls">
        <fieldset>
          <legend>Period</legend>
          {(Object.keys(RANGES) as RangeName[]).map((name) => (
            <label key={name} class="overview-range">
              <input type="radio" name="overview-range" value={name} checked={range === name} onChange={() => setRange(name)} />
              {RANGES[name].label}
            </label>
          ))}
        </fieldset>
        <button type="button" class="secondary" onClick={() => void load(range)} disabled={busy}>
          {busy ? "Refreshing…" : "Refresh"}
        </button>
      </div>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {loaded === undefined ? error === "" && <p aria-busy="true">Loading usage…</p> : <OverviewBody loaded={loaded} />}
    </section>
  );
}

function OverviewBody({ loaded }: { readonly loaded: Loaded }) {
  const { byKey, byEntity, denials } = loaded;
  const total: UsageCounts = byKey.total ?? {};
  const latency = total.upstream_latency ?? {};
  const steps = Object.entries(total.denied_by_step ?? {})
    .map(([step, n]) => [step, count(n)] as const)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const per = byKey.bucket === "day" ? "day" : "hour";

  const { times, requestLines, latencyLines } = useMemo(() => {
    const series = byKey.series ?? [];
    const times = series.map((p) => Date.parse(p.start) / 1000);
    const of = (f: (c: UsageCounts) => number) => series.map((p) => f(p.counts ?? {}));
    const requestLines: Line[] = [
      { label: "Requests", color: "--chart-requests", values: of((c) => count(c.requests)) },
      { label: "Denied", color: "--chart-denied", values: of((c) => count(c.denied)) },
      { label: "Rate limited", color: "--chart-rate-limited", values: of((c) => count(c.rate_limited)), dash: [6, 3] },
      {
        label: "Upstream errors",
        color: "--chart-upstream-errors",
        values: of((c) => count(c.upstream_client_errors) + count(c.upstream_server_errors)),
        dash: [2, 3],
      },
    ];
    const latencyLines: Line[] = [
      {
        label: "Mean upstream latency (ms)",
        color: "--chart-latency",
        values: series.map((p) => {
          const l = p.counts?.upstream_latency;
          const n = count(l?.count);
          return n === 0 ? null : Math.round(((l?.sum_ms ?? 0) / n) * 10) / 10;
        }),
      },
    ];
    return { times, requestLines, latencyLines };
  }, [byKey]);

  const upstreamErrors = count(total.upstream_client_errors) + count(total.upstream_server_errors);
  return (
    <>
      <p class="overview-range-note">
        From <time dateTime={byKey.from}>{new Date(byKey.from).toLocaleString()}</time> to{" "}
        <time dateTime={byKey.to}>{new Date(byKey.to).toLocaleString()}</time>, one point per {per}.
      </p>
      <dl class="overview-totals" aria-label="Totals">
        <Total term="Requests" value={number.format(count(total.requests))} />
        <Total term="Allowed" value={number.format(count(total.allowed))} />
        <Total term="Denied" value={number.format(count(total.denied))} />
        <Total term="Rate limited" value={number.format(count(total.rate_limited))} />
        <Total
          term="Upstream errors"
          value={number.format(upstreamErrors)}
          note={`${number.format(count(total.upstream_client_errors))} 4xx, ${number.format(count(total.upstream_server_errors))} 5xx`}
        />
        <Total term="Gateway errors" value={number.format(count(total.gateway_errors))} />
        <Total term="Client errors" value={number.format(count(total.client_errors))} />
        <Total term="Upstream latency p50 / p95 / p99" value={`${ms(latency.p50_ms)} / ${ms(latency.p95_ms)} / ${ms(latency.p99_ms)}`} />
      </dl>

      <div class="overview-charts">
        <figure>
          <figcaption id="overview-requests-chart">Requests, denials, rate-limited requests and upstream errors per {per}</figcaption>
          <div role="img" aria-labelledby="overview-requests-chart">
            <Chart times={times} lines={requestLines} yLabel="requests" integer />
          </div>
        </figure>
        <figure>
          <figcaption id="overview-latency-chart">Mean upstream latency per {per}, in milliseconds (gaps: no answers)</figcaption>
          <div role="img" aria-labelledby="overview-latency-chart">
            <Chart times={times} lines={latencyLines} yLabel="ms" />
          </div>
        </figure>
      </div>

      <div class="overview-tables">
        <table>
          <caption>Denials by step</caption>
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col">Meaning</th>
              <th scope="col" class="num">
                Denied
              </th>
            </tr>
          </thead>
          <tbody>
            {steps.length === 0 ? (
              <tr>
                <td colSpan={3}>No denials in this period.</td>
              </tr>
            ) : (
              steps.map(([step, n]) => (
                <tr key={step}>
                  <th scope="row">{step}</th>
                  <td>{DENIAL_STEPS[step] ?? ""}</td>
                  <td class="num">{number.format(n)}</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
        <GroupTable caption="Top API keys" keyHeader="API key" usage={byKey} empty="(no key recognised)" show={(id) => <KeyRef id={id} />} />
        <GroupTable
          caption="Top entity sets"
          keyHeader="Entity set"
          usage={byEntity}
          empty="(no entity set: $metadata, service document or refused early)"
          show={(entity) => (entity === "(other)" ? entity : <Link href={logsHref({ entity })}>{entity}</Link>)}
        />
      </div>

      <table class="overview-denials">
        <caption>Recent refused requests (4xx) of the data path and the admin API, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Status</th>
            <th scope="col">Where</th>
            <th scope="col">Request</th>
            <th scope="col">API key</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {denials.length === 0 ? (
            <tr>
              <td colSpan={6}>No refused requests in this period.</td>
            </tr>
          ) : (
            denials.map((d) => (
              <tr key={d.id}>
                <td>
                  <time dateTime={d.timestamp}>{new Date(d.timestamp).toLocaleString()}</time>
                </td>
                <td>{d.status}</td>
                <td>{(d.path ?? "").startsWith("/odata/") ? "data path" : "admin API"}</td>
                <td class="overview-path">
                  {d.method} {d.path}
                </td>
                <td>
                  <KeyRef id={d.api_key_id} none="none" />
                </td>
                <td>{denialMessage(d)}</td>
              </tr>
            ))
          )}
        </tbody>
      </table>
    </>
  );
}

/**
 * A refused request's reason in words: the step (or code) and the message
 * the client was answered; for entries logged before messages were kept, the
 * denial step explained, else the error code.
 */
export function denialMessage(entry: LogEntry): string {
  const step = entry.denial_step ?? "";
  const code = entry.error_code ?? "";
  const message = entry.error_message ?? "";
  if (message !== "") return `${step !== "" ? step : code !== "" ? code : "refused"}: ${message}`;
  const where = (entry.accesses ?? [])
    .map((a) => `${a.operation ?? ""} ${a.entity ?? ""}`.trim())
    .filter((a) => a !== "")
    .join(", ");
  if (step !== "") {
    const meaning = DENIAL_STEPS[step] ?? step;
    return `${step}: ${meaning}${where === "" ? "" : ` (${where})`}${code === "" ? "" : ` · ${code}`}`;
  }
  return code === "" ? "refused" : code;
}

function Total({ term, value, note }: { readonly term: string; readonly value: string; readonly note?: string }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>
        {value}
        {note !== undefined && <small>{note}</small>}
      </dd>
    </div>
  );
}

function GroupTable(props: {
  readonly caption: string;
  readonly keyHeader: string;
  readonly usage: Usage;
  readonly empty: string;
  /** The group's key as shown (a name and a link). */
  readonly show: (key: string) => ComponentChildren;
}) {
  const groups = props.usage.groups ?? [];
  const more = props.usage.more_groups ?? 0;
  return (
    <table>
      <caption>
        {props.caption}
        {more > 0 && ` (${more} more not shown)`}
      </caption>
      <thead>
        <tr>
          <th scope="col">{props.keyHeader}</th>
          <th scope="col" class="num">
            Requests
          </th>
          <th scope="col" class="num">
            Denied
          </th>
        </tr>
      </thead>
      <tbody>
        {groups.length === 0 ? (
          <tr>
            <td colSpan={3}>No requests in this period.</td>
          </tr>
        ) : (
          groups.map((g) => (
            <tr key={g.key ?? ""}>
              <th scope="row">{g.key === undefined || g.key === "" ? props.empty : props.show(g.key)}</th>
              <td class="num">{number.format(count(g.counts?.requests))}</td>
              <td class="num">{number.format(count(g.counts?.denied))}</td>
            </tr>
          ))
        )}
      </tbody>
    </table>
  );
}
