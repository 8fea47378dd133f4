--[[
  lease-renew: extend a worker-id lease only if it is still ours (compare and extend), and
  raise the id's last timestamp to what this holder may issue until the new expiry. Like
  lease-acquire, it raises the space's guard when the space's state came from another Redis
  instance.

  KEYS[1]  the space's key base (see lease-acquire-1.lua)
  ARGV[1]  worker id
  ARGV[2]  lease value this process holds
  ARGV[3]  TTL in milliseconds
  ARGV[4]  last ms: the highest wall-clock ms this holder may issue at under the extended lease

  Returns
     1  extended
     0  the lease key is gone (expired): the id is free; the caller must acquire again
    -1  the id is held by someone else: the caller must drop it and acquire another
]]
--- @include "includes/server-identity"
local base = KEYS[1]
local rid = serverIdentity()
if redis.call('GET', base .. 'rid') ~= rid then
  -- State written under another identity: hold every id of the space for one TTL (see
  -- lease-acquire-1.lua), before this renewal marks the space as seen by this instance.
  local t = redis.call('TIME')
  local hold = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3])
  local guard = tonumber(redis.call('GET', base .. 'init') or '0')
  if hold > guard then redis.call('SET', base .. 'init', hold) end
  redis.call('SET', base .. 'rid', rid)
end
local key = base .. 'w:' .. ARGV[1]
local cur = redis.call('GET', key)
if not cur then return 0 end
if cur ~= ARGV[2] then return -1 end
redis.call('SET', key, ARGV[2], 'PX', tonumber(ARGV[3]))
local lastKey = base .. 'last:' .. ARGV[1]
local last = tonumber(redis.call('GET', lastKey) or '0')
if tonumber(ARGV[4]) > last then redis.call('SET', lastKey, ARGV[4]) end
return 1
