package decontam

import (
	"reflect"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/kestrel-lm/kestrel/internal/tomlstrict"
)

// TestConfigTOML round-trips the defaults through TOML with strict decoding,
// so every field has a toml tag and survives a config file.
func TestConfigTOML(t *testing.T) {
	want := DefaultConfig()
	b, err := toml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := tomlstrict.Decode(b, "defaults", &got); err != nil {
		t.Fatalf("decode:\n%s\n%v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip differs:\n%s", b)
	}
}
