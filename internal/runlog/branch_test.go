package runlog

import (
	"strings"
	"testing"
)

// TestParseBranch: a branch.json is read back as written, and a record a
// start cannot trust is refused naming the file and the field.
func TestParseBranch(t *testing.T) {
	dir := t.TempDir()
	want := &Parent{Run: "/runs/a", Checkpoint: "/runs/a/checkpoints/step-00000010", Step: 10, TokensSeen: 640, SumsSHA256: "ab", Set: []string{"optim.lr=2e-3"}, Steps: 5, UntilStep: 15, Created: "2026-01-01T00:00:00Z"}
	if err := WriteBranch(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBranch(dir)
	if err != nil || got.Run != want.Run || got.UntilStep != 15 || len(got.Set) != 1 || got.Set[0] != want.Set[0] || got.SumsSHA256 != "ab" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if p, err := ReadBranch(t.TempDir()); p != nil || err != nil {
		t.Errorf("a directory without branch.json: %+v, %v", p, err)
	}
	for _, tc := range []struct{ json, want string }{
		{`{`, "unexpected end"},
		{`{"step":1,"steps":1,"until_step":2}`, "run is empty"},
		{`{"run":"a","step":-1,"steps":1,"until_step":0}`, "step -1"},
		{`{"run":"a","step":1,"steps":0,"until_step":1}`, "steps 0"},
		{`{"run":"a","step":1,"steps":2,"until_step":4}`, "until_step 4"},
		{`{"run":"a","step":9223372036854775807,"steps":1,"until_step":-9223372036854775808}`, "until_step"},
		{`{"run":"a","step":"x"}`, "step"},
	} {
		_, err := ParseBranch([]byte(tc.json), "b/branch.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "b/branch.json") {
			t.Errorf("%s: %v, want an error naming b/branch.json and %q", tc.json, err, tc.want)
		}
	}
}

// FuzzParseBranch: any input either parses into a record whose until_step
// is step + steps with both in range, or is an error naming the file;
// never a panic.
func FuzzParseBranch(f *testing.F) {
	f.Add([]byte(`{"run":"/r","checkpoint":"/r/checkpoints/step-00000010","step":10,"tokens_seen":640,"sha256sums_sha256":"ab","set":["optim.lr=2e-3"],"steps":5,"until_step":15}`))
	f.Add([]byte(`{"run":"a","step":9223372036854775807,"steps":1,"until_step":-9223372036854775808}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseBranch(b, "f/branch.json")
		if err != nil {
			if !strings.Contains(err.Error(), "f/branch.json") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if p.Run == "" || p.Step < 0 || p.Steps <= 0 || p.UntilStep != p.Step+p.Steps || p.UntilStep < p.Step {
			t.Fatalf("accepted %+v", p)
		}
	})
}

// TestEachLine: complete lines in order, an over-long line skipped and
// counted, a last line without its newline left out.
func TestEachLine(t *testing.T) {
	long := strings.Repeat("x", maxLineBytes+10)
	in := "a\n" + long + "\nb\nhalf"
	var got []string
	n, err := EachLine(strings.NewReader(in), func(l []byte) { got = append(got, string(l)) })
	if err != nil || n != 1 || strings.Join(got, "|") != "a\n|b\n" {
		t.Errorf("lines %q, too long %d, err %v", got, n, err)
	}
}
