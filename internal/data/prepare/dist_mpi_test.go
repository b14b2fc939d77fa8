package prepare

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
)

// mpiBinary returns a kestrel built with -tags mpi: $KESTREL_MPI_BIN
// (make test-mpi sets it) or one built here. It skips the test when
// mpirun is missing, unless KESTREL_REQUIRE_MPI=1.
func mpiBinary(t *testing.T) (bin string, mpirun []string) {
	t.Helper()
	run, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("KESTREL_REQUIRE_MPI") == "1" {
			t.Fatal("KESTREL_REQUIRE_MPI=1 but no mpirun on PATH")
		}
		t.Skip("no mpirun on PATH (install openmpi-bin, or set KESTREL_REQUIRE_MPI=1 to make this an error)")
	}
	mpirun = []string{run, "--oversubscribe"}
	if os.Geteuid() == 0 {
		mpirun = append(mpirun, "--allow-run-as-root")
	}
	if b := os.Getenv("KESTREL_MPI_BIN"); b != "" {
		return b, mpirun
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	bin = filepath.Join(t.TempDir(), "kestrel-mpi")
	cmd := exec.Command("go", "build", "-tags", "mpi", "-o", bin, "./cmd/kestrel")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags mpi: %v\n%s", err, out)
	}
	return bin, mpirun
}

// TestPrepareMPI: mpirun -np 2 kestrel-mpi prepare gives the dataset one
// process gives (kestrel data diff finds no difference).
func TestPrepareMPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches MPI processes")
	}
	bin, mpirun := mpiBinary(t)
	cfg := distConfig(t)
	dir := t.TempDir()
	b, err := toml.Marshal(struct {
		Prepare Config `toml:"prepare"`
	}{cfg})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "data.toml")
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	single, multi := filepath.Join(dir, "single"), filepath.Join(dir, "multi")
	run(bin, "prepare", "--config", conf, "--out", single)
	out := run(append(mpirun, "-np", "2", bin, "prepare", "--config", conf, "--out", multi, "--unit-mb", "0.05")...)
	if !strings.Contains(out, "kept") {
		t.Errorf("no summary from rank 0:\n%s", out)
	}
	diff := run(bin, "data", "diff", single, multi)
	if !strings.Contains(diff, "identical") {
		t.Errorf("data diff: %s", diff)
	}
	rep, err := datareport.Load(multi)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dist == nil || rep.Dist.Ranks != 2 || rep.Dist.Units <= len(cfg.Sources) {
		t.Errorf("dist report %+v: want 2 ranks and split inputs", rep.Dist)
	}
}
