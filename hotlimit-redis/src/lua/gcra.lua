-- GCRA (the core's `Gcra`) with its state in Redis: one integer key, the theoretical arrival
-- time (TAT) in microseconds on the server's clock.
--
-- KEYS[1]  the limited key
-- ARGV[1]  emission interval I, microseconds (>= 1)
-- ARGV[2]  tolerance tau = burst * I, microseconds (< 2^52)
-- ARGV[3]  n, the permits asked for (0 <= n <= burst; 0 only reads)
-- ARGV[4]  optional: `now` in microseconds (the crate's test hook; 0: none)
-- ARGV[5]  optional: the fence F, microseconds (fenced mode; KEYS[2] is then the marker, see now.lua)
-- ARGV[6]  optional: the waiting marker's lifetime W, milliseconds (0 or absent: none; else the
--          last of KEYS is the marker): a refusal that found the TAT past now + tau (only
--          leases put it there, queueing past the bucket) sets the marker for W, and while it
--          lives leases stop at the bucket, now + tau (lease.lua), as per-decision grants do
--
-- Returns {granted 0/1, remaining, retry_after_us, reset_us}, all integers.
--
-- Every number stays an integer below 2^53 (Lua numbers are doubles): microseconds since the
-- epoch are ~2^51. Numbers go to redis.call as numbers (never tostring, which prints 14 digits).
-- The key is written only on a grant, with an expiry at the TAT (rounded up to the next
-- millisecond): then the key is full again and its state has no effect. A denial writes nothing
-- to the key (one refused by leases' queue sets the waiting marker, ARGV[6]: see waiting.rs).

local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
-- `now` (µs) and `ttl_extra` (ms) come from now.lua, which the crate puts in front of this script.

-- A missing key (or one that is not a number) is a full limiter: TAT = now; in fenced mode,
-- within F of a loss, it may have been lost, and restarts empty of permits (now.lua).
local tat = tonumber(redis.call('GET', KEYS[1])) or fenced_tat or now
-- A TAT in the past is "full"; a server clock that went back sees a TAT further ahead: no time
-- has passed, nothing is freed.
local base = tat
if base < now then
  base = now
end
local ahead = base - now

-- Permits left now: floor((tau - ahead) / I), at least 0 (a server clock set back can put the
-- TAT more than tau ahead).
-- (Inline rather than a local function: a closure would be made on every call.)
local left = 0
if ahead < tolerance then
  left = math.floor((tolerance - ahead) / interval)
end

-- n = 0 asks for nothing: granted, read-only (as the core's `permits == 0`).
if n == 0 then
  return {1, left, 0, ahead}
end
local slack = tolerance - n * interval
if ahead > slack then
  local waiting = tonumber(ARGV[6] or '0') or 0
  if waiting > 0 and ahead > tolerance then
    redis.call('SET', KEYS[#KEYS], 1, 'PX', waiting)
  end
  return {0, left, ahead - slack, ahead}
end

local next_tat = base + n * interval
local ahead_next = next_tat - now
-- Whole milliseconds, rounded up, with integer arithmetic (a double quotient could round down).
local ttl = (ahead_next - ahead_next % 1000) / 1000
if ahead_next % 1000 > 0 then
  ttl = ttl + 1
end
ttl = ttl + ttl_extra
redis.call('SET', KEYS[1], next_tat, 'PX', ttl)
-- ahead_next <= tau here (the grant condition).
return {1, math.floor((tolerance - ahead_next) / interval), 0, ahead_next}
