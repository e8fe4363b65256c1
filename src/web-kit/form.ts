// The form kit shared by every page of the portal and of the holder's panel. A form is declared
// once (its fields' names, visible labels and element ids); a refused form is then rendered the
// same way everywhere: every field's error at once in the words of its label, `aria-invalid` and
// `aria-describedby` on the field, a summary announced with `role="alert"` that links to each bad
// field, the page's title beginning `Error: `, and what was typed kept (never a password).
// The views' half is views/field.eta (one labelled control) and views/summary.eta beside this file.
import { ApiError, FieldErrors } from '../core/errors.ts';

export interface FieldSpec {
  /** The visible label; errors are worded with it. */
  label: string;
  /** The control's element id, when two forms of one page share a field name (default: the name). */
  id?: string;
  /** The operation parameters whose refusals belong to this field (default: the name). */
  params?: readonly string[];
  /** A password: never written back into the page. */
  secret?: boolean;
}

/** A form's fields by name, in the order the page shows them. */
export type FormSpec = Readonly<Record<string, FieldSpec>>;

/** Errors by field name; `form` holds what belongs to no one field. */
export type FormErrors = Record<string, string>;

/** One line of a refused form's summary: the message and, for a field, the id it links to. */
export interface SummaryLine {
  message: string;
  target: string | null;
}

/** What a view needs to draw a form: its fields, the values to show and their errors. */
export interface FormView {
  spec: FormSpec;
  values: Record<string, string>;
  errors: FormErrors;
}

/**
 * An operation's message for one parameter, reworded with the field's label: the API's
 * "The parameter email is invalid: reason." becomes "Contact e-mail: reason.", and "The parameter
 * email is required." becomes "Contact e-mail is required.". Messages already in plain words (an
 * account that exists, a domain in use) are kept as they are.
 */
export function inLabelWords(param: string, message: string, label: string): string {
  if (message === `The parameter ${param} is required.`) return `${label} is required.`;
  const invalid = `The parameter ${param} is invalid: `;
  if (message.startsWith(invalid)) return `${label}: ${message.slice(invalid.length)}`;
  return message;
}

/** The field of `spec` that a parameter's refusal belongs to, if any. */
export function fieldOf(spec: FormSpec, param: string): [string, FieldSpec] | undefined {
  return Object.entries(spec).find(([name, field]) => (field.params ?? [name]).includes(param));
}

/** Adds an error to its field (the first one a field gets stays) or, for no field, to `form`. */
function add(spec: FormSpec, errors: FormErrors, param: string, message: string): void {
  const found = fieldOf(spec, param);
  if (!found) {
    errors.form = errors.form ? `${errors.form} ${message}` : message;
    return;
  }
  const [name, field] = found;
  errors[name] ??= inLabelWords(param, message, field.label);
}

/**
 * The errors of a refused form, by field, in the labels' words: from what an operation threw
 * (an ApiError, a FieldErrors with every parameter's refusal, or a list of ApiErrors) and from
 * checks of the page's own (`own`, already worded by the page, e.g. two passwords that differ).
 */
export function refusal(
  spec: FormSpec,
  thrown: unknown,
  own: Readonly<Record<string, string>> = {},
): FormErrors {
  const errors: FormErrors = {};
  for (const [name, message] of Object.entries(own)) if (message) errors[name] = message;
  const list = Array.isArray(thrown) ? thrown : thrown === null || thrown === undefined ? [] : [thrown];
  for (const error of list) {
    if (error instanceof FieldErrors) {
      for (const [param, message] of Object.entries(error.fields)) add(spec, errors, param, message);
    } else if (error instanceof ApiError) {
      add(spec, errors, error.param ?? 'form', error.message);
    } else {
      throw error;
    }
  }
  return errors;
}

/** The values to show again: what was typed, without passwords. */
export function keptValues(spec: FormSpec, values: Readonly<Record<string, string>>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(values)) if (!spec[name]?.secret) kept[name] = value;
  return kept;
}

export function formView(
  spec: FormSpec,
  values: Readonly<Record<string, string>> = {},
  errors: FormErrors = {},
): FormView {
  return { spec, values: keptValues(spec, values), errors };
}

/** The summary of a refused page: the form-wide error first, then each field's in the form's order. */
export function summaryOf(forms: readonly FormView[], errors: FormErrors = {}): SummaryLine[] {
  const lines: SummaryLine[] = [];
  const formWide = [errors.form, ...forms.map((form) => form.errors.form)].filter(Boolean);
  for (const message of new Set(formWide)) lines.push({ message: message!, target: null });
  for (const form of forms) {
    for (const [name, field] of Object.entries(form.spec)) {
      const message = form.errors[name];
      if (message) lines.push({ message, target: field.id ?? name });
    }
  }
  return lines;
}
