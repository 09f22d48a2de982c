package slurmfake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/schedmate/schedmate/slurm"
	"github.com/schedmate/schedmate/slurm/slurmfake"
	"github.com/schedmate/schedmate/slurm/slurmtest"
)

func TestConformance(t *testing.T) {
	slurmtest.RunConformance(t, func(t *testing.T) slurm.Client {
		return slurmfake.New(slurmfake.WithGPUNodes("n", 2, 4))
	}, slurmtest.Options{Wait: time.Second})
}

func TestInterceptorsAndCalls(t *testing.T) {
	boom := errors.New("boom")
	f := slurmfake.New(slurmfake.WithGPUNodes("n", 1, 4), slurmfake.WithJobs(slurm.Job{ID: "7", State: "RUNNING"}))
	f.Fail("DrainNode", boom)
	f.Hang("Queue")
	if err := f.DrainNode(context.Background(), "n1", "schedmate: x"); !errors.Is(err, boom) {
		t.Errorf("DrainNode err = %v, want boom", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.Queue(ctx, slurm.QueueFilter{}); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, slurm.ErrUnavailable) {
		t.Errorf("Queue err = %v, want deadline exceeded", err)
	}
	if got := f.CallsTo("DrainNode"); len(got) != 1 || got[0].Args[0] != "n1" {
		t.Errorf("CallsTo(DrainNode) = %+v", got)
	}
	if j, err := f.Job(context.Background(), "7"); err != nil || j.State != "RUNNING" {
		t.Errorf("Job(7) = %+v, %v", j, err)
	}
}
