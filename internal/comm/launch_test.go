package comm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// setLaunchEnv sets every launch, rank and allocation variable to env's
// value (unset ones to empty, which the readers treat as unset).
func setLaunchEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, vs := range [][]string{sizeVars, rankVars, {"SLURM_NTASKS", "SLURM_NPROCS"}} {
		for _, v := range vs {
			t.Setenv(v, env[v])
		}
	}
}

// TestLaunchedSizeSlurm: a Slurm allocation of several tasks is not a
// launch of several ranks; a srun step of several tasks, an MPI launcher,
// or a rank above 0 is. The default build runs the first as one process
// (FromEnv gives Single) and refuses the others.
func TestLaunchedSizeSlurm(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		n       int
		by      string
		wantErr bool
	}{
		{"no launcher", map[string]string{}, 1, "", false},
		{"salloc shell, started by hand", map[string]string{"SLURM_NTASKS": "8", "SLURM_NPROCS": "8", "SLURM_JOB_ID": "42"}, 1, "", false},
		{"sbatch script itself", map[string]string{"SLURM_NTASKS": "4", "SLURM_PROCID": "0"}, 1, "", false},
		{"older Slurm: SLURM_NPROCS only", map[string]string{"SLURM_NPROCS": "3"}, 1, "", false},
		{"srun -n 1 inside the allocation", map[string]string{"SLURM_NTASKS": "1", "SLURM_STEP_NUM_TASKS": "1", "SLURM_PROCID": "0"}, 1, "", false},
		{"srun -n 4, rank 0", map[string]string{"SLURM_NTASKS": "4", "SLURM_STEP_NUM_TASKS": "4", "SLURM_PROCID": "0"}, 4, "SLURM_STEP_NUM_TASKS", true},
		{"srun --mpi=pmix, rank 2, no step size", map[string]string{"SLURM_NTASKS": "4", "PMIX_RANK": "2"}, 4, "PMIX_RANK", true},
		{"a rank above 0 alone", map[string]string{"SLURM_PROCID": "5"}, 6, "SLURM_PROCID", true},
		{"mpirun inside salloc", map[string]string{"SLURM_NTASKS": "8", "OMPI_COMM_WORLD_SIZE": "2"}, 2, "OMPI_COMM_WORLD_SIZE", true},
		{"PMI-2", map[string]string{"PMI_SIZE": "3", "PMI_RANK": "0"}, 3, "PMI_SIZE", true},
		{"junk values", map[string]string{"SLURM_STEP_NUM_TASKS": "x", "PMI_RANK": "-1", "SLURM_NTASKS": "1"}, 1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setLaunchEnv(t, tt.env)
			n, by := LaunchedSize()
			if n != tt.n || by != tt.by {
				t.Errorf("LaunchedSize() = %d, %q; want %d, %q", n, by, tt.n, tt.by)
			}
			if MPIBuilt() {
				return // FromEnv initializes MPI
			}
			c, err := FromEnv()
			if tt.wantErr {
				if err == nil || !errors.Is(err, ErrNoMPI) || !strings.Contains(err.Error(), fmt.Sprintf("one of %d ranks (%s=%s)", tt.n, tt.by, tt.env[tt.by])) {
					t.Errorf("FromEnv: %v, want ErrNoMPI naming %s=%s", err, tt.by, tt.env[tt.by])
				}
				return
			}
			if err != nil || c.Size() != 1 {
				t.Errorf("FromEnv: %v, %v; want one process", c, err)
			}
		})
	}
}
