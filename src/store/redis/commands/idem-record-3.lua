--[[
  idem-record: turn a request's claim on an idempotency key (idem-claim-3.lua) into the key's
  answer: the IDs the request took, kept for the tag's retention. The first answer kept is the
  only one any request with the key is ever given: a claim that expired and was taken by
  another request is never overwritten.

  KEYS[1]  the key's record (see idem-claim-3.lua)
  KEYS[2]  the tag's index of live keys (see idem-claim-3.lua)
  KEYS[3]  the tag's byte account (see includes/idem-bytes.lua): the key is charged the bytes
           of its record from now on, in place of its claim's estimate
  ARGV[1]  the idempotency key (the member of KEYS[2])
  ARGV[2]  the claim's owner (as given to idem-claim-3.lua)
  ARGV[3]  the request's fingerprint
  ARGV[4]  the answer: the IDs taken, encoded
  ARGV[5]  retention in ms (>= 1): how long the answer is kept

  Returns {1}                    recorded: the caller answers the IDs it sent (also when its
                                 claim had expired and no other request claimed the key)
          {2, record, ms}        the key has an answer already (ms: its record's PTTL): nothing
                                 written
          {4, fingerprint, ms}   another request claimed the key after this one's claim
                                 expired: nothing written; the IDs sent reach nobody
]]
--- @include "includes/idem-other"
--- @include "includes/now-ms"
--- @include "includes/idem-keep"
local kept = redis.call('GET', KEYS[1])
if kept and kept ~= '?' .. ARGV[2] .. '\n' .. ARGV[3] then return idemOther(KEYS[1], kept) end

idemKeepAnswer(KEYS[1], ARGV[1], nowMs(), ARGV[3] .. '\n' .. ARGV[4], tonumber(ARGV[5]))
idemLiveFor(tonumber(ARGV[5]))
return { 1 }
