-- Count one failed login against each key (KEYS) and start each key's window on its first failure.
-- ARGV[1]: the window in seconds. Returns the counts, in KEYS order.
-- Written for Redis 6.2 and later: `EXPIRE ... NX` (Redis 7) is spelled as a TTL check, so a counter always
-- expires, whichever Redis runs it.
local counts = {}
for i, key in ipairs(KEYS) do
    local n = redis.call('INCR', key)
    if redis.call('TTL', key) < 0 then
        redis.call('EXPIRE', key, ARGV[1])
    end
    counts[i] = n
end
return counts
