-- Several hard windows at once (the core's `MultiWindow`), all or nothing: every window is
-- checked, and only if each has room is the request recorded in all of them. A script runs
-- atomically on the server, so no window is ever charged and then given back.
--
-- KEYS[i]  window i's key (one slot: the crate gives them one hash tag)
-- ARGV[1]  k, the number of windows (1..8)
-- ARGV[2]  unused (0)
-- ARGV[3]  n, the permits asked for (0 <= n <= the smallest limit; 0 only reads)
-- ARGV[4]  `now` in microseconds (the crate's test hook; 0: the server's TIME)
-- ARGV[5]  the fence (always 0: not fenced)
-- ARGV[6 + 3(i-1) ..]  window i: limit (>= 1), period (µs, >= 1, < 2^52), width (µs: the
--          bucket width of a counted ring, >= 1; 0 for an exact log)
--
-- Returns {granted 0/1, remaining, retry_after_us, reset_us, binding}, all integers:
-- remaining is the fewest permits any window has left (after a grant: once it is counted),
-- binding the first window (0-based) with that few, reset the latest time until a window
-- counts nothing, and retry_after (on a denial) the latest wait of the windows that refuse.
--
-- An exact log (the core's `SlidingLog`, as sliding_log.lua): a list of grant times, newest
-- first, at most `limit` of them. A counted ring (the core's `SlidingWindow`, strict): a hash
-- of bucket -> permits (bucket e holds the grants at times in [e*w, (e+1)*w)) and the field
-- `x`, the newest bucket a grant reached. A request at `now` is judged at
-- tau = max(now, x*w) (a clock that went back frees nothing) and counts every bucket from the
-- floor f = floor(max(tau - (period - 1), 0) / w) on: the bucket holding the oldest instant of
-- the window (tau - period, tau], counted whole. A denial writes nothing; a grant records n in
-- every window and sets each key's expiry to when its newest entry leaves the window (rounded
-- up to the next millisecond), dropping a ring's buckets that no later request can count.

-- `now` (µs) and `ttl_extra` (ms) come from now.lua, which the crate puts in front of this script.

local k = tonumber(ARGV[1])
local n = tonumber(ARGV[3])

-- floor(a / b) for integers 0 <= a < 2^53, b >= 1, corrected should the double quotient round.
local function fdiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

-- Whole milliseconds until `ahead` µs have passed, rounded up, plus ttl_extra.
local function ttl_of(ahead)
  local ms = fdiv(ahead, 1000)
  if ms * 1000 < ahead then
    ms = ms + 1
  end
  return ms + ttl_extra
end

-- Per window: what it has left, its reset, whether it refuses n and its wait, and what a grant
-- needs (a log's newest stamp and length; a ring's bucket, floor and buckets).
local wins = {}
local granted = 1
local wait = 0
local remaining = nil
local binding = 0
local reset = 0
for i = 1, k do
  local base = 6 + 3 * (i - 1)
  local limit = tonumber(ARGV[base])
  local period = tonumber(ARGV[base + 1])
  local width = tonumber(ARGV[base + 2])
  local key = KEYS[i]
  local w = {key = key, limit = limit, period = period, width = width}
  local free, ahead
  if width == 0 then
    -- The exact log (as sliding_log.lua).
    local len, newest, lo = log_window(key, now, period)
    free = limit - lo
    if free < 0 then
      free = 0
    end
    ahead = 0
    if lo > 0 then
      ahead = newest + period - now
    end
    if n > free then
      -- The n-th oldest of `limit` slots (the never-used ones first) is the one that blocks.
      local index = len - 1 - (n - 1 - (limit - len))
      local blocking = tonumber(redis.call('LINDEX', key, index))
      local wi = blocking + period - now
      granted = 0
      if wi > wait then
        wait = wi
      end
    end
    w.len = len
    w.newest = newest
  else
    -- The counted ring.
    local lag = period - 1
    local flat = redis.call('HGETALL', key)
    local x = -1
    local buckets = {}
    for j = 1, #flat, 2 do
      if flat[j] == 'x' then
        x = tonumber(flat[j + 1])
      else
        buckets[#buckets + 1] = {tonumber(flat[j]), tonumber(flat[j + 1])}
      end
    end
    local tau = now
    if x >= 0 and x * width > tau then
      tau = x * width
    end
    local cur = fdiv(tau, width)
    local f = 0
    if tau > lag then
      f = fdiv(tau - lag, width)
    end
    -- The buckets counted, newest first.
    local live = {}
    local count = 0
    for _, b in ipairs(buckets) do
      if b[1] >= f and b[2] > 0 then
        live[#live + 1] = b
        count = count + b[2]
      end
    end
    table.sort(live, function(a, b) return a[1] > b[1] end)
    free = limit - count
    if free < 0 then
      free = 0
    end
    ahead = 0
    if count > 0 then
      -- The newest bucket with a permit leaves the window at T(y + 1) = (y + 1)*w + lag.
      ahead = (live[1][1] + 1) * width + lag - now
    end
    if count + n > limit then
      -- The first floor f' > f from which the request fits: below the newest buckets whose
      -- permits, with n, stay within the limit. Waiting until T(f') = f'*w + lag suffices.
      local sum = 0
      local fp = cur + 1
      for _, b in ipairs(live) do
        if sum + b[2] + n > limit then
          fp = b[1] + 1
          break
        end
        sum = sum + b[2]
      end
      local wi = fp * width + lag - now
      if wi < 1 then
        wi = 1
      end
      granted = 0
      if wi > wait then
        wait = wi
      end
    end
    w.x = x
    w.cur = cur
    w.lag = lag
    w.buckets = buckets
  end
  w.free = free
  if remaining == nil or free < remaining then
    remaining = free
    binding = i - 1
  end
  if ahead > reset then
    reset = ahead
  end
  wins[i] = w
end

if granted == 0 then
  return {0, remaining, wait, reset, binding}
end
if n == 0 then
  return {1, remaining, 0, reset, binding}
end

-- Granted: record n in every window.
remaining = nil
reset = 0
for i = 1, k do
  local w = wins[i]
  local ahead
  if w.width == 0 then
    local stamp = now
    if w.newest ~= nil and w.newest > stamp then
      stamp = w.newest
    end
    local pushed = 0
    while pushed < n do
      local chunk = {}
      local m = n - pushed
      if m > 1000 then
        m = 1000
      end
      for j = 1, m do
        chunk[j] = stamp
      end
      redis.call('LPUSH', w.key, unpack(chunk))
      pushed = pushed + m
    end
    if w.len + n > w.limit then
      redis.call('LTRIM', w.key, 0, w.limit - 1)
    end
    ahead = stamp + w.period - now
  else
    local cur = w.cur
    redis.call('HINCRBY', w.key, cur, n)
    if cur > w.x then
      redis.call('HSET', w.key, 'x', cur)
    end
    -- No request is judged before cur*w again: buckets below its floor are never counted.
    local start = cur * w.width
    local dead = 0
    if start > w.lag then
      dead = fdiv(start - w.lag, w.width)
    end
    for _, b in ipairs(w.buckets) do
      if b[1] < dead then
        redis.call('HDEL', w.key, b[1])
      end
    end
    ahead = (cur + 1) * w.width + w.lag - now
  end
  redis.call('PEXPIRE', w.key, ttl_of(ahead))
  local free = w.free - n
  if remaining == nil or free < remaining then
    remaining = free
    binding = i - 1
  end
  if ahead > reset then
    reset = ahead
  end
end
return {1, remaining, 0, reset, binding}
