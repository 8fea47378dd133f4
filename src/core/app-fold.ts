// App and rule names as id_server's counter table compares them. id_server keeps a counter
// per app name case-sensitively in memory, but its table's primary key uses a case-insensitive
// collation (utf8 / latin1 *_ci): "test" and "Test" write the same row, and the row keeps
// whichever name was written last. A floor read from that row must hold for every name it
// stands for, including names idmint has never been asked for, so idmint keeps such floors
// under the folded name in a shard of their own (rule counters use shard 0 only), and a
// rule counter's allocation never starts below the floor of its folded name. Pure.

/** The shard of idmint_counters that holds floors by folded app name (and for every app). */
export const FOLD_SHARD = -1;

/** The app part of a floor that holds for every app of the rule (no app name holds "*"). */
export const EVERY_APP = '*';

/**
 * An app or rule name as a case- and accent-insensitive collation compares it (the counter
 * table's key compares both): letters folded to lower case, accents dropped, trailing spaces
 * ignored (PAD SPACE collations).
 */
export function foldName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/ +$/, '')
    .toLowerCase();
}

/** The folded scope "<folded app>/<period>" of a rule counter's scope "<app>/<period>". */
export function foldScope(scope: string): string {
  const slash = scope.lastIndexOf('/');
  return `${foldName(scope.slice(0, slash))}${scope.slice(slash)}`;
}

/** The scope of a floor that holds for every app of a rule in a period. */
export const everyAppScope = (scope: string): string => `${EVERY_APP}${scope.slice(scope.lastIndexOf('/'))}`;
