// A cron job's values (CONTRACT §14): its schedule, five cron fields checked strictly (numbers,
// ranges, steps, lists, `*`, and month and weekday names), and its command, one line. Nothing but
// what passes here reaches a cron file; the command never does (docs/linux-driver.md, Cron jobs).
import { invalid } from './errors.ts';

interface Field {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

const FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  // 0 and 7 are both Sunday.
  { name: 'day of week', min: 0, max: 7, names: WEEKDAYS },
];

export const CRON_COMMAND_MAX = 1000;
const SCHEDULE_MAX = 200;
export const CRON_JOB_ID_PATTERN = /^[a-z2-7]{10}$/;

/** A value of a field as a number: digits, or (month, weekday) a name of three letters. */
function numberOf(field: Field, text: string, fail: (reason: string) => never): number {
  if (/^[0-9]{1,2}$/.test(text)) {
    const n = Number(text);
    if (n < field.min || n > field.max) fail(`${text} is outside ${field.min}-${field.max}`);
    return n;
  }
  const index = field.names?.indexOf(text) ?? -1;
  if (index < 0)
    fail(
      `${JSON.stringify(text)} is not a number${field.names ? ` or a name (${field.names.join(', ')})` : ''}`,
    );
  return field.min === 1 ? index + 1 : index;
}

/** One field in numbers alone: what the cron file gets (Debian's cron takes no names in ranges). */
function parseField(field: Field, text: string, fail: (reason: string) => never): string {
  return text
    .split(',')
    .map((item) => {
      const match = /^(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:\/([0-9]+))?$/.exec(item);
      if (!match) fail(`${JSON.stringify(item)} is not *, a value, or a range, with an optional /step`);
      const [, base, step] = match;
      let range: string;
      let span: number;
      if (base === '*') {
        range = '*';
        span = field.max - field.min;
      } else if (base!.includes('-')) {
        const [low, high] = base!.split('-').map((part) => numberOf(field, part, fail)) as [number, number];
        if (low > high) fail(`the range ${base} runs backwards`);
        range = `${low}-${high}`;
        span = high - low;
      } else {
        if (step !== undefined) fail(`a step (${item}) follows * or a range, not a single value`);
        range = String(numberOf(field, base!, fail));
        span = 0;
      }
      if (step === undefined) return range;
      const n = Number(step);
      if (n < 1 || n > Math.max(span, 1)) fail(`the step /${step} is not between 1 and ${Math.max(span, 1)}`);
      return `${range}/${n}`;
    })
    .join(',');
}

/** A schedule as add_cron_job keeps it: five fields, single spaces, names in lower case. */
export function parseCronSchedule(param: string, raw: string): string {
  if (raw.length > SCHEDULE_MAX) throw invalid(param, `it is longer than ${SCHEDULE_MAX} characters`);
  const fields = raw
    .trim()
    .toLowerCase()
    .split(/[ \t]+/);
  if (raw.trim().startsWith('@'))
    throw invalid(param, 'it is five cron fields (minute hour day-of-month month day-of-week), not @-words');
  if (fields.length !== 5)
    throw invalid(
      param,
      `it is five fields (minute hour day-of-month month day-of-week), not ${raw.trim() === '' ? 0 : fields.length}`,
    );
  fields.forEach((text, i) => {
    const field = FIELDS[i]!;
    parseField(field, text, (reason) => {
      throw invalid(param, `its ${field.name} field: ${reason}`);
    });
  });
  return fields.join(' ');
}

/** The five fields of a schedule parseCronSchedule kept, in numbers alone, for the cron file. */
export function cronFields(schedule: string): string {
  return schedule
    .split(' ')
    .map((text, i) =>
      parseField(FIELDS[i]!, text, (reason) => {
        throw new Error(`stored cron schedule ${JSON.stringify(schedule)}: ${reason}`);
      }),
    )
    .join(' ');
}

/** A command: one line of at most CRON_COMMAND_MAX characters, no control character, not blank. */
export function parseCronCommand(param: string, raw: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(raw))
    throw invalid(param, 'it is one line, with no control characters (a tab or line break among them)');
  if (raw.trim() === '') throw invalid(param, 'it is empty');
  if (raw.length > CRON_COMMAND_MAX) throw invalid(param, `it is longer than ${CRON_COMMAND_MAX} characters`);
  return raw;
}

export function parseCronJobId(param: string, raw: string): string {
  if (!CRON_JOB_ID_PATTERN.test(raw))
    throw invalid(param, 'a cron job id is 10 characters of a-z and 2-7, as list_cron_jobs answers it');
  return raw;
}

/** The values one numeric field (as cronFields gives it) allows. */
function valuesOf(field: Field, text: string): Set<number> {
  const allowed = new Set<number>();
  for (const item of text.split(',')) {
    const [base, step] = item.split('/') as [string, string | undefined];
    const [low, high] =
      base === '*'
        ? [field.min, field.max]
        : base.includes('-')
          ? base.split('-').map(Number)
          : [Number(base), Number(base)];
    for (let n = low!; n <= high!; n += step ? Number(step) : 1) allowed.add(n);
  }
  return allowed;
}

/**
 * Whether a schedule (five fields as parseCronSchedule keeps them) fires in a given minute, in the
 * server's time zone; as cron does, a restricted day of month or day of week either matches.
 */
export function cronMatcher(schedule: string): (at: Date) => boolean {
  const fields = cronFields(schedule).split(' ');
  const [minutes, hours, days, months, weekdays] = fields.map((text, i) => valuesOf(FIELDS[i]!, text)) as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  if (weekdays.has(7)) weekdays.add(0);
  const either = fields[2] !== '*' && fields[4] !== '*';
  return (at) => {
    if (!minutes.has(at.getMinutes()) || !hours.has(at.getHours()) || !months.has(at.getMonth() + 1))
      return false;
    const day = days.has(at.getDate());
    const weekday = weekdays.has(at.getDay());
    return either ? day || weekday : day && weekday;
  };
}

/** The last minute at or before `before` the schedule fires in, looking back at most `days`. */
export function lastFiring(schedule: string, before: Date, days = 35): Date | null {
  const matches = cronMatcher(schedule);
  const at = new Date(before);
  at.setSeconds(0, 0);
  for (let i = 0; i < days * 24 * 60; i++) {
    if (matches(at)) return at;
    at.setMinutes(at.getMinutes() - 1);
  }
  return null;
}
