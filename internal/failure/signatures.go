package failure

import (
	"regexp"
	"strings"

	"github.com/schedmate/schedmate/internal/lazyre"
	"github.com/schedmate/schedmate/internal/logclass"
)

// Category is the failure class of the Acme taxonomy used by the paper.
type Category string

// The categories. None means the job did not fail.
const (
	Infrastructure Category = "infrastructure"
	Framework      Category = "framework"
	Script         Category = "script"
	Other          Category = "other"
	None           Category = "none"
)

// Components of an infrastructure failure, plus OOM for CUDA out-of-memory
// (a script failure).
const (
	ComponentGPU     = "gpu"
	ComponentNVLink  = "nvlink"
	ComponentNetwork = "network"
	ComponentNode    = "node"
	ComponentOther   = "other"
	ComponentOOM     = "oom"
)

// tier ranks how directly a line states the root cause.
type tier int

const (
	// symptom lines follow a failure: launcher summaries, watchdog
	// wrappers, "exitcode: 1". They are the root only when nothing else is.
	symptom tier = iota + 1
	// generic lines report an error whose cause is not named.
	generic
	// cause lines name the root cause.
	cause
)

// role marks the signatures that the locator weighs against each other
// beyond their tier, because GPU errors surface asynchronously.
type role int

const (
	plain role = iota
	// deviceAssert is a kernel's failed device-side assertion: the CUDA
	// errors reported at later calls are its symptoms.
	deviceAssert
	// asyncCUDA is a CUDA error reported at a later call than the kernel
	// that caused it, so an earlier device-side assertion explains it.
	asyncCUDA
	// hardware is a GPU hardware or driver fault; it can itself trip a
	// device-side assertion, so it outranks one in the same cascade.
	hardware
)

// signature is one known way a failure shows in a log.
type signature struct {
	name      string
	re        func() *regexp.Regexp
	category  Category
	component string
	tier      tier
	// precursor signatures may be printed before the failure cascade they
	// cause, as a warning long before the crash (driver mismatch,
	// unsupported GPU architecture) or as a device-side assertion that
	// other ranks' progress lines separate from the error it raises.
	precursor bool
	role      role
	action    string
}

const (
	actionGPU       = "requeue excluding the node; drain it once NVML/Xid or nccl-tests confirm the GPU fault"
	actionNVLink    = "requeue excluding the node; check NVLink/NVSwitch (nvidia-smi nvlink -s, fabric manager) before returning it"
	actionNetwork   = "requeue excluding the suspect node; run nccl-tests across the nodes and check the IB/RoCE ports and cables"
	actionNode      = "requeue excluding the node; check host memory, /dev/shm size and the file systems"
	actionFramework = "check library versions and build compatibility (PyTorch, CUDA, NCCL, DeepSpeed, checkpoint format); not requeued"
	actionScript    = "fix the script or its arguments and resubmit; not requeued"
	actionAssert    = "an index or label is out of range in the kernel named by the assertion (a class label or token id beyond the vocabulary, an embedding or gather index beyond its tensor); check the data and model sizes, rerun with CUDA_LAUNCH_BLOCKING=1 to find the call; not requeued"
	actionOOM       = "reduce the batch size or sequence length, or enable activation checkpointing / sharding; not requeued"
	actionOther     = "inspect the log around the reported line"
)

func sig(name, pattern string, cat Category, comp string, t tier, action string) signature {
	return signature{name: name, re: lazyre.New(pattern), category: cat, component: comp, tier: t, action: action}
}

func precursorSig(name, pattern string, cat Category, comp string, action string) signature {
	s := sig(name, pattern, cat, comp, cause, action)
	s.precursor = true
	return s
}

func withRole(s signature, r role) signature {
	s.role = r
	return s
}

// signatures are tried in order; the first match names a line. Specific
// signatures therefore come before the generic ones they overlap with.
var signatures = []signature{
	// A kernel's failed device-side assertion comes first: the asserted
	// condition is arbitrary code that other signatures might match. The
	// "device-side assert triggered" error is what the host reports of it.
	withRole(precursorSig("script-device-assert", logclass.DeviceAssertionPattern+`|(?i:device-side assert triggered)|cudaErrorAssert\b`, Script, "", actionAssert), deviceAssert),

	// GPU hardware and driver.
	withRole(sig("gpu-ecc", `(?i)uncorrectable ECC|ECC error|double[- ]bit (?:ECC|error)|\bDBE\b|cudaErrorECCUncorrectable|row[- ]remap(?:ping)? (?:failure|pending)`, Infrastructure, ComponentGPU, cause, actionGPU), hardware),
	withRole(sig("gpu-fallen-off-bus", `(?i)fallen off the bus|GPU is lost|GPU has been lost|lost (?:the )?GPU`, Infrastructure, ComponentGPU, cause, actionGPU), hardware),
	withRole(sig("nvlink-error", `(?i)NVLink.*(?:error|fail|down|inactive|fatal)|NVSwitch.*(?:error|fatal|fail)|\bSXid\b|fabric ?manager.*(?:error|fail|not running)|nvlink_?err`, Infrastructure, ComponentNVLink, cause, actionNVLink), hardware),
	withRole(sig("gpu-xid", `(?i)\bNVRM: Xid\b|\bXid\b.{0,40}?\b(?:48|61|62|63|64|74|79|92|94|95|119|120|123|140|154)\b`, Infrastructure, ComponentGPU, cause, actionGPU), hardware),
	sig("gpu-unreachable", `(?i)Unable to determine the device handle|No devices were found|nvidia-smi has failed because it couldn't communicate|GPU requires reset|GPU .{0,40}(?:is|became) unavailable|all CUDA-capable devices are busy or unavailable|CUDA-capable device\(s\) is/are busy or unavailable|unspecified launch failure|cudaErrorLaunchFailure|CUDA_ERROR_LAUNCH_FAILED`, Infrastructure, ComponentGPU, cause, actionGPU),
	withRole(precursorSig("gpu-driver", `(?i)Error 804|forward compatibility was attempted on non supported HW|CUDA driver version is insufficient|driver/library version mismatch|NVIDIA driver on your system is too old|Found no NVIDIA driver|CUDA initialization: .*(?:driver|Unexpected error)|cudaGetDeviceCount\(\).*(?:Error|error)|Failed to initialize NVML|CUDA_ERROR_NO_DEVICE|no CUDA-capable device is detected`, Infrastructure, ComponentGPU, actionGPU), hardware),
	withRole(sig("gpu-pcie", `(?i)PCIe Bus Error: severity=(?:Uncorrected|Fatal)|\bAER: Uncorrected`, Infrastructure, ComponentGPU, cause, actionGPU), hardware),
	sig("gpu-unavailable", `(?i)No CUDA GPUs are available|CUDA driver initialization failed|CUDA unknown error|CUDA_ERROR_NOT_INITIALIZED|cuInit.*(?:fail|error)`, Infrastructure, ComponentGPU, generic, actionGPU),
	sig("gpu-xid-other", `(?i)\bXid\b.{0,20}\d+`, Infrastructure, ComponentGPU, generic, actionGPU),
	sig("gpu-pcie-corrected", `(?i)PCIe Bus Error|\bAER:`, Infrastructure, ComponentGPU, symptom, actionGPU),

	// Node: shared memory, host memory, storage, node loss.
	sig("node-shm", `(?i)/dev/shm|insufficient shared memory|out of shared memory|unable to allocate shared memory|shared memory segment|shm_open|shmem.*(?:fail|error)|killed by signal: Bus error|\bbus error\b.*(?:worker|shm)`, Infrastructure, ComponentNode, cause, actionNode),
	sig("node-host-oom", `(?i)killed by signal: Killed|oom[-_ ]kill|Out of memory: Kill(?:ed)? process|cgroup out-of-memory|Memory cgroup out of memory|exceeded (?:job )?memory limit|\bexit ?code:? -9\b|exitcode\s*:\s*-9\b|\bSignals\.SIGKILL\b|signal 9 \(SIGKILL\)|std::bad_alloc|Cannot allocate memory`, Infrastructure, ComponentNode, cause, actionNode),
	sig("node-disk-full", `(?i)No space left on device|\[Errno 28\]|\bENOSPC\b|Disk quota exceeded|\[Errno 122\]|\bEDQUOT\b|basic_ios::clear: iostream error|inline_container\.cc:\d+\] \. unexpected pos`, Infrastructure, ComponentNode, cause, actionNode),
	sig("node-io-error", `(?i)\[Errno 5\]|Input/output error|Stale file handle|\bESTALE\b|Transport endpoint is not connected|Read-only file system|\[Errno 30\]`, Infrastructure, ComponentNode, cause, actionNode),
	sig("node-failure", `(?i)DUE TO NODE FAIL|\bNODE_FAIL\b|Node failure on|node .{0,40}not responding|slurmstepd: error: .*(?:Unable to contact|Communication connection failure)|\bkernel panic\b|hardware error`, Infrastructure, ComponentNode, cause, actionNode),

	// Network: IB/RoCE verbs, NCCL transports, rendezvous and sockets.
	sig("net-ib-verbs", `(?i)\bibv_\w+ failed|Call to ibv_\w+ failed|NET/IB ?: ?(?:Got completion|.*(?:failed|error))|\bIBV_WC_\w+|transport retry counter exceeded|local protection error|remote access error|RETRY_EXC_ERR|\bmlx5\w*.*(?:error|fail|down)|\bQP\b.*(?:RTR|RTS|error|fail)|ib(?:v)? port .*(?:down|error)|link (?:is )?down`, Infrastructure, ComponentNetwork, cause, actionNetwork),
	sig("net-rendezvous", `(?i)client socket has timed out|RendezvousConnectionError|RendezvousTimeoutError|RendezvousClosedError|Rendezvous.*timed out|DistNetworkError|Gloo connectFullMesh failed|\[c10d\] .*(?:timed out|Connection refused|failed to connect)|connect(?:ion)? timed out|No route to host|Network is unreachable|socket timeout|Socket Timeout`, Infrastructure, ComponentNetwork, cause, actionNetwork),
	sig("net-nccl-system", `(?i)NCCL WARN (?:NET/Socket|socketProgress|Net : Connection closed|.*Connection (?:closed|reset|refused))|Connection reset by peer|Connection refused|Broken pipe|unhandled system error|ncclSystemError|ncclInternalError`, Infrastructure, ComponentNetwork, generic, actionNetwork),
	sig("net-nccl-timeout", `(?i)Watchdog caught collective operation timeout|collective operation timeout|NCCL.*timed out|Timed out waiting .*(?:NCCL|collective|barrier|store)|ran for \d+ milliseconds before timing out|Heartbeat monitor timed out|wait timeout.*nccl`, Infrastructure, ComponentNetwork, generic, actionNetwork),
	sig("net-nccl-remote", `(?i)remote process exited or there was a network error|ncclRemoteError|Some NCCL operations have failed or timed out|NCCL communicator was aborted|Process group watchdog thread terminated|taking the entire process down|NCCL error`, Infrastructure, ComponentNetwork, symptom, actionNetwork),

	// Script: CUDA OOM first, then launch and user code errors.
	sig("cuda-oom", `(?i)CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|RESOURCE_EXHAUSTED:? Out of memory|out of memory (?:while|trying to allocate)|HIP out of memory|CUDA error: out of memory|cudaErrorMemoryAllocation`, Script, ComponentOOM, cause, actionOOM),
	sig("script-duplicate-gpu", `(?i)Duplicate GPU detected`, Script, "", cause, actionScript),

	// Framework: versions, builds, checkpoints, internal assertions.
	precursorSig("framework-local-rank", `(?i)--local[-_]rank.*(?:os\.environ|LOCAL_RANK)|torch\.distributed\.launch is deprecated|unrecognized arguments: --local[-_]rank`, Framework, "", actionFramework),
	precursorSig("framework-arch", `(?i)not compatible with the current PyTorch installation|sm_\d+ is not compatible|no kernel image is available|only supports Ampere|not supported on (?:this|your) (?:GPU|device)|compute capability.*(?:not supported|too low|below)|unsupported (?:GPU )?architecture|PTX was compiled with an unsupported toolchain|CUDA version .* (?:is not supported|mismatch)|requires CUDA \d`, Framework, "", actionFramework),
	sig("framework-abi", `(?i)undefined symbol|GLIBC(?:XX)?_[\d.]+' not found|cannot open shared object file|version `+"`"+`\w+' not found|was compiled against|(?-i:\bABI\b)|incompatible (?:version|with)|version mismatch|NCCL version .*(?:mismatch|1\.)|requires .{1,40} but .{1,40} is installed|Please reinstall|built without`, Framework, "", cause, actionFramework),
	sig("framework-checkpoint", `(?i)Error\(s\) in loading state_dict|Missing key\(s\) in state_dict|Unexpected key\(s\) in state_dict|size mismatch for \S+: copying a param|UnpicklingError|PytorchStreamReader failed|invalid load key|failed finding central directory|Weights only load failed|checkpoint.{0,40}(?:corrupt|incompatible|mismatch)`, Framework, "", cause, actionFramework),
	withRole(sig("framework-cuda", `CUDNN_STATUS_(?:EXECUTION_FAILED|INTERNAL_ERROR)|CUBLAS_STATUS_(?:EXECUTION_FAILED|INTERNAL_ERROR)|illegal memory access|misaligned address|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS`, Framework, "", generic, actionFramework), asyncCUDA),
	sig("framework-internal", `INTERNAL ASSERT FAILED|Check failed:|CUDNN_STATUS_NOT_SUPPORTED|CUBLAS_STATUS_NOT_SUPPORTED|XlaRuntimeError: (?:INTERNAL|UNIMPLEMENTED)|RayTaskError|ActorDiedError|ActorUnavailableError`, Framework, "", generic, actionFramework),

	sig("script-missing-env", `KeyError: '(?:RANK|LOCAL_RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|SLURM_\w+|CUDA_VISIBLE_DEVICES)'`, Script, "", cause, actionScript),
	sig("script-arguments", `(?i)error: (?:unrecognized arguments|the following arguments are required|argument \S+|invalid choice)|unrecognized (?:command[- ]line )?(?:option|argument)|Missing required (?:argument|parameter)|Could not override '|ConfigAttributeError|ConfigKeyError`, Script, "", cause, actionScript),
	sig("script-missing-file", `(?i)can't open file|No such file or directory|FileNotFoundError|does not exist|not a valid path|IsADirectoryError|NotADirectoryError|PermissionError|Permission denied`, Script, "", cause, actionScript),
	sig("script-shape", `(?i)shapes cannot be multiplied|shape mismatch|size mismatch|must match the size of tensor|The size of tensor a \(\d+\) must match|Expected .{1,80} but got|Incompatible shapes|mismatch in shape|sizes of tensors must match|Dimension out of range|Expected all tensors to be on the same device|index out of range`, Script, "", cause, actionScript),
	sig("script-python", `^(?:[\w.]*\.)?(?:NameError|KeyError|TypeError|AttributeError|ValueError|IndexError|ImportError|ModuleNotFoundError|SyntaxError|IndentationError|ZeroDivisionError|UnboundLocalError|RecursionError|JSONDecodeError|FileExistsError|NotImplementedError|StopIteration|OverflowError|UnicodeDecodeError|LookupError|ConfigurationError)\b`, Script, "", cause, actionScript),

	// Slurm ends the job for reasons that are not failures of the job itself.
	sig("slurm-time-limit", `(?i)DUE TO TIME LIMIT|TIMEOUT AT`, Other, "", generic, "raise the time limit or checkpoint more often and resubmit"),
	sig("slurm-cancelled", `(?i)CANCELLED AT .* DUE TO PREEMPTION|\bPREEMPTED\b`, Other, "", generic, "resubmit; the job was preempted"),

	// Launcher and wrapper summaries.
	sig("launcher-summary", `(?i)ChildFailedError|exitcode\s*:\s*-?\d+|exit(?:ed with)? code:? -?\d+|Exited with exit code|failed \(exitcode|died, exit code|Killing (?:local )?\w*\s*(?:worker )?process|mpirun noticed|process returned a non-zero exit code|terminated with (?:exit code|signal)|Signal \d+ \(SIG\w+\) received|CANCELLED AT|\bTerminated\b|error_handler|Traceback \(most recent call last\)|Exception ignored|Sending process \d+ closing signal`, Other, "", symptom, actionOther),
}

// matchSignature returns the first signature matching the line (launcher
// prefix removed), or nil.
func matchSignature(text string) *signature {
	for i := range signatures {
		if signatures[i].re().MatchString(text) {
			return &signatures[i]
		}
	}
	return nil
}

// exceptionName extracts the exception class of a traceback's last line,
// such as "RuntimeError" from "torch.RuntimeError: boom".
var exceptionName = lazyre.New(`^(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Fault))\b`)

// libraryFrame matches a traceback frame inside an installed package.
var libraryFrame = lazyre.New(`^\s*File "[^"]*(?:site-packages|dist-packages|/lib/python\d|\\lib\\)`)

// pythonFrame matches any traceback frame line.
var pythonFrame = lazyre.New(`^\s*File "[^"]*", line \d+`)

// genericException classifies an exception line that no signature names,
// using whether the innermost frame was library code.
func genericException(text string, inLibrary bool) *signature {
	m := exceptionName().FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	name := m[1]
	switch {
	case inLibrary && (name == "AssertionError" || name == "RuntimeError" || strings.HasSuffix(name, "InternalError")):
		return &genericFramework
	default:
		return &genericScript
	}
}

var (
	genericFramework = sig("framework-exception", `.`, Framework, "", generic, actionFramework)
	genericScript    = sig("script-exception", `.`, Script, "", generic, actionScript)
	genericError     = sig("error", `.`, Other, "", symptom, actionOther)
)
