--[[
  idem-held: how many idempotency keys of a tag are live (their records not yet expired), on
  Redis's clock (TIME), as idem-record-3.lua counts them against the tag's bound. Writes nothing.

  KEYS[1]  the tag's index of live keys (see idem-record-3.lua)

  Returns the number of members whose expiry is after now.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.0f', now), '+inf')
