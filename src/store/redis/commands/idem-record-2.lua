--[[
  idem-record: keep the answer given under an idempotency key of a tag, unless the key already
  has one: the first answer kept is the only one any request with the key is ever given.

  KEYS[1]  the key's record: a string "<fingerprint>\n<answer>", expiring with the key
  KEYS[2]  the tag's index of live keys: a sorted set, member the idempotency key, score the
           ms (Redis time) at which its record expires; it expires itself after the last one
  ARGV[1]  the idempotency key (the member of KEYS[2])
  ARGV[2]  the request's fingerprint (never holds a line break)
  ARGV[3]  the answer: the IDs just taken, encoded
  ARGV[4]  retention in ms (>= 1): how long the record is kept
  ARGV[5]  the most live keys the tag may hold (>= 1)

  Expiry is decided on Redis's clock (TIME), the same for every process.

  Returns {1}          recorded: the caller answers the IDs it sent
          {2, record}  the key already has a record: nothing written; the caller answers the
                       record's IDs if its fingerprint is the request's, else refuses
          {3, ms}      full: the tag holds ARGV[5] live keys; nothing written; ms until the
                       first of them expires
]]
local kept = redis.call('GET', KEYS[1])
if kept then return { 2, kept } end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retention = tonumber(ARGV[4])
-- An integer as Redis reads it (tostring would give an exponent above 14 digits).
local function int(x)
  return string.format('%.0f', x)
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', int(now))
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return { 3, math.max(0, tonumber(first[2]) - now) }
end

redis.call('SET', KEYS[1], ARGV[2] .. '\n' .. ARGV[3], 'PX', int(retention))
redis.call('ZADD', KEYS[2], int(now + retention), ARGV[1])
-- The index lives as long as its longest-lived member (a shorter retention set later keeps it).
if redis.call('PTTL', KEYS[2]) < retention then redis.call('PEXPIRE', KEYS[2], int(retention)) end
return { 1 }
