// The milter protocol (Sendmail's, as Postfix speaks it), the server side: what Postfix asks a
// filter at each stage of an SMTP session, and what the filter answers. A packet is a 32-bit
// big-endian length, then a one-letter command and its data (strings end with a NUL). Berth's
// sender policy (sender-policy.ts) is the filter; this file knows only the protocol.
import { createServer, type Server, type Socket } from 'node:net';

/** The protocol version Postfix 2.6 and later speak. */
const VERSION = 6;
/** Postfix need not send the body, unless the policy counts it (the queue budget). */
const SMFIP_NOBODY = 0x10;
/** A packet longer than this is no milter packet: the connection is dropped. */
const MAX_PACKET = 1 << 20;

/** What the filter answers at a stage: go on, or refuse with an SMTP reply. */
export type Verdict =
  | { action: 'continue' }
  | { action: 'reject' | 'tempfail'; reply: string }
  /** Accepted and dropped: no delivery, no bounce (Postfix logs it). */
  | { action: 'discard' };

export const CONTINUE: Verdict = { action: 'continue' };

/** What a session has learnt so far; the policy decides from it. */
export interface Envelope {
  /** Postfix's macros, by name without braces (`auth_authen`, `daemon_name`). */
  macros: Map<string, string>;
  /** The client's address, as Postfix gave it. */
  clientAddress: string;
  /** The client's port (0 when Postfix gave none: a Unix socket, or not known). */
  clientPort?: number;
  helo: string;
  /** MAIL FROM's address without angle brackets (empty: the null sender); null before MAIL. */
  sender: string | null;
  /** Every header as it came: name and value (UTF-8 when its bytes are). */
  headers: { name: string; value: string }[];
  /** The message's bytes seen so far: headers (as `name: value` lines), and the body when read. */
  size: number;
  /** RCPT TO's addresses so far, without angle brackets. */
  recipients?: string[];
}

/** The filter: asked after MAIL FROM and at the end of the message. */
export interface MilterPolicy {
  /** Whether Postfix is to send the body (to be counted in `size`); else only the headers. */
  readsBody?: boolean;
  mailFrom(envelope: Envelope): Promise<Verdict> | Verdict;
  endOfMessage(envelope: Envelope): Promise<Verdict> | Verdict;
}

/** A NUL-terminated string of `data` from `at`, and where the next begins. */
function cString(data: Buffer, at: number): [string, number] {
  const end = data.indexOf(0, at);
  const stop = end === -1 ? data.length : end;
  return [data.toString('latin1', at, stop), stop + 1];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A header value's bytes (read byte for byte) as a reader shows them: UTF-8 when they are UTF-8
 * (an 8-bit header, as SMTPUTF8 sends it), else byte for byte.
 */
function headerText(latin1: string): string {
  try {
    return utf8.decode(Buffer.from(latin1, 'latin1'));
  } catch {
    return latin1;
  }
}

function strings(data: Buffer): string[] {
  const found: string[] = [];
  for (let at = 0; at < data.length; ) {
    const [text, next] = cString(data, at);
    found.push(text);
    at = next;
  }
  return found;
}

export function packet(command: string, data: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(data.length + 1, 0);
  head.write(command, 4, 'latin1');
  return Buffer.concat([head, data]);
}

/** The packet answering a verdict: continue, discard, or a reply code of the policy's own. */
export function verdictPacket(verdict: Verdict): Buffer {
  if (verdict.action === 'continue') return packet('c');
  if (verdict.action === 'discard') return packet('d');
  return packet('y', Buffer.from(`${verdict.reply}\0`, 'latin1'));
}

/** Splits a stream into packets: feed it chunks, it calls `onPacket` with each whole one. */
export function packetReader(onPacket: (command: string, data: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const length = pending.readUInt32BE(0);
      if (length < 1 || length > MAX_PACKET) throw new Error(`a milter packet of ${length} bytes`);
      if (pending.length < 4 + length) return;
      const command = String.fromCharCode(pending[4]!);
      const data = pending.subarray(5, 4 + length);
      pending = pending.subarray(4 + length);
      onPacket(command, data);
    }
  };
}

/**
 * One Postfix connection: a session per SMTP connection (several in turn: a QUIT_NC starts the
 * next). Each command is answered in order; the policy's answers may take time (DNS), so the
 * commands wait their turn.
 */
export function milterSession(policy: MilterPolicy, send: (reply: Buffer) => void, end: () => void) {
  let envelope: Envelope;
  const newConnection = () => {
    envelope = { macros: new Map(), clientAddress: '', helo: '', sender: null, headers: [], size: 0 };
  };
  const newMessage = () => {
    envelope.sender = null;
    envelope.headers = [];
    envelope.size = 0;
    envelope.recipients = [];
  };
  newConnection();

  const answer = async (command: string, data: Buffer): Promise<Buffer | null> => {
    switch (command) {
      case 'O': {
        // Our version and no change to the message; of the steps Postfix offers, skip the body
        // unless the policy counts it.
        const offered = data.length >= 12 ? data.readUInt32BE(8) : 0;
        const reply = Buffer.alloc(12);
        reply.writeUInt32BE(VERSION, 0);
        reply.writeUInt32BE(0, 4);
        reply.writeUInt32BE(policy.readsBody ? 0 : offered & SMFIP_NOBODY, 8);
        return packet('O', reply);
      }
      case 'D': {
        // The macros of the stage named by the first byte: name, value, name, value…
        const pairs = strings(data.subarray(1));
        for (let i = 0; i + 1 < pairs.length; i += 2)
          envelope.macros.set(pairs[i]!.replace(/^\{(.*)\}$/, '$1'), pairs[i + 1]!);
        return null;
      }
      case 'C': {
        // Host name, family, port, address.
        const [, afterHost] = cString(data, 0);
        const family = String.fromCharCode(data[afterHost] ?? 0);
        const inet = family === '4' || family === '6';
        envelope.clientAddress = inet ? cString(data, afterHost + 3)[0] : '';
        envelope.clientPort = inet && data.length >= afterHost + 3 ? data.readUInt16BE(afterHost + 1) : 0;
        return verdictPacket(CONTINUE);
      }
      case 'H':
        envelope.helo = cString(data, 0)[0];
        return verdictPacket(CONTINUE);
      case 'M': {
        newMessage();
        envelope.sender = (strings(data)[0] ?? '').replace(/^<(.*)>$/, '$1');
        return verdictPacket(await policy.mailFrom(envelope));
      }
      case 'R':
        envelope.recipients = [
          ...(envelope.recipients ?? []),
          (strings(data)[0] ?? '').replace(/^<(.*)>$/, '$1'),
        ];
        return verdictPacket(CONTINUE);
      case 'L': {
        const [name, afterName] = cString(data, 0);
        const value = cString(data, afterName)[0];
        envelope.headers.push({ name, value: headerText(value) });
        envelope.size += name.length + value.length + 4;
        return verdictPacket(CONTINUE);
      }
      case 'B':
        envelope.size += data.length;
        return verdictPacket(CONTINUE);
      case 'E':
        return verdictPacket(await policy.endOfMessage(envelope));
      case 'A':
        newMessage();
        return null;
      case 'K':
        newConnection();
        return null;
      case 'Q':
        end();
        return null;
      // RCPT, DATA, end of headers, body, unknown command: nothing to say yet.
      default:
        return verdictPacket(CONTINUE);
    }
  };

  let queue: Promise<void> = Promise.resolve();
  return (command: string, data: Buffer) => {
    queue = queue.then(async () => {
      const reply = await answer(command, data);
      if (reply) send(reply);
    });
    return queue;
  };
}

/**
 * A milter server on a Unix socket. A failure of the policy tempfails the message (the client tries
 * again), as does a broken connection (Postfix's milter_default_action).
 */
export function serveMilter(
  policy: MilterPolicy,
  onError: (error: unknown) => void,
): { server: Server; connections: Set<Socket> } {
  const connections = new Set<Socket>();
  const guarded: MilterPolicy = {
    readsBody: policy.readsBody,
    mailFrom: async (envelope) => guard(() => policy.mailFrom(envelope)),
    endOfMessage: async (envelope) => guard(() => policy.endOfMessage(envelope)),
  };
  async function guard(decide: () => Promise<Verdict> | Verdict): Promise<Verdict> {
    try {
      return await decide();
    } catch (error) {
      onError(error);
      return { action: 'tempfail', reply: '451 4.3.0 Sender policy unavailable, try again later' };
    }
  }
  const server = createServer((socket) => {
    connections.add(socket);
    socket.on('close', () => connections.delete(socket));
    socket.on('error', () => socket.destroy());
    const handle = milterSession(
      guarded,
      (reply) => socket.write(reply),
      () => socket.end(),
    );
    const read = packetReader((command, data) => {
      handle(command, data).catch((error: unknown) => {
        onError(error);
        socket.destroy();
      });
    });
    socket.on('data', (chunk) => {
      try {
        read(chunk);
      } catch (error) {
        onError(error);
        socket.destroy();
      }
    });
  });
  return { server, connections };
}
