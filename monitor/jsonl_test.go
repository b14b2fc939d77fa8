package monitor

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJSONLSink(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	j, err := OpenJSONLSink(p)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 500_000_000)
	for _, s := range []Sample{
		{Step: 1, Tokens: 2048, Time: at, Values: map[string]float64{"train_loss_raw": 3.5, "grad_global_norm": 1.25}},
		{Step: 2, Values: map[string]float64{"train_loss_raw": math.NaN(), "max_attn_logit": math.Inf(1)}},
	} {
		if err := j.WriteSample(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"step":1,"tokens_seen":2048,"unix_time":1700000000.5,"grad_global_norm":1.25,"train_loss_raw":3.5}` + "\n" +
		`{"step":2,"max_attn_logit":"Infinity","train_loss_raw":"NaN"}` + "\n"
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	if _, err := OpenJSONLSink(filepath.Join(t.TempDir(), "missing", "m.jsonl")); err == nil || !strings.Contains(err.Error(), "metrics jsonl") {
		t.Fatalf("unwritable path: %v", err)
	}
}
