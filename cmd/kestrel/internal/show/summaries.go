package show

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/report"
	"github.com/kestrel-lm/kestrel/internal/watchsrc"
	"github.com/kestrel-lm/kestrel/monitor"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// TokenizerStats prints the statistics for a person, one per line.
func TokenizerStats(w io.Writer, st tokenizer.Stats) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "bytes                 %d\nwords                 %d\ntokens                %d\n", st.Bytes, st.Words, st.Tokens)
	fmt.Fprintf(&b, "fertility             %.3f tokens/word\nbytes per token       %.3f\n", st.Fertility, st.BytesPerToken)
	fmt.Fprintf(&b, "continued-word share  %.1f%%\nvocabulary use        %d of %d (%.1f%%)\n", 100*st.ContinuedWords, st.VocabUsed, st.VocabSize, 100*st.VocabUse)
	_, err := w.Write(b.Bytes())
	return err
}

// Verdict prints the summary kestrel report shows: the verdict, its
// checks one per line, and where the report is.
func Verdict(w io.Writer, s *report.Summary) {
	fmt.Fprintf(w, "verdict: %s\n", map[bool]string{true: "healthy", false: "needs a look"}[s.Healthy])
	for _, v := range s.Verdicts {
		fmt.Fprintf(w, "  %s\n", v)
	}
	fmt.Fprintf(w, "report: %s (%d plots, samples of %d checkpoints)\n", s.Path, len(s.Plots), s.Checkpoints)
}

// WatchAlert is one alert as kestrel watch prints it: severity, rule,
// step, message, and the incident bundle under out when there is one.
func WatchAlert(a monitor.Alert, out string) string {
	line := fmt.Sprintf("%s %-22s step %-8d %s", a.Severity, a.Rule, a.Step, a.Message)
	if a.Evidence != "" {
		line += " [evidence " + filepath.Join(out, a.Evidence) + "]"
	}
	return line
}

// Watch prints the watch's totals: samples read, alerts by severity, and
// the bad lines or records skipped. A watch that skipped data says so on
// its first line — its alert counts cover only what was read, so they are
// never an all-clear.
func Watch(w io.Writer, r *watchsrc.Result) {
	scope := ""
	if r.BadLines > 0 {
		scope = " in what could be read: INCOMPLETE"
	}
	fmt.Fprintf(w, "watch: %d samples; %d SEV0, %d SEV1, %d SEV2 alerts%s\n", r.Samples, r.Counts[monitor.SEV0], r.Counts[monitor.SEV1], r.Counts[monitor.SEV2], scope)
	if r.BadLines > 0 {
		bytes := ""
		if r.BadBytes > 0 {
			bytes = fmt.Sprintf(", %d bytes of event files", r.BadBytes)
		}
		fmt.Fprintf(w, "watch: %d bad lines or records skipped%s (first: %s); the rules did not see them\n", r.BadLines, bytes, r.FirstBad)
	}
}
