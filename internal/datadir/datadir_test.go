package datadir

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type inner struct {
	Path  string            `toml:"path"`
	Paths []string          `toml:"paths"`
	Named map[string]string `toml:"named"`
}

type outer struct {
	Train string  `toml:"train"`
	Plain string  `toml:"plain"`
	Sets  []inner `toml:"sets"`
	Ptr   *inner  `toml:"ptr"`
	skip  string
}

// TestResolve expands every placeholder reachable from the struct and
// leaves the original's slices, maps and pointees as they were.
func TestResolve(t *testing.T) {
	root := t.TempDir()
	t.Setenv(Env, root)
	orig := outer{
		Train: Placeholder + "/a.txt",
		Plain: "/abs/b.txt",
		Sets:  []inner{{Path: Placeholder + "/c", Paths: []string{"x", Placeholder + "/d"}, Named: map[string]string{"k": Placeholder + "/e"}}},
		Ptr:   &inner{Path: Placeholder},
		skip:  Placeholder,
	}
	got := orig
	if err := Resolve(&got); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(root)
	for _, c := range []struct{ got, want string }{
		{got.Train, abs + "/a.txt"},
		{got.Plain, "/abs/b.txt"},
		{got.Sets[0].Path, abs + "/c"},
		{got.Sets[0].Paths[1], abs + "/d"},
		{got.Sets[0].Named["k"], abs + "/e"},
		{got.Ptr.Path, abs},
		{got.skip, Placeholder}, // unexported: not a config field
		// the original is untouched
		{orig.Sets[0].Path, Placeholder + "/c"},
		{orig.Sets[0].Paths[1], Placeholder + "/d"},
		{orig.Sets[0].Named["k"], Placeholder + "/e"},
		{orig.Ptr.Path, Placeholder},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if !slices.Equal(got.Sets[0].Paths[:1], []string{"x"}) {
		t.Errorf("paths[0] = %q", got.Sets[0].Paths[0])
	}
}

// TestResolveNamesKey: a missing data directory is an error naming the
// first key that needed it; a struct without placeholders never looks.
func TestResolveNamesKey(t *testing.T) {
	t.Setenv(Env, filepath.Join(t.TempDir(), "missing"))
	v := outer{Plain: "/x", Sets: []inner{{Path: "/y"}, {Paths: []string{Placeholder + "/z"}}}}
	err := Resolve(&v)
	if err == nil || !strings.Contains(err.Error(), "sets[1].paths[0]: expand") || !strings.Contains(err.Error(), Env) {
		t.Fatalf("err = %v, want one naming sets[1].paths[0] and $%s", err, Env)
	}
	clean := outer{Plain: "/x"}
	if err := Resolve(&clean); err != nil {
		t.Fatalf("no placeholder, yet: %v", err)
	}
	if err := Resolve(clean); err == nil {
		t.Fatal("a non-pointer was accepted")
	}
}
