--[[
  idemOther(record, kept): the reply of the idempotency scripts for a key's record `kept` (at
  key `record`) that is not the caller's own claim: {2, kept, ms} when it is an answer, ms the
  time its record still lives (PTTL: a process may hold the answer that long, no longer), else
  {4, fingerprint, ms}: another request's claim, its fingerprint and the ms it still holds.
  A claim is "?<owner>\n<fingerprint>"; an answer "<fingerprint>\n<answer>" (a fingerprint is
  JSON and never starts with "?").
]]
local function idemOther(record, kept)
  if string.sub(kept, 1, 1) ~= '?' then return { 2, kept, redis.call('PTTL', record) } end
  local nl = string.find(kept, '\n', 1, true)
  return { 4, string.sub(kept, nl + 1), math.max(0, redis.call('PTTL', record)) }
end
