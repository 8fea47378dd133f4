--[[
  prime: create the segment hash of a counter nobody has taken from yet, so that a refill can
  install its first segment before the first request comes (a rule's scope of the next period,
  warmed before the period starts: src/service/period-warmer.ts). Never hands out an ID.

  KEYS[1]  segment hash of the (tag, shard, scope)
  KEYS[2]  the tag's "moved" marker: the highest epoch retired on this Redis
  ARGV[1]  the gen of the hash if this call creates it (installs must present it)
  ARGV[2]  the tag's epoch (part of KEYS[1])

  The hash is created as take-2.lua creates it on a cold start (the same fields, under this
  server's identity), so the first take finds it as take-2.lua would have left it: dry until
  the refill's segment is installed, then served from that segment.

  Returns
     1  created under ARGV[1]: a refill of segment 0 under that gen fills it
     0  the hash exists (another process primed it, or it was taken from): nothing changed;
        a hash of another identity is left for the first take to start afresh
    -1  the tag's epoch is retired here (it moved to another Redis): nothing changed
]]
--- @include "includes/server-identity"
local key = KEYS[1]
local moved = redis.call('GET', KEYS[2])
if moved and tonumber(moved) >= tonumber(ARGV[2]) then return -1 end
if redis.call('EXISTS', key) == 1 then return 0 end
local rid = serverIdentity()
redis.call('HSET', key, 'rid', rid, 'gen', ARGV[1], 'cur', 1, 'end', 0, 'seg', 0, 'pf', 0, 'rq', 0, 'hwm', 0, 'ins', 0)
return 1
