/**
 * A save refused because the resource changed since the form was opened
 * (412 on `If-Match`): what changed meanwhile, in words, and the admin's
 * two ways on: reload that version (the edits are dropped) or overwrite it
 * with the fields they changed. Keys, instances and systems show it alike.
 */
export function ConflictBox(props: {
  /** The resource in words: "key", "instance", "system". */
  readonly what: string;
  /** The fields that differ between the version opened and the current one, in words. */
  readonly changed: readonly string[];
  readonly id: string;
  readonly busy: boolean;
  readonly onReload: () => void;
  readonly onOverwrite: () => void;
}) {
  return (
    <div class="conflict" role="alert" aria-labelledby={props.id}>
      <p id={props.id}>
        <strong>Not saved: this {props.what} was changed since you opened it</strong>
        {props.changed.length === 0 ? " (by a change that left its fields as they were)." : ` (its ${props.changed.join(", ")}).`}
      </p>
      <p>Reload to see that version (your edits are dropped), or overwrite it with the fields you changed.</p>
      <div class="actions">
        <button type="button" onClick={props.onReload} disabled={props.busy}>
          Reload the {props.what}
        </button>
        <button type="button" class="danger" onClick={props.onOverwrite} disabled={props.busy}>
          Overwrite with my changes
        </button>
      </div>
    </div>
  );
}
