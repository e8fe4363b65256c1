// What a server of the fleet answers the others (CONTRACT §12), on the admin listener: run a
// change's steps and keep them open, settle them, say whether a system name is taken. Every request
// must carry the fleet's signature; callers' credentials never come this way.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { changeOf } from '../provision/changes.ts';
import { StepFailed } from '../provision/driver.ts';
import type { Services } from '../services.ts';
import { verifySignature } from './client.ts';
import { FLEET_PATHS, NotHere } from './fleet.ts';

const TRANSACTION = /^[0-9a-f-]{36}$/;
const USER = /^[a-z][a-z0-9]{0,15}$/;

export function registerFleet(app: FastifyInstance, services: Services): void {
  const { fleet, log } = services;
  // The body is checked as the bytes signed, then read.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) =>
    done(null, body),
  );

  const signed = async (
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<Record<string, unknown> | null> => {
    const body = typeof request.body === 'string' ? request.body : '';
    const path = request.url.split('?')[0]!;
    const secret = await fleet.secret();
    if (secret === null || !verifySignature(secret, request.headers, path, body)) {
      log.warn({ path, from: request.ip }, 'refused a fleet request without a valid signature');
      await reply.code(401).send({ error: 'not signed by a server of this fleet' });
      return null;
    }
    try {
      const parsed = JSON.parse(body) as unknown;
      if (typeof parsed === 'object' && parsed !== null) return parsed as Record<string, unknown>;
    } catch {}
    await reply.code(400).send({ error: 'the body is not a JSON object' });
    return null;
  };

  app.post(FLEET_PATHS.steps, async (request, reply) => {
    const body = await signed(request, reply);
    if (!body) return reply;
    const change = changeOf(body.change);
    if (!change || typeof body.transaction !== 'string' || !TRANSACTION.test(body.transaction)) {
      return reply.code(400).send({ error: 'not a change' });
    }
    try {
      await fleet.applyHere(body.transaction, change);
      return { ok: true };
    } catch (error) {
      if (error instanceof NotHere) return reply.code(409).send({ error: error.message });
      if (error instanceof StepFailed) {
        services.metrics.stepFailure(error.step);
        log.error(
          { err: error.cause, step: error.step, user: change.account.user },
          'provisioning step failed',
        );
        return reply.code(422).send({ step: error.step, message: String(error.cause) });
      }
      log.error({ err: error, user: change.account.user }, 'could not run a change for another server');
      return reply.code(500).send({ error: 'internal' });
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
    if (typeof body.user !== 'string' || !USER.test(body.user))
      return reply.code(400).send({ error: 'not a user' });
    return { taken: await services.driver.nameTaken(body.user) };
  });
}
