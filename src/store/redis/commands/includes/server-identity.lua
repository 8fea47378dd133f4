--[[
  serverIdentity(): the identity of the Redis master running the script and of the data it
  holds: its replication id (master_replid in INFO replication). Raises an error on a replica.

  State that records the identity it was written under (a segment hash's rid, a worker-id
  space's rid) is known to come from elsewhere when the two differ, possibly a copy that lags
  behind what was already handed out. A master's replication id is random and changes whenever
  its data may have been replaced (checked on Redis 7.0):
    - a restart, with or without persistence: a master starts with a new one;
    - a replica promoted (REPLICAOF NO ONE, FAILOVER, a Sentinel or Cluster failover): it
      takes a new one;
    - a master turned replica: it takes its new master's id, and a new one when it is
      promoted again. The run id (INFO server) stays the same across that round trip, although
      the process then holds its former replica's data: a master demoted, resynchronised from
      a replica that lagged, and promoted again must not trust its own old hashes.
  A replica shares its master's replication id, so the identity is given only on a master
  (a writable replica is refused, never mistaken for its master).

  This is the only place a script learns which server it runs on.
]]
-- Plain finds, not patterns: a pattern search tries every position of the reply and cost a
-- third of the read (bench:take, "only the identity read").
local function serverIdentity()
  local info = redis.call('INFO', 'replication')
  if not string.find(info, '\nrole:master\r', 1, true) then
    error({ err = 'ERR idmint: this Redis server is a replica; idmint writes to masters only' })
  end
  local _, from = string.find(info, '\nmaster_replid:', 1, true)
  local to = from and string.find(info, '\r', from + 1, true)
  if not to or to == from + 1 then error({ err = 'ERR idmint: INFO replication gave no master_replid' }) end
  return string.sub(info, from + 1, to - 1)
end
