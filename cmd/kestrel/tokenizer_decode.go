package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/tokenizer"
)

func newTokDecodeCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "decode --tokenizer PATH",
		Short: "decode token ids on stdin back to text",
		Long: `Read ids on stdin and write the exact bytes they stand for. A line holding a
JSON array (the output of encode --lines) decodes to one line of text; other
input is whitespace-separated ids decoded as one text.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tokLoad(path)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			in := bufio.NewReaderSize(cmd.InOrStdin(), 1<<20)
			lineNo := 0
			for {
				line, rerr := in.ReadString('\n')
				lineNo++
				s := strings.TrimSpace(line)
				if strings.HasPrefix(s, "[") {
					var ids []int32
					if err := json.Unmarshal([]byte(s), &ids); err != nil {
						return fmt.Errorf("tokenizer decode: stdin line %d: %w", lineNo, err)
					}
					if err := checkIDs(tok, ids, lineNo); err != nil {
						return err
					}
					w.Write(tok.Decode(ids))
					w.WriteByte('\n')
				} else if s != "" {
					var ids []int32
					for _, f := range strings.Fields(s) {
						v, err := strconv.ParseInt(f, 10, 32)
						if err != nil {
							return fmt.Errorf("tokenizer decode: stdin line %d: id %q: %w", lineNo, f, err)
						}
						ids = append(ids, int32(v))
					}
					if err := checkIDs(tok, ids, lineNo); err != nil {
						return err
					}
					w.Write(tok.Decode(ids))
				}
				if rerr == io.EOF {
					return nil
				}
				if rerr != nil {
					return fmt.Errorf("tokenizer decode: stdin: %w", rerr)
				}
			}
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	return cmd
}

func checkIDs(tok *tokenizer.Tokenizer, ids []int32, line int) error {
	for _, id := range ids {
		if !tok.ValidID(id) {
			return fmt.Errorf("tokenizer decode: stdin line %d: id %d is not in the vocabulary (%d)", line, id, tok.VocabSize())
		}
	}
	return nil
}
