// The files an id_server deployment leaves for an import, as the model writes them: config.json
// in the shape id_server/id_server.cpp load_config reads (id_step, id_offset, rules with
// name, lua_file and batch_save; jsoncpp's reader) and a Lua rule file in the shape of its
// order_id.lua and task.lua (min_counter, max_counter, reset_seconds, create_id formatting
// counter:generate_counter() with string.format).
import type { IdServerScenario, RuleConfig } from './id-server-model.js';

export const luaFileOf = (rule: string): string => `${rule}.lua`;

/** A rule file in the shape of id_server's order_id.lua and task.lua. */
export function luaText(r: RuleConfig): string {
  return [
    `function min_counter()`,
    `    return ${r.min}`,
    'end',
    '',
    'function max_counter()',
    `    return ${r.max}`,
    'end',
    '',
    'function reset_seconds()',
    `    return ${r.reset}`,
    'end',
    '',
    'function create_id(counter,now,salt)',
    '    local seq = counter:generate_counter()',
    `    local new_id = string.format("${r.format}"${r.args.map((a) => `,${a}`).join('')})`,
    '    return new_id',
    'end',
    '',
  ].join('\n');
}

export function configText(s: IdServerScenario, node: number): string {
  return JSON.stringify(
    {
      log_prefix: `/var/log/id_server/id_server_${node}`,
      log_level: s.logLevel,
      service_host: '0.0.0.0',
      service_port: 1200,
      id_step: s.idStep,
      id_offset: s.offsets[node],
      database: { host: '127.0.0.1', port: 3306, user: 'id', password: '', dbname: 'id_counter', charset: 'utf8' },
      rules: s.rules.map((r) => ({
        name: r.name,
        lua_file: luaFileOf(r.name),
        ...(r.batchSave === undefined ? {} : { batch_save: r.batchSave }),
      })),
    },
    null,
    2,
  );
}
