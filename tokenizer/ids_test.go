package tokenizer

import (
	"bytes"
	"strings"
	"testing"
)

func TestIDTextRoundTrip(t *testing.T) {
	tok := gpt2(t)
	text := "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"
	for _, asJSON := range []bool{false, true} {
		var ids, back bytes.Buffer
		if err := tok.EncodeText(strings.NewReader(text), &ids, asJSON, false); err != nil {
			t.Fatal(err)
		}
		if asJSON != strings.HasPrefix(ids.String(), "[") {
			t.Errorf("json=%v wrote %.20q", asJSON, ids.String())
		}
		if err := tok.DecodeLines(&ids, &back); err != nil {
			t.Fatal(err)
		}
		// The JSON array is one line: its decoded text gets a newline.
		want := text
		if asJSON {
			want += "\n"
		}
		if back.String() != want {
			t.Errorf("json=%v: round trip %q", asJSON, back.String())
		}
	}
	var lines, back bytes.Buffer
	if err := tok.EncodeLines(strings.NewReader(text), &lines, false); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(lines.String(), "\n"); n != strings.Count(text, "\n") {
		t.Errorf("%d id lines for %d text lines", n, strings.Count(text, "\n"))
	}
	if err := tok.DecodeLines(&lines, &back); err != nil || back.String() != text {
		t.Errorf("lines round trip %q, %v", back.String(), err)
	}
	var sp bytes.Buffer
	if err := tok.EncodeText(strings.NewReader("a<|endoftext|>"), &sp, false, true); err != nil || !strings.Contains(sp.String(), "50256") {
		t.Errorf("special token: %q %v", sp.String(), err)
	}
}

func TestDecodeLinesErrorsNameTheLine(t *testing.T) {
	tok := gpt2(t)
	for _, c := range []struct{ in, want string }{
		{"[464, 3290]\n[1, 70000]\n", "line 2: id 70000 is not in the vocabulary (50257)"},
		{"464 3290\n\n12 x\n", `line 3: id "x"`},
		{"[1,\n", "line 1: "},
		{"-1\n", "line 1: id -1 is not in the vocabulary"},
	} {
		err := tok.DecodeLines(strings.NewReader(c.in), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}
