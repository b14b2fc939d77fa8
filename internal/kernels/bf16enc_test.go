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

// decodeAMX decodes the AMX instructions the generator emits as bytes
// (gen_asm.go vexAMX) back to Intel syntax, from the VEX fields as the
// Intel SDM (vol. 2, 2.3 "VEX prefix", and the AMX instruction pages)
// lays them out, independently of the encoder: C4, R̄X̄B̄ mmmmm (map 0F38),
// W vvvv L pp, opcode, ModRM, and for memory forms a SIB (scale 1) and a
// disp8.
func decodeAMX(b []byte) (string, error) {
	if len(b) < 5 || b[0] != 0xc4 {
		return "", fmt.Errorf("% x: not a 3-byte VEX instruction", b)
	}
	p1, p2, op, modrm := b[1], b[2], b[3], b[4]
	if p1&0x1f != 2 || p2>>7 != 0 || p2&4 != 0 {
		return "", fmt.Errorf("% x: map %d, W %d, L %d; want 0F38 (2), W0, L0", b, p1&0x1f, p2>>7, p2>>2&1)
	}
	rExt, xExt, bExt := int(^p1>>7&1)<<3, int(^p1>>6&1)<<3, int(^p1>>5&1)<<3
	vvvv, pp := int(^p2>>3&15), p2&3
	mod, reg, rm := modrm>>6, int(modrm>>3&7)|rExt, int(modrm&7)
	gp := [...]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}
	mem := func() (string, error) {
		switch {
		case mod != 1:
			return "", fmt.Errorf("% x: ModRM.mod %d, want 1 (disp8)", b, mod)
		case rm == 4 && len(b) == 7:
			sib := b[5]
			if sib>>6 != 0 {
				return "", fmt.Errorf("% x: SIB scale %d, want 1", b, 1<<(sib>>6))
			}
			return fmt.Sprintf("[%s+%s*1+%#x]", gp[int(sib&7)|bExt], gp[int(sib>>3&7)|xExt], int8(b[6])), nil
		case rm != 4 && len(b) == 6:
			return fmt.Sprintf("[%s+%#x]", gp[rm|bExt], int8(b[5])), nil
		}
		return "", fmt.Errorf("% x: length does not match the addressing form", b)
	}
	switch {
	case op == 0x49 && pp == 0 && mod == 3 && reg == 0 && rm == 0 && len(b) == 5:
		return "TILERELEASE", nil
	case op == 0x49 && pp == 0 && mod != 3 && reg == 0:
		m, err := mem()
		return "LDTILECFG " + m, err
	case op == 0x49 && pp == 3 && mod == 3 && rm == 0 && len(b) == 5:
		return fmt.Sprintf("TILEZERO tmm%d", reg), nil
	case op == 0x4b && pp == 3 && rm == 4:
		m, err := mem()
		return fmt.Sprintf("TILELOADD tmm%d, %s", reg, m), err
	case op == 0x4b && pp == 2 && rm == 4:
		m, err := mem()
		return fmt.Sprintf("TILESTORED %s, tmm%d", m, reg), err
	case op == 0x5c && pp == 2 && mod == 3 && len(b) == 5:
		return fmt.Sprintf("TDPBF16PS tmm%d, tmm%d, tmm%d", reg, rm|bExt, vvvv), nil
	}
	return "", fmt.Errorf("% x: unknown opcode %#x with pp %d", b, op, pp)
}

// TestDecodeAMXKnownBytes grounds the AMX decoder in encodings that GNU
// objdump (binutils 2.42, -mi386:x86-64 -M intel) disassembled to the same
// instruction, extended registers (r8–r13 as base and index) included.
func TestDecodeAMXKnownBytes(t *testing.T) {
	for _, c := range []struct{ hex, want string }{
		{"c4c278494300", "LDTILECFG [r11+0x0]"},
		{"c4e278494000", "LDTILECFG [rax+0x0]"},
		{"c4e24a5cc4", "TDPBF16PS tmm0, tmm4, tmm6"},
		{"c4e2425cdd", "TDPBF16PS tmm3, tmm5, tmm7"},
		{"c4827b4b4c0840", "TILELOADD tmm1, [r8+r9*1+0x40]"},
		{"c4827b4b540a00", "TILELOADD tmm2, [r10+r9*1+0x0]"},
		{"c4e27b4b640600", "TILELOADD tmm4, [rsi+rax*1+0x0]"},
		{"c4e27b4b7c1a40", "TILELOADD tmm7, [rdx+rbx*1+0x40]"},
		{"c4e27849c0", "TILERELEASE"},
		{"c4827a4b5c0a40", "TILESTORED [r10+r9*1+0x40], tmm3"},
		{"c4c27a4b541b00", "TILESTORED [r11+rbx*1+0x0], tmm2"},
		{"c4c27a4b441d00", "TILESTORED [r13+rbx*1+0x0], tmm0"},
		{"c4e27b49c0", "TILEZERO tmm0"},
		{"c4e27b49f8", "TILEZERO tmm7"},
	} {
		var b []byte
		for i := 0; i < len(c.hex); i += 2 {
			x, _ := strconv.ParseUint(c.hex[i:i+2], 16, 8)
			b = append(b, byte(x))
		}
		if got, err := decodeAMX(b); err != nil || got != c.want {
			t.Errorf("%s: decoded %q (%v), objdump says %q", c.hex, got, err, c.want)
		}
	}
}

// TestAMXEncodings decodes every instruction the generator wrote as bytes
// into amx_amd64.s and checks it is the one named in the line's comment.
func TestAMXEncodings(t *testing.T) {
	src, err := os.ReadFile("amx_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	byteRe := regexp.MustCompile(`BYTE \$0x([0-9a-f]{2})`)
	seen := map[string]bool{}
	for i, line := range strings.Split(string(src), "\n") {
		if !strings.Contains(line, "BYTE") {
			continue
		}
		code, comment, ok := strings.Cut(line, "//")
		if !ok {
			t.Fatalf("amx_amd64.s:%d: BYTE line without the instruction in a comment", i+1)
		}
		var b []byte
		for _, m := range byteRe.FindAllStringSubmatch(code, -1) {
			x, _ := strconv.ParseUint(m[1], 16, 8)
			b = append(b, byte(x))
		}
		got, err := decodeAMX(b)
		if err != nil {
			t.Fatalf("amx_amd64.s:%d: %v", i+1, err)
		}
		if want := strings.TrimSpace(comment); got != want {
			t.Fatalf("amx_amd64.s:%d: bytes decode to %q, the comment says %q", i+1, got, want)
		}
		seen[strings.Fields(got)[0]] = true
	}
	for _, m := range []string{"LDTILECFG", "TILERELEASE", "TILEZERO", "TILELOADD", "TILESTORED", "TDPBF16PS"} {
		if !seen[m] {
			t.Errorf("amx_amd64.s: no %s", m)
		}
	}
}
