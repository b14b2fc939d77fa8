package monitor

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/tfevents"
)

// TestKeepRecentRing: the incident window holds the last IncidentSteps
// samples oldest first, each its own copy (the caller changing its map
// afterwards changes nothing kept), also once the maps of evicted samples
// are reused, and a sample with fewer values than the one it evicts keeps
// none of the old ones; once full, keeping a sample allocates nothing.
func TestKeepRecentRing(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m := &Monitor{cfg: Config{IncidentSteps: n}}
			for step := int64(1); step <= int64(3*n+2); step++ {
				v := map[string]float64{"loss": float64(step)}
				if step%2 == 0 {
					v["even_only"] = float64(-step)
				}
				m.keepRecent(Sample{Step: step, Values: v})
				v["loss"] = -1 // the caller's map, not the kept copy
				if len(m.recent) != int(min(step, int64(n))) {
					t.Fatalf("step %d: %d kept, want %d", step, len(m.recent), min(step, int64(n)))
				}
				for i, s := range m.recent {
					want := step - int64(len(m.recent)-1-i)
					if s.Step != want || s.Values["loss"] != float64(want) {
						t.Fatalf("step %d: kept[%d] = step %d loss %v, want step %d", step, i, s.Step, s.Values["loss"], want)
					}
					if _, ok := s.Values["even_only"]; ok != (want%2 == 0) || len(s.Values) != 1+int(1-want%2) {
						t.Fatalf("step %d: kept[%d] (step %d) values %v", step, i, want, s.Values)
					}
				}
			}
			s := Sample{Step: 99, Values: map[string]float64{"loss": 1, "even_only": 2}}
			if a := testing.AllocsPerRun(50, func() { m.keepRecent(s) }); a != 0 {
				t.Errorf("keepRecent with a full window: %v allocations, want 0", a)
			}
		})
	}
}

// tfRecords reads back the records of the one event file in dir after the
// file_version record.
func tfRecords(t *testing.T, dir string) [][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("%s: %d event files", dir, len(files))
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	recs, err := tfevents.ReadRecords(bytes.NewReader(b))
	if err != nil || len(recs) < 1 {
		t.Fatalf("%s: %d records, %v", files[0], len(recs), err)
	}
	return recs[1:]
}

// TestTFEventsReusedScratchSameBytes: a writer that reuses its scratch
// (names, scalars, per-layer variants) from sample to sample writes each
// event byte for byte as a fresh writer does, also when a per-layer metric
// or a value appears, turns non-finite or disappears between samples.
func TestTFEventsReusedScratchSameBytes(t *testing.T) {
	now := time.Unix(1795800000, 0)
	var samples []Sample
	for i := 0; i < 12; i++ {
		v := map[string]float64{"loss": 3 - float64(i)/10, "step_time": 0.02}
		for l := 0; l < 1+i%3; l++ {
			v[fmt.Sprintf("residual_rms/layer%d", l)] = float64(l + i)
		}
		if i%4 == 1 {
			v["attn_entropy/layer0/head0"], v["attn_entropy/layer1/head0"] = 1, 2
		}
		if i%5 == 2 {
			v["loss"] = math.NaN()
		}
		samples = append(samples, Sample{Step: int64(i + 1), Time: now.Add(time.Duration(i) * time.Second), Values: v})
	}
	reused := t.TempDir()
	w, err := NewTFEventsWriter(reused, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		if err := w.WriteSample(&samples[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := tfRecords(t, reused)
	if len(got) != len(samples) {
		t.Fatalf("%d events, want %d", len(got), len(samples))
	}
	for i := range samples {
		fresh := t.TempDir()
		f, err := NewTFEventsWriter(fresh, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteSample(&samples[i]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if want := tfRecords(t, fresh); len(want) != 1 || !bytes.Equal(got[i], want[0]) {
			t.Fatalf("sample %d: the reused writer's event (%d bytes) differs from a fresh writer's", i, len(got[i]))
		}
	}
}
