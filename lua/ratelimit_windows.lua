-- foreign_window(): the refusal (refuse.lua) of a rate limiter's window key that holds another type
-- (KEYS[2] and KEYS[3] keep a number, KEYS[4] and KEYS[5] a sorted set: ratelimit_window.lua), or
-- nil: the scripts that delete or expire the windows whole (Delete, Expire, SetRate) ask first, and
-- leave someone else's key alone.
local function foreign_window()
  for i = 2, 5 do
    local t = redis.call('type', KEYS[i])
    t = type(t) == 'table' and t.ok or t
    if t ~= 'none' and (t ~= (i < 4 and 'string' or 'zset') or (i < 4 and not tonumber(redis.call('get', KEYS[i])))) then
      --! INCLUDE refuse.lua
      return refuse(KEYS[i])
    end
  end
  return nil
end
