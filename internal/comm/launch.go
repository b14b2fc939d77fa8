package comm

import (
	"fmt"
	"os"
	"strconv"
)

// sizeVars are the environment variables through which a launcher that
// really started several ranks announces their number: Open MPI's mpirun,
// PMI (MPICH, srun --mpi=pmi2) and a Slurm job step started by srun.
// SLURM_NTASKS is not one of them: it is set in every shell of an
// allocation (salloc, an sbatch script), where a command started by hand
// runs once.
var sizeVars = []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}

// rankVars name this process's rank where a launcher started it; a rank
// above 0 proves that several ranks were launched even when no size
// variable says how many (PMIx announces no size; SLURM_PROCID is 0 in an
// sbatch script itself).
var rankVars = []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}

// envInt reads a non-negative integer variable; ok is false when it is
// unset, empty or not such a number.
func envInt(v string) (int, bool) {
	s, ok := os.LookupEnv(v)
	if !ok || s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// LaunchedSize returns the number of ranks a launcher really started (1
// when none did) and the variable that said so: a size variable above 1
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS), else a rank
// variable above 0 (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK,
// SLURM_PROCID), whose group then holds at least rank+1 ranks (SLURM_NTASKS
// when it says more). A Slurm allocation alone (SLURM_NTASKS > 1 in a shell
// of salloc or sbatch) is not a launch: a command started there by hand
// runs as one process.
func LaunchedSize() (int, string) {
	for _, v := range sizeVars {
		if n, ok := envInt(v); ok && n > 1 {
			return n, v
		}
	}
	for _, v := range rankVars {
		r, ok := envInt(v)
		if !ok || r == 0 {
			continue
		}
		n := r + 1
		if a, ok := envInt("SLURM_NTASKS"); ok && a > n {
			n = a
		}
		return n, v
	}
	return 1, ""
}

// CheckNoMPILaunch is the check of a binary built without MPI: an error
// wrapping ErrNoMPI, naming the variable and its value, when a launcher
// started this process as one of several ranks (each copy would train
// alone on the same run directory); nil otherwise, inside a Slurm
// allocation too.
func CheckNoMPILaunch() error {
	n, v := LaunchedSize()
	if n <= 1 {
		return nil
	}
	return fmt.Errorf("launched as one of %d ranks (%s=%s): %w", n, v, os.Getenv(v), ErrNoMPI)
}
