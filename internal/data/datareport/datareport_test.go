package datareport

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestMarshalLoad: report.json is indented JSON ending in a newline, keeps
// the field names other tools read, and Load gives back what was written.
func TestMarshalLoad(t *testing.T) {
	src := NewSourceReport("web")
	src.Stage(StageRead).Add(true, 10)
	src.Stage(StageRead).Add(false, 10)
	src.Kept = Count{Docs: 1, Bytes: 10}
	src.BytesPerDoc = PercentilesOf([]int32{30, 10, 20})
	r := &Report{Version: 1, Complete: true, Sources: []*SourceReport{src}, Kept: src.Kept,
		Rejects: map[string]int64{"clean/c4": 2, "exact_dedup/exact_duplicate": 2, "near_dedup/minhash": 5},
		Tokens:  &TokenReport{Mode: "train", TotalTokens: 7}}
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"{\n  \"version\": 1,\n  \"fingerprint\": \"\",\n  \"complete\": true,\n", `"stages": {`, `"p50": 20`, `"total_tokens": 7`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("report.json lacks %q:\n%s", want, b)
		}
	}
	if !strings.HasSuffix(string(b), "}\n") || strings.Contains(string(b), "up_to_date") {
		t.Fatalf("report.json ends %q or has up_to_date", b[len(b)-5:])
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, r)
	}
	if rules := got.RejectRules(); !reflect.DeepEqual(rules, []string{"near_dedup/minhash", "clean/c4", "exact_dedup/exact_duplicate"}) {
		t.Fatalf("RejectRules = %v", rules)
	}
	if _, err := Parse([]byte("{"), "x/report.json"); err == nil || !strings.Contains(err.Error(), "x/report.json") {
		t.Fatalf("Parse error %v, want one naming the file", err)
	}
}
