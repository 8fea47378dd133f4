--[[
  intText(x): an integer as Redis reads it in an argument (tostring would give an exponent
  above 14 digits).
]]
local function intText(x)
  return string.format('%.0f', x)
end
