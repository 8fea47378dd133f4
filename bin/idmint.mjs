#!/usr/bin/env -S node --max-semi-space-size=64 --min-semi-space-size=64 --single-threaded-gc
// The installed command: runs the compiled server in dist/ with plain node (`npm run build`
// makes it; the published package ships it). A development checkout runs the TypeScript
// sources with `npm run serve` instead. The first line passes node the flags a server runs
// with (src/process/node-flags.ts).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error('idmint: dist/cli.js is missing; run `npm run build` first (or `npm run serve` to run the sources)');
  process.exit(1);
}
await import(cli.href);
