// What a server of the fleet answers the others (CONTRACT §12), on the admin listener: run a
// change's steps and keep them open, settle them, say whether a system name is taken; for a move,
// move an account of its own, receive one, and hand over what the account needs and its files.
// Every request must carry the fleet's signature; callers' credentials never come this way.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BODY_LIMIT, textBody } from '../http/body.ts';
import { toApiError } from '../operations/execute.ts';
import { principalOfMessage, scopeOfMessage } from '../operations/principal.ts';
import { changeOf } from '../provision/changes.ts';
import { StepFailed, StepRefused } from '../provision/driver.ts';
import type { Services } from '../services.ts';
import { inScope, toAccount } from '../store/accounts.ts';
import { fromObjectRows, mainObjects } from '../store/objects.ts';
import type { AccountRow } from '../store/schema.ts';
import { answerBackups, restoreRequestOf } from './backups.ts';
import { FLEET_PATHS, MOVE_TIMEOUT_MS, NotHere, STEPS_TIMEOUT_MS } from './calls.ts';
import { claimsFleetSignature, SeenNonces, verifySignature } from './client.ts';

const TRANSACTION = /^[0-9a-f-]{36}$/;
const USER = /^[a-z][a-z0-9]{0,15}$/;

/**
 * What one fleet request may carry. A change names the account's objects whole, before and after
 * (some 230 bytes a mailbox on each side), and a move all of them: an account of 300 mailboxes is
 * past an API call's 64 KiB. A body over that is read only when its headers claim the fleet's
 * signature for this server, fresh, and while the bodies over it being read hold no more than
 * FLEET_BODIES_READ between them: the signature itself can be checked only once the body is read.
 */
export const FLEET_BODY_LIMIT = 16 * 1024 * 1024;
const FLEET_BODIES_READ = 4 * FLEET_BODY_LIMIT;

export function registerFleet(app: FastifyInstance, services: Services): void {
  const { fleet, log } = services;
  // The body is checked as the bytes signed, then read.
  app.removeAllContentTypeParsers();
  let reading = 0;
  app.addContentTypeParser('application/json', (request, _payload, done) => {
    const declared = Number(request.headers['content-length']);
    const large =
      declared > BODY_LIMIT &&
      declared <= FLEET_BODY_LIMIT &&
      reading + declared <= FLEET_BODIES_READ &&
      claimsFleetSignature(request.headers, fleet.self) !== null;
    if (!large) return textBody(request.raw, done);
    reading += declared;
    textBody(
      request.raw,
      (error, body) => {
        reading -= declared;
        done(error, body);
      },
      declared,
    );
  });

  const seen = new SeenNonces();
  const signed = async (
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<Record<string, unknown> | null> => {
    const body = typeof request.body === 'string' ? request.body : '';
    const path = request.url.split('?')[0]!;
    const secret = await fleet.secret();
    if (secret === null || !verifySignature(secret, request.headers, path, body, fleet.self, seen)) {
      log.warn({ path, from: request.ip }, 'refused a fleet request without a valid signature');
      await reply
        .code(401)
        .send({ error: 'not signed by a server of this fleet for this server, or seen before' });
      return null;
    }
    try {
      const parsed = JSON.parse(body) as unknown;
      if (typeof parsed === 'object' && parsed !== null) return parsed as Record<string, unknown>;
    } catch {}
    await reply.code(400).send({ error: 'the body is not a JSON object' });
    return null;
  };

  /**
   * Lets a signed request's connection stay quiet while its work runs (steps reload services; a
   * move copies an account's files): the listener's idle limit is for callers, not for the fleet.
   */
  const patient = (request: FastifyRequest, ms: number) => {
    const { socket } = request.raw;
    // An injected request (the tests') has no connection of its own to keep.
    if (typeof socket.setTimeout === 'function') socket.setTimeout(ms);
  };

  /** Runs steps for another server and answers how it went: 422 names a step that failed. */
  const runSteps = async (reply: FastifyReply, user: string, run: () => Promise<void>) => {
    try {
      await run();
      return { ok: true };
    } catch (error) {
      if (error instanceof NotHere) return reply.code(409).send({ error: error.message });
      if (error instanceof StepFailed) {
        services.metrics.stepFailure(error.step);
        log.error({ err: error.cause, step: error.step, user }, 'provisioning step failed');
        // A step that refused what the call asked for says which parameter, for the caller's 400.
        const refused =
          error.cause instanceof StepRefused ? { param: error.cause.param, reason: error.cause.message } : {};
        return reply.code(422).send({ step: error.step, message: String(error.cause), ...refused });
      }
      log.error({ err: error, user }, 'could not run a change for another server');
      return reply.code(500).send({ error: 'internal' });
    }
  };
  const transactionOf = (body: Record<string, unknown>) =>
    typeof body.transaction === 'string' && TRANSACTION.test(body.transaction) ? body.transaction : null;
  const userOf = (body: Record<string, unknown>) =>
    typeof body.user === 'string' && USER.test(body.user) ? body.user : null;

  app.post(FLEET_PATHS.steps, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const change = changeOf(body.change);
    const transaction = transactionOf(body);
    if (!change || !transaction) return reply.code(400).send({ error: 'not a change' });
    // The principal of the call that asked; a server from before principals sends none.
    const principal = body.principal === undefined ? null : principalOfMessage(body.principal);
    if (principal === null && body.principal !== undefined)
      return reply.code(400).send({ error: 'not a principal' });
    const accounts = change.kind === 'limits' ? [change.before, change.account] : [change.account];
    if (principal && !accounts.every((account) => inScope(account, scopeOfMessage(principal)))) {
      log.warn({ principal, user: change.account.user }, 'refused a change outside its principal’s scope');
      return reply.code(403).send({ error: 'the change is outside the scope of the principal that asked' });
    }
    log.info({ principal, user: change.account.user, change: change.kind }, 'a change for another server');
    patient(request, STEPS_TIMEOUT_MS);
    return runSteps(reply, change.account.user, () => fleet.applyHere(transaction, change));
  });

  // A move: the command asks the account's server; that server asks the new one to receive it,
  // and the new one fetches what the account needs, then its files, from the old one.
  app.post(FLEET_PATHS.move, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const user = userOf(body);
    if (!user || typeof body.to !== 'string') return reply.code(400).send({ error: 'not a move' });
    patient(request, MOVE_TIMEOUT_MS);
    try {
      return await fleet.moveHere(user, body.to);
    } catch (error) {
      const refusal = toApiError(error, services, 'move-account');
      return reply
        .code(refusal.status)
        .send({ code: refusal.code, info: refusal.message, param: refusal.param });
    }
  });

  app.post(FLEET_PATHS.receive, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const transaction = transactionOf(body);
    const account = typeof body.account === 'object' && body.account !== null ? body.account : null;
    if (!transaction || !account || typeof body.from !== 'string')
      return reply.code(400).send({ error: 'not a move' });
    patient(request, MOVE_TIMEOUT_MS);
    const moving = toAccount(account as AccountRow);
    // From a server that sent none: the account's main domain alone, all it knew of.
    const objects = body.objects === undefined ? mainObjects(moving) : fromObjectRows(body.objects);
    if (!objects) return reply.code(400).send({ error: 'not a move' });
    return runSteps(reply, moving.user, () =>
      fleet.receiveHere(transaction, moving, body.from as string, objects),
    );
  });

  /**
   * What a moving account's new server asks its old one for: what the account needs, its files.
   * Only for an account the store has here (409 otherwise).
   */
  const handOver = (
    path: string,
    what: string,
    answer: (user: string, reply: FastifyReply) => Promise<unknown>,
  ) =>
    app.post(path, async (request, reply) => {
      const body = await signed(request, reply);
      if (!body) return reply;
      const user = userOf(body);
      if (!user) return reply.code(400).send({ error: 'not a user' });
      patient(request, MOVE_TIMEOUT_MS);
      try {
        return await answer(user, reply);
      } catch (error) {
        if (error instanceof NotHere) return reply.code(409).send({ error: error.message });
        log.error({ err: error, user }, `could not hand over ${what} to its new server`);
        return reply.code(500).send({ error: `${what} could not be handed over` });
      }
    });
  handOver(FLEET_PATHS.export, 'an account', async (user) => ({ account: await fleet.exportHere(user) }));
  handOver(FLEET_PATHS.files, "an account's files", async (user, reply) => {
    const files = await fleet.filesHere(user);
    // A failure part-way cuts the answer off, which the receiving server sees as one.
    files.on('error', (error) => log.error({ err: error, user }, "could not read an account's files"));
    return reply.type('application/x-tar').send(files);
  });

  // Another server's question about this one's backups (backups.ts), and a snapshot's home.
  app.post(FLEET_PATHS.backups, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const backups = services.driver.backups;
    if (!backups) return reply.code(409).send({ error: 'this server keeps no backups' });
    patient(request, MOVE_TIMEOUT_MS);
    try {
      const { status, answer } = await answerBackups(backups, body, (...held) => fleet.heldOn(...held));
      return reply.code(status).send(answer);
    } catch (error) {
      log.error({ err: error, user: body.user }, "could not answer about an account's backups");
      return reply.code(500).send({ error: (error as Error).message.slice(0, 300) });
    }
  });
  app.post(FLEET_PATHS.backupArchive, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const user = userOf(body);
    const { snapshot } = body;
    if (!user || typeof snapshot !== 'string' || !/^[0-9a-f]{8,64}$/.test(snapshot))
      return reply.code(400).send({ error: 'not a snapshot' });
    const backups = services.driver.backups;
    if (!backups) return reply.code(409).send({ error: 'this server keeps no backups' });
    patient(request, MOVE_TIMEOUT_MS);
    try {
      const archive = await backups.homeArchive(user, snapshot);
      archive.on('error', (error) => log.error({ err: error, user }, "could not read a snapshot's home"));
      return reply.type('application/x-tar').send(archive);
    } catch (error) {
      log.error({ err: error, user }, "could not read a snapshot's home");
      return reply.code(404).send({ error: 'no such snapshot of the account' });
    }
  });

  // What a restore on another server needs of a snapshot here (backups.ts): the account's own
  // snapshot alone, found by its user's tag before anything is read.
  app.post(FLEET_PATHS.backupParts, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const user = userOf(body);
    const { snapshot } = body;
    const wanted = restoreRequestOf(body.request);
    if (!user || typeof snapshot !== 'string' || !/^[0-9a-f]{8,64}$/.test(snapshot) || !wanted)
      return reply.code(400).send({ error: 'not a snapshot' });
    const backups = services.driver.backups;
    if (!backups) return reply.code(409).send({ error: 'this server keeps no backups' });
    patient(request, MOVE_TIMEOUT_MS);
    try {
      const parts = await backups.parts(user, snapshot, wanted);
      parts.on('error', (error) => log.error({ err: error, user }, "could not read a snapshot's parts"));
      return reply.type('application/x-tar').send(parts);
    } catch (error) {
      log.error({ err: error, user }, "could not read a snapshot's parts");
      return reply.code(404).send({ error: 'no such snapshot of the account' });
    }
  });

  app.post(FLEET_PATHS.settle, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const { transaction, outcome } = body;
    if (typeof transaction !== 'string' || (outcome !== 'commit' && outcome !== 'undo')) {
      return reply.code(400).send({ error: 'not a settlement' });
    }
    await fleet.settleHere(transaction, outcome);
    return { ok: true };
  });

  app.post(FLEET_PATHS.nameTaken, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const user = userOf(body);
    if (!user) return reply.code(400).send({ error: 'not a user' });
    return { taken: await services.driver.nameTaken(user) };
  });
}
