package train

import (
	"errors"

	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/stepvitals"
)

// The batch's data vitals are internal/stepvitals' (Batch); the trainer
// keeps what needs its options: the vocabulary and the [debug] data faults.

// Vocabulary is what the trainer knows of the run's tokenizer
// (stepvitals.Vocabulary: token bytes and the encoder).
type Vocabulary = stepvitals.Vocabulary

// vocabFor is the run's vocabulary: Options.Vocab, else bytes for a
// byte-level run, else nil (unknown).
func vocabFor(o *Options) Vocabulary {
	switch {
	case o.Vocab != nil:
		return o.Vocab
	case o.Tokenizer == "bytes" && o.Model.Vocab >= 256:
		return stepvitals.Bytes{}
	}
	return nil
}

// checkVocab refuses a data fault that needs the tokenizer when the run
// has none the trainer knows.
func checkVocab(o *Options) error {
	if o.Debug.Base64DataAtStep > 0 && vocabFor(o) == nil {
		return errors.New("debug.base64_data_at_step needs the run's tokenizer to encode base64 text, and the trainer was given none (train.Options.Vocab)")
	}
	return nil
}

// base64Fault applies [debug] base64_data_* to rows r0… of data step ds.
func base64Fault(o *Options, ds, r0, T int, in, tg []int32) {
	if v := vocabFor(o); v != nil && o.Debug.Base64(ds) {
		faults.Base64Rows(o.Seed, ds, r0, T, v.Encode, in, tg)
	}
}
