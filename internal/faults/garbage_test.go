package faults

import (
	"encoding/base64"
	"slices"
	"testing"
)

// bytesEncode is a byte-level tokenizer's encoder.
func bytesEncode(s string) []int32 {
	out := make([]int32, len(s))
	for i := range len(s) {
		out[i] = int32(s[i])
	}
	return out
}

// TestBase64Rows: base64_data_* marks its data steps only; each row is a
// window of T+1 tokens of base64 text (targets the inputs shifted by
// one), a pure function of (seed, data step, row) whatever the split into
// micro-batches; another step or seed gives other text.
func TestBase64Rows(t *testing.T) {
	d := Default()
	d.Base64DataAtStep, d.Base64DataSteps = 7, 2
	for ds, want := range map[int]bool{0: false, 6: false, 7: true, 8: true, 9: false} {
		if d.Base64(ds) != want {
			t.Errorf("Base64(%d) = %v", ds, !want)
		}
	}
	if off := Default(); off.Base64(1) {
		t.Error("the default config injects base64")
	}
	const T, B = 16, 4
	in, tg := make([]int32, B*T), make([]int32, B*T)
	Base64Rows(1, 7, 0, T, bytesEncode, in, tg)
	for r := range B {
		row := append(append([]int32(nil), in[r*T:(r+1)*T]...), tg[(r+1)*T-1])
		if !slices.Equal(row[1:], tg[r*T:(r+1)*T]) {
			t.Fatalf("row %d: targets are not the inputs shifted by one", r)
		}
		text := make([]byte, len(row))
		for i, x := range row {
			text[i] = byte(x)
		}
		for _, c := range text {
			if !slices.Contains([]byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"), c) {
				t.Fatalf("row %d holds %q, not base64", r, text)
			}
		}
		if _, err := base64.StdEncoding.DecodeString(string(text[:16])); err != nil {
			t.Fatalf("row %d: %q does not decode: %v", r, text, err)
		}
	}
	// rows 2-3 filled alone (a second micro-batch) are the same
	in2, tg2 := make([]int32, 2*T), make([]int32, 2*T)
	Base64Rows(1, 7, 2, T, bytesEncode, in2, tg2)
	if !slices.Equal(in2, in[2*T:]) || !slices.Equal(tg2, tg[2*T:]) {
		t.Error("rows 2-3 differ when filled as their own micro-batch")
	}
	other := make([]int32, B*T)
	Base64Rows(1, 8, 0, T, bytesEncode, other, make([]int32, B*T))
	if slices.Equal(other, in) {
		t.Error("data steps 7 and 8 got the same text")
	}
}

// TestBase64RowsShortEncoder: an encoder that gives fewer tokens than a
// row needs still fills the row (its tokens repeated) and terminates.
func TestBase64RowsShortEncoder(t *testing.T) {
	in, tg := make([]int32, 8), make([]int32, 8)
	Base64Rows(1, 1, 0, 8, func(string) []int32 { return []int32{5, 6} }, in, tg)
	if !slices.Equal(in, []int32{5, 6, 5, 6, 5, 6, 5, 6}) {
		t.Fatalf("inputs %v", in)
	}
	Base64Rows(1, 1, 0, 8, func(string) []int32 { return nil }, in, tg)
	if !slices.Equal(in, make([]int32, 8)) {
		t.Fatalf("inputs of an empty encoder %v", in)
	}
}
