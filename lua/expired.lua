-- drop_expired(key): removes the members of the sorted set key whose score, a time in ms by the
-- server's clock, has passed (a permit's expiry, a waiting writer's deadline). Returns that time
-- (now), nil and how many members went; or nil and the refusal (refuse.lua) of a key of another
-- type, found before anything is written.
local function drop_expired(key)
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local gone = redis.pcall('zremrangebyscore', key, '-inf', now)
  if type(gone) == 'table' then
    --! INCLUDE refuse.lua
    return nil, refuse(key, nil, gone.err)
  end
  return now, nil, gone
end
