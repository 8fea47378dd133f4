// N bare routes sharing one port under node's cluster module (the baseline of N processes), as
// `idmint serve --processes N` shares its port; prints "bare cluster ready N" once all listen.
// Usage: node --import tsx bench/scale/bare-cluster.ts N
import cluster from 'node:cluster';

if (cluster.isWorker) {
  await import('../bare-server.js');
} else {
  const n = Number(process.argv[2]);
  let listening = 0;
  cluster.on('listening', () => {
    if (++listening === n) process.stdout.write(`bare cluster ready ${n}\n`);
  });
  for (let i = 0; i < n; i++) cluster.fork();
  const stop = () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    cluster.on('exit', () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
