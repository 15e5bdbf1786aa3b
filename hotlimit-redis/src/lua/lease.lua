-- A lease of k permits on a GCRA key (the crate's `LeasedGcra`): the TAT advances from
-- S = max(TAT, now) to S + k * I, as k grants in a row would move it, and the process that took
-- the lease grants permit m (0-based) locally, inside its window [S + (m + 1) * I - tau, S + m * I]
-- (server time): each permit is then a GCRA grant on the server's sequence of TATs. The lease is
-- always taken: its permits wait in the server's queue like reservations (a process holds at
-- most two leases per key, so the queue stays short).
--
-- KEYS[1]  the limited key (the same key the per-decision script uses: both may run together)
-- ARGV[1]  emission interval I, microseconds (>= 1)
-- ARGV[2]  tolerance tau = burst * I, microseconds
-- ARGV[3]  k, the permits leased (>= 1; k * I < 2^52)
-- ARGV[4]  optional: `now` in microseconds (the crate's test hook); otherwise the server's TIME
--
-- Returns {S, I, tau, now}, integers (microseconds).

local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local k = tonumber(ARGV[3])
-- `now` (µs) and `ttl_extra` (ms) come from now.lua, which the crate puts in front of this script.

local tat = tonumber(redis.call('GET', KEYS[1])) or now
-- A server clock that went back sees the TAT further ahead: no time has passed.
local start = tat
if start < now then
  start = now
end
local next_tat = start + k * interval
local ahead = next_tat - now
-- Expire when the key is full again (rounded up to the next millisecond), as gcra.lua does.
local ttl = (ahead - ahead % 1000) / 1000
if ahead % 1000 > 0 then
  ttl = ttl + 1
end
ttl = ttl + ttl_extra
redis.call('SET', KEYS[1], next_tat, 'PX', ttl)
return {start, interval, tolerance, now}
