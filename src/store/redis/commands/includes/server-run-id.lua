--[[
  serverRunId(): the run id of the Redis server process running the script.

  The run id changes whenever the server process changes: a restart (with or without its
  data) or a failover. State that records the run id it was written under (a segment hash's
  rid, a worker-id space's rid) is therefore known to come from another instance when the
  two differ: a snapshot or a replica that may lag behind what was already handed out.

  The segment store may run a copy of take-2.lua in which this read is replaced by the run
  id as a constant, loaded into that server process only (src/store/redis/pinned-take.ts);
  so this is the only place a script reads the run id.
]]
local function serverRunId()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
end
