package gpu

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeDevice is a Device with fixed answers.
type fakeDevice struct {
	index int
	uuid  string
	ecc   ECCCounts
	links []NVLink
	pcie  PCIeLink
	usage Usage
	err   error
}

func (f fakeDevice) Index() int                          { return f.index }
func (f fakeDevice) UUID() string                        { return f.uuid }
func (f fakeDevice) Name() string                        { return "Fake GPU" }
func (f fakeDevice) BusID() string                       { return "0000:00:00.0" }
func (f fakeDevice) ECC() (ECCCounts, error)             { return f.ecc, f.err }
func (f fakeDevice) RetiredPages() (RetiredPages, error) { return RetiredPages{}, ErrNotSupported }
func (f fakeDevice) RemappedRows() (RemappedRows, error) { return RemappedRows{}, nil }
func (f fakeDevice) NVLinks() ([]NVLink, error)          { return f.links, nil }
func (f fakeDevice) Thermal() (Thermal, error)           { return Thermal{TempC: 40}, nil }
func (f fakeDevice) PCIe() (PCIeLink, error)             { return f.pcie, nil }
func (f fakeDevice) Usage() (Usage, error)               { return f.usage, nil }

// fakeManager serves fixed devices and Xid events.
type fakeManager struct {
	devs []Device
	xids []XidEvent
}

func (f fakeManager) Init() error                    { return nil }
func (f fakeManager) Shutdown() error                { return nil }
func (f fakeManager) DriverVersion() (string, error) { return "550.54.15", nil }
func (f fakeManager) Devices() ([]Device, error)     { return f.devs, nil }
func (f fakeManager) WaitXid(ctx context.Context, wait time.Duration) ([]XidEvent, error) {
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return f.xids, nil
}

func TestCheckUnavailableIsNotFailure(t *testing.T) {
	for _, m := range []Manager{Null{}, Null{Reason: "no NVIDIA driver"}, &Fallback{Primary: Null{Reason: "x"}}, fakeManager{}} {
		r := Check(context.Background(), m, CheckOptions{XidWait: time.Millisecond})
		if r.Available || r.Failed() || len(r.Findings) != 1 || r.Findings[0].Severity != SevUnavailable {
			t.Errorf("%T: report %+v", m, r)
		}
		// Slurm declaring GPUs does not turn a missing driver into a
		// fault: the report says unavailable and names the expected count.
		r = Check(context.Background(), m, CheckOptions{ExpectedGPUs: 4})
		if r.Available || r.Failed() || len(r.Findings) != 1 || r.Findings[0].Severity != SevUnavailable || !strings.Contains(r.Findings[0].Detail, "4 GPUs expected") {
			t.Errorf("%T with 4 expected: report %+v", m, r)
		}
	}
}

func TestFallbackSwitchesToNull(t *testing.T) {
	f := &Fallback{Primary: failingManager{}}
	if err := f.Init(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("init = %v", err)
	}
	if f.Available() {
		t.Fatal("available after failed start")
	}
	if _, err := f.Devices(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("devices err = %v", err)
	}
	ok := &Fallback{Primary: fakeManager{}}
	if err := ok.Init(); err != nil || !ok.Available() {
		t.Fatalf("healthy primary: %v %v", err, ok.Available())
	}
}

type failingManager struct{ Null }

func (failingManager) Init() error { return errors.New("nvml: driver not loaded") }

func TestOpenNeverFails(t *testing.T) {
	f := Open()
	defer f.Shutdown()
	r := Check(context.Background(), f, CheckOptions{})
	if !f.Available() && (r.Available || r.Failed()) {
		t.Fatalf("no NVML here, report %+v", r)
	}
}

func TestCheckFindings(t *testing.T) {
	links := func(down ...int) []NVLink {
		var out []NVLink
		for i := 0; i < 4; i++ {
			out = append(out, NVLink{Link: i, Active: true})
		}
		for _, d := range down {
			out[d].Active = false
		}
		return out
	}
	tests := []struct {
		name  string
		dev   fakeDevice
		check string
		sev   Severity
	}{
		{"aggregate-only ECC warns", fakeDevice{ecc: ECCCounts{Aggregate: 5}}, "ecc", SevWarn},
		{"volatile ECC fails", fakeDevice{ecc: ECCCounts{Volatile: 1, Aggregate: 5}}, "ecc", SevFail},
		{"unsupported ECC skipped", fakeDevice{err: ErrNotSupported}, "ecc", ""},
		{"all links inactive is a PCIe card", fakeDevice{links: links(0, 1, 2, 3)}, "nvlink", SevWarn},
		{"one link down fails", fakeDevice{links: links(2)}, "nvlink", SevFail},
		{"noisy link warns", fakeDevice{links: []NVLink{{Active: true, Replay: 5000}}}, "nvlink-errors", SevWarn},
		{"gen down at idle is normal", fakeDevice{pcie: PCIeLink{CurGen: 1, MaxGen: 4, CurWidth: 16, MaxWidth: 16}}, "pcie", SevOK},
		{"width down fails", fakeDevice{pcie: PCIeLink{CurGen: 4, MaxGen: 4, CurWidth: 4, MaxWidth: 16}}, "pcie", SevFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Severity
			for _, f := range checkDevice(tt.dev, CheckOptions{}) {
				if f.Check == tt.check {
					got = f.Severity
				}
			}
			if got != tt.sev {
				t.Fatalf("%s severity = %q, want %q", tt.check, got, tt.sev)
			}
		})
	}
}

func TestCheckXidEvents(t *testing.T) {
	m := fakeManager{devs: []Device{fakeDevice{index: 0}}, xids: []XidEvent{{Device: 0, Xid: 43}, {Device: 0, Xid: 95}}}
	r := Check(context.Background(), m, CheckOptions{XidWait: time.Millisecond})
	f := r.Failures()
	if len(f) != 1 || f[0].Check != "xid" {
		t.Fatalf("failures %+v, want one Xid 95", f)
	}
}

func TestSampleFigures(t *testing.T) {
	m := fakeManager{
		devs: []Device{
			fakeDevice{index: 0, uuid: "GPU-a", usage: Usage{SMPercent: 100, MemUsed: 30 << 30}},
			fakeDevice{index: 1, uuid: "GPU-b", usage: Usage{SMPercent: 50, MemUsed: 70 << 30}},
			fakeDevice{index: 2, uuid: "GPU-c", usage: Usage{SMPercent: 0, MemUsed: 1}},
		},
		xids: []XidEvent{{Device: 1, Xid: 79}, {Device: 2, Xid: 13}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	fig, err := Sample(ctx, m, SampleOptions{Interval: 10 * time.Millisecond, Devices: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if fig.MeanSMUtil != 75 || fig.PeakMemBytes != 70<<30 || !reflect.DeepEqual(fig.Xids, []int{79}) || fig.Samples < 2 {
		t.Fatalf("figures %+v", fig)
	}
	if _, err := Sample(ctx, Null{}, SampleOptions{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("null sample err = %v", err)
	}
}

func TestJobDevices(t *testing.T) {
	devs := []Device{fakeDevice{index: 0, uuid: "GPU-aaaa"}, fakeDevice{index: 1, uuid: "GPU-bbbb"}}
	tests := []struct {
		env  map[string]string
		want []int
		err  error
	}{
		{map[string]string{"SLURM_JOB_GPUS": "3,1", "CUDA_VISIBLE_DEVICES": "0,1"}, []int{1, 3}, nil},
		{map[string]string{"SLURM_STEP_GPUS": "2", "SLURM_JOB_GPUS": "0,1,2"}, []int{2}, nil},
		{map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}, []int{1}, nil},
		{map[string]string{"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, nil, ErrNoJobGPUs},
		{map[string]string{}, nil, ErrNoJobGPUs},
	}
	for _, tt := range tests {
		got, err := JobDevices(func(k string) string { return tt.env[k] }, devs)
		if !errors.Is(err, tt.err) || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: %v, %v; want %v, %v", tt.env, got, err, tt.want, tt.err)
		}
	}
	if _, err := JobDevices(func(string) string { return "GPU-zzzz" }, devs); err == nil {
		t.Error("unknown UUID accepted")
	}
}
