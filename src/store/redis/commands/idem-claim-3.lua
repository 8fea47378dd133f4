--[[
  idem-claim: the first step of a request with an idempotency key, before it takes any ID. The
  key's kept answer if it has one; else a claim on the key for this request, unless another
  request holds one or the tag holds its most live keys. Only the request holding the claim
  takes IDs; idem-record-3.lua then turns the claim into the key's answer, idem-release-3.lua
  gives the key up when the take failed. A claim whose request never comes back (its process
  died between take and record) expires after ARGV[4] ms; the IDs it took are a gap.

  KEYS[1]  the key's record: "<fingerprint>\n<answer>" once answered; "?<owner>\n<fingerprint>"
           while claimed (a fingerprint is JSON and never starts with "?")
  KEYS[2]  the tag's index of live keys: a sorted set, member the idempotency key, score the
           ms (Redis time) at which its record or claim expires; it expires after the last one
  ARGV[1]  the idempotency key (the member of KEYS[2])
  ARGV[2]  the request's fingerprint (never holds a line break)
  ARGV[3]  the claim's owner: a token of this request that no other request has
  ARGV[4]  how long the claim holds, in ms (>= 1)
  KEYS[3]  the tag's byte account (see includes/idem-bytes.lua): what its live keys cost
  ARGV[5]  the most live keys the tag may hold (>= 1)
  ARGV[6]  the most bytes the tag's live keys may cost (>= 1)
  ARGV[7]  the bytes this key's answer may cost: the claim is charged that much until recorded

  Expiry is decided on Redis's clock (TIME), the same for every process.

  Returns {1}                    claimed: the caller takes its IDs, then records or releases
          {2, record, ms}        the key has an answer: nothing written; the caller answers the
                                 record's IDs if its fingerprint is the request's, else refuses;
                                 ms: how long the record still lives (PTTL)
          {3, ms}                full: the tag holds ARGV[5] live keys; nothing written; ms
                                 until the first of them expires
          {4, fingerprint, ms}   another request holds a claim on the key (its fingerprint), for
                                 at most ms more; nothing written
          {5, ms}                full in bytes: the key's charge would take the tag's keys past
                                 ARGV[6] bytes; nothing written; ms until enough of them expire
                                 to make room for it
]]
--- @include "includes/idem-other"
--- @include "includes/now-ms"
--- @include "includes/idem-room"
--- @include "includes/idem-keep"
local kept = redis.call('GET', KEYS[1])
if kept then return idemOther(KEYS[1], kept) end

local now = nowMs()
local charge = tonumber(ARGV[7])
idemPrune(now)
local full = idemRoom(now, charge, tonumber(ARGV[5]), tonumber(ARGV[6]))
if full then return full end

idemClaimKey(KEYS[1], ARGV[1], now, ARGV[3], ARGV[2], tonumber(ARGV[4]), charge)
idemLiveFor(tonumber(ARGV[4]))
return { 1 }
