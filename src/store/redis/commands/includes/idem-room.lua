--[[
  idemRoom(now, charge): whether a tag has room for one more idempotency key whose answer may
  cost `charge` bytes, once the keys expired at `now` are forgotten (idemPrune). nil when it
  has; else the reply that refuses the key, nothing written:
    {3, ms}  the tag holds ARGV[5] live keys; ms until the first of them expires
    {5, ms}  the charge would take the tag's keys past ARGV[6] bytes; ms until enough of them
             expire to make room for it
  KEYS[2], KEYS[3], ARGV[5] and ARGV[6] are as in idem-claim-3.lua.
]]
--- @include "idem-bytes"
local function idemRoom(now, charge)
  idemPrune(now)
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
    local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return { 3, math.max(0, tonumber(first[2]) - now) }
  end
  local total = tonumber(redis.call('HGET', KEYS[3], '') or '0')
  if total + charge > tonumber(ARGV[6]) then return { 5, idemFreedAt(total + charge - tonumber(ARGV[6]), now) } end
  return nil
end
