// UDP load: `get` of the id_server protocol (docs/UDP.md) on every tag, each loop one socket
// with one datagram in flight going round the tags.
import { UdpClient } from '../../../tools/udp-client.js';
import type { LoadContext } from '../load-context.js';
import { Pace } from '../pace.js';
import { APP, TAGS } from '../tags.js';

export async function udpLoop(ctx: LoadContext, client: string, perSecond: number): Promise<void> {
  const tracks = ctx.tracks(client, TAGS);
  const pace = new Pace(perSecond * ctx.rate);
  let udp = await UdpClient.open();
  try {
    for (let i = 0; ctx.running; i++) {
      const track = tracks[i % tracks.length];
      const msg = { action: 'get', rule_name: track.tag.tag, app_name: APP, seq: i };
      const sent = performance.now();
      try {
        const reply = await udp.request(ctx.at.udpPort, msg);
        const answered = performance.now();
        if (reply.code !== 0 || typeof reply.data !== 'string' || reply.seq !== i) {
          ctx.fail('udp get', `code ${String(reply.code)}`, JSON.stringify(reply));
        } else {
          ctx.latency.add('udp get', answered - sent);
          track.answer(sent, answered, [reply.data]);
        }
      } catch (err) {
        // No reply within 3 s: a late one must not be taken for the next request's, so a new socket.
        ctx.fail('udp get', 'no reply', (err as Error).message);
        udp.close();
        udp = await UdpClient.open();
      }
      await pace.wait();
    }
  } finally {
    udp.close();
  }
}
