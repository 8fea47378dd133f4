// The process's logger and where its lines go: JSON objects on stdout for log collectors, or
// readable lines through pino-pretty (run by pino in a worker thread) when a person reads
// them in a terminal. pino-pretty is a development dependency: where it is not installed
// (the published package, the Docker image) the logs stay JSON.
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import type { Config, LogFormat } from './config.js';

/** The format LOG_FORMAT gives: `auto` is pretty on a terminal; pretty needs pino-pretty. */
export function outputFormat(setting: LogFormat, stdoutIsTTY: boolean, prettyInstalled: boolean): 'json' | 'pretty' {
  const wanted = setting === 'auto' ? (stdoutIsTTY ? 'pretty' : 'json') : setting;
  return wanted === 'pretty' && prettyInstalled ? 'pretty' : 'json';
}

/** Path of the installed pino-pretty module, or undefined. */
function prettyModule(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('pino-pretty');
  } catch {
    return undefined;
  }
}

export function createLogger(config: Config, stdoutIsTTY = process.stdout.isTTY === true): Logger {
  const options = { level: config.logLevel, base: { node: config.nodeId } };
  const pretty = prettyModule();
  if (outputFormat(config.logFormat, stdoutIsTTY, pretty !== undefined) === 'json') {
    const log = pino(options);
    if (config.logFormat === 'pretty') log.warn('LOG_FORMAT=pretty but pino-pretty is not installed: logging JSON');
    return log;
  }
  const transport = pino.transport({
    target: pretty!,
    // The transport runs in a worker thread, whose stdout is no terminal: say whether to colour.
    options: { destination: 1, colorize: stdoutIsTTY, singleLine: true, translateTime: 'SYS:HH:MM:ss.l' },
  });
  return pino(options, transport);
}
