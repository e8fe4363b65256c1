// How API and portal requests reach Berth's log: a line per request only at debug, and each
// request's own logger made only when something is logged.
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { LogController } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type Logged = { level: string } & Record<
  'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace',
  (...line: unknown[]) => void
>;

/**
 * One log line per answered request, at debug: the audit log already records every call that
 * changes anything, refusals included, and a line written for every read (a billing system's
 * test_connection, a monitor's listaccts) halved the requests a server could answer. A request
 * that fails is logged at error whatever the level, as are Fastify's other lines.
 */
export class RequestLog extends LogController {
  readonly #debug: boolean;

  constructor(log: Logger) {
    super();
    this.#debug = log.isLevelEnabled('debug');
  }

  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error) super.requestCompleted(error, request, reply);
    else if (this.#debug)
      reply.log.debug({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * A request's logger, bound to its request id, made on its first line: at the default level a
 * request that succeeds logs nothing, and a pino child made for every request cost more than the
 * rest of its logging.
 */
class LazyChild {
  #made: FastifyBaseLogger | undefined;
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #logger(): Logged {
    this.#made ??= this.#parent.child(this.#bindings, this.#options);
    return this.#made as unknown as Logged;
  }

  get level(): string {
    return this.#made?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#logger().level = level;
  }

  fatal(...line: unknown[]): void {
    this.#logger().fatal(...line);
  }
  error(...line: unknown[]): void {
    this.#logger().error(...line);
  }
  warn(...line: unknown[]): void {
    this.#logger().warn(...line);
  }
  info(...line: unknown[]): void {
    this.#logger().info(...line);
  }
  debug(...line: unknown[]): void {
    this.#logger().debug(...line);
  }
  trace(...line: unknown[]): void {
    this.#logger().trace(...line);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#parent.child({ ...this.#bindings, ...bindings }, { ...this.#options, ...options });
  }
}

export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChild(logger, bindings, options) as unknown as FastifyBaseLogger;
}
