package prepare

import (
	"reflect"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/kestrel-lm/kestrel/internal/data/clean"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/dedup"
	"github.com/kestrel-lm/kestrel/internal/tomlstrict"
)

// TestStageConfigsTOML round-trips the defaults of every stage's config
// section (the [prepare] overlays clean, decontam and dedup own) through
// TOML with strict decoding, so every field has a toml tag and survives a
// config file.
func TestStageConfigsTOML(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(t *testing.T)
	}{
		{"clean", roundTrip(clean.DefaultConfig("web"))},
		{"decontam", roundTrip(decontam.DefaultConfig())},
		{"dedup", roundTrip(dedup.DefaultConfig())},
	} {
		t.Run(tc.name, tc.check)
	}
}

// roundTrip returns a test that marshals want, decodes it strictly into a
// zero T and wants the two equal.
func roundTrip[T any](want T) func(t *testing.T) {
	return func(t *testing.T) {
		b, err := toml.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got T
		if err := tomlstrict.Decode(b, "defaults", &got); err != nil {
			t.Fatalf("decode:\n%s\n%v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip differs:\n%s", b)
		}
	}
}
