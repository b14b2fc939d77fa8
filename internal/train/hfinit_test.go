package train

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// TestWarmStartFromHF: init.from = "hf:DIR" copies every weight of a
// Hugging Face directory bit for bit, with the usual report; modes that
// need optimizer state are refused.
func TestWarmStartFromHF(t *testing.T) {
	o := baseOpts(t.TempDir())
	src, err := model.New(o.Model, 5)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := hf.Write(dir, hf.Export{Config: o.Model, Tensors: src.Tensors(), Params: src.Params, Tokenizer: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"weights", "weights+optimizer", "full"} {
		tr := &trainer{o: o, log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
		tr.o.Init = InitConfig{From: HFPrefix + dir, Mode: mode}
		tr.net, _ = NewModelNet(tr.o.Model, 99)
		tr.ts = tr.net.Tensors()
		var spans []optim.Span
		for _, x := range tr.ts {
			spans = append(spans, optim.Span{Name: x.Name, Offset: x.Offset, Size: x.Size, Kind: x.Kind})
		}
		tr.opt, _ = optim.NewAdamW(tr.o.Optim, len(tr.net.Params()), spans)
		rep, err := tr.warmStart()
		if mode != "weights" {
			if err == nil || !strings.Contains(err.Error(), `init.mode = "weights"`) {
				t.Errorf("mode %s: %v, want a refusal naming init.mode", mode, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tr.net.Params(), src.Params) {
			t.Error("weights differ from the Hugging Face directory's")
		}
		if rep.From != HFPrefix+dir || len(rep.Copied) != len(tr.ts) || len(rep.Initialized)+len(rep.Mismatched)+len(rep.Unused) != 0 {
			t.Errorf("report %+v", rep)
		}
	}
	if _, _, err := LoadModel(HFPrefix+dir, true, nil); err == nil {
		t.Error("LoadModel(ema) of a Hugging Face directory succeeded")
	}
	if m, _, err := LoadModel(HFPrefix+dir, false, nil); err != nil || !slices.Equal(m.Params, src.Params) {
		t.Errorf("LoadModel: %v", err)
	}
}
