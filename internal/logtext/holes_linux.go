package logtext

import (
	"errors"
	"io"
	"math"
	"os"
	"syscall"
)

// seekData is Linux's SEEK_DATA whence: seek to the next byte that is not
// in a hole.
const seekData = 3

// nextData returns the offset of the first data byte at or after off when r
// is a file whose holes the kernel can report (math.MaxInt64 when only a
// hole follows). ok is false when it cannot tell.
func nextData(r io.ReaderAt, off int64) (next int64, ok bool) {
	fh, isFile := r.(*os.File)
	if !isFile {
		return 0, false
	}
	next, err := fh.Seek(off, seekData)
	if errors.Is(err, syscall.ENXIO) {
		return math.MaxInt64, true
	}
	if err != nil {
		return 0, false
	}
	return next, true
}
