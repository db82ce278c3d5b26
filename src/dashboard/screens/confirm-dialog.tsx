/**
 * Confirmations in the page's own dialog: a native `<dialog>` opened with
 * `showModal()` (the rest of the page is inert), focus kept inside it, Escape
 * cancels, and the confirm button names the action ("Revoke key"), so that
 * what happens is read on the button pressed.
 *
 * `const [ask, dialog] = useConfirm();` then render `{dialog}` and
 * `if (!(await ask({...}))) return;` where `window.confirm()` was.
 */
import type { ComponentChildren, VNode } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

/** What a confirmation asks. */
export interface ConfirmRequest {
  /** The dialog's heading, a question: "Revoke key invoice app?" */
  readonly title: string;
  /** What happens, in words. */
  readonly message: ComponentChildren;
  /** The confirm button's label, naming the action: "Revoke key". */
  readonly confirm: string;
  /** The cancel button's label; "Cancel" unless given. */
  readonly cancel?: string;
  /** Whether the action destroys something (the confirm button is styled as such). */
  readonly danger?: boolean;
}

interface Pending extends ConfirmRequest {
  readonly resolve: (yes: boolean) => void;
}

/** A confirmation dialog and the function that opens it, resolving true when the action is confirmed. */
export function useConfirm(): [(request: ConfirmRequest) => Promise<boolean>, VNode | null] {
  const [pending, setPending] = useState<Pending | undefined>(undefined);
  // A confirmation left open when the screen goes away answers "no".
  const current = useRef<Pending | undefined>(undefined);
  current.current = pending;
  useEffect(() => () => current.current?.resolve(false), []);
  const ask = (request: ConfirmRequest) =>
    new Promise<boolean>((resolve) => {
      current.current?.resolve(false);
      setPending({ ...request, resolve });
    });
  const dialog =
    pending === undefined ? null : (
      <ConfirmDialog
        request={pending}
        onAnswer={(yes) => {
          pending.resolve(yes);
          setPending(undefined);
        }}
      />
    );
  return [ask, dialog];
}

const FOCUSABLE = "button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";

let serial = 0;

function ConfirmDialog({ request, onAnswer }: { readonly request: ConfirmRequest; readonly onAnswer: (yes: boolean) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [id] = useState(() => `confirm-${++serial}`);
  // Modal as soon as it is in the page (a layout effect, not a frame later): a key pressed at once, Escape, reaches it.
  useLayoutEffect(() => {
    const el = ref.current;
    if (el === null) return;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    el.showModal();
    // The safe choice has the focus: Enter pressed by habit does not destroy anything.
    el.querySelector<HTMLButtonElement>("button.confirm-cancel")?.focus();
    return () => {
      if (el.open) el.close();
      if (opener?.isConnected === true) opener.focus();
    };
  }, []);
  const keepFocusInside = (event: KeyboardEvent) => {
    if (event.key !== "Tab") return;
    const items = [...(ref.current?.querySelectorAll<HTMLElement>(FOCUSABLE) ?? [])];
    if (items.length === 0) return;
    const first = items[0]!;
    const last = items[items.length - 1]!;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };
  return (
    <dialog
      ref={ref}
      class="confirm-dialog"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-message`}
      onKeyDown={keepFocusInside}
      onCancel={(event) => {
        // Escape: the dialog is closed by answering, so the page's state and the element agree.
        event.preventDefault();
        onAnswer(false);
      }}
    >
      <h2 id={`${id}-title`}>{request.title}</h2>
      <div id={`${id}-message`} class="confirm-message">
        {request.message}
      </div>
      <div class="confirm-actions">
        <button type="button" class="secondary confirm-cancel" onClick={() => onAnswer(false)}>
          {request.cancel ?? "Cancel"}
        </button>
        <button type="button" class={request.danger === true ? "danger-solid" : undefined} onClick={() => onAnswer(true)}>
          {request.confirm}
        </button>
      </div>
    </dialog>
  );
}
