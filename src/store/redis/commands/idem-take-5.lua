--[[
  idem-take: a request with an idempotency key for a counter whose IDs the caller takes
  straight from Redis (a segment tag of order global), in one call: the key's kept answer if it
  has one; else, when the IDs can be handed out with nothing but a cursor move (take-2.lua's
  steady state: up to the fast end of this server's identity), they are taken and kept as the
  key's answer at once; else a claim on the key, as idem-claim-3.lua gives, and the caller
  takes through take-2.lua and records (idem-record-3.lua) or releases (idem-release-3.lua).

  So a new key costs the same one Redis call as the request without it, and a replay that one
  call: nothing is taken for a key that has an answer or a claim, or for a tag without room for
  one more key. A call sent again (ioredis resends what had no reply when its connection
  closed) finds the key answered by its first run and answers that: it never takes twice.

  KEYS[1]  the key's record (see idem-claim-3.lua)
  KEYS[2]  the tag's index of live keys (see idem-claim-3.lua)
  KEYS[3]  the tag's byte account (see includes/idem-bytes.lua)
  KEYS[4]  the segment hash of the (tag, shard) (see take-2.lua)
  KEYS[5]  the tag's "moved" marker (see take-2.lua)
  ARGV[1..7]  as idem-claim-3.lua's: key, fingerprint, owner, claim ms, most keys, most bytes,
              the charge of a claim
  ARGV[8]  n: IDs wanted (1 .. 1000)
  ARGV[9]  the tag's epoch (part of KEYS[4])
  ARGV[10] retention in ms (>= 1): how long the answer is kept
  ARGV[11] stride, ARGV[12] offset: the ID of counter value k is k * stride + offset (a tag
           whose IDs are formatted otherwise is never taken here: its caller claims)

  Returns {6, first}    taken and kept: the answer is the counter values first .. first+n-1,
                        as IDs k * stride + offset, in that order
          {1}           claimed (the steady state does not hold: a segment ends or is asked
                        for, the hash is cold, moved or of another identity, or the IDs would
                        pass 2^53): take through take-2.lua, then record or release
          {2, record}, {3, ms}, {4, fingerprint, ms}, {5, ms}   as idem-claim-3.lua's
]]
--- @include "includes/idem-other"
--- @include "includes/now-ms"
--- @include "includes/idem-room"
--- @include "includes/idem-keep"
--- @include "includes/server-identity"
local kept = redis.call('GET', KEYS[1])
if kept then return idemOther(KEYS[1], kept) end

local now = nowMs()
local charge = tonumber(ARGV[7])
local full = idemRoom(now, charge)
if full then return full end

-- The IDs of counter values first .. first + n - 1, encoded as the caller's encodeIds writes
-- them (core/idempotency-key.ts): a run of three or more as [first, step, count].
local function answerOf(first, n, stride, offset)
  if n >= 3 then
    return '[["' .. intText(first * stride + offset) .. '","' .. intText(stride) .. '",' .. n .. ']]'
  end
  local ids = {}
  for k = first, first + n - 1 do ids[#ids + 1] = '"' .. intText(k * stride + offset) .. '"' end
  return '[' .. table.concat(ids, ',') .. ']'
end

local n = tonumber(ARGV[8])
local stride, offset = tonumber(ARGV[11]), tonumber(ARGV[12])
local moved = redis.call('GET', KEYS[5])
if not (moved and tonumber(moved) >= tonumber(ARGV[9])) then
  local steady = redis.call('HMGET', KEYS[4], 'fe:' .. serverIdentity(), 'cur')
  if steady[1] then
    local first = tonumber(steady[2])
    if first + n - 1 <= tonumber(steady[1]) and (first + n - 1) * stride + offset <= 9007199254740991 then
      redis.call('HSET', KEYS[4], 'cur', intText(first + n))
      idemKeepAnswer(now, ARGV[2] .. '\n' .. answerOf(first, n, stride, offset), tonumber(ARGV[10]))
      return { 6, first }
    end
  end
end

idemClaimKey(now, ARGV[3], ARGV[2], tonumber(ARGV[4]), charge)
return { 1 }
