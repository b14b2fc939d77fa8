package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

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
	cmd.AddCommand(newTokTrainCmd(), newTokEncodeCmd(), newTokDecodeCmd(), newTokStatsCmd())
	return cmd
}

// tokLoad loads a tokenizer, expanding ${KESTREL_DATA}.
func tokLoad(path string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		return nil, fmt.Errorf("--tokenizer is required")
	}
	p, err := datadir.Expand(path)
	if err != nil {
		return nil, err
	}
	return tokenizer.Load(p)
}

// tokTexts yields the documents of the inputs: a JSONL file gives the
// "text" field of each record (or every string field when there is none);
// .gz files are decompressed; other files are read in chunks of whole lines
// (about 1 MiB); a directory with manifest.json is a prepared dataset whose
// training documents are decoded; other directories are walked.
func tokTexts(inputs []string, errp *error) iter.Seq[string] {
	return func(yield func(string) bool) {
		var files []string
		for _, in := range inputs {
			p, err := datadir.Expand(in)
			if err != nil {
				*errp = err
				return
			}
			matches, _ := filepath.Glob(p)
			if len(matches) == 0 {
				matches = []string{p}
			}
			for _, m := range matches {
				st, err := os.Stat(m)
				if err != nil {
					*errp = fmt.Errorf("input %s: %w", m, err)
					return
				}
				if !st.IsDir() {
					files = append(files, m)
					continue
				}
				if _, err := os.Stat(filepath.Join(m, "manifest.json")); err == nil {
					if !tokDatasetTexts(m, yield, errp) {
						return
					}
					continue
				}
				filepath.WalkDir(m, func(p string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
						files = append(files, p)
					}
					return nil
				})
			}
		}
		for _, f := range files {
			if !tokFileTexts(f, yield, errp) {
				return
			}
		}
	}
}

func tokDatasetTexts(dir string, yield func(string) bool, errp *error) bool {
	ds, err := shards.Open(dir)
	if err != nil {
		*errp = err
		return false
	}
	defer ds.Close()
	tok, err := ds.Tokenizer()
	if err != nil {
		*errp = err
		return false
	}
	for _, src := range ds.Sources() {
		st, err := ds.Stream(src, shards.Train)
		if err != nil {
			*errp = err
			return false
		}
		for i := int64(0); i < st.NumDocs(); i++ {
			doc, err := st.Doc(i)
			if err != nil {
				*errp = err
				return false
			}
			ids := make([]int32, 0, len(doc))
			for _, id := range doc {
				if !tok.ValidID(id) || tok.IsAdded(id) {
					continue
				}
				ids = append(ids, id)
			}
			if !yield(tok.DecodeString(ids)) {
				return false
			}
		}
	}
	return true
}

func tokFileTexts(path string, yield func(string) bool, errp *error) bool {
	f, err := os.Open(path)
	if err != nil {
		*errp = fmt.Errorf("input %s: %w", path, err)
		return false
	}
	defer f.Close()
	var r io.Reader = f
	name := path
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			*errp = fmt.Errorf("input %s: %w", path, err)
			return false
		}
		r = zr
		name = strings.TrimSuffix(name, ".gz")
	}
	br := bufio.NewReaderSize(r, 1<<20)
	// JSON lines: .jsonl, .ndjson, and gzipped .json (Dolma's layout)
	jsonl := strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".ndjson") || (name != path && strings.HasSuffix(name, ".json"))
	var chunk strings.Builder
	lineNo := 0
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			lineNo++
			if jsonl {
				var rec map[string]any
				if e := json.Unmarshal([]byte(line), &rec); e != nil {
					*errp = fmt.Errorf("input %s:%d: %w", path, lineNo, e)
					return false
				}
				if t, ok := rec["text"].(string); ok {
					if !yield(t) {
						return false
					}
				} else {
					keys := make([]string, 0, len(rec))
					for k := range rec {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						if s, ok := rec[k].(string); ok && !yield(s) {
							return false
						}
					}
				}
			} else {
				chunk.WriteString(line)
				if chunk.Len() >= 1<<20 {
					if !yield(chunk.String()) {
						return false
					}
					chunk.Reset()
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			*errp = fmt.Errorf("input %s: %w", path, err)
			return false
		}
	}
	if chunk.Len() > 0 {
		return yield(chunk.String())
	}
	return true
}

func newTokTrainCmd() *cobra.Command {
	var (
		inputs []string
		out    string
		opts   tokenizer.TrainOptions
		quiet  bool
	)
	cmd := &cobra.Command{
		Use:   "train --input FILES… --vocab-size N --out tok.json",
		Short: "learn BPE merges from a corpus and write tokenizer.json",
		Long: `Learn byte-level BPE merges from text files (JSONL: the "text" field; .gz is
read), a directory of them, or a prepared dataset directory (its training
documents are decoded). The result is deterministic for a given input.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			inputs = append(inputs, args...)
			if len(inputs) == 0 {
				return fmt.Errorf("tokenizer train: --input is required")
			}
			if out == "" {
				return fmt.Errorf("tokenizer train: --out is required")
			}
			if !quiet {
				opts.Progress = cmd.ErrOrStderr()
			}
			var readErr error
			tok, err := tokenizer.Train(cmd.Context(), tokTexts(inputs, &readErr), opts)
			if readErr != nil {
				return fmt.Errorf("tokenizer train: %w", readErr)
			}
			if err != nil {
				return err
			}
			if err := tok.Save(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d tokens (%d merges), pattern %s, hash %s\n", out, tok.VocabSize(), tok.NumMerges(), opts.Pattern, tok.Hash()[:16])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&inputs, "input", nil, "input files, globs or directories (repeatable)")
	f.StringVar(&out, "out", "", "output tokenizer.json")
	f.IntVar(&opts.VocabSize, "vocab-size", 8192, "vocabulary size including 256 bytes and special tokens")
	f.StringVar(&opts.Pattern, "pattern", "gpt2", "pre-tokenisation: gpt2 | llama3 (digits in groups of 1–3) | a regex")
	f.StringSliceVar(&opts.Special, "special", []string{"<|endoftext|>"}, "special tokens, in id order after the merges")
	f.IntVar(&opts.Workers, "workers", 0, "counting goroutines (0 = all cores)")
	f.IntVar(&opts.MinFrequency, "min-frequency", 2, "stop when the best pair occurs fewer times")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}

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

// TokStats are the corpus statistics of a tokenizer.
type TokStats struct {
	Bytes          int64   `json:"bytes"`
	Words          int64   `json:"words"`
	Tokens         int64   `json:"tokens"`
	Fertility      float64 `json:"fertility"`       // tokens per word
	BytesPerToken  float64 `json:"bytes_per_token"` // compression
	ContinuedWords float64 `json:"continued_word_share"`
	VocabUsed      int     `json:"vocab_used"`
	VocabSize      int     `json:"vocab_size"`
	VocabUse       float64 `json:"vocab_use"`
}

func newTokStatsCmd() *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats --tokenizer PATH FILES…",
		Short: "report fertility, bytes per token, continued-word share and vocabulary use",
		Long: `Encode a corpus and report: fertility (tokens per whitespace-separated word,
each word encoded as it appears, with its leading space), bytes per token,
continued-word share (words split into more than one token) and vocabulary
use (share of ids that occur).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("tokenizer stats: name the corpus files")
			}
			tok, err := tokLoad(path)
			if err != nil {
				return err
			}
			var st TokStats
			used := make([]bool, tok.VocabSize())
			var readErr error
			var ids []int32
			for text := range tokTexts(args, &readErr) {
				st.Bytes += int64(len(text))
				ids = tok.AppendEncode(ids[:0], text)
				st.Tokens += int64(len(ids))
				for _, id := range ids {
					used[id] = true
				}
				for _, line := range strings.Split(text, "\n") {
					for i, w := range strings.Fields(line) {
						if i > 0 {
							w = " " + w
						}
						n := len(tok.Encode(w))
						st.Words++
						if n > 1 {
							st.ContinuedWords++
						}
						st.Fertility += float64(n)
					}
				}
			}
			if readErr != nil {
				return fmt.Errorf("tokenizer stats: %w", readErr)
			}
			for _, u := range used {
				if u {
					st.VocabUsed++
				}
			}
			st.VocabSize = tok.VocabSize()
			if st.Words > 0 {
				st.Fertility /= float64(st.Words)
				st.ContinuedWords /= float64(st.Words)
			}
			if st.Tokens > 0 {
				st.BytesPerToken = float64(st.Bytes) / float64(st.Tokens)
			}
			st.VocabUse = float64(st.VocabUsed) / float64(st.VocabSize)
			out := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.Marshal(st)
				fmt.Fprintln(out, string(b))
				return nil
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "bytes                 %d\nwords                 %d\ntokens                %d\n", st.Bytes, st.Words, st.Tokens)
			fmt.Fprintf(&b, "fertility             %.3f tokens/word\nbytes per token       %.3f\n", st.Fertility, st.BytesPerToken)
			fmt.Fprintf(&b, "continued-word share  %.1f%%\nvocabulary use        %d of %d (%.1f%%)\n", 100*st.ContinuedWords, st.VocabUsed, st.VocabSize, 100*st.VocabUse)
			_, err = out.Write(b.Bytes())
			return err
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object")
	return cmd
}
