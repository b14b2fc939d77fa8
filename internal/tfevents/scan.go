package tfevents

import (
	"encoding/binary"
	"fmt"
)

// MaxRecordBytes bounds one record's data; a verified header announcing
// more is treated as corrupt.
const MaxRecordBytes = 1 << 30

// Record is one verified record of a TFRecord stream and its byte offset.
type Record struct {
	Offset int64
	Data   []byte // a slice of the scanned buffer
}

// Corruption is a run of bytes Scan skipped: from Offset, Bytes long,
// and why the first of them was no valid record.
type Corruption struct {
	Offset int64
	Bytes  int64
	Reason string
}

func (c Corruption) Error() string {
	return fmt.Sprintf("byte %d: %s; %d bytes skipped to the next valid record", c.Offset, c.Reason, c.Bytes)
}

// Scan splits the TFRecord stream b into its valid records. Where a record
// fails a check (its length CRC, an implausible length, its data CRC) Scan
// does not stop: it resynchronises on the next offset whose length CRC and
// data CRC both verify, and reports the bytes in between as a Corruption,
// so one bad record costs that record, not the rest of the file.
//
// rest is the offset where an incomplete record starts (a writer
// mid-append, or a file cut short), len(b) when nothing is left over; the
// caller reads on from there when the file grows, or reports the tail.
func Scan(b []byte) (recs []Record, bad []Corruption, rest int64) {
	off := 0
	for off < len(b) {
		n, reason := recordAt(b, off)
		switch {
		case n > 0:
			recs = append(recs, Record{Offset: int64(off), Data: b[off+12 : off+n-4]})
			off += n
			continue
		case reason == "":
			return recs, bad, int64(off) // incomplete: wait for more
		}
		next, complete := resync(b, off+1)
		bad = append(bad, Corruption{Offset: int64(off), Bytes: int64(next - off), Reason: reason})
		off = next
		if !complete {
			return recs, bad, int64(off)
		}
	}
	return recs, bad, int64(off)
}

// recordAt checks the record at off: its total size when valid; 0 and ""
// when it runs past the end of b (incomplete); 0 and the reason when it is
// corrupt.
func recordAt(b []byte, off int) (n int, reason string) {
	if len(b)-off < 12 {
		return 0, ""
	}
	hdr := b[off : off+12]
	if got, want := binary.LittleEndian.Uint32(hdr[8:]), maskedCRC(hdr[:8]); got != want {
		return 0, fmt.Sprintf("length CRC %08x, want %08x", got, want)
	}
	length := binary.LittleEndian.Uint64(hdr[:8])
	if length > MaxRecordBytes {
		return 0, fmt.Sprintf("implausible length %d", length)
	}
	total := int(length) + RecordOverhead
	if len(b)-off < total {
		return 0, ""
	}
	data := b[off+12 : off+12+int(length)]
	if got, want := binary.LittleEndian.Uint32(b[off+total-4:]), maskedCRC(data); got != want {
		return 0, fmt.Sprintf("data CRC %08x, want %08x", got, want)
	}
	return total, ""
}

// resync returns the first offset at or after from where a record starts
// whose length CRC verifies and whose data CRC verifies (complete) or
// which runs past the end of b (incomplete: the caller waits there). With
// none, it returns the offset after which fewer than a header's bytes
// remain (incomplete: a header may still be being written there).
func resync(b []byte, from int) (next int, complete bool) {
	for p := from; p+12 <= len(b); p++ {
		n, reason := recordAt(b, p)
		if n > 0 {
			return p, true
		}
		if reason == "" {
			return p, false
		}
	}
	return max(from, len(b)-11), false
}
