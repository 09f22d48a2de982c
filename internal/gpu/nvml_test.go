//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// healthy makes a mock GPU healthy and 87% busy.
func healthy(d *server.Device) {
	healthyDevice(d)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 87}, nvml.SUCCESS }
}

// machine returns an 8x H100 mock with every GPU healthy and an Xid event
// set that delivers xids (one per Wait) and then times out.
func machine(xids ...uint64) *server.Server {
	s := dgxh100.New()
	for _, d := range s.Devices {
		healthy(d.(*server.Device))
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		queue := append([]uint64(nil), xids...)
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				if len(queue) == 0 {
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
				x := queue[0]
				queue = queue[1:]
				return nvml.EventData{Device: s.Devices[3], EventType: nvml.EventTypeXidCriticalError, EventData: x}, nvml.SUCCESS
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	return s
}

func dev(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

func TestCheckNVMLMock(t *testing.T) {
	tests := []struct {
		name     string
		fault    func(s *server.Server)
		xids     []uint64
		opts     CheckOptions
		wantFail string // check name expected to fail, "" for a healthy node
		wantGPU  int
	}{
		{name: "healthy", opts: CheckOptions{ExpectedGPUs: 8, XidWait: 10 * time.Millisecond}},
		{name: "missing GPU", opts: CheckOptions{ExpectedGPUs: 8}, wantFail: "gpu-count", wantGPU: -1,
			fault: func(s *server.Server) { s.Devices = s.Devices[:7] }},
		{name: "volatile uncorrectable ECC", wantFail: "ecc", wantGPU: 2,
			fault: func(s *server.Server) {
				dev(s, 2).GetTotalEccErrorsFunc = func(_ nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
					if c == nvml.VOLATILE_ECC {
						return 1, nvml.SUCCESS
					}
					return 5, nvml.SUCCESS
				}
			}},
		{name: "remap pending", wantFail: "row-remap", wantGPU: 5,
			fault: func(s *server.Server) {
				dev(s, 5).GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 1, true, false, nvml.SUCCESS }
			}},
		{name: "remap failed", wantFail: "row-remap", wantGPU: 1,
			fault: func(s *server.Server) {
				dev(s, 1).GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 8, false, true, nvml.SUCCESS }
			}},
		{name: "retired pages pending on a pre-Ampere GPU", wantFail: "retired-pages", wantGPU: 0,
			fault: func(s *server.Server) {
				d := dev(s, 0)
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
				d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
				d.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) { return []uint64{0x1000}, nvml.SUCCESS }
			}},
		{name: "one NVLink down", wantFail: "nvlink", wantGPU: 6,
			fault: func(s *server.Server) {
				dev(s, 6).GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
					if l >= 18 {
						return 0, nvml.ERROR_INVALID_ARGUMENT
					}
					if l == 4 {
						return nvml.FEATURE_DISABLED, nvml.SUCCESS
					}
					return nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
			}},
		{name: "HW thermal slowdown", wantFail: "thermal", wantGPU: 7,
			fault: func(s *server.Server) {
				dev(s, 7).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 92, nvml.SUCCESS }
				dev(s, 7).GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return nvml.ClocksThrottleReasonHwThermalSlowdown, nvml.SUCCESS }
			}},
		{name: "PCIe width degraded", wantFail: "pcie", wantGPU: 4,
			fault: func(s *server.Server) {
				dev(s, 4).GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 8, nvml.SUCCESS }
			}},
		{name: "GPU stops answering", wantFail: "ecc", wantGPU: 3,
			fault: func(s *server.Server) {
				dev(s, 3).GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
					return 0, nvml.ERROR_GPU_IS_LOST
				}
			}},
		{name: "Xid 79 while listening", xids: []uint64{79}, opts: CheckOptions{XidWait: 50 * time.Millisecond}, wantFail: "xid", wantGPU: 3},
		{name: "Xid 13 is the job's, not the node's", xids: []uint64{13}, opts: CheckOptions{XidWait: 50 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := machine(tt.xids...)
			if tt.fault != nil {
				tt.fault(s)
			}
			m := NewNVML(s)
			if err := m.Init(); err != nil {
				t.Fatal(err)
			}
			r := Check(context.Background(), m, tt.opts)
			if !r.Available || r.Driver == "" {
				t.Fatalf("available %v driver %q", r.Available, r.Driver)
			}
			fails := r.Failures()
			if tt.wantFail == "" {
				if len(fails) > 0 {
					t.Fatalf("unexpected failures: %+v", fails)
				}
				return
			}
			if len(fails) != 1 || fails[0].Check != tt.wantFail || fails[0].GPU != tt.wantGPU {
				t.Fatalf("failures = %+v, want one %s on GPU %d", fails, tt.wantFail, tt.wantGPU)
			}
		})
	}
}

func TestCheckA100Models(t *testing.T) {
	s := dgxa100.New()
	for _, d := range s.Devices {
		d := d.(*dgxa100.Device)
		d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
		d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	}
	r := Check(context.Background(), NewNVML(s), CheckOptions{ExpectedGPUs: 8})
	if r.Failed() || r.GPUs != 8 || !strings.Contains(r.Models[0], "A100") {
		t.Fatalf("report %+v", r)
	}
}

func TestNVMLInitWithoutDriver(t *testing.T) {
	s := dgxh100.New()
	s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	f := &Fallback{Primary: NewNVML(s)}
	if err := f.Init(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("init err = %v, want ErrUnavailable", err)
	}
	r := Check(context.Background(), f, CheckOptions{XidWait: time.Second})
	if r.Available || r.Failed() || r.Reason == "" {
		t.Fatalf("report %+v, want unavailable, not failed, with a reason", r)
	}
}

func TestSamplerNVMLMock(t *testing.T) {
	s := machine(48)
	m := NewNVML(s)
	mem := uint64(0)
	dev(s, 1).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		mem += 10 << 30
		return nvml.Memory{Total: 80 << 30, Used: mem}, nvml.SUCCESS
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	fig, err := Sample(ctx, m, SampleOptions{Interval: 20 * time.Millisecond, Devices: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if fig.Samples < 2 || fig.MeanSMUtil != 87 || fig.PeakMemBytes < 20<<30 {
		t.Fatalf("figures %+v", fig)
	}
	if len(fig.Xids) != 1 || fig.Xids[0] != 48 {
		t.Fatalf("xids %v, want [48]", fig.Xids)
	}
}

// BenchmarkCheckDGXH100 measures the NVML checks on an 8-GPU machine
// (without the Xid listening window), the work `health check` adds to
// every HealthCheckInterval.
func BenchmarkCheckDGXH100(b *testing.B) {
	m := NewNVML(machine())
	for b.Loop() {
		if r := Check(context.Background(), m, CheckOptions{ExpectedGPUs: 8}); r.Failed() {
			b.Fatal(r.Failures())
		}
	}
}
