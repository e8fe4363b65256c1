// How API and portal requests reach Berth's log: a line per request, at debug only (app.ts gives
// Fastify the log at debug only).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { LogController } from 'fastify';

/**
 * One log line per answered request, at debug: the audit log already records every call that
 * changes anything, refusals included, and a line written for every read (a billing system's
 * test_connection, a monitor's listaccts) halved the requests a server could answer. At other
 * levels a request that fails is logged by app.ts's error handler.
 */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error) super.requestCompleted(error, request, reply);
    else reply.log.debug({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
