//go:build linux && cgo

package gpu

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// simulatedMachines are the go-nvml mock machines Simulate offers.
var simulatedMachines = map[string]func() *server.Server{
	"dgxa100": dgxa100.New,
	"dgxh100": dgxh100.New,
	"dgxh200": dgxh200.New,
	"dgxb200": dgxb200.New,
}

// Simulate returns a Manager over one of go-nvml's mock machines, for tests
// and demonstrations on hosts without GPUs; it is never used unless asked
// for. spec is "<machine>[:<gpus>]" with machine one of dgxa100, dgxh100,
// dgxh200, dgxb200 (8 GPUs each) and gpus keeping only the first few. Every
// GPU is healthy and busy: SM utilisation between 55% and 95% and memory
// use between 60% and 80%, varying over time.
func Simulate(spec string) (Manager, error) {
	name, count, hasCount := strings.Cut(strings.ToLower(strings.TrimSpace(spec)), ":")
	newMachine, ok := simulatedMachines[name]
	if !ok {
		names := make([]string, 0, len(simulatedMachines))
		for n := range simulatedMachines {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("simulated GPUs %q: unknown machine, want one of %s", spec, strings.Join(names, ", "))
	}
	s := newMachine()
	if hasCount {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > len(s.Devices) {
			return nil, fmt.Errorf("simulated GPUs %q: GPU count must be 1 to %d", spec, len(s.Devices))
		}
		s.Devices = s.Devices[:n]
	}
	for _, d := range s.Devices {
		sd := d.(*server.Device)
		healthyDevice(sd)
		simulateLoad(sd)
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return quietEventSet(), nvml.SUCCESS
	}
	return NewNVML(s), nil
}

// healthyDevice answers the health queries the mock machines leave unset
// as a healthy NVLink GPU would.
func healthyDevice(d *server.Device) {
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_DISABLED, nvml.SUCCESS }
	d.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) { return nil, nvml.SUCCESS }
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		if l >= 18 {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkErrorCounterFunc = func(int, nvml.NvLinkErrorCounter) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 41, nvml.SUCCESS }
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
}

// simulateLoad makes a device report a plausible training load that
// drifts with the clock, each GPU in its own phase.
func simulateLoad(d *server.Device) {
	phase := float64(d.Index)
	wave := func() float64 { // 0..1
		return (1 + math.Sin(float64(time.Now().UnixMilli())/7000+phase)) / 2
	}
	total := d.MemoryInfo.Total
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		sm := uint32(55 + 40*wave())
		return nvml.Utilization{Gpu: sm, Memory: sm / 2}, nvml.SUCCESS
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		used := uint64(float64(total) * (0.6 + 0.2*wave()))
		return nvml.Memory{Total: total, Used: used, Free: total - used}, nvml.SUCCESS
	}
}

// quietEventSet is an event set on which no event ever arrives; Wait
// blocks for its timeout as the real one does.
func quietEventSet() *mock.EventSet {
	return &mock.EventSet{
		WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
			time.Sleep(time.Duration(ms) * time.Millisecond)
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
}
