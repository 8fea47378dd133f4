// The old systems' stores for import tests: each one's published table schema, and a scratch
// database to create them in.
import mysql from 'mysql2/promise';
import { poolOptions } from '../src/store/mysql/pool.js';
import { mysqlUrlFor } from './env.js';

// Published schemas (Leaf scripts/leaf_alloc.sql, Tinyid tinyid-server/db.sql, id_server deploy/counter.sql).
export const LEAF_DDL = `CREATE TABLE \`leaf_alloc\` (
  \`biz_tag\` varchar(128)  NOT NULL DEFAULT '',
  \`max_id\` bigint(20) NOT NULL DEFAULT '1',
  \`step\` int(11) NOT NULL,
  \`description\` varchar(256)  DEFAULT NULL,
  \`update_time\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`;
// Tinyid's tables name a charset (utf8) and no collation, so biz_type takes utf8's default
// collation, which ignores case (utf8mb3_general_ci on MySQL and MariaDB): Tinyid's lookup
// `WHERE biz_type = ?` finds "tid_case" for "TID_CASE". Kept so here, without a COLLATE.
export const TINYID_DDL = [
  `CREATE TABLE \`tiny_id_info\` (
  \`id\` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  \`biz_type\` varchar(63) NOT NULL DEFAULT '',
  \`begin_id\` bigint(20) NOT NULL DEFAULT '0',
  \`max_id\` bigint(20) NOT NULL DEFAULT '0',
  \`step\` int(11) DEFAULT '0',
  \`delta\` int(11) NOT NULL DEFAULT '1',
  \`remainder\` int(11) NOT NULL DEFAULT '0',
  \`create_time\` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  \`update_time\` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  \`version\` bigint(20) NOT NULL DEFAULT '0',
  PRIMARY KEY (\`id\`),
  UNIQUE KEY \`uniq_biz_type\` (\`biz_type\`)
) ENGINE=InnoDB AUTO_INCREMENT=1 DEFAULT CHARSET=utf8`,
  `CREATE TABLE \`tiny_id_token\` (
  \`id\` int(11) unsigned NOT NULL AUTO_INCREMENT,
  \`token\` varchar(255) NOT NULL DEFAULT '',
  \`biz_type\` varchar(63) NOT NULL DEFAULT '',
  \`remark\` varchar(255) NOT NULL DEFAULT '',
  \`create_time\` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  \`update_time\` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  PRIMARY KEY (\`id\`)
) ENGINE=InnoDB AUTO_INCREMENT=1 DEFAULT CHARSET=utf8`,
];
export const ID_SERVER_DDL = `create table if not exists counter
(
    node_offset int not null default 0 comment 'node offset' ,
    counter int not null default 0 comment 'counter' ,
    update_time int not null default 0 comment 'counter last update time' ,
    rule_name varchar(64) not null default '' comment 'rule name' ,
    app_name varchar(64) not null default '' comment 'app name' ,
    primary key(node_offset,rule_name,app_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8 COMMENT='counter table'`;

/** The rule file of id_server's README: `{year%10}{MM}{dd}{counter:4}`, counters 0 to 9999, daily. */
export const ID_SERVER_README_RULE = `function min_counter()
    return 0
end
function max_counter()
    return 9999
end
function reset_seconds()
    return 86400
end
function create_id(counter,now,salt)
    local seq = counter:generate_counter()
    local new_id = string.format("%01d%02d%02d%04d",now:year()%10 ,now:month(),now:day(),seq)
    return new_id
end
`;

/** A scratch database holding an old system's tables; dropped by the caller. */
export async function oldDb(name: string, ddl: string[]): Promise<{ url: string; c: mysql.Connection }> {
  const url = mysqlUrlFor(name);
  const admin = await mysql.createConnection({ ...poolOptions(url), database: undefined });
  await admin.query(`CREATE DATABASE \`${name}\``);
  await admin.end();
  const c = await mysql.createConnection({ ...poolOptions(url), supportBigNumbers: true, bigNumberStrings: true });
  for (const s of ddl) await c.query(s);
  return { url, c };
}

export async function dropDb(name: string): Promise<void> {
  const admin = await mysql.createConnection({ ...poolOptions(mysqlUrlFor(name)), database: undefined });
  await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await admin.end();
}
