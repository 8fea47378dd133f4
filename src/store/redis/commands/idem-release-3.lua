--[[
  idem-release: give up a claim on an idempotency key (idem-claim-3.lua) whose request took no
  ID (the take failed), so that a retry with the key is served as a first request. Only the
  claim's own request releases it; an answer or another request's claim is left as it is.

  KEYS[1]  the key's record (see idem-claim-3.lua)
  KEYS[2]  the tag's index of live keys (see idem-claim-3.lua)
  KEYS[3]  the tag's byte account (see includes/idem-bytes.lua): the claim's charge is given back
  ARGV[1]  the idempotency key (the member of KEYS[2])
  ARGV[2]  the claim's owner (as given to idem-claim-3.lua)

  Returns 1 when the claim was released, 0 when the key held no claim of ARGV[2].
]]
--- @include "includes/idem-bytes"
local kept = redis.call('GET', KEYS[1])
local mine = '?' .. ARGV[2] .. '\n'
if not kept or string.sub(kept, 1, #mine) ~= mine then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
idemCharge(ARGV[1], 0)
return 1
