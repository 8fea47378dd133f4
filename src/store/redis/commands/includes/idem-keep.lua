--[[
  What the idempotency scripts write for a key: its record (at `record`), its place in the tag's
  index of live keys (KEYS[2], member `member`, the idempotency key) and its charge in the
  tag's byte account (KEYS[3]); see idem-claim-3.lua.

  idemClaimKey(record, member, now, owner, fingerprint, hold, charge)  a claim for the request
                       `owner`, held `hold` ms, charged `charge` bytes until its answer is kept
  idemKeepAnswer(record, member, now, text, retention)  the key's answer, text
                       "<fingerprint>\n<answer>", kept `retention` ms, charged the bytes of its
                       key name and text

  idemLiveFor(ms)      the index and the account live at least ms more: as long as their
                       longest-lived member (a shorter retention set later keeps them); a
                       script calls it once after what it wrote, with the longest hold or
                       retention it gave
]]
--- @include "idem-bytes"
--- @include "int-text"
local function idemLiveFor(ms)
  for i = 2, 3 do
    if redis.call('PTTL', KEYS[i]) < ms then redis.call('PEXPIRE', KEYS[i], intText(ms)) end
  end
end

local function idemClaimKey(record, member, now, owner, fingerprint, hold, charge)
  redis.call('SET', record, '?' .. owner .. '\n' .. fingerprint, 'PX', intText(hold))
  redis.call('ZADD', KEYS[2], intText(now + hold), member)
  idemCharge(member, charge)
end

local function idemKeepAnswer(record, member, now, text, retention)
  redis.call('SET', record, text, 'PX', intText(retention))
  idemCharge(member, #record + #text)
  redis.call('ZADD', KEYS[2], intText(now + retention), member)
end
