package advisor

// Capacity of each block: a search touches at most the newest records of the
// job's logical-name block, its user's block, its partition and the global
// block, or of its resubmission block. The stored index keeps no more.
const (
	logicalCap   = 32
	userCap      = 256
	partitionCap = 256
	globalCap    = 512
	resubmitCap  = 64
)

// ring keeps the newest records of a block, oldest first.
type ring struct {
	recs []Record
	cap  int
	next int
	full bool
}

func newRing(capacity int) *ring { return &ring{cap: capacity} }

func (r *ring) add(rec Record) {
	if !r.full {
		r.recs = append(r.recs, rec)
		if len(r.recs) == r.cap {
			r.full = true
		}
		return
	}
	r.recs[r.next] = rec
	r.next = (r.next + 1) % r.cap
}

// newestFirst calls fn for every record from the newest back, stopping when
// fn returns false.
func (r *ring) newestFirst(fn func(*Record) bool) {
	if r == nil {
		return
	}
	n := len(r.recs)
	for i := 0; i < n; i++ {
		idx := (r.next - 1 - i + 2*n) % n
		if !r.full {
			idx = n - 1 - i
		}
		if !fn(&r.recs[idx]) {
			return
		}
	}
}

// Index is an in-memory history of ended jobs blocked by logical name, user
// and partition, with a global block of the newest jobs. It is what a search
// runs over: the replay feeds it directly, the live advisor loads the few
// blocks a query needs from the store into one.
type Index struct {
	logical   map[uint64]*ring
	user      map[uint64]*ring
	partition map[uint64]*ring
	global    *ring
	running   map[uint64][]running
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		logical:   make(map[uint64]*ring),
		user:      make(map[uint64]*ring),
		partition: make(map[uint64]*ring),
		global:    newRing(globalCap),
		running:   make(map[uint64][]running),
	}
}

// Add records an ended job. Records should arrive in end order.
func (ix *Index) Add(rec Record) {
	ix.ringAdder(ix.logical, rec.LogicalKey, logicalCap)(rec)
	ix.ringAdder(ix.user, rec.UserKey, userCap)(rec)
	ix.ringAdder(ix.partition, rec.PartKey, partitionCap)(rec)
	ix.global.add(rec)
	if len(ix.running) > 0 {
		ix.ended(&rec)
	}
}
