package deptest

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// floors is the floor table of docs/architecture.md §0, as data: a package
// imports only packages on lower floors. A package added to the module
// needs a row here and a place in §0 (TestFloors fails until it has one).
var floors = map[string]int{
	// Floor 1 — leaves.
	"internal/datasrc": 1, "internal/sysmem": 1, "internal/atomicfile": 1, "internal/runlock": 1,
	"internal/fileguard": 1, "internal/hostcheck": 1, "internal/tomlstrict": 1, "internal/batchsched": 1,
	"internal/buildinfo": 1, "internal/datadir": 1, "internal/data/document": 1, "internal/data/datareport": 1,
	"internal/data/ngram": 1, "internal/data/dedup": 1, "internal/kernels": 1, "internal/comm": 1,
	"internal/safetensors": 1, "internal/tfevents": 1, "configs": 1, "internal/deptest": 1,
	"internal/dashboard/browsertest": 1, "internal/samples": 1, "internal/lossfit": 1, "internal/rundir": 1, "internal/evalcfg": 1,
	// Floor 2.
	"internal/kernels/ops": 2, "internal/runlog": 2, "tokenizer": 2, "internal/peak": 2, "internal/model": 2,
	"internal/optim": 2, "internal/hf": 2, "internal/data/corpus": 2, "internal/data/clean": 2,
	"internal/data/decontam": 2,
	// Floor 3.
	"internal/checkpoint": 3, "monitor": 3, "internal/train": 3, "internal/rewind": 3, "internal/faults": 3,
	"internal/data/shards": 3, "internal/stepclock": 3, "internal/compare": 3, "internal/stepvitals": 3,
	"internal/replicas": 3, "internal/memplan": 3,
	// Floor 4.
	"internal/stepbench": 4, "internal/data/loader": 4, "internal/data/texts": 4, "internal/data/prepare": 4,
	"internal/dashboard": 4, "internal/report": 4, "internal/watchsrc": 4, "internal/generate": 4,
	// Floor 5.
	"internal/config": 5, "internal/openrun": 5, "internal/data/loader/shufflereport": 5, "internal/tokbench": 5,
	// Floor 6.
	"internal/eval": 6, "internal/hfrun": 6, "internal/run": 6, "internal/testrun": 6,
	// Floor 7.
	"internal/replay": 7, "internal/modelbench": 7, "internal/drill": 7, "internal/branch": 7,
	"internal/sweep": 7,
	// Floor 8: the command's printers and flag glue (cmd/kestrel/internal).
	"cmd/kestrel/internal/show": 8, "cmd/kestrel/internal/flagx": 8,
	// Floor 9.
	"cmd/kestrel": 9,
}

// sideways are the same-floor imports §0 names; any other import on one
// floor fails like an upward one.
var sideways = map[Edge]bool{
	{"internal/model", "internal/kernels/ops"}: true, // the ops sit beside the model they serve
	{"internal/hf", "internal/model"}:          true, // model.Config ↔ config.json
	{"internal/train", "internal/checkpoint"}:  true, // resume
	{"internal/train", "internal/rewind"}:      true, // the interventions' plan
	{"internal/train", "internal/faults"}:      true, // the [debug] injections
	{"internal/train", "internal/stepclock"}:   true, // the step clock
	{"internal/train", "internal/stepvitals"}:  true, // the per-step vitals
	{"internal/train", "internal/replicas"}:    true, // micro-batches side by side
	{"internal/train", "internal/memplan"}:     true, // the start-up memory estimate
	{"internal/rewind", "internal/checkpoint"}: true, // rewind to a checkpoint
	{"internal/run", "internal/eval"}:          true, // the in-loop benchmarks of [eval]
}

// nevers are dependencies that must not exist, directly or not.
var nevers = []Never{
	{"internal/eval", "internal/train"},
	{"internal/generate", "internal/train"},
	{"internal/hfrun", "internal/train"},
	{"internal/eval", "internal/config"},
	{"internal/generate", "internal/config"},
	{"internal/hfrun", "internal/config"},
	{"internal/data/...", "internal/runlog"},
	{"internal/model", "internal/data/..."},
	{"internal/train", "monitor"},
	{"monitor", "internal/train"},
}

// knownNevers are today's breaches of nevers. The list may only shrink:
// a breach not on it fails TestNevers, and so does an entry that no longer
// happens.
var knownNevers = map[Edge]string{
	{"internal/data/prepare", "internal/runlog"}: "TODO(issue 37): prepare hashes files with runlog.HashFile; the hash belongs on a lower floor",
}

// moduleGraph reads the import graph of this module.
func moduleGraph(t *testing.T) Graph {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, module, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(root, module)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) < 40 || g["cmd/kestrel"] == nil {
		t.Fatalf("read %d packages from %s (%s); want the whole module with cmd/kestrel", len(g), root, module)
	}
	return g
}

// TestFloors: every package of the module sits on its floor of §0 and
// imports only packages below it (or the same-floor imports §0 names).
func TestFloors(t *testing.T) {
	for _, msg := range CheckFloors(moduleGraph(t), floors, sideways) {
		t.Error(msg)
	}
}

// TestNevers: no forbidden dependency exists beyond the known exceptions,
// each of which still happens; the exceptions are printed.
func TestNevers(t *testing.T) {
	violations, excused, stale := CheckNevers(moduleGraph(t), nevers, knownNevers)
	for _, msg := range violations {
		t.Error(msg)
	}
	for _, msg := range stale {
		t.Error(msg)
	}
	for _, msg := range excused {
		t.Log("known exception: " + msg)
	}
}

// TestFloorsCatchUpwardImport: the module's own graph with one upward
// import added (runlog importing the monitor) and one same-floor import
// not in the table (runlog importing the tokenizer) fails, naming both
// packages and both floors.
func TestFloorsCatchUpwardImport(t *testing.T) {
	g := maps.Clone(moduleGraph(t))
	before := CheckFloors(g, floors, sideways)
	g["internal/runlog"] = append(slices.Clone(g["internal/runlog"]), "monitor", "tokenizer")
	got := CheckFloors(g, floors, sideways)
	want := append(before,
		"internal/runlog (floor 2) imports monitor (floor 3): an upward import",
		"internal/runlog (floor 2) imports tokenizer (floor 2): a same-floor import the table does not allow")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// dataDirResolvers are the packages that may expand ${KESTREL_DATA}, each
// where a raw form is loaded (issue 37: resolved once, at load); every
// other package reads resolved paths.
var dataDirResolvers = map[string]string{
	"internal/config":            "config.Resolve: a config's paths (config.toml and config_hash keep the raw form)",
	"internal/openrun":           "Config.Resolved: a finished run's config.toml, which openrun reads without config",
	"internal/checkpoint":        "State.DatasetDir: the dataset a checkpoint's state.json names",
	"internal/data/prepare":      "resolved: the [prepare] section, whose raw rendering the dataset fingerprint hashes",
	"cmd/kestrel/internal/flagx": "DataPath(s): paths given on the command line",
}

// TestDataDirResolvedAtLoad: ${KESTREL_DATA} is expanded only where a raw
// form is loaded (dataDirResolvers), not at each use.
func TestDataDirResolvedAtLoad(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, module, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	uses, err := Uses(root, module, "internal/datadir", []string{"Expand", "Resolve", "ResolveAt", "Placeholder"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range slices.Sorted(maps.Keys(uses)) {
		if _, ok := dataDirResolvers[pkg]; !ok {
			t.Errorf("%s expands ${KESTREL_DATA} (%s): take the path resolved (config.Resolve, openrun's Config.Resolved, checkpoint.State.DatasetDir, flagx.DataPath)", pkg, strings.Join(uses[pkg], ", "))
		}
	}
	for pkg, why := range dataDirResolvers {
		if len(uses[pkg]) == 0 {
			t.Errorf("%s is listed as a resolver (%s) but expands nothing: remove it from dataDirResolvers", pkg, why)
		}
	}
}

// TestArchitectureNamesEveryPackage ties the floor table to §0 of
// docs/architecture.md: every package of the table has its paragraph
// there (named in backquotes by its path), and every internal or cmd
// package path §0 names is in the table (cmd/kestrel/internal, the
// printers' folder, aside).
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, "## 0."), strings.Index(doc, "## 1.")
	if start < 0 || end < start {
		t.Fatalf("docs/architecture.md: no §0 before §1")
	}
	sec := doc[start:end]
	for _, pkg := range slices.Sorted(maps.Keys(floors)) {
		if !strings.Contains(sec, "`"+pkg+"`") {
			t.Errorf("%s (floor %d) has no paragraph in docs/architecture.md §0", pkg, floors[pkg])
		}
	}
	for _, m := range regexp.MustCompile("`((?:internal|cmd)/[a-z0-9_/]+)`").FindAllStringSubmatch(sec, -1) {
		if _, ok := floors[m[1]]; !ok && m[1] != "cmd/kestrel/internal" {
			t.Errorf("docs/architecture.md §0 names %s, which is not in the floor table", m[1])
		}
	}
}
