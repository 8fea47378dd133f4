--[[
  The byte account of a tag's idempotency keys, in KEYS[3], a hash: field "" holds the total,
  and each live key (never empty) its charge in bytes: a claim is charged the size its answer
  may have, an answer the size of its record (key name and text). KEYS[2] is the index of live
  keys by expiry (see idem-claim-3.lua).

  idemCharge(member, bytes)  sets member's charge to bytes, the total follows
  idemPrune(now)             forgets the keys expired at `now`: out of the index, their charges
                             out of the total
  idemFreedAt(need, now)     the ms from now until keys expiring first have freed `need` bytes
]]
--- @include "int-text"
local function idemCharge(member, bytes)
  local before = tonumber(redis.call('HGET', KEYS[3], member) or '0')
  if bytes > 0 then
    redis.call('HSET', KEYS[3], member, bytes)
  else
    redis.call('HDEL', KEYS[3], member)
  end
  if bytes ~= before then redis.call('HINCRBY', KEYS[3], '', bytes - before) end
end

local function idemPrune(now)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', intText(now))
  for _, member in ipairs(gone) do idemCharge(member, 0) end
  if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', intText(now)) end
end

local function idemFreedAt(need, now)
  local freed, at, from = 0, now, 0
  while freed < need do
    local page = redis.call('ZRANGE', KEYS[2], from, from + 99, 'WITHSCORES')
    if #page == 0 then break end
    for i = 1, #page, 2 do
      freed = freed + tonumber(redis.call('HGET', KEYS[3], page[i]) or '0')
      at = tonumber(page[i + 1])
      if freed >= need then break end
    end
    from = from + 100
  end
  return math.max(0, at - now)
end
