--[[
  install: put a segment allocated in MySQL into a (tag, shard)'s double buffer, with fencing.

  KEYS[1]  segment hash of the (tag, shard)
  KEYS[2]  the tag's "moved" marker: the highest epoch retired on this Redis
  ARGV[1]  gen the refill was requested under (from take)
  ARGV[2]  first ID of the segment
  ARGV[3]  last ID of the segment (inclusive)
  ARGV[4]  now, in milliseconds (for the consumption-rate window)
  ARGV[5]  prefetch fraction
  ARGV[6]  1 when this is the final segment (its last ID is the tag's limit): marks the hash
           exhausted at once, so take never hands a request part of the IDs it asked for
  ARGV[7]  the tag's limit (largest counter value) when the segment was allocated
  ARGV[8]  the tag's epoch (part of KEYS[1])

  Writes the fields take reads (see take-2.lua): the segment (cur/end/pf/seg, or nf/ne),
  hwm, lim, ex, ins (plus the segment's size), rt/rn (now and the IDs handed out so far), and
  fe:<identity> (the steady-state bound) for the new state.

  Returns
     1  installed as the current segment (the current one was used up)
     2  installed as the next segment
    -1  refused: the hash is absent, carries another gen, or was written by another Redis
        instance (Redis lost its data, restarted from a snapshot or failed over, or the tag
        was reset or moved to another Redis, after this refill was requested); the segment
        is wasted, never shared
    -2  refused: a next segment is already present (a racing refill won)
    -3  refused: the segment is not above every ID already installed (a slower refill lost
        the race); installing it would hand out IDs lower than ones already issued
]]
--- @include "includes/server-identity"
local key = KEYS[1]
local moved = redis.call('GET', KEYS[2])
if moved and tonumber(moved) >= tonumber(ARGV[8]) then return -1 end
local h = redis.call('HMGET', key, 'gen', 'cur', 'end', 'nf', 'hwm', 'ins', 'rid', 'taken', 'seg', 'rq')
if not h[1] or h[1] ~= ARGV[1] then return -1 end
local rid = serverIdentity()
if h[7] ~= rid then return -1 end
if h[4] then return -2 end
local first, last = tonumber(ARGV[2]), tonumber(ARGV[3])
if first <= tonumber(h[5]) then return -3 end

-- IDs handed out so far: installed minus still held (no next segment is present here). A
-- hash written before ins existed counted them in taken.
local cur, curEnd = tonumber(h[2]), tonumber(h[3])
local held = math.max(0, curEnd - cur + 1)
local ins = tonumber(h[6]) or (tonumber(h[8]) or 0) + held
local lim = tonumber(ARGV[7])
redis.call('HSET', key, 'hwm', last, 'rt', ARGV[4], 'rn', ins - held, 'lim', ARGV[7], 'ins', ins + last - first + 1)
if ARGV[6] == '1' then redis.call('HSET', key, 'ex', 1) else redis.call('HDEL', key, 'ex') end
-- fe as take defines it: with a next segment present, up to the current end and the limit;
-- a new current segment also stops before its prefetch point unless a refill was asked for it.
if cur > curEnd then
  local pf = first + math.floor((last - first + 1) * tonumber(ARGV[5]))
  local seg = tonumber(h[9]) + 1
  local fe = math.min(last, lim)
  if (tonumber(h[10]) or -1) ~= seg then fe = math.min(fe, pf - 2) end
  redis.call('HSET', key, 'cur', first, 'end', last, 'pf', pf, 'seg', seg, 'fe:' .. rid, fe)
  return 1
end
redis.call('HSET', key, 'nf', first, 'ne', last, 'fe:' .. rid, math.min(curEnd, lim))
return 2
