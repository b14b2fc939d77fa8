package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/tomlstrict"
)

// alertCounts counts each run's alerts by rule and severity after the
// shared step, up to the step at which it reached the common tokens
// (lastA, lastB). A run without alerts.jsonl has none; bad lines are
// skipped as the reader does.
func alertCounts(dirA, dirB string, shared, lastA, lastB int) ([]AlertCount, error) {
	counts := map[[2]string]*AlertCount{}
	for i, dir := range []string{dirA, dirB} {
		last := []int{lastA, lastB}[i]
		as, err := runlog.ReadAlerts(rundir.Of(dir).Alerts())
		if err != nil && runlog.SkippedLines(err) == 0 && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("compare: %w", err)
		}
		for _, a := range as {
			if int(a.Step) <= shared || int(a.Step) > last {
				continue
			}
			k := [2]string{a.Rule, string(a.Severity)}
			c := counts[k]
			if c == nil {
				c = &AlertCount{Rule: a.Rule, Severity: string(a.Severity)}
				counts[k] = c
			}
			if i == 0 {
				c.A++
			} else {
				c.B++
			}
		}
	}
	out := make([]AlertCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Severity != out[j].Severity {
			return out[i].Severity < out[j].Severity
		}
		return out[i].Rule < out[j].Rule
	})
	return out, nil
}

// interventionRows lists the interventions only one run has (by id and
// content: a branch carries its parent's).
func interventionRows(dirA, dirB string) ([]InterventionRow, error) {
	ia, err := runlog.ReadInterventions(dirA)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	ib, err := runlog.ReadInterventions(dirB)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	out := []InterventionRow{}
	only := func(run string, xs, ys []runlog.Intervention) {
		have := map[string]bool{}
		for _, y := range ys {
			have[summary(y)] = true
		}
		for _, x := range xs {
			if !have[summary(x)] {
				out = append(out, InterventionRow{Run: run, ID: x.ID, Summary: summary(x)})
			}
		}
	}
	only("A", ia, ib)
	only("B", ib, ia)
	return out, nil
}

// summary is one line about an intervention.
func summary(iv runlog.Intervention) string {
	s := fmt.Sprintf("%s: %s from step %d to %d", iv.ID, iv.Kind, iv.FromStep, iv.ToStep)
	if iv.SkipSteps > 0 {
		s += fmt.Sprintf(", skip %d:%d", iv.SkipFrom, iv.SkipTo)
	}
	if iv.LRScale != 0 && iv.LRScale != 1 {
		s += fmt.Sprintf(", lr ×%g for %d steps", iv.LRScale, iv.LRSteps)
	}
	for _, k := range sortedKeys(iv.Set) {
		s += fmt.Sprintf(", %s=%s", k, iv.Set[k])
	}
	if iv.By != "" {
		s += " (" + iv.By + ")"
	}
	return s
}

// configDiff compares the runs' config.toml leaf by leaf (arrays as a
// whole), each resolved by resolve when it is set.
func configDiff(dirA, dirB string, resolve func(dir string) ([]byte, error)) ([]FieldDiff, error) {
	fa, err := configLeaves(dirA, resolve)
	if err != nil {
		return nil, err
	}
	fb, err := configLeaves(dirB, resolve)
	if err != nil {
		return nil, err
	}
	return diffMaps(fa, fb), nil
}

// configLeaves flattens a run's config to section.key → TOML value: the
// TOML resolve returns, else dir/config.toml as written (none: no leaves;
// a regular file, at most tomlstrict.MaxBytes).
func configLeaves(dir string, resolve func(dir string) ([]byte, error)) (map[string]string, error) {
	path := rundir.Of(dir).Config()
	var b []byte
	var err error
	if resolve != nil {
		b, err = resolve(dir)
	} else {
		b, err = fileguard.ReadFile(path, tomlstrict.MaxBytes)
	}
	if errors.Is(err, fs.ErrNotExist) { // another trainer's run (kestrel watch): no config to compare
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("compare: %s: %w", path, err)
	}
	out := map[string]string{}
	flatten("", m, out)
	return out, nil
}

func flatten(prefix string, m map[string]any, out map[string]string) {
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(p, sub, out)
			continue
		}
		out[p] = literal(v)
	}
}

// literal writes a decoded TOML value back as text.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = literal(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := []string{}
		for _, k := range sortedKeys(x) {
			parts = append(parts, k+" = "+literal(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// diffMaps lists the keys whose values differ, sorted, those only one
// side has last (marked Absent, "(absent)" on the other side).
func diffMaps(a, b map[string]string) []FieldDiff {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	out, absent := []FieldDiff{}, []FieldDiff{}
	for _, k := range sortedKeys(keys) {
		va, oka := a[k]
		vb, okb := b[k]
		switch {
		case oka && okb && va == vb:
		case !oka:
			absent = append(absent, FieldDiff{Field: k, A: "(absent)", B: vb, Absent: "A"})
		case !okb:
			absent = append(absent, FieldDiff{Field: k, A: va, B: "(absent)", Absent: "B"})
		default:
			out = append(out, FieldDiff{Field: k, A: va, B: vb})
		}
	}
	return append(out, absent...)
}

// manifestDiff compares the manifests' build, machine and input fields
// (a run without manifest.json compares as empty).
func manifestDiff(dirA, dirB string) ([]FieldDiff, error) {
	fa, err := manifestFields(dirA)
	if err != nil {
		return nil, err
	}
	fb, err := manifestFields(dirB)
	if err != nil {
		return nil, err
	}
	ds := diffMaps(fa, fb)
	for i := range ds { // a manifest field one run lacks is a difference like any (parent: B is a branch)
		if ds[i].Absent != "" {
			ds[i].A, ds[i].B = strings.Replace(ds[i].A, "(absent)", "(none)", 1), strings.Replace(ds[i].B, "(absent)", "(none)", 1)
			ds[i].Absent = ""
		}
	}
	return ds, nil
}

func manifestFields(dir string) (map[string]string, error) {
	m, err := runlog.ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	out := map[string]string{
		"git_sha": m.GitSHA, "git_dirty": strconv.FormatBool(m.GitDirty), "go_version": m.GoVersion, "modules_hash": m.ModulesHash,
		"os_arch": m.OSArch, "cpu": m.CPU, "gemm": m.Kernel, "config_hash": m.ConfigHash, "seed": strconv.FormatUint(m.Seed, 10),
		"dataset_hash": m.DatasetHash, "tokenizer": m.Tokenizer, "tokenizer_hash": m.TokenizerHash, "quarantine_hash": m.QuarantineHash,
		"probe_hash": m.ProbeHash, "num_params": strconv.Itoa(m.NumParams),
	}
	for k, v := range m.EvalHashes {
		out["eval_hashes."+k] = v
	}
	if m.Parent != nil {
		out["parent"] = fmt.Sprintf("%s step %d", m.Parent.Run, m.Parent.Step)
	}
	for k, v := range out {
		if v == "" {
			delete(out, k)
		}
	}
	return out, nil
}
