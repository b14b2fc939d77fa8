package safetensors

import (
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
