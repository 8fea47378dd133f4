// Addresses of a Redis Sentinel group, read from configuration text: a list of sentinels
// (REDIS_SENTINELS, REDIS_CLUSTER_NODES use the same host:port form) and the sentinel URL of a
// named server, redis+sentinel://[[user]:password@]host:port[,host:port...]/<master>[/<db>].

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** A master found through sentinels: where to ask, its name, and its own credentials and database. */
export interface SentinelTarget {
  readonly sentinels: readonly HostPort[];
  readonly master: string;
  readonly username?: string;
  readonly password?: string;
  readonly db: number;
}

export const SENTINEL_PROTOCOL = 'redis+sentinel:';

/** A Sentinel master name: what `sentinel monitor <name>` accepts in practice. */
export const SENTINEL_MASTER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/;

/** One host:port (a [bracketed] IPv6 host), or undefined when it is not one. */
export function parseHostPort(item: string): HostPort | undefined {
  const match = HOST_PORT.exec(item);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) return undefined;
  return { host: match[1].replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

/** host:port items separated by commas; blanks are skipped; bad items are returned as such. */
export function parseHostPorts(list: string): { readonly ok: HostPort[]; readonly bad: string[] } {
  const ok: HostPort[] = [];
  const bad: string[] = [];
  for (const item of list
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const hp = parseHostPort(item);
    if (hp) ok.push(hp);
    else bad.push(item);
  }
  return { ok, bad };
}

export function isSentinelUrl(raw: string): boolean {
  return raw.trim().toLowerCase().startsWith(`${SENTINEL_PROTOCOL}//`);
}

/** Parses a redis+sentinel:// URL; throws an Error saying what is wrong. */
export function parseSentinelUrl(raw: string): SentinelTarget {
  const form = 'redis+sentinel://[[user]:password@]host:port[,host:port...]/<master>[/<db>]';
  if (!isSentinelUrl(raw)) throw new Error(`not a ${form} URL`);
  const rest = raw.trim().slice(SENTINEL_PROTOCOL.length + 2);
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash + 1);
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? '' : authority.slice(0, at);
  const { ok: sentinels, bad } = parseHostPorts(at < 0 ? authority : authority.slice(at + 1));
  if (bad.length) throw new Error(`its sentinels are host:port separated by commas, got "${bad[0]}" (${form})`);
  if (sentinels.length === 0) throw new Error(`it names no sentinel host:port (${form})`);
  const [master = '', db = '0', ...extra] = path.split('/');
  if (!SENTINEL_MASTER_NAME.test(master))
    throw new Error(`it must end with the master's name ([A-Za-z0-9_.-]{1,64}), got "${master}" (${form})`);
  if (extra.length || !/^\d{1,2}$/.test(db))
    throw new Error(`after the master's name only a database number may follow, got "${path}" (${form})`);
  const colon = userinfo.indexOf(':');
  const username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
  const password = colon < 0 ? '' : decodeURIComponent(userinfo.slice(colon + 1));
  return {
    sentinels,
    master,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    db: Number(db),
  };
}
