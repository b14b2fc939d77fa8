package main

import "github.com/spf13/cobra"

func newBenchTokenizeCmd() *cobra.Command {
	return stubBench("tokenize", "BPE encode MB/s against tiktoken-go on GPT-2's vocabulary")
}
