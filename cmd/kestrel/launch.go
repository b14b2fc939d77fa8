package main

import (
	"github.com/kestrel-lm/kestrel/internal/comm"
)

// checkLaunch refuses to run a binary built without MPI that mpirun or srun
// started as one of several ranks: each copy would train alone on the same
// run directory. bin/kestrel-mpi (make build-mpi) runs them as one job. A
// command started by hand inside a Slurm allocation runs as one process.
func checkLaunch() error {
	if comm.MPIBuilt() {
		return nil
	}
	return comm.CheckNoMPILaunch()
}
