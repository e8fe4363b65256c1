// How a value of berth.toml is read into what Config holds: each reader returns the value or throws
// Refused with the reason, to which the loader adds the file and the key.
import { isIP } from 'node:net';
import { parseCronSchedule } from '../core/cron.ts';
import { ApiError } from '../core/errors.ts';
import { parseRetention } from '../core/retention.ts';
import { parseAddressRange } from '../core/values.ts';

/** Why a value in berth.toml cannot be used (the loader adds the file and the key). */
export class Refused extends Error {}

/** Reads one value of berth.toml into what Config holds, or throws Refused with the reason. */
export type Reader = (value: unknown) => unknown;

export const textValue =
  (rule?: { pattern: RegExp; what: string }): Reader =>
  (value) => {
    if (typeof value !== 'string') throw new Refused('must be a string');
    if (rule && !rule.pattern.test(value)) throw new Refused(`must be ${rule.what}`);
    return value;
  };

/** A server's name in its fleet: a host-name label. */
export const NODE_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const nodeNameValue = textValue({
  pattern: NODE_NAME,
  what: 'a name of lower-case letters, digits and -',
});
export const urlValue = textValue({
  pattern: /^https?:\/\/[^\s/]+\/?$/,
  what: 'an https:// address without a path',
});

export const absolutePath = textValue({ pattern: /^\//, what: 'an absolute path' });
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
export const hostNameValue = (value: unknown) => {
  const name = (textValue()(value) as string).toLowerCase();
  if (!HOST_NAME.test(name)) throw new Refused(`must be a host name, not "${name}"`);
  return name;
};

export function listOf(item: Reader): Reader {
  return (value) => {
    if (!Array.isArray(value)) throw new Refused('must be a list');
    return value.map((each, i) => {
      try {
        return item(each);
      } catch (error) {
        if (error instanceof Refused) throw new Refused(`item ${i + 1} ${error.message}`);
        throw error;
      }
    });
  };
}

export const stringList = listOf(textValue());

/** A command as an argument array starting with an absolute path; empty: none. */
export const command: Reader = (value) => {
  const argv = stringList(value) as string[];
  if (argv.length > 0 && !argv[0]!.startsWith('/')) throw new Refused('must start with an absolute path');
  return argv;
};

export const wholeNumber =
  (min: number, max: number = Number.MAX_SAFE_INTEGER): Reader =>
  (value) => {
    const n = typeof value === 'bigint' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n)) throw new Refused('must be a whole number');
    if (n < min || n > max) throw new Refused(`must be from ${min} to ${max}`);
    return n;
  };

/** A bound, or `"unlimited"` (null: none). */
export const unlimitedOr =
  (bound: Reader): Reader =>
  (value) =>
    value === 'unlimited' ? null : bound(value);

export const port = wholeNumber(0, 65535);
export const servicePort = wholeNumber(1, 65535);
export const positive = wholeNumber(1);

export const fraction: Reader = (value) => {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1))
    throw new Refused('must be a number from 0 to 1');
  return value;
};

export const onOff: Reader = (value) => {
  if (typeof value !== 'boolean') throw new Refused('must be true or false');
  return value;
};

export const oneOf =
  (...choices: string[]): Reader =>
  (value) => {
    if (typeof value !== 'string' || !choices.includes(value))
      throw new Refused(`must be one of ${choices.map((c) => `"${c}"`).join(', ')}`);
    return value;
  };

export function addressRange(family?: 4 | 6): Reader {
  return (value) => {
    const raw = textValue()(value) as string;
    let address: string;
    try {
      address = parseAddressRange('address', raw);
    } catch {
      throw new Refused(`must be an IPv4 or IPv6 address or CIDR range, not "${raw}"`);
    }
    if (family === undefined) return address;
    if (address.includes('/') || isIP(address) !== family)
      throw new Refused(`must be an IPv${family} address, not "${raw}"`);
    return address;
  };
}

/** One IP address (no range) to listen on. */
export const listenAddress: Reader = (value) => {
  const address = addressRange()(value) as string;
  if (address.includes('/')) throw new Refused(`must be an IP address, not the range "${address}"`);
  return address;
};

/** An IP address with a port (`address:port`, `[IPv6]:port`), the port `port` when left out; or empty. */
const addressWithPort =
  (port: number, what: string): Reader =>
  (value) => {
    const raw = textValue()(value) as string;
    if (raw === '') return '';
    const match = /^\[([^\]]+)\]:(\d+)$/.exec(raw) ?? /^([^:]+):(\d+)$/.exec(raw);
    const [address, portText] = match ? [match[1]!, match[2]!] : [raw, String(port)];
    const portNumber = Number(portText);
    if (isIP(address) === 0 || portNumber < 1 || portNumber > 65535)
      throw new Refused(`must be ${what}, with :port if not ${port}, not "${raw}"`);
    return raw;
  };

/** A DNS server: an IP address, `address:port` or `[IPv6]:port`; empty for the system's resolvers. */
export const dnsServer = addressWithPort(53, "a DNS server's address");
/** BIND's control channel: as a DNS server's address, on port 953 when none is given; or empty. */
export const controlAddress = addressWithPort(953, "the address of BIND's control channel");

export const addressOrNone = (family: 4 | 6): Reader => {
  const read = addressRange(family);
  return (value) => (value === '' ? '' : read(value));
};

/** Five cron fields (the backup schedule), as add_cron_job takes them. */
export const cronScheduleValue: Reader = (value) => {
  if (typeof value !== 'string') throw new Refused('must be a string of five cron fields');
  try {
    return parseCronSchedule('schedule', value);
  } catch (error) {
    if (error instanceof ApiError) throw new Refused(`must be five cron fields: ${error.message}`);
    throw error;
  }
};

/** A retention, "7 daily, 4 weekly". */
export const retentionValue: Reader = (value) => {
  if (typeof value !== 'string') throw new Refused('must be a string such as "7 daily, 4 weekly"');
  const keep = parseRetention(value);
  if (typeof keep === 'string') throw new Refused(keep);
  return keep;
};
