package main

import "github.com/spf13/cobra"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "kestrel",
		Short:         "pre-train small language models on CPU, and read, trust and rescue the run",
		Long:          helpText("kestrel"),
		SilenceUsage:  true,
		SilenceErrors: true,
		// A binary without MPI started by mpirun/srun as one of several
		// ranks says so instead of running N copies (launch.go).
		PersistentPreRunE: func(*cobra.Command, []string) error { return checkLaunch() },
	}
	root.AddCommand(newPrepareCmd(), newTokenizerCmd(), newDataCmd(), newTrainCmd(), newRewindCmd(), newBranchCmd(), newSweepCmd(), newCompareCmd(), newReportCmd(), newSampleCmd(), newEvalCmd(), newScoreCmd(),
		newCheckpointsCmd(), newIncidentsCmd(), newDrillCmd(), newReplayCmd(), newQuarantineCmd(), newWatchCmd(), newDashCmd(), newBenchCmd(), newDemoCmd(),
		newConfigCmd(), newVersionCmd())
	root.AddCommand(newExportCmd(), newImportCmd()) // Hugging Face interchange (export.go, import.go)
	return root
}
