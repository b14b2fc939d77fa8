package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
)

// SamplesFile is the run directory's record of the text generated at each
// checkpoint ([samples]): one Generation per line, appended.
const SamplesFile = rundir.SamplesName

// MaxSamplesBytes bounds the samples.jsonl a reader loads (a run of 1,000
// checkpoints × 6 generations of a few hundred bytes is ~2 MiB).
const MaxSamplesBytes = 64 << 20

// Generation is one text generated from a checkpoint's weights, a line of
// samples.jsonl. Text is the continuation alone (the prompt is Prompt);
// bytes that are not valid UTF-8 (a byte-level model can cut a character
// in two) are written as U+FFFD by the JSON encoder.
type Generation struct {
	Step       int    `json:"step"`        // the checkpoint's step
	TokensSeen int64  `json:"tokens_seen"` // the checkpoint's tokens_seen
	Checkpoint string `json:"checkpoint"`  // its directory, relative to the run directory
	Weights    string `json:"weights"`     // "raw" or "ema"
	Prompt     string `json:"prompt"`      // "" = the start of a document
	// Mode is "greedy" (temperature 0) or "sampled" (Temperature, TopK,
	// Seed).
	Mode        string  `json:"mode"`
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k,omitempty"`
	Seed        uint64  `json:"seed"`
	Tokens      int     `json:"tokens"` // tokens generated
	Text        string  `json:"text"`
	Seconds     float64 `json:"seconds"`   // time to generate it
	UnixTime    float64 `json:"unix_time"` // when it was generated
}

// Generation modes.
const (
	ModeGreedy  = "greedy"
	ModeSampled = "sampled"
)

// Validate checks the fields a reader depends on.
func (g *Generation) Validate() error {
	switch {
	case g.Step < 0:
		return fmt.Errorf("generation: step %d is negative", g.Step)
	case g.Mode != ModeGreedy && g.Mode != ModeSampled:
		return fmt.Errorf("generation at step %d: mode %q (want %s or %s)", g.Step, g.Mode, ModeGreedy, ModeSampled)
	case g.Tokens < 0:
		return fmt.Errorf("generation at step %d: tokens %d is negative", g.Step, g.Tokens)
	}
	return nil
}

// AppendGenerations appends gs to dir/samples.jsonl in one write and
// fsyncs it: a checkpoint's generations are on disk together.
func AppendGenerations(dir string, gs []Generation) error {
	if len(gs) == 0 {
		return nil
	}
	var b []byte
	for i := range gs {
		if err := gs[i].Validate(); err != nil {
			return fmt.Errorf("samples: %w", err)
		}
		line, err := json.Marshal(&gs[i])
		if err != nil {
			return fmt.Errorf("samples: %w", err)
		}
		b = append(append(b, line...), '\n')
	}
	path := filepath.Join(dir, SamplesFile)
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("samples: %s is not a regular file", path)
	}
	if err := appendLine(path, b[:len(b)-1]); err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	return nil
}

// ReadGenerations reads dir/samples.jsonl in order; a missing file holds
// none. A line that is not a generation (a torn last line, a hand edit) is
// skipped and counted in skipped, and the first one is described in bad
// (file:line: why), so one bad line never hides the others. err is for a
// file that cannot be read (not a regular file, over MaxSamplesBytes).
func ReadGenerations(dir string) (gs []Generation, skipped int, bad string, err error) {
	path := filepath.Join(dir, SamplesFile)
	data, err := fileguard.ReadFile(path, MaxSamplesBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, "", nil
	}
	if err != nil {
		return nil, 0, "", fmt.Errorf("samples: %w", err)
	}
	gs, skipped, bad = ParseGenerations(data, path)
	return gs, skipped, bad, nil
}

// ParseGenerations reads the lines of a samples.jsonl held in data (name
// names it): the good generations, how many lines were skipped, and the
// first bad one's place and reason.
func ParseGenerations(data []byte, name string) (gs []Generation, skipped int, bad string) {
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var g Generation
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&g)
		if err == nil {
			err = g.Validate()
		}
		if err != nil {
			if skipped == 0 {
				bad = fmt.Sprintf("%s:%d: %v", name, n+1, err)
			}
			skipped++
			continue
		}
		gs = append(gs, g)
	}
	return gs, skipped, bad
}

// SamplesArchiveName is the file, beside samples.jsonl, that holds the
// generations an intervention moved out: samples.archive-<id>.jsonl (as
// metrics.archive-<id>.jsonl holds its metrics lines).
func SamplesArchiveName(id string) string { return filepath.Base(rundir.Layout{}.SamplesArchive(id)) }

// TruncateGenerations keeps only the lines of dir/samples.jsonl whose
// "step" is at most step, as TruncateMetrics does for metrics.jsonl on a
// resume: with archiveID empty the later lines are dropped, else those
// generated before the unix time before (the rewind that abandoned them;
// later ones came after it and are dropped) are moved, byte for byte and
// in order, to SamplesArchiveName(archiveID), written and fsynced before
// samples.jsonl is replaced (an existing archive is appended to, never
// overwritten, and lines it already ends with — a crash between the two
// writes — are not appended twice). A torn last line is dropped either
// way; lines that do not parse are kept. It returns the number of lines
// removed from samples.jsonl.
func TruncateGenerations(dir string, step int, archiveID string, before float64) (removed int, err error) {
	path := filepath.Join(dir, SamplesFile)
	data, err := fileguard.ReadFile(path, MaxSamplesBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("samples: %w", err)
	}
	var keep, move bytes.Buffer
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if line[len(line)-1] != '\n' { // torn by a crash while appending
			removed++
			continue
		}
		var s struct {
			Step     *int    `json:"step"`
			UnixTime float64 `json:"unix_time"`
		}
		if json.Unmarshal(line, &s) == nil && s.Step != nil && *s.Step > step {
			removed++
			if archiveID != "" && s.UnixTime < before {
				move.Write(line)
			}
			continue
		}
		keep.Write(line)
	}
	if removed == 0 {
		return 0, nil
	}
	if archiveID != "" && move.Len() > 0 {
		apath := filepath.Join(dir, SamplesArchiveName(archiveID))
		old, err := fileguard.ReadFile(apath, MaxSamplesBytes)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("samples archive: %w", err)
		}
		if !bytes.HasSuffix(old, move.Bytes()) { // else a crash came after the archive was written
			if err := atomicfile.WriteFile(apath, append(old, move.Bytes()...)); err != nil {
				return 0, fmt.Errorf("samples archive: %w", err)
			}
		}
	}
	if err := atomicfile.WriteFile(path, keep.Bytes()); err != nil {
		return removed, fmt.Errorf("samples: %w", err)
	}
	return removed, nil
}
