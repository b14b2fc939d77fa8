package monitor

import (
	"fmt"
	"io"
	"strings"
)

//go:generate go test -run TestDocsUpToDate -update .

// WriteMetricsDoc writes docs/metrics.md: the registry as Markdown tables,
// one per category, in panel order.
func WriteMetricsDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Metrics\n\n")
	b.WriteString("Generated from `monitor/registry.go` (`go generate ./monitor`); a test fails when this file is stale.\n\n")
	b.WriteString("One name, one meaning, one unit. Per-layer/head and per-source variants append a suffix: `max_attn_logit/layer3/head1`, `source_mix_share/web`. ")
	b.WriteString("★ marks the nano must-have checklist of seed 004 (plus the per-step vitals of issue 8).\n")
	cat := ""
	for _, m := range catalog {
		if m.Category != cat {
			cat = m.Category
			fmt.Fprintf(&b, "\n## %s\n\n| name | unit | kind | sampling | variants | meaning |\n|---|---|---|---|---|---|\n", cat)
		}
		star := ""
		if m.Nano {
			star = " ★"
		}
		vars := ""
		for i, v := range m.Variants {
			if i > 0 {
				vars += ", "
			}
			vars += "`" + m.Name + "/" + v + "`"
		}
		fmt.Fprintf(&b, "| `%s`%s | %s | %s | %s | %s | %s |\n", m.Name, star, m.Unit, m.Kind, m.Sampling, vars, mdEscape(m.Help))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRunbooksDoc writes docs/runbooks.md: every alert rule with its
// severity, meaning, evidence to capture, containment and verification.
func WriteRunbooksDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Alert runbooks\n\n")
	b.WriteString("Generated from `monitor/runbooks.go` (`go generate ./monitor`); a test fails when this file is stale. ")
	b.WriteString("Every alert in `alerts.jsonl` carries its rule's text below. Thresholds are `[monitor]` config keys (`kestrel config --defaults`).\n\n")
	b.WriteString("| severity | action |\n|---|---|\n")
	b.WriteString("| SEV0 | pause: the trainer stops without writing a new checkpoint, the last good checkpoint is kept, an evidence bundle goes to `incidents/<time>-<rule>/` |\n")
	b.WriteString("| SEV1 | contain quickly: reduce LR / enable guards, raise sampling, prepare a rollback |\n")
	b.WriteString("| SEV2 | investigate: localise the shard or phase, run a canary |\n")
	for _, r := range runbooks {
		fmt.Fprintf(&b, "\n## %s\n\n**%s — %s.**\n\n", r.Rule, r.Severity, r.Title)
		fmt.Fprintf(&b, "- **Meaning:** %s\n- **Capture:** %s\n- **Contain:** %s\n- **Verify:** %s\n", r.Meaning, r.Capture, r.Contain, r.Verify)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
