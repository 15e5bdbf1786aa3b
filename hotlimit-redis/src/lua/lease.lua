-- A lease of k permits on a GCRA key (the crate's `LeasedGcra`): the TAT advances from
-- S = max(TAT, now) to S + k * I, as k grants in a row would move it, and the process that took
-- the lease grants permit m (0-based) locally, inside its window [S + (m + 1) * I - tau, S + m * I]
-- (server time): each permit is then a GCRA grant on the server's sequence of TATs. The lease is
-- taken as far as the queue allows: its permits wait in the server's queue like reservations, but
-- the TAT never runs more than tau + Q ahead of `now` (Q, the queue, ARGV[6]); a lease that does
-- not fit whole is cut to what fits, and refused when fewer than ARGV[7] permits fit.
--
-- A lost key (missing: a restart without persistence, FLUSHALL, eviction) restarts at now + Q,
-- not now: every TAT written before the loss was at most tau + Q past the loss, and every TAT
-- after it is past now + Q, so the TATs of grants from before and after the loss overlap by at
-- most tau: at most b grants more than the GCRA bound in any window, whatever the processes and
-- lease sizes (as a per-decision key's loss). Fenced (ARGV[5] > 0): within F of a loss a missing
-- key restarts at the marker's time + F, past every TAT written before it: exact.
--
-- KEYS[1]  the limited key (the same key the per-decision script uses: both may run together)
-- ARGV[1]  emission interval I, microseconds (>= 1)
-- ARGV[2]  tolerance tau = burst * I, microseconds
-- ARGV[3]  k, the permits leased (>= 1; k * I < 2^52)
-- ARGV[4]  `now` in microseconds (the crate's test hook), 0: the server's TIME
-- ARGV[5]  the fence F, microseconds (0: not fenced; else KEYS[2] is the marker, see now.lua)
-- ARGV[6]  Q, the queue: how far past tau the TAT may run ahead of now, microseconds (< tau)
-- ARGV[7]  the fewest permits worth leasing (>= 1, <= k)
-- ARGV[8]  where a missing key starts, past now, microseconds: Q (the crate's planted twin
--          alone passes 0)
-- ARGV[9]  optional: 1 when the last of KEYS is the key's waiting marker (gcra.lua sets it when
--          a per-decision caller was refused by the queue): while it exists the queue is 0, so
--          leases stop at the bucket (now + tau), where per-decision grants stop too, and the
--          two kinds meet at its edge instead of the leases taking the queue first
--
-- Returns {S, I, tau, now, k', cap}, integers (microseconds; k' the permits leased, 0: none
-- fit, and then S is where the next lease would start; cap = tau + the queue used: no lease
-- takes the TAT past now + cap).

local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local k = tonumber(ARGV[3])
-- `now` (µs) and `ttl_extra` (ms) come from now.lua, which the crate puts in front of this script.

local queue = tonumber(ARGV[6])
if tonumber(ARGV[9] or '0') == 1 and redis.call('EXISTS', KEYS[#KEYS]) == 1 then
  queue = 0
end
local fewest = tonumber(ARGV[7])
local lost_start = tonumber(ARGV[8])
local tat = tonumber(redis.call('GET', KEYS[1])) or fenced_tat or (now + lost_start)
-- A server clock that went back sees the TAT further ahead: no time has passed.
local start = tat
if start < now then
  start = now
end
-- The permits that fit under now + tau + Q (none when the TAT is already past it).
local fit = 0
local room = now + tolerance + queue - start
if room > 0 then
  fit = math.floor(room / interval)
end
if fit < k then
  k = fit
end
if k < fewest then
  return {start, interval, tolerance, now, 0, tolerance + queue}
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
return {start, interval, tolerance, now, k, tolerance + queue}
