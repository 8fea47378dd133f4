--[[
  nowMs(): Redis's clock (TIME) in ms, the same for every process that calls the script.
]]
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
