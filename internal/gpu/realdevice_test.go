package gpu

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestRealDevice runs every query and the node check against the machine's
// real NVML. It needs a GPU and its driver, so it runs only when
// SCHEDMATE_TEST_NVML=1 (test/realruns/run.sh sets it on a GPU machine).
// Every query must either answer or say ErrNotSupported: a virtualised or
// single-GPU machine lacks NVLink and some counters, which is not a fault.
func TestRealDevice(t *testing.T) {
	if os.Getenv("SCHEDMATE_TEST_NVML") != "1" {
		t.Skip("set SCHEDMATE_TEST_NVML=1 on a machine with an NVIDIA GPU")
	}
	m := Open()
	defer m.Shutdown()
	if !m.Available() {
		t.Fatalf("NVML unavailable on a GPU machine: %v", m.Init())
	}
	drv, err := m.DriverVersion()
	if err != nil {
		t.Fatalf("driver version: %v", err)
	}
	devs, err := m.Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("devices: %d, %v", len(devs), err)
	}
	t.Logf("driver %s, %d GPU(s)", drv, len(devs))
	answered := func(what string, v any, err error) {
		t.Helper()
		switch {
		case err == nil:
			t.Logf("  %s: %+v", what, v)
		case errors.Is(err, ErrNotSupported):
			t.Logf("  %s: not supported (%v)", what, err)
		default:
			t.Errorf("  %s: %v", what, err)
		}
	}
	for _, d := range devs {
		t.Logf("GPU %d %s %s bus %s", d.Index(), d.Name(), d.UUID(), d.BusID())
		ecc, err := d.ECC()
		answered("ECC", ecc, err)
		pages, err := d.RetiredPages()
		answered("retired pages", pages, err)
		rows, err := d.RemappedRows()
		answered("remapped rows", rows, err)
		links, err := d.NVLinks()
		answered("NVLinks", links, err)
		thermal, err := d.Thermal()
		answered("thermal", thermal, err)
		pcie, err := d.PCIe()
		answered("PCIe", pcie, err)
		use, err := d.Usage()
		answered("usage", use, err)
		if err == nil && use.MemTotal == 0 {
			t.Errorf("GPU %d reports no memory", d.Index())
		}
	}
	rep := Check(context.Background(), m, CheckOptions{ExpectedGPUs: len(devs), XidWait: 2 * time.Second, MaxTempC: 90})
	for _, f := range rep.Findings {
		t.Logf("finding %+v", f)
	}
	if !rep.Available || rep.Failed() {
		t.Errorf("a healthy GPU machine failed the check: %+v", rep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	fig, err := Sample(ctx, m, SampleOptions{Interval: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("sample: %v", err)
	}
	t.Logf("sample: %+v", fig)
	if fig.Samples < 2 || fig.PeakMemBytes == 0 {
		t.Errorf("sample took %d samples, peak memory %d", fig.Samples, fig.PeakMemBytes)
	}
}
