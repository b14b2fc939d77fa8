package main

import (
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/comm"
)

// TestNoMPIBinaryUnderMPIRun: the default (cgo-free) binary launched by a
// launcher with several ranks says it has no MPI and exits with an error;
// one rank, no launcher, or a command started by hand inside a Slurm
// allocation (SLURM_NTASKS alone) runs as usual.
func TestNoMPIBinaryUnderMPIRun(t *testing.T) {
	if comm.MPIBuilt() {
		t.Skip("an MPI build initializes MPI instead")
	}
	tests := []struct {
		env, val string
		wantErr  bool
	}{
		{"", "", false},
		{"OMPI_COMM_WORLD_SIZE", "1", false},
		{"OMPI_COMM_WORLD_SIZE", "2", true},
		{"PMI_SIZE", "4", true},
		{"SLURM_NTASKS", "2", false},
		{"SLURM_STEP_NUM_TASKS", "2", true},
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.val, func(t *testing.T) {
			for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS",
				"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"} {
				t.Setenv(v, "")
			}
			if tt.env != "" {
				t.Setenv(tt.env, tt.val)
			}
			cmd := newRootCmd()
			cmd.SetArgs([]string{"version"})
			var out strings.Builder
			cmd.SetOut(&out)
			err := cmd.Execute()
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "built without MPI; build bin/kestrel-mpi with make build-mpi") || !strings.Contains(err.Error(), tt.env) {
				t.Fatalf("error %v, want the no-MPI message naming %s", err, tt.env)
			}
		})
	}
}
