// A request logger that creates its pino child (with the request id) only when something is
// logged. Fastify makes a child logger per request; most requests log nothing, and creating
// the child would cost more than serving an ID.
import type { FastifyBaseLogger } from 'fastify';

type LogFn = FastifyBaseLogger['info'];

export class LazyChildLogger implements FastifyBaseLogger {
  private made?: FastifyBaseLogger;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Record<string, unknown>,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  get level(): string {
    return this.parent.level;
  }
  set level(l: string) {
    this.real.level = l;
  }

  fatal: LogFn = (...a: Parameters<LogFn>) => this.real.fatal(...a);
  error: LogFn = (...a: Parameters<LogFn>) => this.real.error(...a);
  warn: LogFn = (...a: Parameters<LogFn>) => this.real.warn(...a);
  info: LogFn = (...a: Parameters<LogFn>) => this.real.info(...a);
  debug: LogFn = (...a: Parameters<LogFn>) => this.real.debug(...a);
  trace: LogFn = (...a: Parameters<LogFn>) => this.real.trace(...a);
  silent: LogFn = (...a: Parameters<LogFn>) => this.real.silent(...a);

  child(bindings: Record<string, unknown>, options?: Record<string, unknown>): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}
