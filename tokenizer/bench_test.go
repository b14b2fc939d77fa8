package tokenizer

import (
	"testing"

	tiktoken "github.com/tiktoken-go/tokenizer"
)

func benchText(b *testing.B) []string {
	texts := shipped(b)
	return texts[:len(texts)/4]
}

func BenchmarkEncodeGPT2(b *testing.B) {
	tok := gpt2(b)
	texts := benchText(b)
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	var buf []int32
	for i := 0; i < b.N; i++ {
		for _, s := range texts {
			buf = tok.AppendEncode(buf[:0], s)
		}
	}
}

func BenchmarkEncodeTiktokenGo(b *testing.B) {
	ref, err := tiktoken.Get(tiktoken.R50kBase)
	if err != nil {
		b.Fatal(err)
	}
	texts := benchText(b)
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range texts {
			ref.Encode(s)
		}
	}
}

func BenchmarkPreTokenizeGPT2(b *testing.B) {
	texts := benchText(b)
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	sp, _, _ := newSplitter("gpt2")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range texts {
			sp.split(s, func(string) {})
		}
	}
}

func BenchmarkTrain1000(b *testing.B) {
	for i := 0; i < b.N; i++ {
		trainSmall(b, "gpt2", 0)
	}
}
