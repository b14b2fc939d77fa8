package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/buildinfo"
	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// version may be set at build time: -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print version, git SHA, Go version and the CPU features the kernels use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kestrel %s\ngit:      %s\ngo:       %s %s/%s\ncpu:      %s (GOMAXPROCS %d)\ngemm:     %s\n",
				version, buildinfo.Describe(), runtime.Version(), runtime.GOOS, runtime.GOARCH, kernels.FeatureString(), runtime.GOMAXPROCS(0), kernels.Impl())
			return err
		},
	}
}
