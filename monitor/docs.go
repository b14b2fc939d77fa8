package monitor

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

//go:generate go test -run TestDocsUpToDate -update .

// WriteMetricsDoc writes docs/metrics.md: the registry as Markdown tables,
// one per category, then the dashboard panels and report plots it drives.
func WriteMetricsDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Metrics\n\n")
	b.WriteString("Generated from `monitor/registry.go` (`go generate ./monitor`); a test fails when this file is stale.\n\n")
	b.WriteString("One name, one meaning, one unit. Per-layer/head and per-source variants append a suffix: `max_attn_logit/layer3/head1`, `source_mix_share/web`. ")
	b.WriteString("★ marks the nano must-have checklist of seed 004 (plus the per-step vitals of issue 8). ")
	b.WriteString("The registry is the one list: Prometheus serves each name with its kind and unit (a gauge as `kestrel_<name>`, a counter as `kestrel_<name>_total`, seconds and bytes with `_seconds` / `_bytes`; variants as the `variant` label; see Prometheus names below), ")
	b.WriteString("the dashboard draws the panels below (`GET /api/panels`) and the report the plots below. Aliases are other trainers' names for the same quantity, drawn beside it.\n")
	writeMetricTables(&b)
	writePanelTable(&b)
	writePlotTable(&b)
	writePromNames(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMetricTables writes one table of metrics per category.
func writeMetricTables(b *strings.Builder) {
	panelTitle := map[string]string{}
	for _, g := range panelGroups {
		for _, p := range g.Panels {
			panelTitle[p.ID] = p.Title
		}
	}
	cat := ""
	for _, m := range catalog {
		if m.Category != cat {
			cat = m.Category
			fmt.Fprintf(b, "\n## %s\n\n| name | unit | kind | sampling | variants | panel | meaning |\n|---|---|---|---|---|---|---|\n", cat)
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
		var panel []string
		if m.Panel != "" {
			panel = append(panel, panelTitle[m.Panel])
		}
		if m.VariantPanel != "" && m.VariantPanel != m.Panel {
			panel = append(panel, "variants: "+panelTitle[m.VariantPanel])
		}
		if m.Plot != "" {
			panel = append(panel, "report `"+m.Plot+"`")
		}
		help := mdEscape(m.Help)
		if len(m.Aliases) > 0 {
			help += " (aliases: `" + strings.Join(m.Aliases, "`, `") + "`)"
		}
		if m.NotEmitted != "" {
			help += " — not emitted by kestrel train: " + mdEscape(m.NotEmitted)
		}
		fmt.Fprintf(b, "| `%s`%s | %s | %s | %s | %s | %s | %s |\n", m.Name, star, m.Unit, m.Kind, m.Sampling, vars, mdEscape(strings.Join(panel, "; ")), help)
	}
}

// writePanelTable writes the dashboard panels and the names each draws.
func writePanelTable(b *strings.Builder) {
	b.WriteString("\n## Dashboard panels\n\n| group | panel | draws |\n|---|---|---|\n")
	for _, g := range panelGroups {
		for _, p := range g.Panels {
			var names []string
			for _, m := range catalog {
				if m.Panel == p.ID {
					names = append(names, m.Name)
				}
				if m.VariantPanel == p.ID {
					names = append(names, m.Name+"/…")
				}
			}
			extra := ""
			if p.Split {
				extra = " (one chart per layer)"
			}
			if p.Threshold != "" {
				extra = " (dashed: `" + p.Threshold + "`)"
			}
			fmt.Fprintf(b, "| %s | %s%s | %s |\n", mdEscape(g.Title), mdEscape(p.Title), extra, "`"+strings.Join(names, "`, `")+"`")
		}
	}
}

// writePlotTable writes the report plots and the names each draws.
func writePlotTable(b *strings.Builder) {
	b.WriteString("\n## Report plots\n\n| file | title | draws |\n|---|---|---|\n")
	for _, p := range plots {
		var names []string
		for _, m := range catalog {
			if m.Plot == p.File && m.Panel != "" {
				names = append(names, m.Name)
			}
			if m.variantPlot() == p.File {
				if slices.Contains(m.Variants, layerVar) {
					for _, v := range m.Variants {
						if v != layerHeadVar && v != sourceVar {
							names = append(names, m.Name+"/"+v)
						}
					}
				} else {
					names = append(names, m.Name+"/…")
				}
			}
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", p.File, mdEscape(p.Title), "`"+strings.Join(names, "`, `")+"`")
	}
}

// writePromNames lists the registry names whose Prometheus name is more
// than kestrel_<name> (see PromName).
func writePromNames(b *strings.Builder) {
	b.WriteString("\n## Prometheus names\n\n")
	b.WriteString("`monitor.prometheus_addr` serves `/metrics` in the Prometheus text format, passing `promtool check metrics` (the test runs client_golang's promlint, and promtool where installed). ")
	b.WriteString("Every name above is served as `kestrel_<name>` except these, which follow the Prometheus naming conventions (`_total` on counters, base units in the name, no abbreviations). ")
	b.WriteString("Before 2026-11 only the `_total` suffix was applied: scrapers, dashboards and alert rules that read `kestrel_step_time`, `kestrel_tokens_per_sec`, `kestrel_adam_m_norm`, `kestrel_last_step_unix_time` … need the names below. ")
	b.WriteString("Names outside the registry are served untyped as `kestrel_<name>`; the sink's own series are `kestrel_step` and `kestrel_alerts_total{severity,rule}`.\n\n")
	b.WriteString("The endpoint applies the dashboard's Host-header rule (`internal/hostcheck`, the defence against DNS rebinding): a request's `Host` must carry the port and name the address the connection arrived on (its IP literal), a loopback name (`localhost`, `127.0.0.1`, `[::1]`) when that address is loopback, or the host name of `monitor.prometheus_addr` when it is a name; any other Host gets 403 with a message saying which hosts would do. ")
	b.WriteString("A scraper on another machine therefore targets the address or the name the endpoint listens on, not an alias of it.\n\n")
	b.WriteString("| name | Prometheus |\n|---|---|\n")
	for _, m := range catalog {
		if n := PromName(m.Name); n != "kestrel_"+m.Name {
			fmt.Fprintf(b, "| `%s` | `%s` |\n", m.Name, n)
		}
	}
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
