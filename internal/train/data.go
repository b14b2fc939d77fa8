package train

import (
	"fmt"
	"strings"
)

// checkValData refuses a data source without validation rows: every run
// evaluates (every train.eval_every steps, and at its last step even with
// eval_every = 0), and would otherwise train until its first evaluation and
// fail there.
func checkValData(o Options) error {
	names := o.Data.SourceNames()
	for s := range names {
		if o.Data.ValRows(s) > 0 {
			return nil
		}
	}
	when := fmt.Sprintf("its first evaluation at step %d", min(o.Train.EvalEvery, o.Train.Steps))
	if o.Train.EvalEvery == 0 {
		when = fmt.Sprintf("its final evaluation at step %d (train.eval_every = 0 still evaluates at the end)", o.Train.Steps)
	}
	return fmt.Errorf("train: no validation data: the data source has no validation sequence of %d+1 tokens in any source (%s), so the run would fail at %s; "+
		"byte-level data (data.kind = \"bytes\"): set train.val_fraction > 0 or data.val to a file; a dataset: rebuild it with prepare.tokenizer.shards.val_fraction > 0",
		o.Model.SeqLen, strings.Join(names, ", "), when)
}
