package hf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

func tinyConfig(qk, tied bool) model.Config {
	c := model.DefaultConfig()
	c.Vocab, c.DModel, c.NLayers, c.NHeads, c.NKVHeads, c.MLPHidden, c.SeqLen = 300, 32, 2, 4, 2, 48, 16
	c.QKNorm, c.Tied = qk, tied
	return c
}

func export(t *testing.T, dir string, c model.Config, seed uint64) *model.Model {
	t.Helper()
	m, err := model.New(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	eot := &Special{ID: 299, Content: "<|endoftext|>"}
	err = Write(dir, Export{Config: c, Tensors: m.Tensors(), Params: m.Params, Tokens: Tokens{BOS: eot, EOS: eot, PAD: eot}, Tokenizer: []byte("{}\n"), Card: "# card\n"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRoundTrip: Write then Load gives the same config and bit-identical
// weights, for Llama and Qwen3, tied and untied.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		qk, tied bool
		arch     string
	}{{"llama", false, false, LlamaArch}, {"llama-tied", false, true, LlamaArch}, {"qwen3", true, false, Qwen3Arch}, {"qwen3-tied", true, true, Qwen3Arch}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hf")
			c := tinyConfig(tc.qk, tc.tied)
			m := export(t, dir, c, 7)
			got, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Config != c {
				t.Errorf("config %+v, want %+v", got.Config, c)
			}
			if got.HF.Architectures[0] != tc.arch || *got.HF.EOSTokenID != 299 {
				t.Errorf("config.json %+v", got.HF)
			}
			for _, tn := range m.Tensors() {
				st, ok := got.Weights.Get(tn.Name)
				if !ok {
					t.Fatalf("%s missing", tn.Name)
				}
				v, _ := st.Float32()
				for i, x := range v {
					if math.Float32bits(x) != math.Float32bits(m.Params[tn.Offset+i]) {
						t.Fatalf("%s[%d] = %g, want %g", tn.Name, i, x, m.Params[tn.Offset+i])
					}
				}
			}
			if len(got.Weights.Tensors) != len(m.Tensors()) {
				t.Errorf("%d tensors, want %d", len(got.Weights.Tensors), len(m.Tensors()))
			}
		})
	}
}

// TestConfigKeys: no kestrel-only keys, explicit token ids (null when the
// vocabulary has none), the metadata transformers requires.
func TestConfigKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hf")
	export(t, dir, tinyConfig(false, true), 1)
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		if strings.HasPrefix(k, "kestrel") {
			t.Errorf("config.json has %s", k)
		}
	}
	for _, k := range []string{"bos_token_id", "eos_token_id", "tie_word_embeddings", "rope_theta", "rms_norm_eps", "head_dim", "torch_dtype"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("config.json lacks %s", k)
		}
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, WeightsFile))
	if err != nil || f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v %v", f, err)
	}
	hc := FromModel(tinyConfig(false, false), Tokens{})
	b, _ = json.Marshal(hc)
	if !strings.Contains(string(b), `"bos_token_id":null`) || !strings.Contains(string(b), `"eos_token_id":null`) {
		t.Errorf("byte-level ids not null: %s", b)
	}
}

func TestExpressible(t *testing.T) {
	c := tinyConfig(false, false)
	m, _ := model.New(c, 1)
	if err := Expressible(c, m.Tensors()); err != nil {
		t.Fatal(err)
	}
	nope := c
	nope.NoPEEvery = 2
	extra := append(m.Tensors(), model.Tensor{Name: "model.layers.0.mlp.experts.0.up_proj.weight", Shape: []int{48, 32}})
	for name, tc := range map[string]struct {
		c    model.Config
		ts   []model.Tensor
		want string
	}{
		"nope": {nope, m.Tensors(), "nope_every = 2"},
		"moe":  {c, extra, "experts.0.up_proj"},
	} {
		err := Expressible(tc.c, tc.ts)
		if !errors.Is(err, ErrNotExpressible) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrNotExpressible naming %q", name, err, tc.want)
		}
		dir := filepath.Join(t.TempDir(), "hf")
		if err := Write(dir, Export{Config: tc.c, Tensors: tc.ts[:len(m.Tensors())], Params: m.Params}); name == "nope" && err == nil {
			t.Errorf("%s: Write accepted it", name)
		}
		if err := Write(dir, Export{Config: tc.c, Tensors: m.Tensors(), Params: m.Params, Force: true}); err != nil {
			t.Errorf("%s: forced Write: %v", name, err)
		}
	}
	// a real MoE model: the config names it, and its tensors are outside
	mc := c
	mc.MoEEvery = 1
	mm, err := model.New(mc, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := Expressible(mc, mm.Tensors()); !errors.Is(err, ErrNotExpressible) || !strings.Contains(err.Error(), "moe_every = 1") || !strings.Contains(err.Error(), "outside the Llama/Qwen3 layout") {
		t.Errorf("MoE model: %v", err)
	}
	doc := c
	doc.DocMask, doc.ZLoss = true, 1e-4
	if err := Expressible(doc, m.Tensors()); err != nil {
		t.Errorf("doc_mask/z_loss refused: %v", err)
	}
}

// bf16 rounds a float32 to the nearest bfloat16 (ties to even).
func bf16(x float32) uint16 {
	b := math.Float32bits(x)
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// f16 rounds a float32 in F16's range to the nearest binary16 (ties to
// even), subnormals included.
func f16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	a := math.Abs(float64(x))
	if a < math.Ldexp(1, -14) { // subnormal: multiples of 2^-24
		return sign | uint16(math.RoundToEven(a*math.Ldexp(1, 24)))
	}
	e := int(b>>23&0xff) - 127 + 15
	m := b & 0x7fffff
	h := uint32(e)<<10 | m>>13
	if r := m & 0x1fff; r > 0x1000 || (r == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// TestSharded: a directory with model.safetensors.index.json and BF16 or
// F16 shards loads, converted to float32.
func TestSharded(t *testing.T) {
	for _, dt := range []safetensors.DType{safetensors.BF16, safetensors.F16} {
		t.Run(string(dt), func(t *testing.T) { testSharded(t, dt) })
	}
}

func testSharded(t *testing.T, dt safetensors.DType) {
	enc := bf16
	if dt == safetensors.F16 {
		enc = f16
	}
	src := filepath.Join(t.TempDir(), "src")
	c := tinyConfig(true, false)
	m := export(t, src, c, 3)
	dir := t.TempDir()
	cfg, _ := os.ReadFile(filepath.Join(src, ConfigFile))
	os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644)
	var shards [2][]safetensors.Tensor
	wm := map[string]string{}
	for i, tn := range m.Tensors() {
		data := make([]byte, 2*tn.Size)
		for j, x := range m.Params[tn.Offset : tn.Offset+tn.Size] {
			binary.LittleEndian.PutUint16(data[2*j:], enc(x))
		}
		k := i % 2
		shards[k] = append(shards[k], safetensors.Tensor{Name: tn.Name, DType: dt, Shape: tn.Shape, Data: data})
		wm[tn.Name] = []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[k]
	}
	shards[0] = append(shards[0], safetensors.FromFloat32("model.layers.0.self_attn.rotary_emb.inv_freq", []int{4}, make([]float32, 4)))
	wm["model.layers.0.self_attn.rotary_emb.inv_freq"] = "model-00001-of-00002.safetensors"
	for k, f := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
		if err := safetensors.WriteFile(filepath.Join(dir, f), shards[k], nil); err != nil {
			t.Fatal(err)
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 1}, "weight_map": wm})
	os.WriteFile(filepath.Join(dir, IndexFile), idx, 0o644)
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Converted[dt] != len(m.Tensors()) || len(got.Ignored) != 1 {
		t.Errorf("converted %v ignored %v", got.Converted, got.Ignored)
	}
	tn := m.Tensors()[1]
	st, _ := got.Weights.Get(tn.Name)
	v, _ := st.Float32()
	for j, x := range v {
		p := float64(m.Params[tn.Offset+j])
		tol := math.Abs(p) / 256 // bf16 keeps 8 significant bits, f16 11
		if dt == safetensors.F16 {
			tol = math.Max(math.Abs(p)/2048, math.Ldexp(1, -25))
		}
		if math.Abs(float64(x)-p) > tol {
			t.Fatalf("%s[%d] = %g, want %g within %g", tn.Name, j, x, p, tol)
		}
		if dt == safetensors.BF16 && x != math.Float32frombits(uint32(bf16(m.Params[tn.Offset+j]))<<16) {
			t.Fatalf("%s[%d] = %g: not the bf16 decoding", tn.Name, j, x)
		}
	}
	// A shard that lacks a tensor its index names is an error naming both.
	delete(wm, "model.norm.weight")
	wm["model.norm.weight"] = "model-00002-of-00002.safetensors"
	if m.Tensors()[len(m.Tensors())-2].Name == "model.norm.weight" {
		wm["model.norm.weight"] = "model-00001-of-00002.safetensors"
	}
	idx, _ = json.Marshal(map[string]any{"weight_map": wm})
	os.WriteFile(filepath.Join(dir, IndexFile), idx, 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "model.norm.weight") {
		t.Errorf("wrong index: %v", err)
	}
}

// TestLoadErrors: bad shapes, missing and unknown tensors and settings
// kestrel cannot compute are errors naming the tensor or key.
func TestLoadErrors(t *testing.T) {
	c := tinyConfig(false, false)
	edit := func(t *testing.T, dir string, fn func(map[string]any)) {
		p := filepath.Join(dir, ConfigFile)
		b, _ := os.ReadFile(p)
		var m map[string]any
		json.Unmarshal(b, &m)
		fn(m)
		b, _ = json.Marshal(m)
		os.WriteFile(p, b, 0o644)
	}
	for _, tc := range []struct {
		name string
		fn   func(map[string]any)
		want string
	}{
		{"shape", func(m map[string]any) { m["intermediate_size"] = 64 }, "mlp.gate_proj.weight: shape [48 32] in"},
		{"tied-missing", func(m map[string]any) { m["num_hidden_layers"] = 3 }, "model.layers.2.input_layernorm.weight [32]: missing"},
		{"unknown", func(m map[string]any) { m["num_hidden_layers"] = 1 }, "no place for: model.layers.1.input_layernorm.weight"},
		{"bias", func(m map[string]any) { m["attention_bias"] = true }, "attention_bias"},
		{"arch", func(m map[string]any) { m["architectures"] = []string{"GPT2LMHeadModel"} }, "GPT2LMHeadModel"},
		{"rope", func(m map[string]any) { m["rope_scaling"] = map[string]any{"type": "linear"} }, "rope_scaling"},
		{"head_dim", func(m map[string]any) { m["head_dim"] = 16 }, "head_dim"},
		{"rope_type", func(m map[string]any) {
			m["rope_parameters"] = map[string]any{"rope_type": "llama3", "rope_theta": 500000}
		}, "rope_parameters.rope_type"},
		{"rope_theta_disagree", func(m map[string]any) {
			m["rope_parameters"] = map[string]any{"rope_type": "default", "rope_theta": 500000}
		}, "disagrees with rope_theta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hf")
			export(t, dir, c, 1)
			edit(t, dir, tc.fn)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestWriteReplaces: an earlier export (it carries the export manifest) is
// replaced; a downloaded model folder (config.json and the user's notes, no
// manifest) is refused unless Overwrite, a regular file or a symbolic link
// never; every refused path is named and left as it was.
func TestWriteReplaces(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "hf")
	export(t, dir, tinyConfig(false, false), 1)
	export(t, dir, tinyConfig(true, true), 2)
	got, err := Load(dir)
	if err != nil || !got.Config.QKNorm {
		t.Fatalf("re-export: %v %+v", err, got)
	}
	user := filepath.Join(root, "downloaded")
	os.Mkdir(user, 0o755)
	os.WriteFile(filepath.Join(user, ConfigFile), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(user, "notes.txt"), []byte("keep"), 0o644)
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("keep"), 0o644)
	link := filepath.Join(root, "link")
	os.Symlink(dir, link)
	c := tinyConfig(false, false)
	m, _ := model.New(c, 1)
	for _, tc := range []struct {
		path      string
		overwrite bool
		want      string // "" = written
		keep      string // a file that must survive a refusal
	}{
		{user, false, "is not a Hugging Face export kestrel wrote (no " + ExportManifestFile + " in it)", filepath.Join(user, "notes.txt")},
		{file, false, "is a regular file, not a directory", file},
		{file, true, "is a regular file, not a directory", file},
		{link, true, "is a symbolic link", filepath.Join(dir, ExportManifestFile)},
		{user, true, "", ""},
	} {
		err := Write(tc.path, Export{Config: c, Tensors: m.Tensors(), Params: m.Params, Overwrite: tc.overwrite})
		if tc.want == "" {
			if err != nil || !fileExists(filepath.Join(tc.path, ExportManifestFile)) {
				t.Errorf("%s (overwrite %v): %v; want it written with its manifest", tc.path, tc.overwrite, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (overwrite %v): %v; want %q", tc.path, tc.overwrite, err, tc.want)
		}
		if b, err := os.ReadFile(tc.keep); err != nil || (tc.keep != filepath.Join(dir, ExportManifestFile) && string(b) != "keep") {
			t.Errorf("%s: %s touched: %q %v", tc.path, tc.keep, b, err)
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestToModelDefaults: absent keys take transformers' defaults (no tying,
// Qwen3's head_dim 128, θ 10000, ε 1e-6, key/value heads = heads), and
// transformers v5's rope_parameters replace rope_theta.
func TestToModelDefaults(t *testing.T) {
	base := func(arch string) Config {
		return Config{Architectures: []string{arch}, VocabSize: 100, HiddenSize: 256, IntermediateSize: 64, NumHiddenLayers: 1, NumAttentionHeads: 2, MaxPositionEmbeddings: 64}
	}
	c, err := base(Qwen3Arch).ToModel()
	if err != nil || c.Tied || !c.QKNorm || c.NKVHeads != 2 || c.RopeTheta != 10000 || c.NormEps != 1e-6 {
		t.Errorf("qwen3 defaults: %+v %v", c, err)
	}
	q := base(Qwen3Arch)
	q.NumAttentionHeads = 4 // head_dim 128 (default) × 4 ≠ 256
	if _, err := q.ToModel(); err == nil || !strings.Contains(err.Error(), "head_dim") {
		t.Errorf("qwen3 with the default head_dim 128 and 4 heads of 256: %v", err)
	}
	l := base(LlamaArch)
	l.NumAttentionHeads, l.RopeParameters = 4, &RopeParameters{RopeType: "default", RopeTheta: 5e5}
	if c, err := l.ToModel(); err != nil || c.RopeTheta != 5e5 || c.QKNorm {
		t.Errorf("llama with rope_parameters: %+v %v", c, err)
	}
}
