package safetensors

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecode: any buffer decodes or is refused without panicking (an error
// about one tensor names it); a decoded file's tensors hold exactly the
// bytes their shapes need, in one deterministic order; and the file
// written back with Encode decodes to the same tensors and metadata
// (decode → encode → decode).
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := Encode(&buf, []Tensor{FromFloat32("w", []int{2, 2}, []float32{1, 2, 3, 4}), FromFloat32("b", []int{2}, []float32{5, 6})}, map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(withHeader(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil))
	f.Add(withHeader(`{"w":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, []byte{1, 2}))
	f.Add(withHeader(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[0,3],"data_offsets":[0,0]}}`, nil))
	f.Add(withHeader(`{"":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}`, []byte{7}))
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
		if again, err := Decode(b); err != nil || !sameTensors(file, again) {
			t.Fatalf("a second decode differs (%v)", err)
		}
		var out bytes.Buffer
		if err := Encode(&out, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("a decoded file does not encode: %v", err)
		}
		back, err := Decode(out.Bytes())
		if err != nil || !sameTensors(file, back) {
			t.Fatalf("written back: %v", err)
		}
	})
}

// sameTensors reports whether two files hold the same tensors in the same
// order and the same metadata.
func sameTensors(a, b *File) bool {
	if len(a.Tensors) != len(b.Tensors) || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || w != v {
			return false
		}
	}
	for i, x := range a.Tensors {
		y := b.Tensors[i]
		if x.Name != y.Name || x.DType != y.DType || len(x.Shape) != len(y.Shape) || !bytes.Equal(x.Data, y.Data) {
			return false
		}
		for k := range x.Shape {
			if x.Shape[k] != y.Shape[k] {
				return false
			}
		}
	}
	return true
}

// TestDecodeDeterministic: tensors sharing an offset (empty ones) come out
// in one order, by name, on every decode (before: in map order, so two
// decodes of one file could list them differently); a tensor without a
// name, which Encode cannot write, is refused.
func TestDecodeDeterministic(t *testing.T) {
	b := withHeader(`{"c":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"d":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{9})
	for range 20 {
		f, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join([]string{f.Tensors[0].Name, f.Tensors[1].Name, f.Tensors[2].Name, f.Tensors[3].Name}, ","); got != "a,b,c,d" {
			t.Fatalf("order %s, want a,b,c,d", got)
		}
	}
	if _, err := Decode(withHeader(`{"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1})); err == nil || !strings.Contains(err.Error(), "empty tensor name") {
		t.Errorf("a tensor without a name: %v", err)
	}
}
