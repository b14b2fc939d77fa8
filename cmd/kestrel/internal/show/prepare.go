package show

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
)

// PrepareSummary prints what kestrel prepare (and the demo's first step)
// built: per source and stage the documents and bytes in and out, what
// was kept, rejects by rule, malformed input, duplicates and their
// hotspots, the train/eval overlap, the tokens and the time; or, for a
// dataset found up to date (r.UpToDate), one line saying so.
func PrepareSummary(w io.Writer, r *datareport.Report) error {
	if r.UpToDate {
		fp := r.Fingerprint
		if len(fp) > 12 {
			fp = fp[:12]
		}
		_, err := fmt.Fprintf(w, "%s is up to date (fingerprint %s); use --force to rebuild\n", r.Out, fp)
		return err
	}
	ew := &errWriter{w: w}
	mb := func(b int64) string { return fmt.Sprintf("%.2f MB", float64(b)/1e6) }
	fmt.Fprintf(ew, "kestrel prepare → %s\n", r.Out)
	fmt.Fprintf(ew, "\n%-8s %-12s %10s %12s %10s %12s\n", "source", "stage", "docs in", "bytes in", "docs out", "bytes out")
	for _, s := range r.Sources {
		for _, st := range datareport.Stages {
			if c := s.Stages[st]; c != nil && c.In.Docs > 0 {
				fmt.Fprintf(ew, "%-8s %-12s %10d %12s %10d %12s\n", s.Name, st, c.In.Docs, mb(c.In.Bytes), c.Out.Docs, mb(c.Out.Bytes))
			}
		}
		fmt.Fprintf(ew, "%-8s %-12s %10s %12s %10d %12s   (p50 %d B/doc, p90 %d)\n", s.Name, "kept", "", "", s.Kept.Docs, mb(s.Kept.Bytes), s.BytesPerDoc.P50, s.BytesPerDoc.P90)
		if s.Truncated {
			fmt.Fprintf(ew, "%-8s (stopped at max_docs/max_bytes)\n", s.Name)
		}
	}
	fmt.Fprintf(ew, "\ntotal kept: %d docs, %s; bytes/doc p10 %d p50 %d p90 %d p99 %d max %d\n", r.Kept.Docs, mb(r.Kept.Bytes),
		r.BytesPerDoc.P10, r.BytesPerDoc.P50, r.BytesPerDoc.P90, r.BytesPerDoc.P99, r.BytesPerDoc.Max)
	if len(r.Rejects) > 0 {
		fmt.Fprintf(ew, "\nrejects by rule:\n")
		for _, k := range r.RejectRules() {
			fmt.Fprintf(ew, "  %-50s %8d\n", k, r.Rejects[k])
		}
	}
	prepareProblems(ew, r.Problems)
	fmt.Fprintf(ew, "\nexact_dup_rate %.4f  near_dup_rate %.4f  (%d near-duplicate clusters)\n", r.ExactDupRate, r.NearDupRate, r.NearClusters)
	for i, h := range r.Hotspots[:min(len(r.Hotspots), 3)] {
		fmt.Fprintf(ew, "  hotspot %d: %d docs, kept %s: %q\n", i+1, h.Size, h.KeptID, cutRunes(h.Sample, 100))
	}
	prepareOverlap(ew, r)
	if t := r.Tokens; t != nil {
		fmt.Fprintf(ew, "\ntokens: %d (vocab %d, %s tokenizer) → %s\n", t.TotalTokens, t.VocabSize, t.Mode, t.Manifest)
	}
	fmt.Fprintf(ew, "\ntime: %.1fs\n", r.TimingsS["total"])
	return ew.err
}

// prepareProblems prints the malformed input: the count and the first five.
func prepareProblems(w io.Writer, p datareport.ProblemReport) {
	if p.Total == 0 {
		return
	}
	fmt.Fprintf(w, "\nmalformed input: %d (skipped or repaired)", p.Total)
	if p.FilesSkipped > 0 {
		fmt.Fprintf(w, "; %d input files not read to the end", p.FilesSkipped)
	}
	fmt.Fprintln(w)
	for _, l := range p.List[:min(len(p.List), 5)] {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// prepareOverlap prints train_val_overlap per eval set, by name.
func prepareOverlap(w io.Writer, r *datareport.Report) {
	if len(r.TrainValOverlap) == 0 {
		return
	}
	fmt.Fprintf(w, "\ntrain_val_overlap:\n")
	sets := make([]string, 0, len(r.TrainValOverlap))
	for k := range r.TrainValOverlap {
		sets = append(sets, k)
	}
	sort.Strings(sets)
	for _, k := range sets {
		o := r.Overlap[k]
		if o == nil {
			fmt.Fprintf(w, "  %-12s %.5f (0 docs)\n", k, r.TrainValOverlap[k])
			continue
		}
		fmt.Fprintf(w, "  %-12s %.5f (%d docs, %d eval items, e.g. %s)\n", k, r.TrainValOverlap[k], o.Docs, o.Items, strings.Join(o.ItemIDs[:min(len(o.ItemIDs), 3)], ", "))
	}
}

// cutRunes cuts s to at most n bytes at a rune boundary, marking the cut.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// PrepareBench prints one result of kestrel bench prepare: a JSON line
// with asJSON, else the corpus line, the summary's note, or a stage's
// MB/s, time and peak RSS.
func PrepareBench(w io.Writer, asJSON bool, r prepare.BenchResult) error {
	var line string
	switch {
	case asJSON:
	case r.Stage == "generate":
		line = fmt.Sprintf("corpus: %d MB in %s", int(r.MB), r.Note)
	case r.Stage == "summary":
		line = r.Note
	default:
		line = fmt.Sprintf("%-15s %8.1f MB/s  %7.2fs  peak RSS %7.1f MB  %s", r.Stage, r.MBPerS, r.Seconds, r.PeakRSSMB, r.Note)
	}
	return Emit(w, asJSON, r, line)
}
