package main

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/comm"
)

// checkLaunch refuses to run a binary built without MPI that mpirun or srun
// started as one of several ranks: each copy would train alone on the same
// run directory. bin/kestrel-mpi (make build-mpi) runs them as one job.
func checkLaunch() error {
	if comm.MPIBuilt() {
		return nil
	}
	if n, v := comm.LaunchedSize(); n > 1 {
		return fmt.Errorf("launched as one of %d ranks (%s=%d): %w", n, v, n, comm.ErrNoMPI)
	}
	return nil
}
