--[[
  exhaust: record that a (tag, shard) reached its max_id_limit, so take answers status 3
  instead of asking for refills that MySQL cannot grant. An install clears the mark.

  KEYS[1]  segment hash of the (tag, shard)
  ARGV[1]  gen the refill was requested under

  Returns 1 when marked, -1 when the hash is absent or carries another gen.
]]
local gen = redis.call('HGET', KEYS[1], 'gen')
if not gen or gen ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'ex', 1)
return 1
