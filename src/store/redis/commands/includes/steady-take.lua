--[[
  The steady state of a segment hash (see take-2.lua): up to the fast end written under the
  identity of the server running the call, IDs are handed out with nothing but a cursor move,
  since before it no segment change, no refill request and no limit is due (take-2.lua and
  install-2.lua write the fast end, field fe:<identity>, with every change of the fields that
  decide those). A hash of another identity (a snapshot restored, a replica promoted) has no
  fast end of this one, so it is never in its steady state. take-2.lua and idem-takes-4.lua
  both read the steady state here, so they agree on what a steady-state take is.

  steadyState(key, moved, epoch, extra)
      false when the tag's epoch is retired on this server (`moved` is the key of the tag's
      "moved" marker: the highest epoch retired here); else this server's identity
      (serverIdentity()), then the cursor and the fast end of hash `key` under it, as numbers
      (no fast end when the hash has none of this identity: it is absent, of another identity,
      or past its steady state), then the value of field `extra` (when one is named and the
      fast end is there). A take of n IDs is in the steady state when the hash has a fast end
      and cur + n - 1 <= fastEnd; it then moves the cursor to cur + n and nothing else of
      the segment.

  A take moves the cursor itself, in the HSET it writes anyway (HSET key 'cur' intText(to)):
  the steady state is the hot path, each Lua function of a script is created anew on every
  call of the script, and a function for that one write made take-2.lua's call measurably
  dearer (Redis CPU per EVALSHA).
]]
--- @include "server-identity"
local function steadyState(key, moved, epoch, extra)
  local retired = redis.call('GET', moved)
  if retired and tonumber(retired) >= tonumber(epoch) then return false end
  local rid = serverIdentity()
  local h
  if extra then
    h = redis.call('HMGET', key, 'fe:' .. rid, 'cur', extra)
  else
    h = redis.call('HMGET', key, 'fe:' .. rid, 'cur')
  end
  if not h[1] then return rid end
  return rid, tonumber(h[2]), tonumber(h[1]), h[3]
end
