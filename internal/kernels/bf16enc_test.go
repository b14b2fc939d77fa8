package kernels

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// decodeEVEX decodes the register-only 512-bit EVEX instructions the
// generator emits as bytes (gen_asm.go evexRRR) back to Intel syntax, the
// fields read as the Intel SDM (vol. 2, 2.7 "EVEX encoding") lays them out,
// independently of the encoder.
func decodeEVEX(b []byte) (string, error) {
	if len(b) != 6 || b[0] != 0x62 {
		return "", fmt.Errorf("% x: not a 6-byte EVEX instruction", b)
	}
	p0, p1, p2, op, modrm := b[1], b[2], b[3], b[4], b[5]
	inv := func(x byte, bit uint) int { return int(^x >> bit & 1) }
	if p0&0x08 != 0 || p1&0x04 == 0 {
		return "", fmt.Errorf("% x: reserved EVEX bits wrong", b)
	}
	if mmm, w := p0&7, p1>>7; mmm != 2 || w != 0 {
		return "", fmt.Errorf("% x: map %d, W %d; want 0F38 (2), W0", b, mmm, w)
	}
	if z, ll, bc, aaa := p2>>7, p2>>5&3, p2>>4&1, p2&7; z != 0 || ll != 2 || bc != 0 || aaa != 0 {
		return "", fmt.Errorf("% x: z %d L'L %d b %d aaa %d; want 512 bits, no mask or broadcast", b, z, ll, bc, aaa)
	}
	if modrm>>6 != 3 {
		return "", fmt.Errorf("% x: ModRM.mod %d, want 3 (registers)", b, modrm>>6)
	}
	dst := inv(p0, 4)<<4 | inv(p0, 7)<<3 | int(modrm>>3&7)
	src2 := inv(p0, 6)<<4 | inv(p0, 5)<<3 | int(modrm&7)
	src1 := inv(p2, 3)<<4 | int(^p1>>3&15)
	var name string
	switch pp := p1 & 3; {
	case pp == 2 && op == 0x52:
		name = "VDPBF16PS"
	case pp == 3 && op == 0x72:
		name = "VCVTNE2PS2BF16"
	default:
		return "", fmt.Errorf("% x: unknown opcode %#x with pp %d", b, op, pp)
	}
	return fmt.Sprintf("%s zmm%d, zmm%d, zmm%d", name, dst, src1, src2), nil
}

// TestDecodeEVEXKnownBytes grounds the decoder in encodings that GNU
// objdump (binutils, -mi386:x86-64) disassembled to the same instruction.
func TestDecodeEVEXKnownBytes(t *testing.T) {
	for _, c := range []struct{ hex, want string }{
		{"62f2664852c2", "VDPBF16PS zmm0, zmm3, zmm2"},
		{"62f2774872d0", "VCVTNE2PS2BF16 zmm2, zmm1, zmm0"},
		{"62f26f4872e0", "VCVTNE2PS2BF16 zmm4, zmm2, zmm0"},
		{"62b26e4052c9", "VDPBF16PS zmm1, zmm18, zmm17"},
		{"6232664052d9", "VDPBF16PS zmm11, zmm19, zmm17"},
		{"62121e4052eb", "VDPBF16PS zmm13, zmm28, zmm27"},
		{"62820e4052c4", "VDPBF16PS zmm16, zmm30, zmm28"},
		{"62020e4052c4", "VDPBF16PS zmm24, zmm30, zmm28"},
		{"62d2164852f2", "VDPBF16PS zmm6, zmm13, zmm10"},
		{"62521e4852c2", "VDPBF16PS zmm8, zmm12, zmm10"},
	} {
		var b []byte
		for i := 0; i < len(c.hex); i += 2 {
			x, _ := strconv.ParseUint(c.hex[i:i+2], 16, 8)
			b = append(b, byte(x))
		}
		if got, err := decodeEVEX(b); err != nil || got != c.want {
			t.Errorf("%s: decoded %q (%v), objdump says %q", c.hex, got, err, c.want)
		}
	}
}

// TestBF16Encodings decodes every instruction the generator wrote as bytes
// into bf16_amd64.s and checks it is the one named in the line's comment.
func TestBF16Encodings(t *testing.T) {
	src, err := os.ReadFile("bf16_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	byteRe := regexp.MustCompile(`BYTE \$0x([0-9a-f]{2})`)
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		if !strings.Contains(line, "BYTE") {
			continue
		}
		code, comment, ok := strings.Cut(line, "//")
		if !ok {
			t.Fatalf("bf16_amd64.s:%d: BYTE line without the instruction in a comment", i+1)
		}
		var b []byte
		for _, m := range byteRe.FindAllStringSubmatch(code, -1) {
			x, _ := strconv.ParseUint(m[1], 16, 8)
			b = append(b, byte(x))
		}
		got, err := decodeEVEX(b)
		if err != nil {
			t.Fatalf("bf16_amd64.s:%d: %v", i+1, err)
		}
		if want := strings.TrimSpace(comment); got != want {
			t.Fatalf("bf16_amd64.s:%d: bytes decode to %q, the comment says %q", i+1, got, want)
		}
		n++
	}
	if n < 14*14*2 {
		t.Fatalf("bf16_amd64.s: %d encoded instructions, want at least the %d of the micro-kernels", n, 14*14*2)
	}
}
