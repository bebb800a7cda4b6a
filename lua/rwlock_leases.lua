-- Every read-write lock script takes its keys in one order, a prefix of: lock, writers (the waiting
-- writers), leases (the prefix of every read lease key, "{N}:": "{N}:OWNER:rwlock_timeout:k"
-- follows), channel, memo (the memos' prefix, core/once.go).
--
-- longest_read_lease(lock, leases): the longest remaining lease of the lock's read holds, in ms (-3
-- when none is left): the lock lives that long, so that the read holds of dead clients age out.
local function longest_read_lease(lock, leases)
  local left = -3
  local fields = redis.call('hgetall', lock)
  for i = 1, #fields, 2 do
    local n = tonumber(fields[i + 1])
    if n and string.sub(fields[i], -6) ~= ':write' then
      for k = 1, n do
        left = math.max(left, redis.call('pttl', leases .. fields[i] .. ':rwlock_timeout:' .. k))
      end
    end
  end
  return left
end
