// Who may send through the lists' own smtpd (lists/component.ts): mlmmj-send, running as the lists
// user, connects over TCP to 127.0.0.1:<lists_port>, a port any account's program may connect to as
// well. So Berth's lists milter asks the kernel whose the client's socket is: /proc/net/tcp names the
// uid that owns each TCP socket of the network namespace, and the client's end of this connection
// (its address and port, as Postfix gives them, towards the lists port) must be the lists user's.
// Its envelope sender must then be one of a list's addresses (`<list>@<domain>` or
// `<list>+…@<domain>`); while the list's account is suspended its mail is refused for now. Nothing else is
// asked of the message: a member's post keeps its From (checked where it came in: submission, port
// 25 and sendmail each hold hosted domains to their owners), and this smtpd has no DKIM milter, so a
// list's mail is never signed as anyone's domain.
import { readIfExists } from '../files.ts';
import { CONTINUE, type Envelope, type MilterPolicy } from '../mail/milter.ts';

/** The kernel's name of an IPv4 address and port in /proc/net/tcp: `0100007F:2712`. */
export function procSocketName(address: string, port: number): string | null {
  const plain = address.replace(/^::ffff:/i, '');
  const parts = plain.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return null;
  const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, '0');
  return `${parts
    .reverse()
    .map((p) => hex(p, 2))
    .join('')}:${hex(port, 4)}`;
}

/**
 * The uid that owns the client's end of a TCP connection from `address`:`port` to `serverPort`, as
 * `table` (the text of /proc/net/tcp) has it; null when it has no such connection.
 */
export function socketOwner(table: string, address: string, port: number, serverPort: number): number | null {
  const local = procSocketName(address, port);
  if (local === null || port === 0) return null;
  const remotePort = `:${serverPort.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of table.split('\n')) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8 || fields[1] !== local || !fields[2]!.endsWith(remotePort)) continue;
    const uid = Number(fields[7]);
    return Number.isInteger(uid) ? uid : null;
  }
  return null;
}

export interface ListsPolicyOptions {
  /** The lists user's uid: the only one whose connections send here. */
  listsUid: number;
  /** The port the lists' smtpd listens on. */
  listsPort: number;
  /** Every list's address (`<list>@<domain>`), and whether it distributes now (not suspended). */
  lists(): ReadonlyMap<string, boolean>;
  /** The text of /proc/net/tcp (read afresh at each message). */
  connections?: () => string;
}

const refuse = (reply: string) => ({ action: 'reject' as const, reply });

/** A list address without its extension: `news+bounces-12@x.example` is `news@x.example`. */
export function listBase(sender: string): string {
  const at = sender.lastIndexOf('@');
  const local = sender.slice(0, at);
  const plus = local.indexOf('+');
  return `${plus === -1 ? local : local.slice(0, plus)}${sender.slice(at)}`.toLowerCase();
}

export function listsPolicy(options: ListsPolicyOptions): MilterPolicy {
  const connections = options.connections ?? (() => readIfExists('/proc/net/tcp') ?? '');
  const fromListManager = (envelope: Envelope) =>
    socketOwner(connections(), envelope.clientAddress, envelope.clientPort ?? 0, options.listsPort) ===
    options.listsUid;
  return {
    mailFrom(envelope) {
      if (!fromListManager(envelope))
        return refuse('550 5.7.1 Only the mailing lists send here: use submission');
      const sender = envelope.sender ?? '';
      const distributing = sender === '' ? undefined : options.lists().get(listBase(sender));
      if (distributing === undefined) return refuse(`550 5.7.1 <${sender}> is no mailing list's address`);
      // mlmmj keeps what is refused for now and sends it again (mlmmj-maintd) once it distributes.
      if (!distributing)
        return { action: 'tempfail', reply: `451 4.7.1 The list of <${sender}> is suspended` };
      return CONTINUE;
    },
    endOfMessage: () => CONTINUE,
  };
}
