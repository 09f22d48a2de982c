package nodehealth

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/gpu"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/xid"
)

// Per-job GPU figures reach the controller's database like this:
//
//  1. The node Prolog starts `schedmate health sample --job $SLURM_JOB_ID`
//     in the background. It samples the job's GPUs (SLURM_JOB_GPUS) through
//     NVML every interval and listens for Xid events on them.
//  2. The node Epilog stops it with SIGTERM. On its way out the sampler
//     writes one small JobGPURecord (job, node, figures) into the GPU spool
//     directory, atomically (internal/spool). Compute nodes never open the
//     database, so they never contend for its lock. The spool directory
//     must be shared with the controller (the same shared file system Slurm
//     state or home directories live on) or collected onto it.
//  3. On the controller, `schedmate hook epilog` or `schedmate health
//     ingest` applies the spool with IngestSpool: the figures of every node
//     are merged into the job's history entry (store.Job.GPU), and Xid
//     events that call for a drain are recorded as trusted node evidence.
//
// Without a GPU or driver the sampler records nothing and exits 0.

// SpoolKindJobGPU is the spool record kind of a JobGPURecord.
const SpoolKindJobGPU = "job-gpu"

// JobGPURecord is one node's GPU figures for one job.
type JobGPURecord struct {
	JobID   string      `json:"job_id"`
	Node    string      `json:"node"`
	Figures gpu.Figures `json:"figures"`
}

// WriteJobGPU leaves rec in the spool for the controller.
func WriteJobGPU(sp *spool.Spool, rec JobGPURecord) error {
	if rec.JobID == "" || rec.Node == "" {
		return errors.New("job GPU record needs a job id and a node")
	}
	if err := sp.Write(SpoolKindJobGPU, rec); err != nil {
		return fmt.Errorf("spool GPU figures of job %s on %s: %w", rec.JobID, rec.Node, err)
	}
	return nil
}

// SpoolStore is the part of the store IngestSpool writes to.
type SpoolStore interface {
	Recorder
	UpdateJob(id string, fn func(*store.Job) error) error
	NodeEvidence(node string, since time.Time) ([]store.Evidence, error)
	PutKV(bucket, key string, val []byte) error
	GetKV(bucket, key string) ([]byte, bool, error)
}

// metaPrefix keys each node's figures in Job.Metadata so that applying the
// same record twice changes nothing.
const metaPrefix = "gpu.node."

// IngestSpool applies every record the nodes left in the health spool,
// whichever job or check wrote it: a node's Epilog may finish after the
// controller's epilog for its job, so each ingest also takes the records
// that arrived late for earlier jobs. For a job GPU record it merges the node's figures into the job and
// records Xid events that call for a drain as trusted evidence against the
// node; evidence and audit entries of node checks (SpoolRecorder) go into
// the store as they are. Records of other kinds or that cannot be decoded
// are set aside.
func IngestSpool(sp *spool.Spool, st SpoolStore) (spool.DrainResult, error) {
	return sp.Drain(func(r spool.Record) error {
		if ok, err := applyNodeRecord(st, r); ok {
			return err
		}
		if r.Kind != SpoolKindJobGPU {
			return spool.ErrSkip
		}
		var rec JobGPURecord
		if err := json.Unmarshal(r.Data, &rec); err != nil || rec.JobID == "" || rec.Node == "" {
			return spool.ErrSkip
		}
		return applyJobGPU(st, rec)
	})
}

func applyJobGPU(st SpoolStore, rec JobGPURecord) error {
	enc, err := json.Marshal(rec.Figures)
	if err != nil {
		return fmt.Errorf("encode GPU figures: %w", err)
	}
	err = st.UpdateJob(rec.JobID, func(j *store.Job) error {
		if j.JobID == "" {
			j.JobID = rec.JobID
		}
		if j.Metadata == nil {
			j.Metadata = map[string]string{}
		}
		j.Metadata[metaPrefix+rec.Node] = string(enc)
		j.GPU = mergeNodeFigures(j.Metadata)
		return nil
	})
	if err != nil {
		return fmt.Errorf("merge GPU figures of job %s from %s: %w", rec.JobID, rec.Node, err)
	}
	seen, err := st.NodeEvidence(rec.Node, rec.Figures.End)
	if err != nil {
		return fmt.Errorf("read evidence of %s: %w", rec.Node, err)
	}
	for _, code := range rec.Figures.Xids {
		info := xid.Lookup(code)
		check := fmt.Sprintf("xid-%d", code)
		if info.Action != xid.ActionDrain || hasEvidence(seen, rec.JobID, check) {
			continue
		}
		err := st.AddEvidence(store.Evidence{
			Node: rec.Node, Time: rec.Figures.End, Source: "xid", Check: check,
			OK: false, Trusted: true, JobID: rec.JobID,
			Summary: fmt.Sprintf("Xid %d %s: %s", code, info.Name, info.Meaning),
		})
		if err != nil {
			return fmt.Errorf("record Xid %d on %s: %w", code, rec.Node, err)
		}
	}
	return nil
}

func hasEvidence(seen []store.Evidence, jobID, check string) bool {
	for _, e := range seen {
		if e.JobID == jobID && e.Check == check {
			return true
		}
	}
	return false
}

// mergeNodeFigures combines the per-node figures kept in metadata: the SM
// utilisation mean weighted by samples times GPUs, the peak of peaks, and
// the distinct Xid codes.
func mergeNodeFigures(meta map[string]string) *store.GPUFigures {
	var out store.GPUFigures
	var weight, sum float64
	xids := map[int]bool{}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		if strings.HasPrefix(k, metaPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		var f gpu.Figures
		if json.Unmarshal([]byte(meta[k]), &f) != nil {
			continue
		}
		w := float64(f.Samples * max(len(f.GPUs), 1))
		sum += f.MeanSMUtil * w
		weight += w
		out.PeakMemBytes = max(out.PeakMemBytes, f.PeakMemBytes)
		for _, x := range f.Xids {
			xids[x] = true
		}
	}
	if weight > 0 {
		out.MeanSMUtil = sum / weight
	}
	for x := range xids {
		out.Xids = append(out.Xids, x)
	}
	sort.Ints(out.Xids)
	return &out
}
