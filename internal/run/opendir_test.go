package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// TestOpenDirRitual: the output rule comes before the options are built,
// a refused Preflight or a failed build writes nothing (no directory, no
// lock), and a directory that is not kestrel's is refused untouched.
func TestOpenDirRitual(t *testing.T) {
	root := t.TempDir()
	foreign := filepath.Join(root, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name, dir string
		build     func() (train.Options, error)
		wantErr   error // nil: any error
		built     bool
	}{
		{"not a run directory", foreign, nil, nil, false},
		{"options fail", filepath.Join(root, "a"), func() (train.Options, error) { return train.Options{}, boom }, boom, true},
		{"preflight refuses", filepath.Join(root, "b"), func() (train.Options, error) { return train.Options{Dir: filepath.Join(root, "b")}, nil }, nil, true},
	} {
		built := false
		st := &attemptState{}
		_, err := st.openDir(tc.dir, false, func() (train.Options, error) {
			built = true
			if tc.build == nil {
				return train.Options{}, nil
			}
			return tc.build()
		})
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.name)
		case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.wantErr)
		case built != tc.built:
			t.Errorf("%s: options built %v, want %v", tc.name, built, tc.built)
		case st.lk != nil:
			t.Errorf("%s: lock taken", tc.name)
		}
		if tc.dir != foreign {
			if _, err := os.Stat(tc.dir); !os.IsNotExist(err) {
				t.Errorf("%s: %s exists after a refused opening (%v)", tc.name, tc.dir, err)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the foreign directory was touched: %q %v", b, err)
	}
}

// closingSource is a data source that records its Close; the embedded
// nil interface panics on any other use, which the ritual never makes.
type closingSource struct {
	datasrc.Source
	closed bool
}

func (c *closingSource) Close() error { c.closed = true; return nil }

// TestOpeningOrder: Opening runs check, options, preflight, lock in that
// order, stops at the first refusal, names a preflight refusal by its
// context, and closes the options' data source when it refuses after
// opening it (kestrel branch opens its directory through the same
// ritual).
func TestOpeningOrder(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		checkErr  error
		wantSteps string
		wantClose bool
	}{
		{"check refuses", boom, "check", false},
		{"preflight refuses", nil, "check options", true},
	} {
		var steps []string
		src := &closingSource{}
		_, err := Opening{
			Check: func() error { steps = append(steps, "check"); return tc.checkErr },
			Options: func() (train.Options, error) {
				steps = append(steps, "options")
				return train.Options{Data: src}, nil // no model: the preflight refuses
			},
			PreflightContext: "branch: the branch's config",
			Lock:             func(train.Options) error { steps = append(steps, "lock"); return nil },
		}.Open()
		if got := strings.Join(steps, " "); got != tc.wantSteps {
			t.Errorf("%s: steps %q, want %q", tc.name, got, tc.wantSteps)
		}
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if tc.checkErr == nil && !strings.HasPrefix(err.Error(), "branch: the branch's config: ") {
			t.Errorf("%s: %v, want the preflight's context first", tc.name, err)
		}
		if src.closed != tc.wantClose {
			t.Errorf("%s: data closed %v, want %v", tc.name, src.closed, tc.wantClose)
		}
	}
}
