/**
 * A Copy button for an id, a key prefix or a command line: the text goes to
 * the clipboard, and a visible, announced line says it did ("Copied"), or,
 * when the browser refuses the clipboard, how to copy it by hand.
 */
import { useEffect, useRef, useState } from "preact/hooks";

interface CopyButtonProps {
  /** The text copied. */
  readonly text: string;
  /** What it is, for the button's accessible name: "Copy <what>". */
  readonly what: string;
  /** The visible label; "Copy" unless given. */
  readonly label?: string;
}

/** How long "Copied" stays visible. */
const SHOWN_MS = 4000;

export function CopyButton({ text, what, label = "Copy" }: CopyButtonProps) {
  const [said, setSaid] = useState("");
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const copy = async () => {
    clearTimeout(timer.current);
    try {
      if (navigator.clipboard === undefined) throw new Error("no clipboard");
      await navigator.clipboard.writeText(text);
      setSaid("Copied");
      timer.current = setTimeout(() => setSaid(""), SHOWN_MS);
    } catch {
      // Kept until the next try: the admin needs it while copying by hand.
      setSaid(`The browser did not allow copying: select the ${what} and press Ctrl+C.`);
    }
  };
  return (
    <span class="copy">
      <button type="button" class="secondary small" onClick={() => void copy()} aria-label={label === "Copy" ? `Copy ${what}` : undefined}>
        {label}
      </button>
      <span class={said === "Copied" ? "copied" : "copy-failed"} role="status">
        {said}
      </span>
    </span>
  );
}
