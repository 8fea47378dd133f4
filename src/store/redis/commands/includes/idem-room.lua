--[[
  idemRoom(now, charge, maxKeys, maxBytes): whether a tag has room for one more idempotency key
  whose answer may cost `charge` bytes, the keys expired at `now` forgotten (idemPrune, called
  by the script before). nil when it has; else the reply that refuses the key, nothing written:
    {3, ms}  the tag holds maxKeys live keys; ms until the first of them expires
    {5, ms}  the charge would take the tag's keys past maxBytes; ms until enough of them
             expire to make room for it
  KEYS[2] and KEYS[3] are the tag's index of live keys and byte account (idem-claim-3.lua).
]]
--- @include "idem-bytes"
local function idemRoom(now, charge, maxKeys, maxBytes)
  if redis.call('ZCARD', KEYS[2]) >= maxKeys then
    local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return { 3, math.max(0, tonumber(first[2]) - now) }
  end
  local total = tonumber(redis.call('HGET', KEYS[3], '') or '0')
  if total + charge > maxBytes then return { 5, idemFreedAt(total + charge - maxBytes, now) } end
  return nil
end
