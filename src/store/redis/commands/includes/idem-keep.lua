--[[
  What the idempotency scripts write for a key (KEYS[1] its record, KEYS[2] the tag's index of
  live keys, KEYS[3] its byte account; ARGV[1] the key, the index's member; see
  idem-claim-3.lua):

  idemClaimKey(now, owner, fingerprint, hold, charge)  a claim for the request `owner`, held
                       `hold` ms, charged `charge` bytes until its answer is kept
  idemKeepAnswer(now, record, retention)  the key's answer, "<fingerprint>\n<answer>", kept
                       `retention` ms, charged the bytes of its key name and text

  The index and the account live as long as their longest-lived member (a shorter retention
  set later keeps them).
]]
--- @include "idem-bytes"
--- @include "int-text"
local function idemLiveFor(ms)
  for i = 2, 3 do
    if redis.call('PTTL', KEYS[i]) < ms then redis.call('PEXPIRE', KEYS[i], intText(ms)) end
  end
end

local function idemClaimKey(now, owner, fingerprint, hold, charge)
  redis.call('SET', KEYS[1], '?' .. owner .. '\n' .. fingerprint, 'PX', intText(hold))
  redis.call('ZADD', KEYS[2], intText(now + hold), ARGV[1])
  idemCharge(ARGV[1], charge)
  idemLiveFor(hold)
end

local function idemKeepAnswer(now, record, retention)
  redis.call('SET', KEYS[1], record, 'PX', intText(retention))
  idemCharge(ARGV[1], #KEYS[1] + #record)
  redis.call('ZADD', KEYS[2], intText(now + retention), ARGV[1])
  idemLiveFor(retention)
end
