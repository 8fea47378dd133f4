import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { placeStores } from '../../bench/bulk/place-stores.js';
import { affinityOf } from '../../tools/cpu.js';
import { listeningPid } from '../../tools/listener.js';

test('listeningPid finds the process listening on a port, and none on a port nobody listens on', async () => {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    assert.equal(listeningPid(port), process.pid);
  } finally {
    server.close();
  }
  await once(server, 'close');
  assert.equal(listeningPid(port), undefined);
});

test('placeStores puts a local store on the CPU asked for and gives it back its CPUs; a remote one it leaves', async () => {
  // A stand-in store: a process of its own listening on a port, the port it prints.
  const store = spawn(
    process.execPath,
    ['-e', "const s = require('net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port))"],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const [chunk] = (await once(store.stdout, 'data')) as [Buffer];
    const port = Number(chunk.toString().trim());
    const before = affinityOf(store.pid!);
    assert.ok(before !== undefined);
    const placed = placeStores(
      { REDIS_URL: `redis://127.0.0.1:${port}`, MYSQL_URL: 'mysql://root@db.example:3306/idmint' },
      0,
    );
    assert.deepEqual(placed.said, [`Redis (pid ${store.pid}) on CPU 0`, 'MySQL not placed (not on this machine)']);
    assert.equal(affinityOf(store.pid!), '0');
    placed.restore();
    assert.equal(affinityOf(store.pid!), before);
  } finally {
    store.kill();
  }
});
