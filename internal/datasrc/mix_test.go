package datasrc

import (
	"reflect"
	"testing"
)

type plainSource struct{ Source }

type mixSource struct {
	Source
	w     []float64
	entry int
	ramp  float64
}

func (m mixSource) MixWeights(int) []float64               { return m.w }
func (m mixSource) MixStage(int) (entry int, ramp float64) { return m.entry, m.ramp }

func TestMixAt(t *testing.T) {
	names := []string{"web", "wiki"}
	for _, c := range []struct {
		name string
		d    Source
		want Mix
	}{
		{"no mixture", plainSource{}, Mix{}},
		{"weights and stage", mixSource{w: []float64{0.25, 0.75}, entry: 2, ramp: 0.5}, Mix{Target: map[string]float64{"web": 0.25, "wiki": 0.75}, Entry: 2, Ramp: 0.5}},
		{"weights of other sources", mixSource{w: []float64{1}, entry: 1}, Mix{Entry: 1}},
	} {
		if got := MixAt(c.d, names, 7); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: MixAt = %+v, want %+v", c.name, got, c.want)
		}
	}
}
