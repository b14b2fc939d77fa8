package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// recTracer records the op tree as "depth:name" lines.
type recTracer struct {
	depth int
	ops   []string
	bad   int // End without Begin
}

func (r *recTracer) Begin(op string, layer int) {
	name := op
	if layer >= 0 {
		name = fmt.Sprintf("layer%d/%s", layer, op)
	}
	r.ops = append(r.ops, fmt.Sprintf("%d:%s", r.depth, name))
	r.depth++
}

func (r *recTracer) End() {
	if r.depth == 0 {
		r.bad++
		return
	}
	r.depth--
}

// TestOpTracer: with a tracer set, ForwardBackward reports balanced, nested
// op spans for every layer (attention and MLP with their GEMMs, lm_head,
// cross-entropy and the backward ops) and computes bit-identical
// gradients; QK-Norm on and off.
func TestOpTracer(t *testing.T) {
	for _, qk := range []bool{true, false} {
		t.Run(fmt.Sprintf("qknorm=%v", qk), func(t *testing.T) {
			cfg := tinyConfig()
			cfg.QKNorm = qk
			b := tinyBatch(cfg, 2, cfg.SeqLen, 3)
			plain, err := New(cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			traced, _ := New(cfg, 5)
			rec := &recTracer{}
			traced.Trace = rec
			st1, err := plain.ForwardBackward(b, 1)
			if err != nil {
				t.Fatal(err)
			}
			st2, err := traced.ForwardBackward(b, 1)
			if err != nil {
				t.Fatal(err)
			}
			if st1.Loss != st2.Loss || !slices.Equal(plain.Grads, traced.Grads) {
				t.Fatal("tracing changed the numerics")
			}
			if rec.depth != 0 || rec.bad != 0 {
				t.Fatalf("unbalanced spans: depth %d, %d stray ends", rec.depth, rec.bad)
			}
			for _, want := range []string{"0:embedding", "0:layer1/attention", "1:layer1/qkv_gemm", "1:layer1/attn_core", "1:layer1/o_proj_gemm",
				"0:layer0/mlp", "1:layer0/gate_up_gemm", "1:layer0/down_gemm", "0:lm_head", "1:lm_head_gemm", "0:cross_entropy",
				"0:lm_head_backward", "1:lm_head_gemm_backward", "0:layer1/mlp_backward", "1:layer1/down_gemm_backward",
				"0:layer0/attention_backward", "1:layer0/qkv_gemm_backward", "1:layer0/attn_core_backward", "0:embedding_backward"} {
				if !slices.Contains(rec.ops, want) {
					t.Errorf("no span %s in %v", want, rec.ops)
				}
			}
			// per layer 7 forward + 7 backward spans; outside the blocks the
			// embedding and its backward, the fused training head of one
			// chunk (lm_head ⊃ lm_head_gemm, cross_entropy, lm_head_backward
			// ⊃ lm_head_gemm_backward) and the final norm's lm_head_backward
			if n := len(rec.ops); n != 8+14*cfg.NLayers {
				t.Errorf("%d spans, want %d", n, 8+14*cfg.NLayers)
			}
			head := []string{"0:lm_head", "1:lm_head_gemm", "0:cross_entropy", "0:lm_head_backward", "1:lm_head_gemm_backward",
				"0:lm_head_backward", fmt.Sprintf("0:layer%d/mlp_backward", cfg.NLayers-1)}
			if i := slices.Index(rec.ops, "0:lm_head"); i < 0 || !slices.Equal(rec.ops[i:min(len(rec.ops), i+len(head))], head) {
				t.Errorf("head spans %v, want %v", rec.ops[max(i, 0):], head)
			}
			// Forward alone stays balanced and has no backward spans
			rec2 := &recTracer{}
			traced.Trace = rec2
			if _, err := traced.Forward(b); err != nil {
				t.Fatal(err)
			}
			if rec2.depth != 0 || slices.Contains(rec2.ops, "0:embedding_backward") {
				t.Fatalf("forward-only spans: %v", rec2.ops)
			}
		})
	}
}

// TestOpFLOPs: the FLOPs credited per op sum to FLOPsPerToken·tokens
// (GQA with QK-Norm and a tied head, MQA untied without QK-Norm, MoE with
// and without a shared expert), every op named is
// one the tracer reports, and ref7m's GEMMs match the products written
// out by hand.
func TestOpFLOPs(t *testing.T) {
	mqa := tinyConfig()
	mqa.NKVHeads, mqa.QKNorm, mqa.Tied = 1, false, false
	noShared := moeConfig()
	noShared.MoESharedExpert = false
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"gqa", tinyConfig()}, {"mqa", mqa}, {"moe", moeConfig()}, {"moe-no-shared", noShared}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			const B = 2
			tokens := B * tc.cfg.SeqLen
			fl := m.OpFLOPs(tokens)
			var sum float64
			for _, v := range fl {
				sum += v
			}
			if want := m.FLOPsPerToken() * float64(tokens); math.Abs(sum-want) > 1e-9*want {
				t.Fatalf("ops sum to %g FLOPs, FLOPsPerToken·tokens = %g", sum, want)
			}
			rec := &recTracer{}
			m.Trace = rec
			if _, err := m.ForwardBackward(RandomBatch(tc.cfg, B, rand.New(rand.NewPCG(3, 4))), 1); err != nil {
				t.Fatal(err)
			}
			traced := map[string]bool{}
			for _, line := range rec.ops {
				name := line[strings.Index(line, ":")+1:]
				traced[name[strings.Index(name, "/")+1:]] = true
			}
			for op, v := range fl {
				if !traced[op] {
					t.Errorf("OpFLOPs credits %g FLOPs to %q, which the tracer never reports (traced: %v)", v, op, traced)
				}
				if v <= 0 {
					t.Errorf("%s: %g FLOPs", op, v)
				}
			}
		})
	}
	m, err := New(ref7m(), 1)
	if err != nil {
		t.Fatal(err)
	}
	fl := m.OpFLOPs(2048)
	for op, want := range map[string]float64{
		OpQKVGemm:       4 * 2 * 2048 * 256 * 768,
		opQKVGemmBwd:    4 * 4 * 2048 * 256 * 768,
		OpOProjGemm:     4 * 2 * 2048 * 256 * 256,
		OpGateUpGemm:    4 * 2 * 2048 * 256 * 1536,
		OpDownGemm:      4 * 2 * 2048 * 768 * 256,
		OpAttnCore:      4 * 4 * 2048 * 256 * 256,
		OpLMHeadGemm:    2 * 2048 * 256 * 8192,
		opLMHeadGemmBwd: 4 * 2048 * 256 * 8192,
	} {
		if fl[op] != want {
			t.Errorf("ref7m %s: %g FLOPs, want %g", op, fl[op], want)
		}
	}
}

// TestIsGEMMOp: the GEMM ops forward and backward, nothing else.
func TestIsGEMMOp(t *testing.T) {
	for op, want := range map[string]bool{
		OpQKVGemm: true, opQKVGemmBwd: true, OpOProjGemm: true, opOProjGemmBwd: true, OpGateUpGemm: true,
		opGateUpGemmBwd: true, OpDownGemm: true, opDownGemmBwd: true, OpLMHeadGemm: true, opLMHeadGemmBwd: true,
		OpAttnCore: false, opAttnCoreBwd: false, OpMLP: false, OpLMHead: false, OpCrossEntropy: false, "": false, "qkv_gemm_backward_x": false,
	} {
		if IsGEMMOp(op) != want {
			t.Errorf("IsGEMMOp(%q) = %v", op, !want)
		}
	}
}
