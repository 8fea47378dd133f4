--[[
  lease-release: give a worker id back on graceful shutdown, if it is still ours, recording
  the last ms actually issued so the next holder need not wait out the reserved horizon.

  KEYS[1]  the space's key base (see lease-acquire-1.lua)
  ARGV[1]  worker id
  ARGV[2]  lease value this process holds
  ARGV[3]  max(last ms issued by this holder, the floor it acquired the id with); the holder
           has stopped issuing, so this is exact

  Returns 1 when released, 0 when the lease was no longer ours (nothing changed).
]]
local base = KEYS[1]
local key = base .. 'w:' .. ARGV[1]
if redis.call('GET', key) ~= ARGV[2] then return 0 end
redis.call('DEL', key)
redis.call('SET', base .. 'last:' .. ARGV[1], ARGV[3])
return 1
