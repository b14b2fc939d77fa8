package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newTokEncodeCmd() *cobra.Command {
	var path string
	var lines, asJSON, special bool
	cmd := &cobra.Command{
		Use:   "encode --tokenizer PATH [--lines] [--json]",
		Short: "encode stdin to token ids",
		Long: `Read text on stdin and write token ids: space-separated (or one JSON array
with --json) for the whole input, or one JSON array per input line with
--lines (the newline is not encoded).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tokLoad(path)
			if err != nil {
				return err
			}
			enc := tok.Encode
			if special {
				enc = tok.EncodeSpecial
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			in := bufio.NewReaderSize(cmd.InOrStdin(), 1<<20)
			if lines {
				for {
					line, err := in.ReadString('\n')
					if len(line) > 0 {
						line = strings.TrimSuffix(line, "\n")
						writeIDs(w, enc(line), true)
						w.WriteByte('\n')
					}
					if err == io.EOF {
						return nil
					}
					if err != nil {
						return fmt.Errorf("tokenizer encode: stdin: %w", err)
					}
				}
			}
			data, err := io.ReadAll(in)
			if err != nil {
				return fmt.Errorf("tokenizer encode: stdin: %w", err)
			}
			writeIDs(w, enc(string(data)), asJSON)
			w.WriteByte('\n')
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	cmd.Flags().BoolVar(&lines, "lines", false, "encode each line separately, one JSON array per line")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write a JSON array")
	cmd.Flags().BoolVar(&special, "special", false, "recognise special tokens such as <|endoftext|> in the text")
	return cmd
}

func writeIDs(w *bufio.Writer, ids []int32, asJSON bool) {
	if asJSON {
		w.WriteByte('[')
	}
	for i, id := range ids {
		if i > 0 {
			if asJSON {
				w.WriteByte(',')
			} else {
				w.WriteByte(' ')
			}
		}
		w.WriteString(strconv.FormatInt(int64(id), 10))
	}
	if asJSON {
		w.WriteByte(']')
	}
}
