/**
 * Sorting and paging of a list screen's rows (TanStack Table's headless
 * core does the sorting and paging; this module keeps its state in Preact
 * and draws the controls): a column header is a button that sorts by it
 * (again: the other way; `aria-sort` says which), and below the table the
 * page's place and size, Previous and Next.
 */
import { createTable, getCoreRowModel, getPaginationRowModel, getSortedRowModel, type ColumnDef, type PaginationState, type SortingState } from "@tanstack/table-core";
import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";

/** A sortable column: its id, and the value rows are sorted by (text or a number; undefined sorts last). */
export interface SortColumn<T> {
  readonly id: string;
  readonly value: (row: T) => string | number | undefined;
}

/** What {@link useSortedPages} gives a screen. */
export interface SortedPages<T> {
  /** The rows of the current page, in the chosen order. */
  readonly rows: readonly T[];
  /** A column header's content: a button that sorts by the column. */
  readonly header: (id: string, label: string) => ComponentChildren;
  /** A header cell's `aria-sort`. */
  readonly ariaSort: (id: string) => "ascending" | "descending" | undefined;
  /** The controls below the table (nothing when everything fits on one page). */
  readonly pager: ComponentChildren;
}

const PAGE_SIZES = [25, 50, 100, 250] as const;

/**
 * Sorts and pages `data` by `columns`; the first page is shown again when
 * `resetKey` changes (a new search). `label` names the rows ("keys").
 */
export function useSortedPages<T>(data: readonly T[], columns: readonly SortColumn<T>[], label: string, resetKey: string, pageSize = 50): SortedPages<T> {
  const [sorting, setSorting] = useState<SortingState>([]);
  const [paging, setPagination] = useState<PaginationState>({ pageIndex: 0, pageSize });
  const [shownFor, setShownFor] = useState(resetKey);
  // Decided while rendering, not an effect later: a new search shows its first page at once, and a list
  // grown shorter (a search, a revocation) never shows a page past its last.
  const pages = Math.max(1, Math.ceil(data.length / paging.pageSize));
  const pageIndex = shownFor !== resetKey ? 0 : Math.min(paging.pageIndex, pages - 1);
  const pagination: PaginationState = pageIndex === paging.pageIndex ? paging : { ...paging, pageIndex };
  if (shownFor !== resetKey || pagination !== paging) {
    setShownFor(resetKey);
    setPagination(pagination);
  }

  const defs = useMemo(
    () =>
      columns.map(
        (c): ColumnDef<T> => ({
          id: c.id,
          accessorFn: (row) => c.value(row),
          sortUndefined: "last",
          sortingFn: "basic",
        }),
      ),
    [columns],
  );
  const table = useMemo(() => {
    const t = createTable<T>({
      data: data as T[],
      columns: defs,
      state: {},
      onStateChange: () => {},
      renderFallbackValue: null,
      getCoreRowModel: getCoreRowModel(),
      getSortedRowModel: getSortedRowModel(),
      getPaginationRowModel: getPaginationRowModel(),
      autoResetPageIndex: false,
    });
    t.setOptions((prev) => ({ ...prev, state: { ...t.initialState, sorting, pagination } }));
    return t;
  }, [data, defs, sorting, pagination]);

  const direction = (id: string) => {
    const s = sorting.find((x) => x.id === id);
    return s === undefined ? undefined : s.desc ? "descending" : "ascending";
  };
  const header = (id: string, text: string) => {
    const now = direction(id);
    return (
      <button
        type="button"
        class="sort"
        onClick={() => setSorting(now === "ascending" ? [{ id, desc: true }] : [{ id, desc: false }])}
        aria-label={`Sort by ${text.toLowerCase()}${now === "ascending" ? ", descending" : ""}`}
      >
        {text}
        <span aria-hidden="true">{now === "ascending" ? " ▲" : now === "descending" ? " ▼" : ""}</span>
      </button>
    );
  };
  const first = pagination.pageIndex * pagination.pageSize;
  const pager =
    data.length <= PAGE_SIZES[0] ? null : (
      <nav class="pager" aria-label={`Pages of ${label}`}>
        <span>
          {first + 1}–{Math.min(first + pagination.pageSize, data.length)} of {data.length} {label}, page {pagination.pageIndex + 1} of {pages}
        </span>
        <button type="button" class="secondary" disabled={pagination.pageIndex === 0} onClick={() => setPagination((p) => ({ ...p, pageIndex: p.pageIndex - 1 }))}>
          Previous page
        </button>
        <button type="button" class="secondary" disabled={pagination.pageIndex >= pages - 1} onClick={() => setPagination((p) => ({ ...p, pageIndex: p.pageIndex + 1 }))}>
          Next page
        </button>
        <label>
          {label[0]!.toUpperCase() + label.slice(1)} per page{" "}
          <select value={pagination.pageSize} onChange={(e) => setPagination({ pageIndex: 0, pageSize: Number(e.currentTarget.value) })}>
            {PAGE_SIZES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
      </nav>
    );
  return { rows: table.getRowModel().rows.map((r) => r.original), header, ariaSort: direction, pager };
}
