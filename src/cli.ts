// idmint command line: `idmint serve [--demo]` runs a serving node (HTTP + workers);
// `idmint worker` runs the BullMQ workers alone.
import { ConfigError, loadConfig } from './config.js';
import { closeOnSignals, startNode } from './api/server.js';

const USAGE = `usage: idmint serve [--demo]   serve HTTP and run workers (--demo: create tag "demo")
       idmint worker           run the refill workers only
settings come from the environment; see docs/CONFIG.md`;

async function main(argv: string[]): Promise<void> {
  const [cmd, ...flags] = argv;
  if (cmd !== 'serve' && cmd !== 'worker') {
    console.error(USAGE);
    process.exit(2);
  }
  const unknown = flags.filter((f) => f !== '--demo');
  if (unknown.length) {
    console.error(`unknown option ${unknown[0]}\n${USAGE}`);
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
  const node = await startNode(config);
  closeOnSignals(node);
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(`idmint could not start: ${err.message}`);
  process.exit(1);
});
