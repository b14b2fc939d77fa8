package main

import "github.com/spf13/cobra"

func newTokenizerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokenizer",
		Short: "train, apply and inspect byte-level BPE tokenizers",
		Long: `Byte-level BPE tokenizers that read and write Hugging Face tokenizer.json and
read tiktoken rank files and GPT-2 vocab.json + merges.txt.

  kestrel tokenizer train  --input FILES… --vocab-size N --out tok.json
  kestrel tokenizer encode --tokenizer PATH [--lines] [--json]   (stdin → ids)
  kestrel tokenizer decode --tokenizer PATH                      (ids → text)
  kestrel tokenizer stats  --tokenizer PATH FILES…               (fertility, bytes/token, …)`,
	}
	for _, sub := range []struct{ use, short string }{
		{"train", "learn BPE merges from a corpus and write tokenizer.json"},
		{"encode", "encode stdin to token ids"},
		{"decode", "decode token ids on stdin back to text"},
		{"stats", "report fertility, bytes per token, continued-word share and vocabulary use"},
	} {
		name := sub.use
		cmd.AddCommand(&cobra.Command{
			Use:   sub.use,
			Short: sub.short,
			RunE: func(*cobra.Command, []string) error {
				return errNotImplemented("tokenizer " + name)
			},
		})
	}
	return cmd
}
