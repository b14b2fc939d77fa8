package main

import "github.com/spf13/cobra"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "kestrel",
		Short: "pre-train small language models on CPU, and read, trust and rescue the run",
		Long: `kestrel pre-trains small language models end to end on CPU:

  raw crawl → quality filters → dedup → decontamination → tokenizer → shards
  → mixture + Feistel shuffle → batches → transformer training → ICU panel

Every command that takes --config also accepts any config field as
--section.key=value (for example --optim.lr=3e-4); 'kestrel config --defaults'
lists them all with their documentation. Shipped data is found in
../shared/data or in the directory named by $KESTREL_DATA.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// A binary without MPI started by mpirun/srun as one of several
		// ranks says so instead of running N copies (launch.go).
		PersistentPreRunE: func(*cobra.Command, []string) error { return checkLaunch() },
	}
	root.AddCommand(newPrepareCmd(), newTokenizerCmd(), newDataCmd(), newTrainCmd(), newRewindCmd(), newSampleCmd(), newEvalCmd(), newScoreCmd(),
		newCheckpointsCmd(), newReplayCmd(), newQuarantineCmd(), newWatchCmd(), newDashCmd(), newBenchCmd(), newDemoCmd(),
		newConfigCmd(), newVersionCmd())
	root.AddCommand(newExportCmd(), newImportCmd()) // Hugging Face interchange (export.go, import.go)
	return root
}
