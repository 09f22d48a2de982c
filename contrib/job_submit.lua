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

Protocol with the schedmate binary
  argv:   <SCHEDMATE_BIN> hook submit --uid=<uid> [--user=<name>]
            [--script-file=<file>] [--workdir=<dir>] [--name=<job name>]
            [--partition=<p>] [--account=<a>] [--time-limit=<minutes>]
            [--gres=<tres_per_node, e.g. gres:gpu:2>] [--tres-per-job=<e.g. gres:gpu:8>]
            [--nodes=<min nodes>] [--array=<array spec>] [--argv=<arg>]...
          Every option is written as --key=value; options whose value Slurm
          does not have are left out. --argv repeats once per element of the
          job's argv, in order (first the script path as given to sbatch, or
          the command for srun).
          --script-file is a private (0600) copy of the batch script that is
          removed after the call; it is absent for srun/salloc jobs.
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

local function build_command(job_desc, submit_uid, script_file)
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
	local argv = job_desc.argv
	if type(argv) == "table" then
		-- The C side fills argv from index 0 (the script path for sbatch).
		for i = (argv[0] ~= nil) and 0 or 1, #argv do
			add(args, "argv", argv[i])
		end
	end
	return string.format("timeout -k 1 %d %s 2>/dev/null", DEADLINE_S, table.concat(args, " "))
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

local function consult(job_desc, submit_uid)
	if file_exists(DISABLED_FILE) or not file_exists(SCHEDMATE_BIN) then
		return
	end
	local script_file = write_script(job_desc.script)
	local ok, err = pcall(function()
		local p = io.popen(build_command(job_desc, submit_uid, script_file), "r")
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
