--[[
  idem-takes: requests with idempotency keys for a counter whose IDs their process takes straight
  from Redis (a plain segment tag of order global), in arrival order, in one call for all of
  them. For each request: its key's kept answer if it has one; else, while the counter is in
  take-2.lua's steady state (the IDs can be handed out with nothing but a cursor move, up to the
  fast end of this server's identity), its IDs taken and kept as the key's answer at once; else
  a claim on its key, as idem-claim-3.lua gives, and its process takes through take-2.lua and
  records (idem-record-3.lua) or releases (idem-release-3.lua). Once one request of the call is
  claimed, every later one is claimed too (none is given IDs below an earlier one's).

  So a new key costs no Redis call more than the request without it, and a replay one call in
  all: nothing is taken for a key that has an answer or a claim, or for a tag without room for
  one more key. A call sent again (ioredis resends what had no reply when its connection
  closed) finds the keys its first run answered and answers those: it never takes twice.

  KEYS[1]  the segment hash of the (tag, shard) (see take-2.lua)
  KEYS[2]  the tag's index of live keys (see idem-claim-3.lua)
  KEYS[3]  the tag's byte account (see includes/idem-bytes.lua)
  KEYS[4]  the tag's "moved" marker (see take-2.lua)
  ARGV[1]  the records' common prefix: the record of key K is ARGV[1] .. K (in KEYS[1]'s
           cluster slot, as the other keys: the tag's)
  ARGV[2]  how long a claim holds, in ms (>= 1)
  ARGV[3]  the most live keys the tag may hold (>= 1)
  ARGV[4]  the most bytes the tag's live keys may cost (>= 1)
  ARGV[5]  the tag's epoch (part of KEYS[1])
  ARGV[6]  retention in ms (>= 1): how long an answer is kept
  ARGV[7]  stride, ARGV[8] offset: the ID of counter value k is k * stride + offset (a tag
           whose IDs are formatted otherwise is never taken here)
  ARGV[9 ..] five per request, in arrival order: its key, its fingerprint, its owner (a random
           token), the bytes its claim is charged, n (IDs wanted, 1 .. 1000); the keys are
           distinct

  Returns one reply per request, in order:
          {6, first}    taken and kept: the answer is counter values first .. first + n - 1, as
                        IDs k * stride + offset
          {1}           claimed: take through take-2.lua, then record or release
          {2, record, ms}, {3, ms}, {4, fingerprint, ms}, {5, ms}   as idem-claim-3.lua's
]]
--- @include "includes/idem-other"
--- @include "includes/now-ms"
--- @include "includes/idem-room"
--- @include "includes/idem-keep"
--- @include "includes/steady-take"
local prefix = ARGV[1]
local hold, maxKeys, maxBytes = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local retention = tonumber(ARGV[6])
local stride, offset = tonumber(ARGV[7]), tonumber(ARGV[8])

-- The IDs of counter values first .. first + n - 1, encoded as the caller's encodeIds writes
-- them (core/idempotency-key.ts): a run of three or more as [first, step, count].
local function answerOf(first, n)
  if n >= 3 then return '[["' .. intText(first * stride + offset) .. '","' .. intText(stride) .. '",' .. n .. ']]' end
  local ids = {}
  for k = first, first + n - 1 do ids[#ids + 1] = '"' .. intText(k * stride + offset) .. '"' end
  return '[' .. table.concat(ids, ',') .. ']'
end

local now = nowMs()
idemPrune(now)

-- The steady state, as take-2.lua reads it (includes/steady-take.lua): the cursor and the fast
-- end of this server's identity (none: every request claims).
local _, cur, fastEnd = steadyState(KEYS[1], KEYS[4], ARGV[5])

local replies = {}
local longest = 0
local moves = false
for i = 9, #ARGV, 5 do
  local key, fingerprint, owner, charge, n = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
  local record = prefix .. key
  local kept = redis.call('GET', record)
  local reply
  if kept then
    reply = idemOther(record, kept)
  else
    reply = idemRoom(now, charge, maxKeys, maxBytes)
    if not reply then
      if fastEnd and cur + n - 1 <= fastEnd and (cur + n - 1) * stride + offset <= 9007199254740991 then
        idemKeepAnswer(record, key, now, fingerprint .. '\n' .. answerOf(cur, n), retention)
        reply = { 6, cur }
        cur = cur + n
        moves = true
        longest = math.max(longest, retention)
      else
        fastEnd = nil
        idemClaimKey(record, key, now, owner, fingerprint, hold, charge)
        reply = { 1 }
        longest = math.max(longest, hold)
      end
    end
  end
  replies[#replies + 1] = reply
end
if moves then redis.call('HSET', KEYS[1], 'cur', intText(cur)) end
if longest > 0 then idemLiveFor(longest) end
return replies
