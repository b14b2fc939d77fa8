package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// SampleChange is how one prompt's greedy text at a checkpoint compares
// with the previous checkpoint's.
type SampleChange struct {
	Prompt string
	Step   int // the checkpoint
	Prev   int // the previous checkpoint with a greedy text of Prompt (-1: none)
	// Same is true when the text did not change; else Common is the
	// length (runes) of the prefix both texts share.
	Same   bool
	Common int
	// Distinct is the share of distinct words among the text's words (1:
	// no word repeats; a model stuck in a loop drives it down).
	Distinct float64
}

// SampleChanges compares each prompt's greedy texts checkpoint by
// checkpoint, in the order of the checkpoints' steps.
func SampleChanges(gens []runlog.Generation) []SampleChange {
	var out []SampleChange
	prev := map[string]runlog.Generation{}
	for _, g := range sortedGens(gens) {
		if g.Mode != runlog.ModeGreedy {
			continue
		}
		c := SampleChange{Prompt: g.Prompt, Step: g.Step, Prev: -1, Distinct: distinctWords(g.Text)}
		if p, ok := prev[g.Prompt]; ok {
			c.Prev, c.Same, c.Common = p.Step, p.Text == g.Text, commonPrefix(p.Text, g.Text)
		}
		prev[g.Prompt] = g
		out = append(out, c)
	}
	return out
}

// sortedGens orders generations by step, keeping the file's order within
// a step (prompts as configured, greedy before sampled).
func sortedGens(gens []runlog.Generation) []runlog.Generation {
	out := append([]runlog.Generation(nil), gens...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out
}

func commonPrefix(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	n := 0
	for n < len(ra) && n < len(rb) && ra[n] == rb[n] {
		n++
	}
	return n
}

func distinctWords(s string) float64 {
	words := strings.Fields(s)
	if len(words) == 0 {
		return 0
	}
	seen := map[string]bool{}
	for _, w := range words {
		seen[w] = true
	}
	return float64(len(seen)) / float64(len(words))
}

// changeCell says what changed in words.
func (c SampleChange) changeCell() string {
	switch {
	case c.Prev < 0:
		return "first checkpoint"
	case c.Same:
		return fmt.Sprintf("same as step %d", c.Prev)
	case c.Common == 0:
		return fmt.Sprintf("all new (vs step %d)", c.Prev)
	default:
		return fmt.Sprintf("new after %d chars (vs step %d)", c.Common, c.Prev)
	}
}

// sampleCell shows a generated text in one markdown table cell: newlines
// as ⏎, markdown and HTML characters escaped, at most 200 runes.
func sampleCell(s string) string {
	s = clip(s, 200)
	return strings.NewReplacer("\n", "⏎", "\r", "", "|", "\\|", "`", "\\`", "*", "\\*", "_", "\\_", "<", "&lt;", ">", "&gt;", "[", "\\[", "]", "\\]", "#", "\\#").Replace(s)
}

// writeGenerations writes the samples recorded at each checkpoint
// (samples.jsonl): per prompt, the greedy text at every checkpoint with
// what changed since the previous one, then the sampled texts. It returns
// how many checkpoints have generations.
func writeGenerations(b *strings.Builder, gens []runlog.Generation, bad string, skipped int) int {
	b.WriteString("## Samples\n\n")
	if skipped > 0 {
		fmt.Fprintf(b, "%d unreadable lines of samples.jsonl were skipped (the first: %s).\n\n", skipped, mdCell(bad))
	}
	if len(gens) == 0 {
		b.WriteString("No samples were recorded at checkpoints ([samples] off, or no checkpoint yet).\n\n")
		return 0
	}
	gens = sortedGens(gens)
	steps, prompts := map[int]bool{}, []string{}
	seenPrompt := map[string]bool{}
	for _, g := range gens {
		steps[g.Step] = true
		if !seenPrompt[g.Prompt] {
			seenPrompt[g.Prompt] = true
			prompts = append(prompts, g.Prompt)
		}
	}
	g0 := gens[0]
	fmt.Fprintf(b, "Generated from each checkpoint's %s weights (`samples.jsonl`, %d checkpoints): greedy, and sampled at temperature %.2g, top-k %d, seed %d, %d tokens. Read down a prompt's column of texts: words, then spelling, then sense should appear; a text that stops changing or repeats itself (few distinct words) is a model that stopped learning or collapsed.\n\n",
		g0.Weights, len(steps), sampledTemp(gens), sampledTopK(gens), g0.Seed, g0.Tokens)
	changes := SampleChanges(gens)
	for _, p := range prompts {
		fmt.Fprintf(b, "### Prompt %s\n\n| step | greedy | what changed | distinct words | sampled |\n|---:|---|---|---:|---|\n", promptName(p))
		for _, c := range changes {
			if c.Prompt != p {
				continue
			}
			fmt.Fprintf(b, "| %d | %s | %s | %.2f | %s |\n", c.Step, sampleCell(textOf(gens, c.Step, p, runlog.ModeGreedy)), c.changeCell(), c.Distinct, sampleCell(textOf(gens, c.Step, p, runlog.ModeSampled)))
		}
		b.WriteString("\n")
	}
	return len(steps)
}

func promptName(p string) string {
	if p == "" {
		return "(empty: the start of a document)"
	}
	return "`" + strings.ReplaceAll(p, "`", "'") + "`"
}

func textOf(gens []runlog.Generation, step int, prompt, mode string) string {
	for _, g := range gens {
		if g.Step == step && g.Prompt == prompt && g.Mode == mode {
			return g.Text
		}
	}
	return ""
}

func sampledTemp(gens []runlog.Generation) float64 {
	for _, g := range gens {
		if g.Mode == runlog.ModeSampled {
			return g.Temperature
		}
	}
	return 0
}

func sampledTopK(gens []runlog.Generation) int {
	for _, g := range gens {
		if g.Mode == runlog.ModeSampled {
			return g.TopK
		}
	}
	return 0
}
