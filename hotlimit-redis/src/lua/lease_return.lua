-- Gives back the unused permits of a lease, by the reservation-cancel rule: only when nothing
-- was charged after the lease (the TAT is still its end), by moving the TAT back to where the
-- spent permits leave it. Then the state is what it would have been had the lease been only
-- that long. Otherwise the permits are not given back (later grants were computed from the
-- lease's end): under-use, never over-admission.
--
-- KEYS[1]  the limited key
-- ARGV[1]  the lease's end, S + k * I (µs)
-- ARGV[2]  the TAT to go back to, S + spent * I (µs)
-- ARGV[3]  unused: keeps ARGV[4], the prelude's test hook, where it always is
-- ARGV[4]  optional: `now` in microseconds (the crate's test hook); otherwise the server's TIME
--
-- Returns 1 when the permits were given back, 0 when not.

local lease_end = tonumber(ARGV[1])
local back = tonumber(ARGV[2])
-- `now` (µs) and `ttl_extra` (ms) come from now.lua.

if tonumber(redis.call('GET', KEYS[1])) ~= lease_end then
  return 0
end
if back <= now then
  -- Full again: the key carries nothing.
  redis.call('DEL', KEYS[1])
  return 1
end
local ahead = back - now
local ttl = (ahead - ahead % 1000) / 1000
if ahead % 1000 > 0 then
  ttl = ttl + 1
end
redis.call('SET', KEYS[1], back, 'PX', ttl + ttl_extra)
return 1
