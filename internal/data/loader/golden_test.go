package loader

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/mixture_golden.json from the loader")

// goldenCases are multi-stage mixtures (with a batch-size change inside a
// stage and at a stage boundary) whose batches were recorded before
// data.stages[].ramp_steps existed: a config without ramps must keep
// giving them bit for bit.
func goldenCases() map[string]Config {
	out := map[string]Config{}
	for _, perm := range []string{PermFeistel, PermLCG} {
		for _, pack := range []string{PackConcat, PackBOS} {
			c := testConfig()
			c.Permutation, c.Packing, c.Prefetch = perm, pack, 0
			c.MixBlock = 48
			c.Sources = []SourceConfig{{Name: "src0", Weight: 5}, {Name: "src1", Weight: 3}, {Name: "src2", Weight: 2}}
			c.Stages = []Stage{
				{StartStep: 18, Weights: map[string]float64{"src1": 1, "src2": 3}},
				{StartStep: 31, Weights: map[string]float64{"src0": 2, "src1": 1, "src2": 1}},
				{StartStep: 44, Weights: map[string]float64{"src0": 1}},
			}
			out[perm+"/"+pack] = c
		}
	}
	return out
}

var goldenSched = batchsched.Schedule{{Start: 0, Batch: 8}, {Start: 12, Batch: 13}, {Start: 30, Batch: 6}}

// goldenDigest hashes the batches of steps [0, 60): tokens, targets,
// segment ids, sources, and each row's (source, sequence number, slot).
func goldenDigest(t *testing.T, cfg Config) string {
	t.Helper()
	ds := synthDataset(30000, 12000, 6000)
	l := mustNew(t, ds, cfg, Options{Schedule: goldenSched, Seed: 11, SeqLen: 12, ReportBase: 1})
	h := sha256.New()
	for s := 0; s < 60; s++ {
		b := fillStep(t, l, s, 5)
		for _, v := range [][]int32{b.in, b.tg, b.seg} {
			binary.Write(h, binary.LittleEndian, v)
		}
		info, err := l.BatchInfo(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range info.Rows {
			fmt.Fprintf(h, "%d %d %d %d %d;", i, b.src[i], r.SourceIndex, r.Seq, r.Slot)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestMixtureGolden: configs without ramps give the batches recorded
// before ramps existed (testdata/mixture_golden.json; -update rewrites it).
func TestMixtureGolden(t *testing.T) {
	path := filepath.Join("testdata", "mixture_golden.json")
	got := map[string]string{}
	for name, cfg := range goldenCases() {
		got[name] = goldenDigest(t, cfg)
	}
	if *updateGolden {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(want) != len(got) {
		t.Fatalf("%s has %d cases, the test %d", path, len(want), len(got))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: batches differ from the golden recorded before ramps (digest %s, want %s)", name, got[name], w)
		}
	}
}
