-- paths.lua - wrk script for run.py: every connection asks, in turn, for the
-- paths listed one per line in ORRERY_BENCH_PATHS (the calls a page makes).
-- The Authorization header given with wrk -H is kept on every request.
local paths = {}
for p in string.gmatch(os.getenv("ORRERY_BENCH_PATHS") or "/", "[^\n]+") do
  paths[#paths + 1] = p
end
local i = 0

request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
