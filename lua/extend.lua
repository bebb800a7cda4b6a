-- extend sets key's TTL to ms unless it has more left: a hold never loses what another hold of the
-- same owner was promised (a re-entry, a renewal or a release with a shorter lease).
local function extend(key, ms)
  if redis.call('pttl', key) < tonumber(ms) then
    redis.call('pexpire', key, ms)
  end
end
