package tfevents

import (
	"bytes"
	"fmt"
	"testing"
)

// stream frames n records "record i" and returns it with their offsets.
func stream(n int) ([]byte, []int) {
	var b []byte
	var offs []int
	for i := range n {
		offs = append(offs, len(b))
		b = AppendRecord(b, fmt.Appendf(nil, "record %d", i))
	}
	return b, offs
}

// TestScanResync: a bad data CRC, a bad length, garbage between records
// and a torn tail each cost only the bytes they spoil: every other record
// is read (before: the read ended at the first bad record).
func TestScanResync(t *testing.T) {
	b, offs := stream(10)
	b[offs[3]+14] ^= 0xff // record 3's data
	b[offs[5]] ^= 0x01    // record 5's length
	garbage := []byte("not a record at all")
	b = append(b[:offs[8]], append(garbage, b[offs[8]:]...)...)
	full := len(b)
	b = append(b, AppendRecord(nil, []byte("torn"))[:10]...)
	recs, bad, rest := Scan(b)
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Data))
	}
	want := []string{"record 0", "record 1", "record 2", "record 4", "record 6", "record 7", "record 8", "record 9"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records %q, want %q", got, want)
	}
	if len(bad) != 3 || bad[0].Offset != int64(offs[3]) || bad[1].Offset != int64(offs[5]) || bad[2].Offset != int64(offs[8]) || bad[2].Bytes != int64(len(garbage)) {
		t.Errorf("corruptions %+v", bad)
	}
	if rest != int64(full) {
		t.Errorf("rest %d, want %d (the torn record's start)", rest, full)
	}
}

// TestScanTail: a stream that ends in garbage shorter than a header leaves
// it as the incomplete rest; a clean stream is consumed whole.
func TestScanTail(t *testing.T) {
	b, _ := stream(3)
	if recs, bad, rest := Scan(b); len(recs) != 3 || len(bad) != 0 || rest != int64(len(b)) {
		t.Errorf("clean: %d records, %v, rest %d of %d", len(recs), bad, rest, len(b))
	}
	junk := append(bytes.Clone(b), bytes.Repeat([]byte{0xee}, 40)...)
	recs, bad, rest := Scan(junk)
	if len(recs) != 3 || len(bad) != 1 || rest != int64(len(junk)-11) {
		t.Errorf("junk tail: %d records, %+v, rest %d of %d", len(recs), bad, rest, len(junk))
	}
}

// FuzzTFRecord: any bytes scan without panicking into records, corruptions
// and an incomplete rest that tile [0, len) in order, every record
// verifying.
func FuzzTFRecord(f *testing.F) {
	b, offs := stream(4)
	f.Add(b)
	bad := bytes.Clone(b)
	bad[offs[1]+13] ^= 1
	f.Add(bad)
	f.Add(b[:len(b)-3])
	f.Add([]byte("garbage"))
	f.Add(append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, make([]byte, 20)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, bad, rest := Scan(b)
		pos := int64(0)
		ri, bi := 0, 0
		for ri < len(recs) || bi < len(bad) {
			if ri < len(recs) && recs[ri].Offset == pos {
				n, reason := recordAt(b, int(pos))
				if n != len(recs[ri].Data)+RecordOverhead || reason != "" {
					t.Fatalf("record at %d does not verify", pos)
				}
				pos += int64(n)
				ri++
				continue
			}
			if bi < len(bad) && bad[bi].Offset == pos && bad[bi].Bytes > 0 {
				pos += bad[bi].Bytes
				bi++
				continue
			}
			t.Fatalf("gap or overlap at %d: records %v, bad %+v", pos, recs, bad)
		}
		if pos != rest || rest > int64(len(b)) {
			t.Fatalf("covered to %d, rest %d, len %d", pos, rest, len(b))
		}
	})
}
