package safetensors

import (
	"bytes"
	"math"
	"testing"
)

// TestFromFloat32BF16: round to nearest, ties to even, NaN and ±Inf kept,
// overflow to ±Inf; and a file written with BF16 tensors reads back as the
// rounded values, bit for bit (a bf16 value survives the round trip).
func TestFromFloat32BF16(t *testing.T) {
	f := math.Float32frombits
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{f(0x3f808000), 0x3f80}, // 1 + 2⁻⁸: a tie, to the even 1
		{f(0x3f818000), 0x3f82}, // 1 + 3·2⁻⁸: a tie, to the even 1 + 2⁻⁶
		{f(0x3f808001), 0x3f81}, // just above the tie: up
		{f(0x3f807fff), 0x3f80}, // just below: down
		{-2.5, 0xc020},          // exact
		{f(0x7f7f8000), 0x7f80}, // above the largest bf16's half-ulp: +Inf
		{f(0x7f7f7fff), 0x7f7f}, // the largest bf16
		{float32(math.Inf(-1)), 0xff80},
		{0, 0}, {f(0x80000000), 0x8000}, // ±0
		{f(0x00000001), 0x0000}, // the smallest subnormal rounds to 0
	} {
		if got := FromFloat32BF16("x", []int{1}, []float32{tc.in}); got.Data[0] != byte(tc.want) || got.Data[1] != byte(tc.want>>8) || got.DType != BF16 {
			t.Errorf("bf16(%#x) = %s %x, want %#04x", math.Float32bits(tc.in), got.DType, got.Data, tc.want)
		}
	}
	if nan := FromFloat32BF16("x", []int{1}, []float32{float32(math.NaN())}); !math.IsNaN(float64(bf16ToF32(nan.Data))) {
		t.Errorf("NaN → %x", nan.Data)
	}
	v := []float32{0.1, -3.14159, 65504, 1e-30, 7}
	ts := []Tensor{FromFloat32BF16("a.weight", []int{5}, v)}
	var buf bytes.Buffer
	if err := Encode(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	file, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	x, _ := file.Get("a.weight")
	got, err := x.Float32()
	if err != nil || x.DType != BF16 {
		t.Fatalf("%s %v", x.DType, err)
	}
	for i := range v {
		want := f(uint32(bf16Bits(v[i])) << 16)
		if got[i] != want || math.Abs(float64(got[i]-v[i])) > math.Abs(float64(v[i]))/256 {
			t.Errorf("[%d] %g → %g, want %g (within 2⁻⁸)", i, v[i], got[i], want)
		}
		if again := FromFloat32BF16("b", []int{1}, got[i:i+1]); !bytes.Equal(again.Data, x.Data[2*i:2*i+2]) {
			t.Errorf("[%d] a bf16 value changed when written again", i)
		}
	}
}

func bf16ToF32(b []byte) float32 { return math.Float32frombits(uint32(b[0])<<16 | uint32(b[1])<<24) }
