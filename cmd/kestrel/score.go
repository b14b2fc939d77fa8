package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/eval"
)

func newScoreCmd() *cobra.Command {
	var opt eval.ScoreOptions
	cmd := &cobra.Command{
		Use:   "score --run RUN [--checkpoint last|last-good|step-N|DIR] [--ema] (--text TEXT | --file F | --tokens 1,2,3)",
		Short: "per-token log-probabilities and total loss of a text or token list, as JSON",
		Long:  helpText("score"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt.Status = cmd.ErrOrStderr()
			res, err := eval.ScoreText(opt)
			if err != nil {
				return err
			}
			return show.JSON(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Run, "run", "", "run directory (or a checkpoint directory)")
	f.StringVar(&opt.Checkpoint, "checkpoint", "last", "last, last-good, step-N or a checkpoint directory")
	f.BoolVar(&opt.EMA, "ema", false, "score with the EMA weights")
	f.StringVar(&opt.Text, "text", "", "text to score")
	f.StringVar(&opt.File, "file", "", "file whose text to score")
	f.StringVar(&opt.TokenList, "tokens", "", "token ids to score, e.g. 1,2,3")
	f.BoolVar(&opt.NoStart, "no-start", false, "do not put the start token in front of the text")
	return cmd
}
