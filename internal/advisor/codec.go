package advisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/schedmate/schedmate/internal/vector"
)

// Record encoding, version 2, little-endian:
//
//	version u8 | flags u8 | end i64 | duration f32 | limit f32 | state u8 |
//	gpu util f32 | gpu mem f32 | step time f32 |
//	[logical key u64 | vector 128 x i8, when flagVector] |
//	job id (rest, at most 64 bytes)
//
// Blocks searched by similarity hold full records; the others hold the
// short form, which is all their fallbacks need. The user and partition
// keys are not stored: a block's records share them.
const (
	codecVersion = 2
	flagVector   = 1
	headerLen    = 1 + 1 + 8 + 4 + 4 + 1 + 4 + 4 + 4
	vectorLen    = 8 + vector.Dim
	maxJobIDLen  = 64
)

// errRecord reports an undecodable index entry.
var errRecord = errors.New("advisor: corrupt index record")

// encodeRecord serialises a record, with its vector when withVec.
func encodeRecord(r *Record, withVec bool) []byte {
	id := r.JobID
	if len(id) > maxJobIDLen {
		id = id[:maxJobIDLen]
	}
	n := headerLen + len(id)
	if withVec {
		n += vectorLen
	}
	b := make([]byte, 0, n)
	var flags byte
	if withVec {
		flags |= flagVector
	}
	b = append(b, codecVersion, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.End))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.DurationS))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.TimeLimitS))
	b = append(b, byte(r.State))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.GPUUtil))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.GPUMemGB))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.StepTimeS))
	if withVec {
		b = binary.LittleEndian.AppendUint64(b, r.LogicalKey)
		for _, x := range r.Vec {
			b = append(b, byte(x))
		}
	}
	return append(b, id...)
}

// decodeRecord parses an encoded record; hasVec reports whether it carried a
// vector.
func decodeRecord(b []byte) (r Record, hasVec bool, err error) {
	if len(b) < headerLen || b[0] != codecVersion {
		return r, false, fmt.Errorf("%w: %d bytes", errRecord, len(b))
	}
	hasVec = b[1]&flagVector != 0
	p := 2
	u32 := func() float32 { v := math.Float32frombits(binary.LittleEndian.Uint32(b[p:])); p += 4; return v }
	u64 := func() uint64 { v := binary.LittleEndian.Uint64(b[p:]); p += 8; return v }
	r.End = int64(u64())
	r.DurationS = u32()
	r.TimeLimitS = u32()
	r.State = State(b[p])
	p++
	r.GPUUtil = u32()
	r.GPUMemGB = u32()
	r.StepTimeS = u32()
	if hasVec {
		if len(b) < p+vectorLen {
			return r, false, fmt.Errorf("%w: vector cut short", errRecord)
		}
		r.LogicalKey = u64()
		for i := range vector.Dim {
			r.Vec[i] = int8(b[p+i])
		}
		p += vector.Dim
	}
	id := b[p:]
	if len(id) > maxJobIDLen || !utf8.Valid(id) {
		return r, false, fmt.Errorf("%w: bad job id", errRecord)
	}
	if math.IsNaN(float64(r.DurationS)) || r.DurationS < 0 || r.State > StateTimeout {
		return r, false, fmt.Errorf("%w: bad figures", errRecord)
	}
	r.JobID = string(id)
	return r, hasVec, nil
}
