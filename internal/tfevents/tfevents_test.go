package tfevents

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMaskedCRC32C(t *testing.T) {
	// CRC-32C check value of "123456789" is 0xE3069283 (RFC 3720 / iSCSI).
	c := uint32(0xE3069283)
	want := ((c >> 15) | (c << 17)) + 0xa282ead8
	if got := maskedCRC([]byte("123456789")); got != want {
		t.Fatalf("masked crc %08x, want %08x", got, want)
	}
}

// TestEventBytes checks the encoder against bytes assembled by hand from the
// proto and TFRecord specs.
func TestEventBytes(t *testing.T) {
	e := Event{WallTime: 1.5, Step: 3, Scalars: []Scalar{{"loss", 2.0}}}
	got := Marshal(e)
	want := []byte{
		0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, // field 1 fixed64: 1.5
		0x10, 0x03, // field 2 varint: 3
		0x2a, 0x0d, // field 5 (summary), 13 bytes
		0x0a, 0x0b, // Summary.value, 11 bytes
		0x0a, 0x04, 'l', 'o', 's', 's', // Value.tag
		0x15, 0, 0, 0, 0x40, // Value.simple_value fixed32: 2.0
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("event bytes\n got %s\nwant %s", hex.EncodeToString(got), hex.EncodeToString(want))
	}
	rec := AppendRecord(nil, got)
	if len(rec) != RecordOverhead+len(got) {
		t.Fatalf("record length %d", len(rec))
	}
	if binary.LittleEndian.Uint64(rec) != uint64(len(got)) {
		t.Fatal("length field")
	}
	if binary.LittleEndian.Uint32(rec[8:]) != maskedCRC(rec[:8]) || binary.LittleEndian.Uint32(rec[12+len(got):]) != maskedCRC(got) {
		t.Fatal("crc fields")
	}
	// file_version event
	fv := Marshal(Event{WallTime: 0, FileVersion: FileVersion})
	wantFV := append([]byte{0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x1a, 13}, "brain.Event:2"...)
	if !bytes.Equal(fv, wantFV) {
		t.Fatalf("file_version bytes %x", fv)
	}
}

func equalF(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWriterRoundTrip writes a file with Create/Write and reads it back
// with ReadRecords/Unmarshal; corruption and truncation are caught.
func TestWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, 1700000000, 1700000000.25)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(w.Path()), FilePrefix+"1700000000.") {
		t.Errorf("path %s", w.Path())
	}
	ev := Event{WallTime: 1700000001.5, Step: 7, Scalars: []Scalar{{"a", 1}, {"b", -2.5}},
		Histos: []Histo{{Tag: "h", Min: 0.1, Max: 1.9, Num: 7, Sum: 4, Sq: 6, BucketLimit: []float64{1, 2}, BucketCount: []float64{3, 4}},
			Histogram("v/by_variant", []float64{10, 20}, 16)}}
	if err := w.Write(ev); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(w.Path())
	recs, err := ReadRecords(bytes.NewReader(b))
	if err != nil || len(recs) != 2 {
		t.Fatalf("records %d err %v", len(recs), err)
	}
	e0, _ := Unmarshal(recs[0])
	if e0.FileVersion != FileVersion || e0.WallTime != 1700000000.25 {
		t.Errorf("first event %+v", e0)
	}
	e, err := Unmarshal(recs[1])
	if err != nil {
		t.Fatal(err)
	}
	if e.Step != 7 || e.WallTime != 1700000001.5 || len(e.Scalars) != 2 || e.Scalars[1] != (Scalar{"b", -2.5}) {
		t.Fatalf("event %+v", e)
	}
	if len(e.Histos) != 2 || e.Histos[0].Tag != "h" || e.Histos[0].Num != 7 ||
		!equalF(e.Histos[0].BucketLimit, []float64{1, 2}) || !equalF(e.Histos[0].BucketCount, []float64{3, 4}) {
		t.Errorf("histos %+v", e.Histos)
	}
	if h := e.Histos[1]; h.Num != 2 || h.Min != 10 || h.Max != 20 || len(h.BucketLimit) != 16 || h.BucketCount[0] != 1 || h.BucketCount[15] != 1 {
		t.Errorf("variant histo %+v", h)
	}
	// Re-encoding the decoded event gives the same bytes.
	if re := Marshal(e); !bytes.Equal(re, recs[1]) {
		t.Errorf("re-encoded event differs")
	}
	// Corruption is caught and located.
	bad := append([]byte(nil), b...)
	bad[len(bad)-10] ^= 0xff
	if _, err := ReadRecords(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "data CRC") {
		t.Errorf("corruption not detected: %v", err)
	}
	if _, err := ReadRecords(bytes.NewReader(b[:len(b)-3])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncation: %v", err)
	}
}

// TestCreateNeverTruncates: a second file in the same second gets a
// numbered name.
func TestCreateNeverTruncates(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		w, err := Create(dir, 42, 42)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, FilePrefix+"*"))
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
}

func TestHistogramConstant(t *testing.T) {
	h := Histogram("c", []float64{3, 3, 3}, 16)
	if h.Num != 3 || !equalF(h.BucketLimit, []float64{3}) || !equalF(h.BucketCount, []float64{3}) {
		t.Errorf("constant histogram %+v", h)
	}
}

// TestTensorScalars decodes TF2 scalar summaries (tf.summary.scalar, Keras'
// TensorBoard callback): the value is a one-element TensorProto in
// Summary.Value.tensor (field 8), not simple_value. The bytes are assembled
// by hand from the proto layout in the package comment.
func TestTensorScalars(t *testing.T) {
	// plugin_data { plugin_name: "scalars" } inside SummaryMetadata (Value field 9).
	meta := []byte{0x4a, 0x0b, 0x0a, 0x09, 0x0a, 0x07, 's', 'c', 'a', 'l', 'a', 'r', 's'}
	tests := []struct {
		name   string
		tensor []byte // TensorProto bytes
		want   float32
		ok     bool
	}{
		{"float tensor_content, scalar shape", []byte{0x08, 0x01, 0x12, 0x00, 0x22, 0x04, 0x00, 0x00, 0x20, 0x40}, 2.5, true},
		{"double tensor_content", []byte{0x08, 0x02, 0x22, 0x08, 0, 0, 0, 0, 0, 0, 0x0c, 0x40}, 3.5, true},
		{"packed double_val", []byte{0x08, 0x02, 0x32, 0x08, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 1, true},
		{"unpacked float_val", []byte{0x08, 0x01, 0x2d, 0x00, 0x00, 0x80, 0x3f}, 1, true},
		{"half tensor_content", []byte{0x08, 0x13, 0x22, 0x02, 0x00, 0x3c}, 1, true},
		{"bfloat16 tensor_content", []byte{0x08, 0x0e, 0x22, 0x02, 0x20, 0x40}, 2.5, true},
		{"int64_val packed", []byte{0x08, 0x09, 0x52, 0x01, 0x07}, 7, true},
		{"shape [1] is still one element", []byte{0x08, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x01, 0x22, 0x04, 0x00, 0x00, 0x20, 0x40}, 2.5, true},
		{"shape [2] is not a scalar", []byte{0x08, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x22, 0x08, 0, 0, 0x20, 0x40, 0, 0, 0x20, 0x40}, 0, false},
		{"string tensor is not a scalar", []byte{0x08, 0x07, 0x42, 0x02, 'h', 'i'}, 0, false},
	}
	for _, tc := range tests {
		value := append([]byte{0x0a, 0x0a}, "epoch_loss"...)
		value = append(value, meta...)
		value = append(value, 0x42, byte(len(tc.tensor)))
		value = append(value, tc.tensor...)
		summary := append([]byte{0x0a, byte(len(value))}, value...)
		event := []byte{0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 0x05, 0x2a, byte(len(summary))}
		event = append(event, summary...)
		e, err := Unmarshal(event)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if e.Step != 5 || e.WallTime != 1.5 {
			t.Errorf("%s: step %d wall %v", tc.name, e.Step, e.WallTime)
		}
		if !tc.ok {
			if len(e.Scalars) != 0 {
				t.Errorf("%s: got scalars %+v, want none", tc.name, e.Scalars)
			}
			continue
		}
		if len(e.Scalars) != 1 || e.Scalars[0].Tag != "epoch_loss" || e.Scalars[0].Value != tc.want {
			t.Errorf("%s: got %+v, want epoch_loss=%v", tc.name, e.Scalars, tc.want)
		}
	}
	// A truncated tensor is an error, not a silent zero.
	bad := []byte{0x2a, 0x08, 0x0a, 0x06, 0x42, 0x04, 0x08, 0x01, 0x22, 0x04}
	if _, err := Unmarshal(bad); err == nil {
		t.Error("truncated tensor: no error")
	}
}
