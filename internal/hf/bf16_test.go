package hf

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// TestBF16RoundTrip: an export with DType BF16 writes BF16 tensors (half
// the bytes of F32), config.json's torch_dtype "bfloat16" and the dtype in
// the export manifest; Load reads it back as float32 with every weight the
// nearest bf16 of the original (kernels.RoundBF16, bit for bit) and counts
// the converted tensors; an unknown dtype is refused before anything is
// written.
func TestBF16RoundTrip(t *testing.T) {
	c := tinyConfig(true, false)
	m, err := model.New(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	eot := &Special{ID: 299, Content: "<|endoftext|>"}
	write := func(dir string, dt safetensors.DType) error {
		return Write(dir, Export{Config: c, Tensors: m.Tensors(), Params: m.Params, Tokens: Tokens{BOS: eot, EOS: eot, PAD: eot},
			Tokenizer: []byte("{}\n"), Card: "# card\n", DType: dt})
	}
	d32, d16 := filepath.Join(t.TempDir(), "f32"), filepath.Join(t.TempDir(), "bf16")
	if err := write(d32, ""); err != nil {
		t.Fatal(err)
	}
	if err := write(d16, safetensors.BF16); err != nil {
		t.Fatal(err)
	}
	got, err := Load(d16)
	if err != nil {
		t.Fatal(err)
	}
	if got.HF.TorchDType != "bfloat16" || got.Converted[safetensors.BF16] != len(m.Tensors()) || got.Config != c {
		t.Errorf("torch_dtype %q, converted %v, config %+v", got.HF.TorchDType, got.Converted, got.Config)
	}
	for _, tn := range m.Tensors() {
		st, _ := got.Weights.Get(tn.Name)
		v, err := st.Float32()
		if err != nil {
			t.Fatalf("%s: %v", tn.Name, err)
		}
		for i, x := range v {
			if want := kernels.RoundBF16(m.Params[tn.Offset+i]); math.Float32bits(x) != math.Float32bits(want) {
				t.Fatalf("%s[%d] = %g, want bf16(%g) = %g", tn.Name, i, x, m.Params[tn.Offset+i], want)
			}
		}
	}
	s32, _ := os.Stat(filepath.Join(d32, WeightsFile))
	s16, _ := os.Stat(filepath.Join(d16, WeightsFile))
	if ratio := float64(s16.Size()) / float64(s32.Size()); ratio > 0.51 || ratio < 0.49 {
		t.Errorf("BF16 file %d bytes, F32 %d: ratio %.3f, want ≈ 0.5", s16.Size(), s32.Size(), ratio)
	}
	var man map[string]any
	raw, _ := os.ReadFile(filepath.Join(d16, ExportManifestFile))
	if json.Unmarshal(raw, &man) != nil || man["dtype"] != "BF16" {
		t.Errorf("export manifest %s", raw)
	}
	if g32, _ := Load(d32); g32.HF.TorchDType != "float32" {
		t.Errorf("F32 export torch_dtype %q", g32.HF.TorchDType)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := write(bad, safetensors.F16); err == nil || !strings.Contains(err.Error(), "F16") {
		t.Errorf("F16 export: %v", err)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a refused export left its directory")
	}
}
