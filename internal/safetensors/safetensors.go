// Package safetensors reads and writes the safetensors file format: an
// 8-byte little-endian header length, a JSON header mapping tensor names to
// {dtype, shape, data_offsets} (plus an optional "__metadata__" map of
// strings), then the raw little-endian tensor bytes.
package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"sort"
)

// MaxHeaderBytes bounds the JSON header a reader accepts (100 MB, as the
// reference implementation does), so a corrupt length cannot allocate wildly.
const MaxHeaderBytes = 100 << 20

// DType names an element type as the format spells it.
type DType string

// Element types the package understands.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	Bool DType = "BOOL"
)

// Size is the number of bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16, I16:
		return 2
	case I8, U8, Bool:
		return 1
	}
	return 0
}

// Tensor is one named array with its raw little-endian bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements is the product of the shape (1 for a scalar).
func (t Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// FromFloat32 makes an F32 tensor from v (copied).
func FromFloat32(name string, shape []int, v []float32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: F32, Shape: append([]int(nil), shape...), Data: b}
}

// FromFloat32BF16 makes a BF16 tensor from v, each value rounded to the
// nearest bfloat16 (ties to even, as PyTorch's tensor.to(torch.bfloat16)
// rounds): a NaN stays a NaN, ±Inf stay ±Inf, a finite value beyond the
// largest bfloat16 becomes ±Inf.
func FromFloat32BF16(name string, shape []int, v []float32) Tensor {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], bf16Bits(x))
	}
	return Tensor{Name: name, DType: BF16, Shape: append([]int(nil), shape...), Data: b}
}

// bf16Bits is x rounded to the nearest bfloat16, ties to even (the same
// rounding as kernels.BF16Bits; this package imports nothing of kestrel's).
func bf16Bits(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it a NaN after truncation
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// Float32 decodes the tensor into float32 values; F32, F16, BF16 and F64
// are accepted.
func (t Tensor) Float32() ([]float32, error) {
	n := t.NumElements()
	if len(t.Data) != n*t.DType.Size() {
		return nil, fmt.Errorf("tensor %q: %d bytes for %d elements of %s", t.Name, len(t.Data), n, t.DType)
	}
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:])))
		}
	case BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
		}
	case F16:
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	default:
		return nil, fmt.Errorf("tensor %q: dtype %s is not a float type", t.Name, t.DType)
	}
	return out, nil
}

func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(frac) / 1024 * float32(math.Pow(2, -14))
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f:
		if frac == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return float32(math.NaN())
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | frac<<13)
}

type entry struct {
	DType   DType    `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// Encode writes tensors (in the order given) and metadata to w.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("safetensors: duplicate tensor %q", t.Name)
		}
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if want := t.NumElements() * t.DType.Size(); want != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: shape %v needs %d bytes, have %d", t.Name, t.Shape, want, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = entry{DType: t.DType, Shape: shape, Offsets: [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors: header: %w", err)
	}
	for len(hb)%8 != 0 { // pad so the data starts 8-byte aligned
		hb = append(hb, ' ')
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(hb)))
	if _, err := bw.Write(lenb[:]); err != nil {
		return err
	}
	if _, err := bw.Write(hb); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := bw.Write(t.Data); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes a safetensors file at path and fsyncs it. It does not
// rename: callers that need atomicity write into a temporary directory.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := Encode(f, tensors, metadata); err != nil {
		f.Close()
		return fmt.Errorf("safetensors: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("safetensors: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("safetensors: close %s: %w", path, err)
	}
	return nil
}

// File is a decoded safetensors file.
type File struct {
	Tensors  []Tensor          // in data-offset order
	Metadata map[string]string // the __metadata__ map (nil when absent)
	index    map[string]int
}

// Get returns the tensor called name.
func (f *File) Get(name string) (Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return Tensor{}, false
	}
	return f.Tensors[i], true
}

// Names lists the tensor names in data-offset order.
func (f *File) Names() []string {
	out := make([]string, len(f.Tensors))
	for i, t := range f.Tensors {
		out[i] = t.Name
	}
	return out
}

// Decode parses a whole safetensors buffer, checking that the header is
// well formed, every dtype known, every shape consistent with its byte
// range, and that the ranges tile the data exactly with no gap or overlap.
func Decode(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeaderBytes {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", n, MaxHeaderBytes)
	}
	if uint64(len(b)-8) < n {
		return nil, fmt.Errorf("truncated: header length %d but only %d bytes follow", n, len(b)-8)
	}
	hb := b[8 : 8+n]
	data := b[8+n:]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hb, &raw); err != nil {
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	f := &File{index: map[string]int{}}
	offs := map[string]int64{}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__: must map strings to strings: %w", err)
			}
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("empty tensor name (a safetensors writer cannot write one)")
		}
		var e entry
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		t := Tensor{Name: name, DType: e.DType, Shape: e.Shape}
		if e.DType.Size() == 0 {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", name, e.DType)
		}
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("tensor %q: negative dimension in shape %v", name, e.Shape)
			}
		}
		lo, hi := e.Offsets[0], e.Offsets[1]
		if lo < 0 || hi < lo || hi > int64(len(data)) {
			return nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the %d data bytes (truncated file?)", name, lo, hi, len(data))
		}
		want, ok := byteSize(e.Shape, e.DType.Size())
		if !ok {
			return nil, fmt.Errorf("tensor %q: shape %v %s: its byte count overflows 64 bits", name, e.Shape, e.DType)
		}
		if hi-lo != want {
			return nil, fmt.Errorf("tensor %q: shape %v %s needs %d bytes, data_offsets give %d", name, e.Shape, e.DType, want, hi-lo)
		}
		t.Data = data[lo:hi:hi]
		f.Tensors = append(f.Tensors, t)
		offs[name] = lo
	}
	sort.Slice(f.Tensors, func(i, j int) bool {
		a, b := offs[f.Tensors[i].Name], offs[f.Tensors[j].Name]
		if a != b {
			return a < b
		}
		if la, lb := len(f.Tensors[i].Data), len(f.Tensors[j].Data); la != lb {
			return la < lb
		}
		return f.Tensors[i].Name < f.Tensors[j].Name // empty tensors share an offset: one order
	})
	var pos int64
	for i, t := range f.Tensors {
		lo := offs[t.Name]
		if lo != pos {
			return nil, fmt.Errorf("tensor %q: data starts at %d, expected %d (gap or overlap)", t.Name, lo, pos)
		}
		pos = lo + int64(len(t.Data))
		f.index[t.Name] = i
	}
	if pos != int64(len(data)) {
		return nil, fmt.Errorf("%d trailing bytes after the last tensor", int64(len(data))-pos)
	}
	return f, nil
}

// byteSize is the bytes of a tensor of shape with elements of size bytes;
// ok is false when the product overflows int64 (a crafted header).
func byteSize(shape []int, size int) (n int64, ok bool) {
	p := uint64(size)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		p = lo
	}
	return int64(p), true
}

// ReadFile reads and validates the safetensors file at path (a regular
// file: a FIFO or device is refused); errors name it.
func ReadFile(path string) (*File, error) {
	// A regular file only, checked before reading (the package is a leaf,
	// so it does not use internal/fileguard; the rule is the same).
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s is not a regular file (%s)", path, st.Mode().Type())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return f, nil
}

// NewFile assembles a File from tensors already in memory (in the order
// given) without encoding them, checking names, dtypes and sizes as Encode
// does; readers that merge or convert files (sharded checkpoints) build
// one this way.
func NewFile(tensors []Tensor, metadata map[string]string) (*File, error) {
	f := &File{Tensors: append([]Tensor(nil), tensors...), Metadata: metadata, index: map[string]int{}}
	for i, t := range f.Tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return nil, fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := f.index[t.Name]; dup {
			return nil, fmt.Errorf("safetensors: duplicate tensor %q", t.Name)
		}
		if t.DType.Size() == 0 {
			return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if want := t.NumElements() * t.DType.Size(); want != len(t.Data) {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v needs %d bytes, have %d", t.Name, t.Shape, want, len(t.Data))
		}
		f.index[t.Name] = i
	}
	return f, nil
}
