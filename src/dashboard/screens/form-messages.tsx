/**
 * Field errors next to their fields: the field is marked invalid
 * (`aria-invalid="true"`) and described by its message (`aria-describedby`),
 * beside any help text it already had.
 */
import type { ApiError } from "../api.js";
import { fieldErrors } from "../field-messages.js";

/** The attributes that tie an input to its help text and, when it has one, its error. */
export function describedBy(error: string | undefined, errorId: string, helpId?: string): { "aria-invalid"?: "true"; "aria-describedby"?: string } {
  const ids = [helpId, error !== undefined && error !== "" ? errorId : undefined].filter((id): id is string => id !== undefined);
  return {
    ...(error !== undefined && error !== "" ? { "aria-invalid": "true" as const } : {}),
    ...(ids.length > 0 ? { "aria-describedby": ids.join(" ") } : {}),
  };
}

/** A field's error message, shown right below it (nothing when there is none). */
export function FieldMessage({ id, error }: { readonly id: string; readonly error: string | undefined }) {
  if (error === undefined || error === "") return null;
  return (
    <p id={id} class="field-error">
      {error}
    </p>
  );
}

/** What a refused form shows: a banner in words, and the messages by their fields. */
export interface FormFailure {
  readonly banner: string;
  readonly fields: Readonly<Record<string, string>>;
}

/**
 * A refused save in words: the answer's field errors placed on the form's
 * fields by `place` (server field path → form field, "" for none), the
 * banner saying what to do, with the request id to quote. Errors no field of
 * the form shows are written in the banner.
 */
export function formFailure(err: ApiError, place: (serverField: string) => string, notDone: string): FormFailure {
  const placed = fieldErrors(err.details, place);
  const { "": unplaced, ...fields } = placed;
  const id = err.requestId === "" ? "" : ` (request ${err.requestId})`;
  const count = Object.keys(fields).length;
  if (err.status === 400 && err.details.length > 0) {
    const parts = [count === 0 ? "" : count === 1 ? "correct the marked field." : `correct the ${count} marked fields.`, unplaced ?? ""].filter((p) => p !== "");
    return { banner: `${notDone}: ${parts.join(" ")}${id}`, fields };
  }
  return { banner: `${err.message}${id}`, fields };
}
