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
  set level(level: string) {
    this.real.level = level;
  }

  // Prototype methods, not arrow-function fields: one logger is made per request.
  fatal(...args: Parameters<LogFn>): void {
    this.real.fatal(...args);
  }
  error(...args: Parameters<LogFn>): void {
    this.real.error(...args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.real.warn(...args);
  }
  info(...args: Parameters<LogFn>): void {
    this.real.info(...args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.real.debug(...args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.real.trace(...args);
  }
  silent(...args: Parameters<LogFn>): void {
    this.real.silent(...args);
  }

  child(bindings: Record<string, unknown>, options?: Record<string, unknown>): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}
