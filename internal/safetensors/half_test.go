package safetensors

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestF16Exhaustive decodes every F16 bit pattern and compares it with the
// IEEE 754 binary16 definition evaluated in float64 (exact for all of them).
func TestF16Exhaustive(t *testing.T) {
	data := make([]byte, 2*65536)
	for i := 0; i < 65536; i++ {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(i))
	}
	v, err := Tensor{Name: "all", DType: F16, Shape: []int{65536}, Data: data}.Float32()
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range v {
		s, e, f := i>>15, (i>>10)&0x1f, i&0x3ff
		var want float64
		switch {
		case e == 0x1f && f != 0:
			if !math.IsNaN(float64(got)) {
				t.Fatalf("f16 %#04x: got %g, want NaN", i, got)
			}
			continue
		case e == 0x1f:
			want = math.Inf(1)
		case e == 0:
			want = math.Ldexp(float64(f), -24)
		default:
			want = math.Ldexp(float64(1024+f), e-25)
		}
		if s == 1 {
			want = -want
		}
		if math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("f16 %#04x: got %g (%#08x), want %g", i, got, math.Float32bits(got), want)
		}
	}
}

func TestBF16Cases(t *testing.T) {
	cases := []struct {
		bits uint16
		want float32
	}{
		{0x3f80, 1}, {0xc000, -2}, {0x0000, 0}, {0x7f80, float32(math.Inf(1))},
		{0xff80, float32(math.Inf(-1))}, {0x3e80, 0.25}, {0x4049, 3.140625}, {0x0001, math.Float32frombits(0x00010000)},
	}
	for _, c := range cases {
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], c.bits)
		v, err := Tensor{Name: "x", DType: BF16, Shape: []int{1}, Data: b[:]}.Float32()
		if err != nil || math.Float32bits(v[0]) != math.Float32bits(c.want) {
			t.Errorf("bf16 %#04x: got %v %v, want %g", c.bits, v, err, c.want)
		}
	}
}

func TestNewFile(t *testing.T) {
	a := FromFloat32("a", []int{2}, []float32{1, 2})
	f, err := NewFile([]Tensor{a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := f.Get("a"); !ok || got.Name != "a" {
		t.Errorf("Get(a) = %v %v", got, ok)
	}
	for name, ts := range map[string][]Tensor{
		"duplicate": {a, a},
		"size":      {{Name: "b", DType: F32, Shape: []int{3}, Data: make([]byte, 8)}},
		"dtype":     {{Name: "c", DType: "X", Shape: []int{1}, Data: make([]byte, 4)}},
		"name":      {{Name: "", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}},
	} {
		if _, err := NewFile(ts, nil); err == nil {
			t.Errorf("%s: NewFile accepted it", name)
		}
	}
}
