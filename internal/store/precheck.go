package store

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt's on-disk meta page, read here only to catch a truncated file before
// it is memory-mapped (touching a mapped page past the end of the file would
// fault). See go.etcd.io/bbolt/internal/common: a 16-byte page header, then
// magic, version, pageSize, flags (uint32 each), root bucket (pgid, sequence),
// freelist pgid, high-water pgid, txid and an FNV-64a checksum.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	metaOffset     = 16
	metaChecksumAt = metaOffset + 56
	metaLen        = metaChecksumAt + 8
	firstPageSize  = 4096
)

type metaPage struct {
	pageSize uint32
	pgid     uint64
	txid     uint64
}

// readMeta decodes the meta page at off; ok is false when it is not valid.
func readMeta(f io.ReaderAt, off int64) (m metaPage, ok bool) {
	buf := make([]byte, metaLen)
	if _, err := f.ReadAt(buf, off); err != nil {
		return m, false
	}
	le := binary.LittleEndian
	if le.Uint32(buf[metaOffset:]) != boltMagic || le.Uint32(buf[metaOffset+4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	h.Write(buf[metaOffset:metaChecksumAt])
	if h.Sum64() != le.Uint64(buf[metaChecksumAt:]) {
		return m, false
	}
	return metaPage{
		pageSize: le.Uint32(buf[metaOffset+8:]),
		pgid:     le.Uint64(buf[metaOffset+40:]),
		txid:     le.Uint64(buf[metaOffset+48:]),
	}, true
}

// checkTruncation reports an error when the newest valid meta page says the
// database extends past the end of the file. Files whose meta pages cannot be
// read are left for bbolt to reject.
func checkTruncation(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read meta pages: %w", err)
	}
	defer f.Close()
	m0, ok0 := readMeta(f, 0)
	pageSize := int64(firstPageSize)
	if ok0 && m0.pageSize > 0 {
		pageSize = int64(m0.pageSize)
	}
	m1, ok1 := readMeta(f, pageSize)
	var m metaPage
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		m = m1
	case ok0:
		m = m0
	default:
		return nil
	}
	if m.pageSize == 0 {
		return fmt.Errorf("meta page gives a zero page size")
	}
	if want := int64(m.pgid) * int64(m.pageSize); size < want {
		return fmt.Errorf("file is truncated: %d bytes, database needs %d", size, want)
	}
	return nil
}
