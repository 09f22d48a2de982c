// Package slurmtest holds a conformance suite that any slurm.Client must
// pass; it runs against slurmfake and against a real Slurm.
package slurmtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/schedmate/schedmate/slurm"
)

// Options tunes the suite for one cluster.
type Options struct {
	// Node is a node the suite may drain and resume; empty means the first node.
	Node string
	// Script is a batch script that runs for at least a minute.
	Script string
	// Wait bounds how long the suite waits for Slurm to reach a state.
	Wait time.Duration
}

func (o Options) withDefaults() Options {
	if o.Script == "" {
		o.Script = "#!/bin/sh\nsleep 300\n"
	}
	if o.Wait == 0 {
		o.Wait = 30 * time.Second
	}
	return o
}

// RunConformance runs the behaviour every slurm.Client must show. newClient
// is called once per subtest.
func RunConformance(t *testing.T, newClient func(t *testing.T) slurm.Client, opts Options) {
	opts = opts.withDefaults()
	ctx := context.Background()

	t.Run("SubmitAppearsInQueue", func(t *testing.T) {
		c := newClient(t)
		id := submit(t, c, opts, false)
		eventually(t, opts.Wait, "job in queue", func() error {
			jobs, err := c.Queue(ctx, slurm.QueueFilter{})
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if j.ID == id {
					return nil
				}
			}
			return fmt.Errorf("job %s not in queue of %d jobs", id, len(jobs))
		})
		j, err := c.Job(ctx, id)
		if err != nil {
			t.Fatalf("Job(%s): %v", id, err)
		}
		if j.ID != id || j.Name != "conformance" {
			t.Errorf("Job(%s) = id %q name %q", id, j.ID, j.Name)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		c := newClient(t)
		id := submit(t, c, opts, false)
		if err := c.Cancel(ctx, id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
		eventually(t, opts.Wait, "job cancelled", func() error {
			j, err := c.Job(ctx, id)
			if err != nil {
				return err
			}
			if j.State != "CANCELLED" {
				return fmt.Errorf("state %s", j.State)
			}
			return nil
		})
	})

	t.Run("SetComment", func(t *testing.T) {
		c := newClient(t)
		id := submit(t, c, opts, true)
		comment := slurm.Reason("estimate", "est=60s source=history")
		if err := c.SetComment(ctx, id, comment, true); err != nil {
			t.Fatalf("SetComment: %v", err)
		}
		j, err := c.Job(ctx, id)
		if err != nil {
			t.Fatalf("Job(%s): %v", id, err)
		}
		if j.AdminComment != comment {
			t.Errorf("AdminComment = %q, want %q", j.AdminComment, comment)
		}
	})

	t.Run("RequeueExcludingNode", func(t *testing.T) {
		c := newClient(t)
		id := submit(t, c, opts, false)
		var ran string
		eventually(t, opts.Wait, "job running", func() error {
			j, err := c.Job(ctx, id)
			if err != nil {
				return err
			}
			if j.State != "RUNNING" || len(j.Nodes) == 0 {
				return fmt.Errorf("state %s on %q", j.State, j.NodeList)
			}
			ran = j.Nodes[0]
			return nil
		})
		if err := c.Requeue(ctx, id, slurm.RequeueOptions{ExcludeNodes: []string{ran}, Hold: true}); err != nil {
			t.Fatalf("Requeue(%s): %v", id, err)
		}
		eventually(t, opts.Wait, "job requeued", func() error {
			j, err := c.Job(ctx, id)
			if err != nil {
				return err
			}
			if j.State != "PENDING" {
				return fmt.Errorf("state %s", j.State)
			}
			if j.ExcNodes == "" {
				return fmt.Errorf("ExcNodes empty, want %s excluded", ran)
			}
			return nil
		})
	})

	t.Run("DrainAndResume", func(t *testing.T) {
		c := newClient(t)
		node := opts.Node
		if node == "" {
			nodes, err := c.Nodes(ctx)
			if err != nil || len(nodes) == 0 {
				t.Fatalf("Nodes: %v (%d nodes)", err, len(nodes))
			}
			node = nodes[len(nodes)-1].Name
		}
		reason := slurm.Reason("conformance", "drain test")
		if err := c.DrainNode(ctx, node, reason); err != nil {
			t.Fatalf("DrainNode(%s): %v", node, err)
		}
		t.Cleanup(func() { _ = c.ResumeNode(ctx, node) })
		n, err := c.Node(ctx, node)
		if err != nil {
			t.Fatalf("Node(%s): %v", node, err)
		}
		if !n.Drained() || n.Reason != reason || !slurm.IsOurs(n.Reason) {
			t.Errorf("after drain: state %q reason %q", n.State, n.Reason)
		}
		nodes, err := c.Nodes(ctx)
		if err != nil {
			t.Fatalf("Nodes: %v", err)
		}
		if i := slices.IndexFunc(nodes, func(n slurm.Node) bool { return n.Name == node }); i < 0 || !nodes[i].Drained() {
			t.Errorf("Nodes() does not show %s drained", node)
		}
		if err := c.ResumeNode(ctx, node); err != nil {
			t.Fatalf("ResumeNode(%s): %v", node, err)
		}
		if n, err = c.Node(ctx, node); err != nil || n.Drained() || n.Reason != "" {
			t.Errorf("after resume: %+v, %v", n, err)
		}
	})

	t.Run("UnknownIDs", func(t *testing.T) {
		c := newClient(t)
		if _, err := c.Job(ctx, "999999999"); !errors.Is(err, slurm.ErrNotFound) {
			t.Errorf("Job(unknown) err = %v, want ErrNotFound", err)
		}
		if _, err := c.Node(ctx, "no-such-node-x"); !errors.Is(err, slurm.ErrNotFound) {
			t.Errorf("Node(unknown) err = %v, want ErrNotFound", err)
		}
	})
}

// submit submits the suite's job and cancels it when the test ends.
func submit(t *testing.T, c slurm.Client, opts Options, hold bool) string {
	t.Helper()
	ctx := context.Background()
	id, err := c.Submit(ctx, slurm.SubmitRequest{Script: opts.Script, Name: "conformance",
		TimeLimit: 5 * time.Minute, Output: "/dev/null", Hold: hold})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	t.Cleanup(func() { _ = c.Cancel(ctx, id) })
	return id
}

// eventually retries check until it succeeds or wait passes.
func eventually(t *testing.T, wait time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
