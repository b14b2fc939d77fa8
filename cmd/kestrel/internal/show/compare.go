package show

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kestrel-lm/kestrel/internal/compare"
)

// Compare writes the report as kestrel compare prints it: per pair, the
// verdict, the metrics table, and the alert, intervention, config and
// manifest differences.
func Compare(w io.Writer, r *compare.Report) error {
	for i := range r.Pairs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := comparePair(w, &r.Pairs[i]); err != nil {
			return err
		}
	}
	return nil
}

func comparePair(w io.Writer, p *compare.Pair) error {
	fmt.Fprintf(w, "A = %s (%s)\nB = %s (%s)\n", p.NameA, p.A, p.NameB, p.B)
	fmt.Fprintf(w, "compared up to %s tokens (the fewer of the two); shared history to step %d\n", compare.Tokens(p.Tokens), p.SharedStep)
	fmt.Fprintf(w, "verdict: %s\n\n", p.Verdict)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tA\tB\tB − A\t± se\tbetter\tstep A/B\ttokens A/B\tpoint\tnoise")
	rows := p.Evals
	if p.Train != nil {
		rows = append([]compare.Delta{*p.Train}, rows...)
	}
	for _, d := range rows {
		se, point := "-", d.Align
		if d.StdErr != nil {
			se = fmt.Sprintf("%.4f", *d.StdErr)
		}
		if d.N > 0 {
			point = fmt.Sprintf("mean of %d steps", d.N)
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%+.4f\t%s\t%s\t%d/%d\t%s/%s\t%s\t%s\n", d.Metric, d.A, d.B, d.Delta, se, orDash(d.Better),
			d.StepA, d.StepB, compare.Tokens(d.TokensA), compare.Tokens(d.TokensB), point, d.Noise)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nalerts after step %d, up to the common tokens:", p.SharedStep)
	if len(p.Alerts) == 0 {
		fmt.Fprint(w, " none in either run")
	}
	fmt.Fprintln(w)
	for _, a := range p.Alerts {
		fmt.Fprintf(w, "  %-5s %-28s A %3d  B %3d%s\n", a.Severity, a.Rule, a.A, a.B, differs(a.A != a.B))
	}
	fmt.Fprint(w, "interventions only one run has:")
	if len(p.Interventions) == 0 {
		fmt.Fprint(w, " none")
	}
	fmt.Fprintln(w)
	for _, iv := range p.Interventions {
		fmt.Fprintf(w, "  %s  %s\n", iv.Run, iv.Summary)
	}
	compareDiffs(w, "config differences (leaf by leaf)", p.Config)
	compareDiffs(w, "manifest differences", p.Manifest)
	return nil
}

func compareDiffs(w io.Writer, title string, ds []compare.FieldDiff) {
	fmt.Fprintf(w, "%s:", title)
	if len(ds) == 0 {
		fmt.Fprint(w, " none")
	}
	fmt.Fprintln(w)
	width := 0
	var absent []string
	for _, d := range ds {
		width = max(width, len(d.Field))
	}
	for _, d := range ds {
		if d.Absent != "" {
			absent = append(absent, d.Field+" (not in "+d.Absent+")")
			continue
		}
		fmt.Fprintf(w, "  %-*s  %s → %s\n", width, d.Field, clip(d.A), clip(d.B))
	}
	if len(absent) > 0 {
		fmt.Fprintf(w, "  in one file only (an older kestrel wrote the other; it takes the default): %s\n", strings.Join(absent, ", "))
	}
}

// clip shortens long values (hashes, arrays) for the table; the JSON has
// them whole.
func clip(s string) string {
	if len(s) > 48 {
		if !strings.ContainsAny(s, " ,") {
			return s[:16] + "…"
		}
		return s[:45] + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func differs(b bool) string {
	if b {
		return "  ≠"
	}
	return ""
}
