/**
 * The matrix view of one service's entity sets: a table whose rows are the
 * entity sets (as filtered) and whose columns are the five operations on
 * entity sets. A cell is a checkbox; a row's "all" checkbox and a column's
 * header checkbox grant or withdraw that operation (or all five) for the
 * whole row or every shown row at once; they show "mixed" when only some
 * are granted. Only the five operations are changed: whatever else an
 * entry holds (`invoke`) is kept.
 *
 * A real table (caption, column and row headers with `scope`, every
 * checkbox named), usable from the keyboard (Tab, Space, and the arrow keys
 * move between checkboxes, scrolling rows into view), its rows virtualized.
 */
import { useMemo, useRef } from "preact/hooks";
import { SET_OPERATIONS, withOperation, type Permissions } from "../permission-draft.js";
import { memo } from "./memo.js";
import { VIRTUAL_ABOVE, useVirtualRows } from "./use-virtual.js";

interface MatrixProps {
  readonly inst: string;
  readonly service: string;
  /** The rows: the service's entity sets (and `*`), as filtered. */
  readonly names: readonly string[];
  /** The service's entries. */
  readonly sets: Readonly<Record<string, readonly string[]>>;
  /** Whether `names` is narrowed by the filter (said in the caption). */
  readonly filtered: boolean;
  readonly update: (change: (p: Permissions) => Permissions) => void;
  /** Unique on the page. */
  readonly idPrefix: string;
}

/** How many of `names` have each of the five operations. */
function columnCounts(names: readonly string[], sets: Readonly<Record<string, readonly string[]>>): number[] {
  const counts = SET_OPERATIONS.map(() => 0);
  for (const name of names) {
    const ops = sets[name] ?? [];
    SET_OPERATIONS.forEach((op, i) => {
      if (ops.includes(op)) counts[i]! += 1;
    });
  }
  return counts;
}

/** The checkbox of a header: on when all are granted, mixed when some are. */
function TriState(props: { readonly id?: string; readonly label: string; readonly of: number; readonly on: number; readonly r: number; readonly c: number; readonly onToggle: (on: boolean) => void }) {
  const all = props.of > 0 && props.on === props.of;
  return (
    <input
      type="checkbox"
      id={props.id}
      aria-label={props.label}
      checked={all}
      indeterminate={props.on > 0 && !all}
      disabled={props.of === 0}
      data-r={props.r}
      data-c={props.c}
      onChange={(e) => {
        // A click on "all" (or "mixed") withdraws only when all were granted; otherwise it grants all.
        e.currentTarget.checked = all;
        props.onToggle(!all);
      }}
    />
  );
}

const MatrixRow = memo(function MatrixRow(props: {
  readonly inst: string;
  readonly service: string;
  readonly name: string;
  readonly ops: readonly string[] | undefined;
  readonly row: number;
  readonly update: MatrixProps["update"];
}) {
  const { inst, service, name, row, update } = props;
  const ops = props.ops ?? [];
  const granted = SET_OPERATIONS.filter((op) => ops.includes(op)).length;
  const label = name === "*" ? "* (every entity set)" : name;
  return (
    <>
      <th scope="row">{label}</th>
      <td>
        <TriState
          label={`Every operation of ${label}`}
          of={SET_OPERATIONS.length}
          on={granted}
          r={row}
          c={0}
          onToggle={(on) => update((p) => withOperation(p, inst, service, [name], SET_OPERATIONS, on))}
        />
      </td>
      {SET_OPERATIONS.map((op, i) => (
        <td key={op}>
          <input
            type="checkbox"
            aria-label={`${op} ${label}`}
            checked={ops.includes(op)}
            data-r={row}
            data-c={i + 1}
            onChange={(e) => {
              const on = e.currentTarget.checked;
              update((p) => withOperation(p, inst, service, [name], [op], on));
            }}
          />
        </td>
      ))}
    </>
  );
});

export function PermissionMatrix({ inst, service, names, sets, filtered, update, idPrefix }: MatrixProps) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtual = names.length > VIRTUAL_ABOVE;
  const rows = useVirtualRows({ count: virtual ? names.length : 0, scrollElement: () => scrollRef.current, estimate: 33, key: (i) => names[i]!, initialHeight: 420, overscan: 12 });
  const items = virtual ? rows.items : names.map((_, index) => ({ index }));
  const counts = useMemo(() => columnCounts(names, sets), [names, sets]);
  const everyOp = counts.reduce((a, b) => a + b, 0);
  const shown = filtered ? "entity set shown" : "entity set";

  /** Arrow keys move between the checkboxes (header row: -1; column 0: "all"). */
  const onKeyDown = (e: KeyboardEvent) => {
    const el = e.target as HTMLElement;
    if (el.dataset.r === undefined || el.dataset.c === undefined) return;
    const move: Record<string, [number, number]> = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    const d = move[e.key];
    if (d === undefined) return;
    const r = Number(el.dataset.r) + d[0];
    const c = Number(el.dataset.c) + d[1];
    if (r < -1 || r >= names.length || c < 0 || c > SET_OPERATIONS.length) return;
    e.preventDefault();
    if (r >= 0 && virtual) rows.scrollTo(r);
    const focus = (tries: number) => {
      const target = scrollRef.current?.querySelector<HTMLInputElement>(`input[data-r="${r}"][data-c="${c}"]`);
      if (target) target.focus();
      else if (tries > 0) requestAnimationFrame(() => focus(tries - 1));
    };
    focus(10);
  };

  return (
    <div class={virtual ? "perm-matrix-wrap virtual" : "perm-matrix-wrap"} ref={scrollRef} onKeyDown={onKeyDown}>
      <table class="perm-matrix" aria-rowcount={names.length + 1}>
        <caption>
          Operations on the entity sets of {service} on {inst}
          {filtered ? ` (${names.length} shown by the filter)` : ""}
        </caption>
        <thead>
          <tr aria-rowindex={1}>
            <th scope="col">Entity set</th>
            <th scope="col">
              <TriState
                id={`${idPrefix}-all`}
                label={`Every operation of every ${shown}`}
                of={names.length * SET_OPERATIONS.length}
                on={everyOp}
                r={-1}
                c={0}
                onToggle={(on) => update((p) => withOperation(p, inst, service, names, SET_OPERATIONS, on))}
              />{" "}
              all
            </th>
            {SET_OPERATIONS.map((op, i) => (
              <th scope="col" key={op}>
                <TriState
                  id={`${idPrefix}-col-${op}`}
                  label={`${op}, every ${shown}`}
                  of={names.length}
                  on={counts[i]!}
                  r={-1}
                  c={i + 1}
                  onToggle={(on) => update((p) => withOperation(p, inst, service, names, [op], on))}
                />{" "}
                {op}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.before > 0 && (
            <tr class="perm-spacer" aria-hidden="true">
              <td colSpan={SET_OPERATIONS.length + 2} style={{ height: `${rows.before}px` }} />
            </tr>
          )}
          {items.map((item) => {
            const name = names[item.index]!;
            return (
              <tr key={name} data-index={item.index} ref={virtual ? rows.measure : undefined} aria-rowindex={item.index + 2}>
                <MatrixRow inst={inst} service={service} name={name} ops={sets[name]} row={item.index} update={update} />
              </tr>
            );
          })}
          {rows.after > 0 && (
            <tr class="perm-spacer" aria-hidden="true">
              <td colSpan={SET_OPERATIONS.length + 2} style={{ height: `${rows.after}px` }} />
            </tr>
          )}
        </tbody>
      </table>
      {names.length === 0 && <p class="hint">No entity set to show.</p>}
    </div>
  );
}
