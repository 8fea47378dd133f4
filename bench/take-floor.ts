// The least a take that checks the server it runs on must do: learn the server's identity
// (includes/server-identity.lua, as every script does) and move one cursor, a field named by
// that identity as the take's fast end is. No take that keeps the promises costs Redis less
// (docs/GUARANTEES.md, "What a take costs"). bench:take measures its Redis time; bench:udp
// serves a request with it, the floor of an `order: global` request.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS_DIR } from '../src/store/redis/lua.js';

/** The identity include followed by one call of it: `rid` holds the server's identity. */
export const IDENTITY_READ = `${readFileSync(join(COMMANDS_DIR, 'includes/server-identity.lua'), 'utf8')}\nlocal rid = serverIdentity()\n`;

/** KEYS[1]: a hash. Returns the cursor after the move, as a take returns a position. */
export const TAKE_FLOOR_LUA = `${IDENTITY_READ}return redis.call('HINCRBY', KEYS[1], 'floor:' .. rid, 1)\n`;
