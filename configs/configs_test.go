package configs

import (
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
)

// Every shipped config must load under strict decoding: a key renamed in the
// code must be renamed here too.
func TestShippedConfigsLoad(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no shipped configs embedded")
	}
	for _, n := range names {
		b, err := Read(n)
		if err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		if err := config.Decode(b, "configs/"+n, &cfg); err != nil {
			t.Errorf("%v", err)
		}
	}
}
