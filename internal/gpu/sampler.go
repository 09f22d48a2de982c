package gpu

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SampleOptions tunes Sample.
type SampleOptions struct {
	// Interval is the time between samples; 0 means 10 s.
	Interval time.Duration
	// Devices are the NVML indices to sample; nil means every GPU.
	Devices []int
}

// Figures summarise a job's GPU use on one node.
type Figures struct {
	// Samples is the number of usage samples taken.
	Samples int `json:"samples"`
	// MeanSMUtil is the mean SM utilisation over samples and GPUs, percent.
	MeanSMUtil float64 `json:"mean_sm_util"`
	// PeakMemBytes is the largest memory use seen on any one GPU.
	PeakMemBytes uint64 `json:"peak_mem_bytes"`
	// Xids lists the Xid codes seen on the job's GPUs, in order.
	Xids []int `json:"xids,omitempty"`
	// GPUs lists the UUIDs sampled.
	GPUs []string `json:"gpus,omitempty"`
	// Start and End bound the sampling.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Sample samples the chosen GPUs every interval until ctx ends, while
// listening for Xid events on them, and returns the summary. With NVML
// unavailable it returns an error wrapping ErrUnavailable at once and
// records nothing.
func Sample(ctx context.Context, m Manager, opts SampleOptions) (Figures, error) {
	fig := Figures{Start: time.Now()}
	all, err := m.Devices()
	if err != nil {
		return fig, fmt.Errorf("list GPUs: %w", err)
	}
	devs := selectDevices(all, opts.Devices)
	if len(devs) == 0 {
		return fig, fmt.Errorf("none of GPUs %v present: %w", opts.Devices, ErrUnavailable)
	}
	mine := map[int]bool{}
	for _, d := range devs {
		mine[d.Index()] = true
		fig.GPUs = append(fig.GPUs, d.UUID())
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}

	var wg sync.WaitGroup
	var xids []XidEvent
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Listen for as long as the job runs; WaitXid honours ctx.
		xids, _ = m.WaitXid(ctx, 365*24*time.Hour)
	}()

	var utilSum float64
	var utilN int
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for _, d := range devs {
			u, err := d.Usage()
			if err != nil {
				continue
			}
			utilSum += float64(u.SMPercent)
			utilN++
			fig.PeakMemBytes = max(fig.PeakMemBytes, u.MemUsed)
		}
		fig.Samples++
		select {
		case <-ctx.Done():
			wg.Wait()
			fig.End = time.Now()
			if utilN > 0 {
				fig.MeanSMUtil = utilSum / float64(utilN)
			}
			for _, e := range xids {
				if e.Device < 0 || mine[e.Device] {
					fig.Xids = append(fig.Xids, e.Xid)
				}
			}
			return fig, nil
		case <-tick.C:
		}
	}
}

func selectDevices(all []Device, want []int) []Device {
	if want == nil {
		return all
	}
	set := map[int]bool{}
	for _, i := range want {
		set[i] = true
	}
	var out []Device
	for _, d := range all {
		if set[d.Index()] {
			out = append(out, d)
		}
	}
	return out
}

// ErrNoJobGPUs reports that the environment names no GPUs for the job.
var ErrNoJobGPUs = errors.New("no GPUs allocated to the job")

// JobDevices returns the NVML indices of the GPUs a job holds, from the
// environment Slurm gives prologs, epilogs and job steps: SLURM_STEP_GPUS
// or SLURM_JOB_GPUS (node-wide indices), else CUDA_VISIBLE_DEVICES, whose
// entries may also be UUIDs ("GPU-...") that are resolved against devs.
// Inside a device cgroup CUDA_VISIBLE_DEVICES is renumbered from 0, so the
// Slurm variables are preferred.
func JobDevices(getenv func(string) string, devs []Device) ([]int, error) {
	for _, name := range []string{"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"} {
		v := strings.TrimSpace(getenv(name))
		if v == "" || v == "NoDevFiles" {
			continue
		}
		idx, err := resolveDevices(v, devs)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", name, v, err)
		}
		return idx, nil
	}
	return nil, ErrNoJobGPUs
}

func resolveDevices(list string, devs []Device) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if n, err := strconv.Atoi(f); err == nil && n >= 0 {
			out = append(out, n)
			continue
		}
		found := false
		for _, d := range devs {
			if u := d.UUID(); u != "" && strings.HasPrefix(u, f) {
				out = append(out, d.Index())
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown GPU %q", f)
		}
	}
	sort.Ints(out)
	return out, nil
}
