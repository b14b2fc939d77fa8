package tfevents

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// marshalScalarsRef is Marshal's scalar encoding as it was before
// appendScalar: each Summary.Value encoded into its own slice first.
func marshalScalarsRef(scalars []Scalar) []byte {
	var sum []byte
	for _, s := range scalars {
		var v []byte
		v = protowire.AppendTag(v, 1, protowire.BytesType)
		v = protowire.AppendString(v, s.Tag)
		v = protowire.AppendTag(v, 2, protowire.Fixed32Type)
		v = protowire.AppendFixed32(v, math.Float32bits(s.Value))
		sum = protowire.AppendTag(sum, 1, protowire.BytesType)
		sum = protowire.AppendBytes(sum, v)
	}
	return sum
}

// TestMarshalScalarsSameBytes holds Marshal's scalars to the reference
// encoding byte for byte: tags of every length around the varint
// boundaries (127/128 bytes), empty tags, non-finite and negative values,
// events with and without histograms.
func TestMarshalScalarsSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lens := []int{0, 1, 5, 40, 118, 119, 120, 121, 122, 126, 127, 128, 129, 300, 16500}
	vals := []float32{0, -0, 1, -2.5, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, math.SmallestNonzeroFloat32}
	for i := 0; i < 200; i++ {
		e := Event{WallTime: rng.Float64() * 2e9, Step: int64(i)}
		for j := 0; j < i%40; j++ {
			e.Scalars = append(e.Scalars, Scalar{Tag: strings.Repeat(fmt.Sprint(j%10), lens[rng.IntN(len(lens))]), Value: vals[rng.IntN(len(vals))]})
		}
		if i%3 == 0 {
			e.Histos = append(e.Histos, Histogram(fmt.Sprintf("h%d", i), []float64{1, 2, 3, float64(i)}, 4))
		}
		got := Marshal(e)
		want := Marshal(Event{WallTime: e.WallTime, Step: e.Step, Histos: e.Histos})
		if len(e.Scalars) > 0 { // rebuild the summary field with the reference scalars in front of the histograms
			ref := marshalScalarsRef(e.Scalars)
			var hs []byte
			if len(e.Histos) > 0 {
				full := Marshal(Event{Histos: e.Histos})
				_, _, n := protowire.ConsumeField(full) // wall_time
				num, _, m := protowire.ConsumeTag(full[n:])
				if num != 5 {
					t.Fatalf("event %d: field %d, want the summary", i, num)
				}
				hs, _ = protowire.ConsumeBytes(full[n+m:])
			}
			want = Marshal(Event{WallTime: e.WallTime, Step: e.Step})
			want = protowire.AppendTag(want, 5, protowire.BytesType)
			want = protowire.AppendBytes(want, append(ref, hs...))
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("event %d (%d scalars, %d histograms): %d bytes, want %d", i, len(e.Scalars), len(e.Histos), len(got), len(want))
		}
		back, err := Unmarshal(got)
		if err != nil || len(back.Scalars) != len(e.Scalars) {
			t.Fatalf("event %d: read back %d scalars, err %v", i, len(back.Scalars), err)
		}
	}
}

// TestMarshalScalarAllocs: a few allocations for the summary and the
// event whatever the number of scalars (154 before: one more per scalar).
func TestMarshalScalarAllocs(t *testing.T) {
	e := Event{WallTime: 1, Step: 3}
	for j := 0; j < 150; j++ {
		e.Scalars = append(e.Scalars, Scalar{Tag: fmt.Sprintf("metric_%d/layer%d", j, j%4), Value: float32(j)})
	}
	if n := testing.AllocsPerRun(20, func() { Marshal(e) }); n > 6 {
		t.Errorf("Marshal of 150 scalars: %.0f allocations, want at most 6", n)
	}
}
