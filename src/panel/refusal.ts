// A refused form of the panel in the holder's language: each refusal beside its field, worded with
// the field's label by the message file's `errors.<code>` (the reason of an invalid value is the
// API's own words), the rest above the form. The form kit (web-kit/form.ts) then shows them as
// every page of Berth does.
import { ApiError } from '../core/errors.ts';
import { type FormErrors, type FormSpec, fieldOf } from '../web-kit/form.ts';
import { hasMessage, type Translate } from './i18n.ts';

/**
 * Every parameter's refusal of one call, when the call was refused for its parameters. As an
 * ApiError it is the first refusal (its code, status and parameter).
 */
export class Refused extends ApiError {
  readonly errors: readonly ApiError[];

  constructor(errors: readonly [ApiError, ...ApiError[]]) {
    const [first] = errors;
    super(first.code, errors.map((error) => error.message).join(' '), first.param);
    this.name = 'Refused';
    this.errors = errors;
  }
}

/** The reason an invalid value was refused, in the API's message `The parameter x is invalid: …`. */
function reasonOf(message: string): string {
  const at = message.indexOf(' is invalid: ');
  return at < 0 ? message : message.slice(at + ' is invalid: '.length);
}

/** One refusal in the holder's language: with the field's label, or for the whole form. */
export function messageOf(t: Translate, error: ApiError, label: string | null): string {
  const key = `errors.${error.code}`;
  if (!hasMessage(t, key)) return error.message;
  const needsLabel = /\{\{label\}\}/.test(t(key, { skipInterpolation: true }));
  if (needsLabel && label === null) return error.message;
  return t(key, { label, reason: reasonOf(error.message) });
}

/**
 * The errors of a refused form by field: from what an operation threw (an ApiError or Refused),
 * with the page's own checks (`own`, already worded) first. `placed` puts a refusal the operation
 * gives no parameter (limit_reached) beside a field of the page's choosing.
 */
export function refusalIn(
  t: Translate,
  spec: FormSpec,
  thrown: unknown,
  own: Readonly<Record<string, string>> = {},
  placed: Readonly<Record<string, { field: string; message: string }>> = {},
): FormErrors {
  const errors: FormErrors = {};
  for (const [name, message] of Object.entries(own)) if (message) errors[name] = message;
  const list = thrown instanceof Refused ? thrown.errors : thrown === undefined ? [] : [thrown];
  for (const error of list) {
    if (!(error instanceof ApiError)) throw error;
    const place = placed[error.code];
    if (place) {
      errors[place.field] ??= place.message;
      continue;
    }
    const found = error.param === undefined ? undefined : fieldOf(spec, error.param);
    if (!found) {
      const message = messageOf(t, error, null);
      errors.form = errors.form ? `${errors.form} ${message}` : message;
    } else {
      errors[found[0]] ??= messageOf(t, error, found[1].label);
    }
  }
  return errors;
}
