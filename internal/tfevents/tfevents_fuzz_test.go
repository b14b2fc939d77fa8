package tfevents

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
)

// FuzzUnmarshal: any Event proto decodes or is refused without panicking
// (an error names the proto field or tag), and a decoded event survives a
// Marshal → Unmarshal round trip: the second encoding equals the first.
func FuzzUnmarshal(f *testing.F) {
	f.Add(Marshal(Event{WallTime: 1.5, Step: 7, FileVersion: "brain.Event:2"}))
	f.Add(Marshal(Event{WallTime: 2, Step: 3, Scalars: []Scalar{{"loss", 2.5}, {"lr", 1e-3}}}))
	f.Add(Marshal(Event{Step: 9, Histos: []Histo{Histogram("w", []float64{1, 2, 3, 4}, 3)}}))
	f.Add([]byte{0x2a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'x'})
	f.Add([]byte{0x08})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Unmarshal(b)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "proto") && !strings.Contains(msg, "packed") && !strings.Contains(msg, "tensor") {
				t.Fatalf("error %q names no field", msg)
			}
			return
		}
		first := Marshal(e)
		again, err := Unmarshal(first)
		if err != nil {
			t.Fatalf("re-decoding our own encoding: %v", err)
		}
		if second := Marshal(again); !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the event:\n%x\n%x", first, second)
		}
	})
}

// FuzzReadRecords: the streaming reader agrees with Scan: every record it
// returns is one Scan finds at the same place, and a stream it reads
// without error is one Scan reads whole, without corruption.
func FuzzReadRecords(f *testing.F) {
	b, offs := stream(3)
	f.Add(b)
	f.Add(b[:len(b)-2])
	bad := bytes.Clone(b)
	bad[offs[1]+13] ^= 1
	f.Add(bad)
	f.Add(AppendRecord(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ReadRecords(bytes.NewReader(b))
		recs, corrupt, rest := Scan(b)
		if len(got) > len(recs) {
			t.Fatalf("ReadRecords found %d records, Scan %d", len(got), len(recs))
		}
		for i := range got {
			if !bytes.Equal(got[i], recs[i].Data) {
				t.Fatalf("record %d differs: %q vs %q", i, got[i], recs[i].Data)
			}
		}
		if err == nil && (len(got) != len(recs) || len(corrupt) > 0 || rest != int64(len(b))) {
			t.Fatalf("ReadRecords read %d records cleanly; Scan: %d records, %v, rest %d of %d", len(got), len(recs), corrupt, rest, len(b))
		}
		if err != nil && !strings.Contains(err.Error(), "record at byte ") {
			t.Fatalf("error %q does not name the byte offset", err)
		}
	})
}

// TestReadRecordsTruncatedHuge: a header announcing a 1 GiB record over a
// file that ends right after it costs the bytes present, not the bytes
// announced (before: ReadRecords allocated the announced 1 GiB first).
func TestReadRecordsTruncatedHuge(t *testing.T) {
	hdr := AppendRecord(nil, nil)[:12]
	binary.LittleEndian.PutUint64(hdr, MaxRecordBytes)
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC(hdr[:8]))
	in := append(AppendRecord(nil, []byte("ok")), hdr...)
	in = append(in, "short"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	recs, err := ReadRecords(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	if len(recs) != 1 || err == nil || !strings.Contains(err.Error(), "record at byte 18: data") {
		t.Errorf("records %q, error %v; want the first record and a truncation at byte 18", recs, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("%d bytes allocated for a %d-byte stream", n, len(in))
	}
}
