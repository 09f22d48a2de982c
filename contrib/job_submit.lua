--[[
job_submit.lua: asks schedmate for a duration estimate when a job is submitted.

Install as job_submit.lua next to slurm.conf with JobSubmitPlugins=lua. It never
blocks or rejects a submission because of schedmate: every step runs under
pcall, the binary runs under timeout(1), and slurm_job_submit always returns
slurm.SUCCESS.

Kill switch
  While the file /etc/schedmate/submit.disabled exists (another path can be
  set with SCHEDMATE_SUBMIT_DISABLED in slurmctld's environment), submissions
  pass straight through without running schedmate: no estimate, no record of
  the submission (the job's end is still recorded by the epilog). The check
  is one open(2) per submission; create or remove the file at any time, no
  reconfigure is needed:
    touch /etc/schedmate/submit.disabled    # off
    rm /etc/schedmate/submit.disabled       # on again

Answer cache (fast path)
  A resubmission is answered without starting a process: schedmate keeps
  the answers it gave in a small file (SCHEDMATE_SUBMIT_CACHE, default
  /var/lib/schedmate/submit-answers.tsv; hooks.submit_cache in schedmate's
  configuration must name the same file), keyed by the submitting uid, the
  batch script's length and checksum, the working directory and the job
  name. This script keeps the file's entries in memory, checks at most once
  a second whether the file was rewritten (by its header line), and on a hit
  applies the cached lines and appends one line to <cache>.hits, from which
  schedmate records the submission with the cached fingerprint before it
  records any job's end. The epilog re-estimates a job when it ends and
  rewrites its entry, so resubmissions get estimates that include the last
  run. A missing, damaged or oversized cache file means every submission
  takes the slow path below. Set SCHEDMATE_SUBMIT_CACHE=off to disable the
  fast path.

Protocol with the schedmate binary
  argv:   <SCHEDMATE_BIN> hook submit --uid=<uid> [--user=<name>]
            [--script-file=<file>] [--workdir=<dir>] [--name=<job name>]
            [--partition=<p>] [--account=<a>] [--time-limit=<minutes>]
            [--gres=<tres_per_node, e.g. gres:gpu:2>] [--tres-per-job=<e.g. gres:gpu:8>]
            [--nodes=<min nodes>] [--array=<array spec>]
            [--cache-key=<key> --cache-file=<file>] [--argv=<arg>]...
          Every option is written as --key=value; options whose value Slurm
          does not have are left out. --argv repeats once per element of the
          job's argv, in order (first the script path as given to sbatch, or
          the command for srun).
          --script-file is a private (0600) copy of the batch script that is
          removed after the call; it is absent for srun/salloc jobs.
          --cache-key asks schedmate to store its answer in the cache under
          that key once the submission is recorded.
  stdout: lines "key=value"; only these keys are applied, others are ignored:
            admin_comment=<text>   (sets AdminComment; should start "schedmate:")
            time_min=<minutes>     (sets TimeMin; ignored if above the time limit)
            nice=<n>               (sets Nice; 0 <= n <= 10000)
  exit:   non-zero exit, timeout or unparsable lines change nothing.
]]

-- Configuration: the environment of slurmctld wins over these defaults.
local SCHEDMATE_BIN = os.getenv("SCHEDMATE_BIN") or "/usr/bin/schedmate"
local DISABLED_FILE = os.getenv("SCHEDMATE_SUBMIT_DISABLED") or "/etc/schedmate/submit.disabled"
local DEADLINE_S = tonumber(os.getenv("SCHEDMATE_SUBMIT_DEADLINE") or "") or 2
local MAX_OUTPUT = 65536
local CACHE_FILE = os.getenv("SCHEDMATE_SUBMIT_CACHE") or "/var/lib/schedmate/submit-answers.tsv"
if CACHE_FILE == "off" or CACHE_FILE == "" then
	CACHE_FILE = nil
end
local CACHE_HEADER = "#schedmate-submit-cache v1 "
local CACHE_MAX_BYTES = 4194304 -- larger files are ignored (as schedmate does)
local CACHE_CHECK_S = 1 -- how often the file is checked for a rewrite
local MEMO_MAX = 256 -- scripts whose checksum is remembered

-- Slurm's "no value" markers for 32-bit fields.
local NO_VAL = 4294967294
local INFINITE = 4294967295

local function shell_quote(s)
	return "'" .. string.gsub(tostring(s), "'", "'\\''") .. "'"
end

local function is_set(v)
	return v ~= nil and v ~= "" and v ~= NO_VAL and v ~= INFINITE
end

local function add(args, key, value)
	if is_set(value) then
		args[#args + 1] = shell_quote("--" .. key .. "=" .. tostring(value))
	end
end

local function file_exists(path)
	local f = io.open(path, "r")
	if f == nil then
		return false
	end
	f:close()
	return true
end

-- write_script stores the batch script in a private temp file and returns its path.
local function write_script(script)
	if type(script) ~= "string" or script == "" then
		return nil
	end
	local path = os.tmpname() -- mkstemp: created with mode 0600
	local f = io.open(path, "w")
	if f == nil then
		os.remove(path)
		return nil
	end
	f:write(script)
	f:close()
	return path
end

local function build_command(job_desc, submit_uid, script_file, key)
	local args = { shell_quote(SCHEDMATE_BIN), "hook", "submit" }
	add(args, "uid", submit_uid)
	add(args, "user", job_desc.user_name)
	add(args, "script-file", script_file)
	add(args, "workdir", job_desc.work_dir)
	add(args, "name", job_desc.name)
	add(args, "partition", job_desc.partition)
	add(args, "account", job_desc.account)
	add(args, "time-limit", job_desc.time_limit)
	add(args, "gres", job_desc.tres_per_node)
	add(args, "tres-per-job", job_desc.tres_per_job)
	add(args, "nodes", job_desc.min_nodes)
	add(args, "array", job_desc.array_inx)
	if key ~= nil then
		add(args, "cache-key", key)
		add(args, "cache-file", CACHE_FILE)
	end
	local argv = job_desc.argv
	if type(argv) == "table" then
		-- The C side fills argv from index 0 (the script path for sbatch).
		for i = (argv[0] ~= nil) and 0 or 1, #argv do
			add(args, "argv", argv[i])
		end
	end
	return string.format("timeout -k 1 %d %s 2>/dev/null", DEADLINE_S, table.concat(args, " "))
end

-- Answer cache state; the Lua state persists between submissions.
local cache = { entries = {}, header = nil, checked = -1 }
local memo, memo_count = {}, 0
local hit_seq = 0

-- escape makes a value safe inside a tab-separated line: %, whitespace and
-- control characters become %XX.
local function escape(v)
	if v == nil or v == NO_VAL or v == INFINITE then
		return ""
	end
	return (string.gsub(tostring(v), "[%%%c%s]", function(c)
		return string.format("%%%02X", string.byte(c))
	end))
end

-- checksum is a 32-bit polynomial hash of the whole script. The result is
-- remembered per script string: Lua interns strings, so an unchanged
-- resubmission costs one table lookup.
local function checksum(s)
	local known = memo[s]
	if known ~= nil then
		return known
	end
	local h, byte = 0, string.byte
	for i = 1, #s, 64 do
		local b = { byte(s, i, i + 63) }
		for j = 1, #b do
			h = (h * 31 + b[j]) % 4294967296
		end
	end
	if memo_count >= MEMO_MAX then
		memo, memo_count = {}, 0
	end
	memo[s], memo_count = h, memo_count + 1
	return h
end

local function cache_key(job_desc, submit_uid)
	local script = job_desc.script
	if type(script) ~= "string" then
		script = ""
	end
	return string.format("%s %d %d %s %s", escape(submit_uid), #script, checksum(script),
		escape(job_desc.work_dir), escape(job_desc.name))
end

-- load_cache reads the cache file when its header changed.
local function load_cache(now)
	if now - cache.checked < CACHE_CHECK_S and now >= cache.checked then
		return
	end
	cache.checked = now
	local f = io.open(CACHE_FILE, "r")
	if f == nil then
		cache.entries, cache.header = {}, nil
		return
	end
	local header = f:read("*l")
	if header == cache.header then
		f:close()
		return
	end
	local size = f:seek("end")
	if header == nil or string.sub(header, 1, #CACHE_HEADER) ~= CACHE_HEADER or size == nil or size > CACHE_MAX_BYTES then
		f:close()
		cache.entries, cache.header = {}, nil
		return
	end
	f:seek("set", #header + 1)
	local entries = {}
	for line in f:lines() do
		local key, expires, rest = string.match(line, "^([^\t]+)\t(%d+)\t%d+(.*)$")
		if key ~= nil then
			entries[key] = { expires = tonumber(expires), answers = rest }
		end
	end
	f:close()
	cache.entries, cache.header = entries, header
end

-- record_hit appends the submission to the hit log in one write.
local function record_hit(job_desc, submit_uid, key, now)
	hit_seq = (hit_seq + 1) % 1000000000
	local fields = { "v1", string.format("%d", now), string.format("%d", hit_seq), key,
		escape(submit_uid), escape(job_desc.user_name), escape(job_desc.name), escape(job_desc.work_dir),
		escape(job_desc.partition), escape(job_desc.time_limit), escape(job_desc.tres_per_node),
		escape(job_desc.min_nodes) }
	local argv = job_desc.argv
	if type(argv) == "table" then
		for i = (argv[0] ~= nil) and 0 or 1, #argv do
			fields[#fields + 1] = escape(argv[i])
		end
	end
	local f = io.open(CACHE_FILE .. ".hits", "a")
	if f == nil then
		return false
	end
	f:setvbuf("full", 65536)
	local ok = f:write(table.concat(fields, "\t"), "\n")
	f:close()
	return ok ~= nil
end

local function apply(job_desc, output)
	for line in string.gmatch(output, "[^\n]+") do
		local key, value = string.match(line, "^([%w_]+)=(.*)$")
		if key == "admin_comment" then
			job_desc.admin_comment = string.sub(value, 1, 1024)
		elseif key == "time_min" then
			local minutes = tonumber(value)
			local limit = job_desc.time_limit
			if minutes and minutes >= 1 and (not is_set(limit) or minutes <= limit) then
				job_desc.time_min = math.floor(minutes)
			end
		elseif key == "nice" then
			local n = tonumber(value)
			if n and n >= 0 and n <= 10000 then
				job_desc.nice = math.floor(n)
			end
		end
	end
end

-- answer_from_cache applies a cached answer; it returns the cache key to
-- pass to schedmate on a miss, or nil when answered or when the cache is off.
local function answer_from_cache(job_desc, submit_uid)
	if CACHE_FILE == nil then
		return nil, false
	end
	local now = os.time()
	load_cache(now)
	local key = cache_key(job_desc, submit_uid)
	local e = cache.entries[key]
	if e ~= nil and e.expires > now and record_hit(job_desc, submit_uid, key, now) then
		apply(job_desc, string.gsub(e.answers, "\t", "\n"))
		return key, true
	end
	return key, false
end

local function consult(job_desc, submit_uid)
	if file_exists(DISABLED_FILE) then
		return
	end
	local key_ok, key, answered = pcall(answer_from_cache, job_desc, submit_uid)
	if not key_ok then
		pcall(slurm.log_info, "schedmate: job_submit: answer cache: %s", tostring(key))
		key, answered = nil, false
	end
	if answered or not file_exists(SCHEDMATE_BIN) then
		return
	end
	-- schedmate is about to write the answer: look at the file again on
	-- the next submission rather than a second later.
	cache.checked = -1
	local script_file = write_script(job_desc.script)
	local ok, err = pcall(function()
		local p = io.popen(build_command(job_desc, submit_uid, script_file, key), "r")
		if p == nil then
			return
		end
		local output = p:read(MAX_OUTPUT) or ""
		p:close()
		apply(job_desc, output)
	end)
	if script_file ~= nil then
		os.remove(script_file)
	end
	if not ok then
		error(err)
	end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local ok, err = pcall(consult, job_desc, submit_uid)
	if not ok then
		pcall(slurm.log_info, "schedmate: job_submit: %s", tostring(err))
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
