// idmint command line: `idmint serve [--demo] [--processes N]` runs a serving node (HTTP +
// workers), or N of them sharing the ports (src/process/processes.ts); `idmint worker` runs the
// BullMQ workers alone; `idmint import <system>` brings the counters of Leaf, Tinyid or
// id_server over, or continues above Leaf's snowflake IDs (src/service/importer);
// `idmint import --help` lists its options.
import { ConfigError, loadConfig } from './config.js';
import { isProcessWorker, runPrimary, runWorker, takeProcessesFlag } from './process/processes.js';
import { closeOnSignals, startNode } from './process/serve.js';
import { flagsThisProcessLacks, SERVE_NODE_FLAGS } from './process/node-flags.js';
import { IMPORT_HELP, IMPORT_USAGE, parseImportArgs, runImport } from './service/importer/import-command.js';

const USAGE = `usage: idmint serve [--demo] [--processes N|auto]
                               serve HTTP and run workers (--demo: create tag "demo";
                               --processes: N serving processes sharing the ports)
       idmint worker           run the refill workers only
${IMPORT_USAGE}
settings come from the environment; see docs/CONFIG.md`;

async function main(argv: string[]): Promise<void> {
  const [cmd, ...flags] = argv;
  if (cmd === 'import') return runImportCommand(flags);
  if (cmd !== 'serve' && cmd !== 'worker') {
    console.error(USAGE);
    process.exit(2);
  }
  const { processes, rest, error } = takeProcessesFlag(flags);
  const unknown = rest.find((f) => f !== '--demo');
  const problem =
    error ??
    (unknown
      ? `unknown option ${unknown}`
      : cmd === 'worker' && processes > 1
        ? '--processes is an option of serve'
        : '');
  if (problem) {
    console.error(`${problem}\n${USAGE}`);
    process.exit(2);
  }
  const env = { ...process.env };
  if (flags.includes('--demo') && !env.DEMO_TAG) env.DEMO_TAG = 'demo';
  let config;
  try {
    config = loadConfig(env, { serveHttp: cmd === 'serve' });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  if (isProcessWorker()) return runWorker(config);
  if (processes > 1) process.exit(await runPrimary(config, env, processes));
  const node = await startNode(config);
  const missing = cmd === 'serve' ? flagsThisProcessLacks() : [];
  if (missing.length > 0)
    node.rt.log.warn(
      { missing, shipped: SERVE_NODE_FLAGS },
      'node was started without the flags idmint serves with: under load its garbage collection costs its requests more (docs/OPERATIONS.md)',
    );
  closeOnSignals(node);
}

async function runImportCommand(args: string[]): Promise<void> {
  if (args.some((a) => a === '--help' || a === '-h') || args[0] === 'help') {
    console.log(IMPORT_HELP);
    process.exit(0);
  }
  const parsed = parseImportArgs(args);
  if (typeof parsed === 'string') {
    console.error(`${parsed}\n${USAGE}`);
    process.exit(2);
  }
  let config;
  try {
    config = loadConfig(process.env, { serveHttp: false });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  process.exit(await runImport(config, parsed));
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(`idmint could not start: ${err.message}`);
  process.exit(1);
});
