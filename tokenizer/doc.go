// Package tokenizer is a byte-level BPE tokenizer: train, encode, decode,
// and read/write the formats other tools use.
//
// Text is cut into pre-tokens by a pattern — GPT-2's regex, a
// Llama-3-style one that splits digits into groups of 1–3, or OpenAI's
// cl100k_base and o200k_base ones (o200k also splits words at case
// changes, with Unicode classes Lu/Ll/Lt/Lm/Lo/M) — implemented by
// a hand-written scanner that reproduces the regex exactly (Go's regexp has
// no lookahead; the scanner is also much faster than regexp2). Each
// pre-token's bytes are merged by rank. Any byte string round-trips:
// Decode(Encode(s)) == s, invalid UTF-8 included (invalid bytes are
// pre-tokenised like U+FFFD, i.e. as symbols).
//
//	tok, err := tokenizer.Load("gpt2-bpe")          // tokenizer.json, *.tiktoken, vocab.json+merges.txt or a dir
//	ids := tok.Encode("Hello world")                 // [15496 995] with GPT-2's files
//	text := tok.DecodeString(ids)
//	tok.Save("tokenizer.json")                       // Hugging Face format
//
//	tok, err = tokenizer.Train(ctx, docs, tokenizer.TrainOptions{VocabSize: 8192, Pattern: "llama3"})
//
// Token ids are int32 everywhere in kestrel: the tokenizer's Encode and
// Decode, the shards (whatever their on-disk width), the loader's batches,
// the model's inputs and targets, and text generation all use []int32, so
// ids pass between them without conversion. Vocabularies are far below
// 2^31 (loading rejects ids above 2^26); negative values never name a
// token (the loader uses them for targets that carry no loss), and Token,
// ValidID and Decode treat them as unknown. The file formats are unchanged:
// tokenizer.json and tiktoken files hold plain integers, shards hold uint16
// or uint32.
//
// Special tokens (<|endoftext|>, BOS, EOS, PAD …) are never produced from
// text by Encode, so a document cannot inject them; EncodeSpecial
// recognises them. EOT returns the end-of-text id.
//
// Compatibility: loading the GPT-2 files gives exactly the ids of OpenAI's
// r50k_base, and loading cl100k_base.tiktoken / o200k_base.tiktoken those
// of cl100k_base / o200k_base (tested against github.com/tiktoken-go/tokenizer
// on all shipped text). A rank file takes its pattern and special-token ids
// from NAME.json beside it ({"pat_str", "special_tokens"}), else from a
// built-in table for the OpenAI names, else GPT-2's pattern with
// <|endoftext|> after the last rank; LoadWith can override the pattern. Hugging Face tokenizer.json files with a BPE model,
// a ByteLevel pre-tokenizer (optionally after a Split regex), an optional
// NFC normalizer and added tokens load; other patterns fall back to
// regexp2. Known deviation of the reference, not of this package: regexp2
// (and so tiktoken-go) drops U+007F (DEL) with these patterns.
//
// Speed: encoding keeps a bounded per-goroutine cache from pre-token to
// ids, and a Tokenizer may be used from many goroutines at once (encode
// documents in parallel).
package tokenizer
