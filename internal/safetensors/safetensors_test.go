package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	a := FromFloat32("model.embed_tokens.weight", []int{2, 3}, []float32{1, -2, 3.5, 0, 1e-30, -7})
	b := FromFloat32("model.norm.weight", []int{3}, []float32{1, 1, 1})
	c := Tensor{Name: "ids", DType: I32, Shape: []int{2}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0}}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := WriteFile(path, []Tensor{a, b, c}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	n := binary.LittleEndian.Uint64(raw)
	if (8+n)%8 != 0 {
		t.Errorf("data not 8-byte aligned: header %d", n)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Names(), ","); got != "model.embed_tokens.weight,model.norm.weight,ids" {
		t.Errorf("names %s", got)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata)
	}
	g, ok := f.Get("model.embed_tokens.weight")
	if !ok {
		t.Fatal("missing tensor")
	}
	v, err := g.Float32()
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, -2, 3.5, 0, 1e-30, -7}
	for i := range want {
		if v[i] != want[i] {
			t.Errorf("v[%d]=%g want %g", i, v[i], want[i])
		}
	}
	if _, err := c.Float32(); err == nil {
		t.Error("I32 decoded as float")
	}
}

func TestHalfTypes(t *testing.T) {
	// 1.0 in F16 is 0x3c00, -2.0 is 0xc000; in BF16 1.0 is 0x3f80.
	h := Tensor{Name: "h", DType: F16, Shape: []int{2}, Data: []byte{0x00, 0x3c, 0x00, 0xc0}}
	bf := Tensor{Name: "b", DType: BF16, Shape: []int{1}, Data: []byte{0x80, 0x3f}}
	hv, err := h.Float32()
	if err != nil || hv[0] != 1 || hv[1] != -2 {
		t.Errorf("f16 %v %v", hv, err)
	}
	bv, err := bf.Float32()
	if err != nil || bv[0] != 1 {
		t.Errorf("bf16 %v %v", bv, err)
	}
}

func TestRejectsCorrupt(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, []Tensor{FromFloat32("w", []int{4}, []float32{1, 2, 3, 4})}, nil); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	hdrLen := int(binary.LittleEndian.Uint64(good))
	header := string(good[8 : 8+hdrLen])
	mk := func(h string, data []byte) []byte {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(len(h)))
		return append(append(b[:], h...), data...)
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"truncated data", good[:len(good)-3], "outside"},
		{"truncated header", good[:12], "truncated"},
		{"huge header", append([]byte{0, 0, 0, 0, 0, 0, 0, 1}, good[8:]...), "exceeds"},
		{"bad json", mk("{not json", nil), "header JSON"},
		{"bad dtype", mk(`{"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}}`, []byte{0}), "unknown dtype"},
		{"shape mismatch", mk(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), "needs 8 bytes"},
		{"gap", mk(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), "gap or overlap"},
		{"trailing", mk(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 2)), "trailing"},
		{"unknown field", mk(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}`, make([]byte, 1)), "unknown field"},
	}
	if !strings.Contains(header, `"w"`) {
		t.Fatalf("header %s", header)
	}
	for _, c := range cases {
		_, err := Decode(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	os.WriteFile(path, good[:len(good)-1], 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error does not name the file: %v", err)
	}
}

func TestEncodeRejects(t *testing.T) {
	for _, ts := range [][]Tensor{
		{{Name: "a", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}},
		{{Name: "", DType: F32, Shape: []int{}, Data: make([]byte, 4)}},
		{FromFloat32("a", []int{1}, []float32{1}), FromFloat32("a", []int{1}, []float32{1})},
	} {
		if err := Encode(&bytes.Buffer{}, ts, nil); err == nil {
			t.Errorf("accepted %v", ts[0].Name)
		}
	}
}
