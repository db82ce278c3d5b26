/**
 * Long lists of the dashboard, virtualized: TanStack Virtual's
 * framework-free core (`@tanstack/virtual-core`) driven from Preact hooks,
 * as its React adapter drives it. Only the rows in (and near) the scrolled
 * view are rendered; rows are measured once shown, so rows of different
 * heights (a warning, a hint) are placed where they are.
 *
 * The rendered rows sit in the normal flow between two spacers whose sizes
 * are set through the CSSOM (`element.style`, as Preact's `style` prop
 * does), which the dashboard's Content-Security-Policy allows: no style
 * attribute is ever written into the served HTML.
 */
import { Virtualizer, elementScroll, observeElementOffset, observeElementRect, type VirtualItem } from "@tanstack/virtual-core";
import { useLayoutEffect, useReducer, useState } from "preact/hooks";

/** What a list needs to be virtualized. */
export interface VirtualOptions {
  /** How many rows the list has. */
  readonly count: number;
  /** The element that scrolls (null before it is mounted). */
  readonly scrollElement: () => HTMLElement | null;
  /** A row's height before it is measured, in pixels. */
  readonly estimate: number;
  /** A stable key of row `index` (its name), so that measurements follow rows when the list changes. */
  readonly key: (index: number) => string;
  /** The height of the scrolled view assumed before it is measured (renders the first screen at once). */
  readonly initialHeight?: number;
  /** Rows rendered beyond each edge of the view. */
  readonly overscan?: number;
}

/** The rows to render and the space to leave before and after them. */
export interface VirtualRows {
  readonly items: readonly VirtualItem[];
  /** Pixels above the first rendered row. */
  readonly before: number;
  /** Pixels below the last rendered row. */
  readonly after: number;
  /** Measures a rendered row (its element carries `data-index`). */
  readonly measure: (el: Element | null) => void;
  /** Scrolls row `index` into the view (it is rendered on the next frame). */
  readonly scrollTo: (index: number) => void;
}

/**
 * Up to this many rows a list is rendered whole (its scrolled view sized by
 * its content); above, it is virtualized in a view of fixed height, which
 * the stylesheet gives lists marked `virtual`.
 */
export const VIRTUAL_ABOVE = 40;

/** A Preact hook over one TanStack `Virtualizer`. */
export function useVirtualRows(options: VirtualOptions): VirtualRows {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const resolved = {
    count: options.count,
    getScrollElement: options.scrollElement,
    estimateSize: () => options.estimate,
    getItemKey: options.key,
    overscan: options.overscan ?? 8,
    initialRect: { width: 0, height: options.initialHeight ?? 480 },
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    onChange: () => rerender(0),
  };
  const [virtualizer] = useState(() => new Virtualizer<HTMLElement, Element>(resolved));
  // Stable, so that rows' refs are not detached and attached again on every render.
  const [measure] = useState(() => (el: Element | null) => virtualizer.measureElement(el));
  virtualizer.setOptions(resolved);
  useLayoutEffect(() => virtualizer._didMount(), []);
  useLayoutEffect(() => virtualizer._willUpdate());
  const items = virtualizer.getVirtualItems();
  const total = virtualizer.getTotalSize();
  const first = items[0];
  const last = items[items.length - 1];
  return {
    items,
    before: first?.start ?? 0,
    after: last === undefined ? 0 : Math.max(0, total - last.end),
    measure,
    scrollTo: (index) => virtualizer.scrollToIndex(index, { align: "auto" }),
  };
}
