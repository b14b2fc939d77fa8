package run

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
