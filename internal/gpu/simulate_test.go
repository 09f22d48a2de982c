//go:build linux && cgo

package gpu

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestSimulate(t *testing.T) {
	tests := []struct {
		spec    string
		gpus    int
		model   string
		wantErr bool
	}{
		{spec: "dgxh100", gpus: 8, model: "H100"},
		{spec: "DGXA100:4", gpus: 4, model: "A100"},
		{spec: "dgxh200:1", gpus: 1, model: "H200"},
		{spec: "dgxh100:0", wantErr: true},
		{spec: "dgxh100:9", wantErr: true},
		{spec: "dgxh100:x", wantErr: true},
		{spec: "laptop", wantErr: true},
		{spec: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			f, err := OpenSimulated(tt.spec)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Shutdown()
			r := Check(context.Background(), f, CheckOptions{ExpectedGPUs: tt.gpus, XidWait: 20 * time.Millisecond})
			if !r.Available || r.Failed() || r.GPUs != tt.gpus || !containsAll(r.Models, tt.model) {
				t.Fatalf("report %+v", r)
			}
		})
	}
}

func containsAll(models []string, sub string) bool {
	for _, m := range models {
		if !strings.Contains(m, sub) {
			return false
		}
	}
	return len(models) > 0
}

func TestSimulateSampleFigures(t *testing.T) {
	f, err := OpenSimulated("dgxh100:2")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	fig, err := Sample(ctx, f, SampleOptions{Interval: 10 * time.Millisecond, Devices: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if fig.Samples < 2 || fig.MeanSMUtil < 55 || fig.MeanSMUtil > 95 || fig.PeakMemBytes < 40<<30 || len(fig.GPUs) != 1 || len(fig.Xids) != 0 {
		t.Fatalf("figures %+v", fig)
	}
}
