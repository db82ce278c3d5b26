/**
 * What the Logs and Audit screens share: a view (filters and page) kept in
 * the page URL's query, read again on Back and Forward; the page of entries
 * it selects, loaded whenever it changes; and the pager between pages.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, type ApiResult } from "../api.js";
import { filtersFromUrl, pushUrlState } from "../api-ops.js";
import { withRequestId } from "./sign-in.js";

/** The view in the URL (`state` names), the filter form's draft (`filters` names), and a way to go to another view. */
export function useUrlView(state: readonly string[], filters: readonly string[]) {
  const [view, setView] = useState(() => filtersFromUrl(state));
  const [draft, setDraft] = useState(() => filtersFromUrl(filters));
  // Back and Forward move between views: read the URL again.
  useEffect(() => {
    const onPop = () => {
      setView(filtersFromUrl(state));
      setDraft(filtersFromUrl(filters));
    };
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);
  const go = (next: Record<string, string>) => {
    pushUrlState(next);
    setView(filtersFromUrl(state));
  };
  return { view, draft, setDraft, go };
}

/**
 * One page of entries, loaded again whenever `key` changes (a stale answer
 * is dropped); `error` holds a failed call's message with its request id.
 */
export function usePage<T>(load: () => Promise<ApiResult<readonly T[]>>, key: string) {
  const [items, setItems] = useState<readonly T[] | undefined>(undefined);
  const [next, setNext] = useState("");
  const [error, setError] = useState("");
  useEffect(() => {
    let live = true;
    setError("");
    setItems(undefined);
    load()
      .then((page) => {
        if (!live) return;
        setItems(page.data);
        setNext(page.nextPageToken ?? "");
      })
      .catch((err) => live && err instanceof ApiError && setError(withRequestId(err)));
    return () => {
      live = false;
    };
  }, [key]);
  return { items, next, error, setError };
}

/** "Newest …" and "Older …" buttons between pages of a newest-first list. */
export function Pager(props: {
  readonly label: string;
  /** What the list holds, plural: "entries", "changes". */
  readonly noun: string;
  /** The page shown (its token; "" for the newest). */
  readonly pageToken: string;
  /** The next page's token ("" on the last page). */
  readonly next: string;
  readonly loaded: boolean;
  readonly onPage: (pageToken: string) => void;
}) {
  return (
    <nav class="pager" aria-label={props.label}>
      {props.pageToken !== "" && (
        <button type="button" class="secondary" onClick={() => props.onPage("")}>
          Newest {props.noun}
        </button>
      )}
      {props.next !== "" && props.loaded && (
        <button type="button" class="secondary" onClick={() => props.onPage(props.next)}>
          Older {props.noun}
        </button>
      )}
    </nav>
  );
}
