package safetensors

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// withHeader frames a safetensors buffer from a JSON header and data.
func withHeader(h string, data []byte) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(len(h)))
	return append(append(b[:], h...), data...)
}

// TestDecodeShapeOverflow: a crafted shape whose element count × dtype
// size overflows is refused (before: [2^32, 2^32] F32 wrapped to 0 bytes
// and decoded as a tensor of 2^64 elements over no data).
func TestDecodeShapeOverflow(t *testing.T) {
	for _, c := range []struct {
		name, header string
		data         []byte
	}{
		{"wraps to zero", `{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil},
		{"wraps to the data size", `{"w":{"dtype":"U8","shape":[4294967297,4294967297],"data_offsets":[0,1]}}`, []byte{0}},
		{"elements fit, bytes do not", `{"w":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}}`, nil},
		{"more than the data", `{"w":{"dtype":"F32","shape":[1000000],"data_offsets":[0,4]}}`, make([]byte, 4)},
	} {
		if _, err := Decode(withHeader(c.header, c.data)); err == nil || !strings.Contains(err.Error(), "overflows 64 bits") && !strings.Contains(err.Error(), "data_offsets give") {
			t.Errorf("%s: %v; want a refusal", c.name, err)
		}
	}
}

// FuzzDecode: any buffer decodes or is refused without panicking, and a
// decoded file's tensors hold exactly the bytes their shapes need.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := Encode(&buf, []Tensor{FromFloat32("w", []int{2, 2}, []float32{1, 2, 3, 4}), FromFloat32("b", []int{2}, []float32{5, 6})}, map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(withHeader(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil))
	f.Add(withHeader(`{"w":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, []byte{1, 2}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b)
		if err != nil {
			return
		}
		for _, tn := range file.Tensors {
			n, ok := byteSize(tn.Shape, tn.DType.Size())
			if !ok || n != int64(len(tn.Data)) {
				t.Fatalf("tensor %q: shape %v %s with %d bytes", tn.Name, tn.Shape, tn.DType, len(tn.Data))
			}
			switch tn.DType {
			case F32, F16, BF16, F64:
				if _, err := tn.Float32(); err != nil {
					t.Fatalf("tensor %q: %v", tn.Name, err)
				}
			}
		}
	})
}
