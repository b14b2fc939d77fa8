package monitor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// writeIncident writes the SEV0 evidence bundle under
// <RunDir>/incidents/<time>-<rule>/ and returns its path relative to the
// run directory. The bundle holds alert.json, RUNBOOK.md, metrics.jsonl
// (the last incident_steps samples), batches.jsonl (their batch ids and
// sources, when given), config.toml and manifest.json.
// WriteIncident writes an evidence bundle for alert a (as a SEV0 gets one)
// and returns its directory relative to the run directory (empty without
// a run directory): the rescue ladder calls it when it stops on a SEV1.
func (m *Monitor) WriteIncident(a Alert) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a.Time.IsZero() {
		a.Time = time.Now()
	}
	return m.writeIncident(&a)
}

func (m *Monitor) writeIncident(a *Alert) (string, error) {
	if m.opts.RunDir == "" {
		return "", nil
	}
	name := fmt.Sprintf("%s-%s", a.Time.UTC().Format("20060102T150405Z"), a.Rule)
	rel := filepath.Join(rundir.IncidentsName, name)
	dir := filepath.Join(m.opts.RunDir, rel)
	for i := 2; ; i++ {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		rel = filepath.Join(rundir.IncidentsName, fmt.Sprintf("%s-%d", name, i))
		dir = filepath.Join(m.opts.RunDir, rel)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	write := func(name string, data []byte) error {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		return nil
	}
	ab, _ := json.MarshalIndent(a, "", "  ")
	if err := write("alert.json", append(ab, '\n')); err != nil {
		return "", err
	}
	var rb strings.Builder
	if r, ok := RunbookFor(a.Rule); ok {
		fmt.Fprintf(&rb, "# %s — %s (%s)\n\n%s\n\n- Meaning: %s\n- Capture: %s\n- Contain: %s\n- Verify: %s\n",
			a.Rule, r.Title, r.Severity, a.Message, r.Meaning, r.Capture, r.Contain, r.Verify)
	}
	if err := write("RUNBOOK.md", []byte(rb.String())); err != nil {
		return "", err
	}
	var mb []byte
	var bb strings.Builder
	for _, s := range m.recent {
		mb = runlog.AppendSampleLine(mb, s.Step, s.Tokens, unix(s.Time), s.Values)
		if s.Batch != nil {
			b, _ := json.Marshal(map[string]any{"step": s.Step, "ids": s.Batch.IDs, "sources": s.Batch.Sources, "doc_ids": s.Batch.DocIDs})
			bb.Write(b)
			bb.WriteByte('\n')
		}
	}
	if err := write(rundir.MetricsName, mb); err != nil {
		return "", err
	}
	if err := write("batches.jsonl", []byte(bb.String())); err != nil {
		return "", err
	}
	cfg := m.opts.ConfigTOML
	if cfg == nil {
		cfg, _ = os.ReadFile(rundir.Of(m.opts.RunDir).Config())
	}
	if cfg != nil {
		if err := write(rundir.ConfigName, cfg); err != nil {
			return "", err
		}
	}
	if man, err := os.ReadFile(rundir.Of(m.opts.RunDir).Manifest()); err == nil {
		if err := write(rundir.ManifestName, man); err != nil {
			return "", err
		}
	}
	return rel, nil
}
