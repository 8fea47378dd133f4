--[[
  take: hand out up to n consecutive IDs of one (tag, shard) from its current segment,
  moving into the next segment (the double buffer) when the current one ends.

  KEYS[1]  segment hash of the (tag, shard)
  KEYS[2]  the tag's "moved" marker: the highest epoch retired on this Redis
  ARGV[1]  n: IDs wanted (>= 1)
  ARGV[2]  a fresh random token per call: the call's identity (a resent call carries the
           same), and the gen if the hash is absent (cold start, or Redis lost its data, or
           the tag was reset; installs must later present the gen); its last character
           names the field that keeps the call's answer (a0 .. a7, see below)
  ARGV[3]  prefetch: fraction of a segment consumed at which the next one is wanted
  ARGV[4]  the tag's epoch (part of KEYS[1])

  Hash fields: rid (identity of the Redis master that created the hash, see
  includes/server-identity.lua), gen, cur (next ID to hand out), end (last ID of the current segment),
  nf/ne (next segment), seg (number of the current segment), pf (prefetch point),
  rq (segment number a refill was last asked for), hwm (highest ID ever installed),
  ins (IDs installed into this hash: IDs handed out = ins minus the IDs still in the buffer),
  rt/rn (time and IDs handed out at the last install), ex (exhausted),
  lim (the tag's limit when the last segment was allocated),
  fe:<identity> (fast end: the last ID a take may hand out with nothing but a cursor move,
  because up to it no segment change, no refill request and no limit is due; rewritten with
  every change of cur/end/nf/pf/rq/lim, by take and install; absent means none), a0 .. a7
  ("<call>=<answer>": the answer of the latest call naming that field that handed out IDs;
  a caller names them in turn, so the takes it has in flight use different ones). The
  fast-end field is named by the identity it was written under, so the steady state needs
  no read of rid: only a hash written under the identity of the server running the call has
  it (rid is written once, when the hash is created, and a hash of another identity is
  deleted before it is written again).

  The server's identity is read from INFO replication on every call (serverIdentity(), in
  includes/server-identity.lua; docs/GUARANTEES.md says why no cheaper constant is safe).

  A call that already ran and handed out IDs answers what it answered then, and nothing moves
  again: a client whose connection closed before the reply arrived sends the same call again
  once reconnected (ioredis resends the commands it had no answer to, a cluster client after
  "Connection is closed"), and a second run would take further IDs while the first run's
  reached nobody, so a request that fits would be refused at the limit for IDs nobody got.
  A resent call whose field a later call (of another caller, or more than 8 takes later) has
  written since runs again (its first run's IDs are a gap).

  Returns first (an integer) in the steady state: all n IDs given, first .. first + n - 1,
  no refill wanted (status 0 without the rest of the reply); otherwise
          {status, gen, seg, refill_wanted, first1, last1, first2, last2, ...}
    status 0  all n IDs given, as inclusive runs
    status 1  dry: fewer than n given (possibly none); a refill is wanted
    status 2  cold: the hash was absent and has been created with ARGV[2]; none given
    status 4  replaced: the hash was written under another identity (this server restarted
              from a snapshot, a replica that may have missed the last takes was promoted, or
              this master was resynchronised from one):
              its cursor cannot be trusted, so it has been created afresh as in status 2
    status 5  moved: the tag moved to another Redis; this epoch's state here is retired and
              nothing is given or created (the caller reads the tag's definition again)
    status 3  exhausted: fewer than n IDs are left before the tag's limit (ex is set and Redis
              holds fewer than n, or lim says fewer than n remain at all); none given, so no
              request is left holding a part of its IDs; the fifth element is how many are left
  refill_wanted is 1 when the caller should enqueue a refill for (gen, seg).
]]
--- @include "includes/steady-take"
--- @include "includes/int-text"
local key = KEYS[1]
local n = tonumber(ARGV[1])
local call = ARGV[2]
-- The field keeping this call's answer (if it hands out IDs).
local answerField = 'a' .. string.sub(call, -1)

-- The answer of this call when it already ran (kept: the answer field's value), else nil.
-- (A plain find and a byte, not a substring and a concatenation: the steady state asks it on
-- every call, and neither allocates a string.)
local function ranBefore(kept)
  if not kept or string.find(kept, call, 1, true) ~= 1 or string.byte(kept, #call + 1) ~= 61 then return nil end
  local answer = string.sub(kept, #call + 2)
  if string.sub(answer, 1, 1) ~= '{' then return tonumber(answer) end
  local out = {}
  for part in string.gmatch(string.sub(answer, 2), '[^,]+') do
    -- The second element is the gen (a string); the others are integers.
    out[#out + 1] = #out == 1 and part or tonumber(part)
  end
  return out
end

-- The identity (rid) changes whenever the data may have come from elsewhere: restart (with or
-- without data), failover, a master resynchronised from a replica. A hash written under
-- another identity may lag behind IDs already handed out.
-- Steady state (includes/steady-take.lua): n IDs up to the fast end of this identity, one read,
-- one write (the cursor and this call's answer) and the shortest reply (the first ID). Past the
-- fast end nothing is written, and the general path below decides.
local rid, first, fastEnd, kept = steadyState(key, KEYS[2], ARGV[4], answerField)
if not rid then return {5, '', 0, 0} end
if fastEnd then
  local again = ranBefore(kept)
  if again then return again end
  if first + n - 1 <= fastEnd then
    redis.call('HSET', key, 'cur', intText(first + n), answerField, call .. '=' .. intText(first))
    return first
  end
end
local h = redis.call('HMGET', key, 'gen', 'cur', 'end', 'nf', 'ne', 'seg', 'pf', 'rq', 'ex', 'lim', 'hwm', 'rid', answerField)
if not h[1] or h[12] ~= rid then
  local status = 2
  if h[1] then
    status = 4
    redis.call('DEL', key)
  end
  redis.call('HSET', key, 'rid', rid, 'gen', ARGV[2], 'cur', 1, 'end', 0, 'seg', 0, 'pf', 0, 'rq', 0, 'hwm', 0, 'ins', 0)
  return {status, ARGV[2], 0, 1}
end
local again = ranBefore(h[13])
if again then return again end

local cur, last, seg, pf = tonumber(h[2]), tonumber(h[3]), tonumber(h[6]), tonumber(h[7])
local nf, ne = h[4], h[5]
if h[9] then
  local avail = math.max(0, last - cur + 1)
  if nf then avail = avail + tonumber(ne) - tonumber(nf) + 1 end
  if avail < n then return {3, h[1], seg, 0, avail} end
elseif h[10] then
  -- At most this many values remain up to the limit, allocated or not.
  local nextValue = cur
  if cur > last then nextValue = nf and tonumber(nf) or (tonumber(h[11]) + 1) end
  local atMost = math.max(0, tonumber(h[10]) - nextValue + 1)
  if atMost < n then return {3, h[1], seg, 0, atMost} end
end
local out = {}
local got = 0
local promoted = false
while got < n do
  if cur > last then
    if not nf then break end
    cur, last = tonumber(nf), tonumber(ne)
    nf, ne = false, false
    seg = seg + 1
    pf = cur + math.floor((last - cur + 1) * tonumber(ARGV[3]))
    promoted = true
  end
  local k = math.min(n - got, last - cur + 1)
  out[#out + 1] = cur
  out[#out + 1] = cur + k - 1
  cur = cur + k
  got = got + k
end

local status = 0
if got < n then status = 1 end
local rq = tonumber(h[8]) or -1
local want = 0
if not h[9] and (status == 1 or (not nf and cur >= pf and rq ~= seg)) then
  want = 1
  rq = seg
end
-- The fast path may hand out up to the segment's end, the limit, and (while no next segment
-- is present nor asked for) up to just before the take that reaches the prefetch point.
local fe = last
if h[10] then fe = math.min(fe, tonumber(h[10])) end
if not nf and rq ~= seg then fe = math.min(fe, pf - 2) end

local reply = {status, h[1], seg, want, unpack(out)}
local fields = {'cur', cur, 'rq', rq, 'fe:' .. rid, fe}
if promoted then
  redis.call('HDEL', key, 'nf', 'ne')
  for _, v in ipairs({'end', last, 'seg', seg, 'pf', pf}) do fields[#fields + 1] = v end
end
-- A call that handed out IDs is remembered with its answer (one that gave none may run again).
if got > 0 then
  local parts = {}
  for i, v in ipairs(reply) do parts[i] = i == 2 and v or intText(v) end
  fields[#fields + 1] = answerField
  fields[#fields + 1] = call .. '={' .. table.concat(parts, ',')
end
redis.call('HSET', key, unpack(fields))
return reply
