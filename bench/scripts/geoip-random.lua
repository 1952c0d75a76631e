-- wrk script for bench/scripts/geoip-http.sh: GET /{random IPv4}/json/ with a fresh
-- address per request (first octet 1-223 without 10 and 127; the rest uniform), the same
-- sequence for both servers (a fixed seed per thread). Kept to a few string operations so
-- the generator costs less than the server.
--
-- Each thread runs its own Lua state, so the seed comes from the thread's number, set in
-- setup (which runs in the main state, once per thread). Seeding from a counter in init,
-- as this script did until 2026-11-24, gave every thread the same seed: with -t2 each
-- address was asked twice, the second time a cache admission (geoip's answer cache stores
-- an address on its second miss), so geoip kept 65,536 answers (67 MB) live for the
-- collector instead of answering random addresses.
local threads = 0

function setup(thread)
	threads = threads + 1
	thread:set("id", threads)
end

-- GEOIP_SEED (default 0) moves every thread's sequence: bench/scripts/geoip-peers.sh gives
-- each round its own, the same for every server in it, so that a round does not ask again
-- the addresses of the previous ones (a server would then answer them from its answer
-- cache, which admits an address on its second miss).
local seed = tonumber(os.getenv("GEOIP_SEED") or "0")

function init(args)
	math.randomseed(12345 + id * 7919 + seed * 104729)
end

local random = math.random
local format = string.format
-- The path of an address: geoip's by default; bench/scripts/geoip-peers.sh sets another
-- for a peer (echoip's "/json?ip=%d.%d.%d.%d"), the addresses staying the same.
local path = os.getenv("GEOIP_PATH_FORMAT") or "/%d.%d.%d.%d/json/"

function request()
	local a = random(1, 221)
	if a >= 10 then a = a + 1 end
	if a >= 127 then a = a + 1 end
	return wrk.format(nil, format(path, a, random(0, 255), random(0, 255), random(0, 255)))
end
