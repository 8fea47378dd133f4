--[[
  lease-acquire: lease a free worker id of one worker-id space (one per worker-id width).

  KEYS[1]  the space's key base, e.g. "idmint:{ws10}:" (every key of the space shares its
           hash tag; this script builds "<base>w:<id>", "<base>last:<id>", "<base>cursor",
           "<base>init" from it)
  ARGV[1]  size of the space (2^worker_bits)
  ARGV[2]  lease value: "<node id> <host>:<port>"
  ARGV[3]  TTL in milliseconds
  ARGV[4]  preferred worker id (the one this process held before), or -1
  ARGV[5]  most ids to probe in one call
  ARGV[6]  horizon ms: the latest wall-clock ms the caller may issue at under this lease
           (its now + TTL); recorded in last:<id> at once, so a holder that dies before its
           first renewal still leaves a floor above everything it issued

  Keys: w:<id> = lease value with a TTL; last:<id> = the highest wall-clock ms its holders may
  have issued at (no TTL); cursor = where the next probe starts; init = a guard time in ms;
  rid = identity (includes/server-identity.lua) of the Redis master that last ran a lease
  script on the space.
  When init is missing (first use of the space, or Redis lost its data) this call creates it
  as now + TTL: until then no holder may issue, since holders from before a loss may still
  be issuing under leases Redis forgot. A caller that knows the space is new clears the guard.
  When rid names another identity (restart from a snapshot, failover to a replica that may
  have missed the last acquires and renewals, a master resynchronised from one) the guard is
  raised to now + TTL the same way.

  Returns {worker_id, last_ms, guard_ms, fresh}
    worker_id  -1 when no free id was found within ARGV[5] probes (space exhausted)
    last_ms    last:<id>; the holder issues strictly after max(last_ms, guard_ms)
    guard_ms   the init guard
    fresh      1 when this call created the init marker
]]
--- @include "includes/server-identity"
local base = KEYS[1]
local size = tonumber(ARGV[1])
local value = ARGV[2]
local ttl = tonumber(ARGV[3])
local fresh = 0
local rid = serverIdentity()
local t = redis.call('TIME')
local hold = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl
local guard = redis.call('GET', base .. 'init')
if not guard then
  guard = hold
  redis.call('SET', base .. 'init', guard)
  fresh = 1
elseif redis.call('GET', base .. 'rid') ~= rid then
  -- State written under another identity (restart from a snapshot, failover): leases and
  -- renewals it missed may be in use, so the guard holds every id for one TTL.
  guard = math.max(tonumber(guard), hold)
  redis.call('SET', base .. 'init', guard)
end
redis.call('SET', base .. 'rid', rid)
guard = tonumber(guard)

local function take(id)
  redis.call('SET', base .. 'w:' .. id, value, 'PX', ttl)
  local last = tonumber(redis.call('GET', base .. 'last:' .. id) or '0')
  if tonumber(ARGV[6]) > last then redis.call('SET', base .. 'last:' .. id, ARGV[6]) end
  return {id, last, guard, fresh}
end

local pref = tonumber(ARGV[4])
if pref >= 0 and pref < size then
  local cur = redis.call('GET', base .. 'w:' .. pref)
  if not cur or cur == value then return take(pref) end
end

local start = tonumber(redis.call('GET', base .. 'cursor') or '0') % size
local probes = math.min(size, tonumber(ARGV[5]))
for i = 0, probes - 1 do
  local id = (start + i) % size
  if redis.call('EXISTS', base .. 'w:' .. id) == 0 then
    redis.call('SET', base .. 'cursor', (id + 1) % size)
    return take(id)
  end
end
redis.call('SET', base .. 'cursor', (start + probes) % size)
return {-1, 0, guard, fresh}
