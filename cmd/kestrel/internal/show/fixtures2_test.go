package show

import (
	"math"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/eval"
	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/peak"
	"github.com/kestrel-lm/kestrel/internal/replay"
	"github.com/kestrel-lm/kestrel/internal/report"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
	"github.com/kestrel-lm/kestrel/internal/watchsrc"
	"github.com/kestrel-lm/kestrel/monitor"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

func replayFixture() *replay.Result {
	text := "ROMEO:\n\"But soft\""
	nan := replay.Float(math.NaN())
	return &replay.Result{Run: "runs/x", Checkpoint: "checkpoints/step-00000004", CkptStep: 4, Warnings: []string{"the dataset changed"},
		Probe: &replay.Probe{Loss: 2.5, Entropy: 3.25, TopKMass: 0.5, Positions: 256, LoggedLoss: 2.5, LastStep: 8, LastLoss: nan},
		Steps: []replay.Step{
			{Step: 4, DataStep: 4, Batch: 4, Loss: 2.75, GradNorm: 1.5, LoggedLoss: 2.75, LoggedGradNorm: nan, Rows: []replay.Row{
				{Row: 0, Source: "books", Docs: []replay.Doc{{ID: "b1"}, {ID: "b2", Offset: 17}}},
				{Row: 1, Source: "web", Epoch: 1, Docs: nil, Text: &text},
				{Row: 2, Source: "books", Docs: []replay.Doc{{ID: "b3"}}},
			}},
			{Step: 5, DataStep: 9, Batch: 4, Loss: 2.7, GradNorm: 1.25, LoggedLoss: nan, LoggedGradNorm: 1.25},
		}}
}

func evalFixture() *eval.Result {
	return &eval.Result{Run: "runs/x", Checkpoint: "checkpoints/step-00000100", Step: 100, EMA: true,
		Coverage: []eval.Coverage{{Task: "hellaswag", Status: eval.Decontaminated}, {Task: "piqa", Status: eval.NotDecontaminated, Detail: "the dataset has no provenance"}},
		MC:       []eval.MCResult{{Task: "piqa", N: 2, Acc: 0.5, AccStderr: 0.5, AccNorm: 1, ItemsPerSec: 12.25}},
		BPB:      []eval.BPBResult{{Name: "heldout/a", Tokens: 1000, Bytes: 4000, BPB: 1.2345, Seconds: 0.5}},
		NLL:      []eval.NLLResult{{Task: "gsm8k", N: 10, NatsPerB: 0.9, StderrNats: 0.01, BitsPerB: 1.3, StderrBits: 0.02, Truncated: 1, Seconds: 2}},
		Mem: &eval.MemResult{Prefix: 32, Cont: 32, Seconds: 1.5, Train: eval.MemSide{Split: "train", Docs: 8, ExactMatch: 0.125, Overlap: 0.5, OverlapStderr: 0.05},
			HeldOut: eval.MemSide{Split: "held-out", Docs: 8, Overlap: 0.25, OverlapStderr: 0.04}}}
}

func importFixture() *hf.Model {
	return &hf.Model{HF: hf.Config{Architectures: []string{"LlamaForCausalLM"}}, Weights: &safetensors.File{Tensors: make([]safetensors.Tensor, 12)},
		Converted: map[safetensors.DType]int{safetensors.BF16: 10, safetensors.F64: 1}, Ignored: []string{"lm_head.weight"}}
}

func statsFixture() tokenizer.Stats {
	return tokenizer.Stats{Bytes: 1000, Words: 200, Tokens: 300, Fertility: 1.5, BytesPerToken: 3.333, ContinuedWords: 0.25, VocabUsed: 150, VocabSize: 512, VocabUse: 150.0 / 512}
}

func peakFixtures() []*peak.BenchResult {
	at := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	key := peak.Key{CPU: "Intel Xeon", Impl: "avx512", Features: "avx512f,fma", Threads: 2}
	base := peak.BenchResult{Key: key, Threads: 2, Each: 250 * time.Millisecond, Probes: []float64{100.04, 101.26, 99.9}, GFLOPS: 101.26, Median: 100.04, Min: 99.9,
		CachePath: "/home/u/.cache/kestrel/peak.json", Cached: peak.Entry{GFLOPS: 101.26, MeasuredAt: at}}
	stored, prev, kept := base, base, base
	stored.Stored, stored.CacheWarning = true, "peak.json: unexpected EOF"
	prev.Stored, prev.Previous = true, &peak.Entry{GFLOPS: 95, MeasuredAt: at.AddDate(0, -1, 0)}
	kept.Cached = peak.Entry{GFLOPS: 120.55, MeasuredAt: at}
	return []*peak.BenchResult{&stored, &prev, &kept}
}

func verdictFixture() *report.Summary {
	return &report.Summary{Path: "runs/x/report/report.md", Plots: []string{"a.png", "b.png"}, Healthy: false, Checkpoints: 3,
		Verdicts: []string{"ok    val_loss fell 2.1 → 1.6", "WARN  2 SEV1 alerts"}}
}

func watchFixtures() []*watchsrc.Result {
	clean := &watchsrc.Result{Counts: watchsrc.Counts{monitor.SEV1: 2}, Report: watchsrc.Report{Samples: 120}}
	bad := &watchsrc.Result{Counts: watchsrc.Counts{monitor.SEV0: 1}, Report: watchsrc.Report{Samples: 80, BadLines: 3, FirstBad: "metrics.jsonl:7: bad json"}}
	badBytes := &watchsrc.Result{Counts: watchsrc.Counts{}, Report: watchsrc.Report{Samples: 5, BadLines: 1, BadBytes: 4096, FirstBad: "events.out.tfevents.1: crc"}}
	return []*watchsrc.Result{clean, bad, badBytes}
}

func inspectFixtures() []*shards.Inspection {
	m := &shards.Manifest{DatasetHash: "0123456789abcdef0123", Tokenizer: shards.TokenizerInfo{Hash: "fedcba9876543210ff", File: "tokenizer.json", VocabSize: 300},
		TokenBytes: 2, Separator: "<|endoftext|>", SeparatorID: 256, Shards: make([]shards.ShardInfo, 4), TotalTokens: 5000, TotalDocs: 40,
		Sources: []shards.SourceTotals{{Source: "books", TrainTokens: 3000, TrainDocs: 10, ValTokens: 100, ValDocs: 1}, {Source: "math", TrainTokens: 1000, TrainDocs: 28, ValTokens: 50, ValDocs: 1}}}
	full := &shards.Inspection{Dir: "datasets/x", Manifest: m, Counted: true, Legacy: []string{"books_train_000000.bin"}, Split: "train", Sources: []shards.SourceSample{
		{Source: "books", Tokens: 3000, Docs: 10, Shards: 1, Samples: []shards.DecodedDoc{{Index: 0, ID: "b0", Start: 0, Tokens: 12, Text: "First Citizen:\nBefore we proceed …\n\n"}}},
		{Source: "math", Tokens: 1000, Docs: 28, Shards: 1},
	}}
	cut := &shards.Inspection{Dir: "datasets/x", Manifest: m, Split: "val"}
	return []*shards.Inspection{full, cut, nil}
}
