// Package tfevents reads and writes TensorBoard event files: TFRecord
// framing with masked CRC-32C checksums around tensorflow.Event protos
// (scalars and histograms), encoded by hand with protowire. It is the one
// codec of the format: the monitor's TensorBoard sink writes through it and
// `kestrel watch` reads other trainers' event files through it.
//
// Each record is
//
//	uint64 length (little endian)
//	uint32 masked CRC-32C of the 8 length bytes
//	length bytes of data (a serialized tensorflow.Event)
//	uint32 masked CRC-32C of the data
//
// where mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8, and the protos are
//
//	Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//	Summary { repeated Value value = 1; }
//	Value   { string tag = 1; float simple_value = 2; HistogramProto histo = 5; TensorProto tensor = 8; }
//	HistogramProto { double min = 1; double max = 2; double num = 3; double sum = 4;
//	                 double sum_squares = 5; repeated double bucket_limit = 6 [packed];
//	                 repeated double bucket = 7 [packed]; }
//	TensorProto { DataType dtype = 1; TensorShapeProto tensor_shape = 2; bytes tensor_content = 4;
//	              repeated float float_val = 5 [packed]; repeated double double_val = 6 [packed];
//	              repeated int32 int_val = 7 [packed]; repeated int64 int64_val = 10 [packed];
//	              repeated int32 half_val = 13 [packed]; }
//	TensorShapeProto { repeated Dim dim = 2; }  Dim { int64 size = 1; }
//
// Only the reader knows tensors: TF2's tf.summary.scalar and Keras write a
// scalar as a one-element tensor (raw little-endian bytes in tensor_content,
// or one float_val/double_val …), which Unmarshal reports as a Scalar. The
// writer uses simple_value.
package tfevents

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protowire"
)

// FilePrefix starts the name of every event file.
const FilePrefix = "events.out.tfevents."

// FileVersion is the file_version of the first event of a file.
const FileVersion = "brain.Event:2"

// RecordOverhead is the framing bytes around each record's data.
const RecordOverhead = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// AppendRecord appends one framed record holding data to dst.
func AppendRecord(dst, data []byte) []byte {
	var hdr [8]byte
	binary.LittleEndian.PutUint64(hdr[:], uint64(len(data)))
	dst = append(dst, hdr[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, maskedCRC(hdr[:]))
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, maskedCRC(data))
}

// ReadRecords splits a TFRecord stream into records, verifying both CRCs.
// A truncated final record (a writer mid-append) is reported with
// io.ErrUnexpectedEOF along with the complete records before it.
func ReadRecords(r io.Reader) ([][]byte, error) {
	br := bufio.NewReader(r)
	var out [][]byte
	var off int64
	for {
		var hdr [12]byte
		_, err := io.ReadFull(br, hdr[:])
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("record at byte %d: header: %w", off, io.ErrUnexpectedEOF)
		}
		length := binary.LittleEndian.Uint64(hdr[:8])
		if got, want := binary.LittleEndian.Uint32(hdr[8:]), maskedCRC(hdr[:8]); got != want {
			return out, fmt.Errorf("record at byte %d: length CRC %08x, want %08x", off, got, want)
		}
		if length > MaxRecordBytes {
			return out, fmt.Errorf("record at byte %d: implausible length %d", off, length)
		}
		// Read what is there, not what the header announces: a torn file
		// must not cost the announced length in memory.
		data, err := io.ReadAll(io.LimitReader(br, int64(length)+4))
		if err != nil || uint64(len(data)) != length+4 {
			return out, fmt.Errorf("record at byte %d: data: %w", off, io.ErrUnexpectedEOF)
		}
		if got, want := binary.LittleEndian.Uint32(data[length:]), maskedCRC(data[:length]); got != want {
			return out, fmt.Errorf("record at byte %d: data CRC %08x, want %08x", off, got, want)
		}
		out = append(out, data[:length])
		off += RecordOverhead + int64(length)
	}
}

// Scalar is one scalar summary value.
type Scalar struct {
	Tag   string
	Value float32
}

// Histo is one histogram summary value.
type Histo struct {
	Tag                      string
	Min, Max, Num, Sum, Sq   float64
	BucketLimit, BucketCount []float64
}

// Event is a decoded tensorflow.Event with the fields kestrel uses.
type Event struct {
	WallTime    float64 // Unix seconds
	Step        int64
	FileVersion string
	Scalars     []Scalar
	Histos      []Histo
}

// Marshal encodes e as a tensorflow.Event proto.
func Marshal(e Event) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(e.WallTime))
	if e.Step != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(e.Step))
	}
	if e.FileVersion != "" {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, e.FileVersion)
	}
	if len(e.Scalars) > 0 || len(e.Histos) > 0 {
		n := 0
		for _, s := range e.Scalars {
			n += scalarSize(s)
		}
		sum := make([]byte, 0, n)
		for _, s := range e.Scalars {
			sum = appendScalar(sum, s)
		}
		for _, h := range e.Histos {
			var hp []byte
			for i, x := range []float64{h.Min, h.Max, h.Num, h.Sum, h.Sq} {
				hp = protowire.AppendTag(hp, protowire.Number(i+1), protowire.Fixed64Type)
				hp = protowire.AppendFixed64(hp, math.Float64bits(x))
			}
			hp = appendPacked(hp, 6, h.BucketLimit)
			hp = appendPacked(hp, 7, h.BucketCount)
			var v []byte
			v = protowire.AppendTag(v, 1, protowire.BytesType)
			v = protowire.AppendString(v, h.Tag)
			v = protowire.AppendTag(v, 5, protowire.BytesType)
			v = protowire.AppendBytes(v, hp)
			sum = protowire.AppendTag(sum, 1, protowire.BytesType)
			sum = protowire.AppendBytes(sum, v)
		}
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, sum)
	}
	return b
}

// appendScalar appends the Summary.Value of scalar s (field 1: tag,
// field 2: simple_value) as field 1 of a Summary, its length computed
// instead of encoding the value into a temporary slice first.
func appendScalar(b []byte, s Scalar) []byte {
	n := scalarValueSize(s)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, s.Tag)
	b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, math.Float32bits(s.Value))
}

// scalarValueSize is the encoded size of scalar s's Summary.Value.
func scalarValueSize(s Scalar) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(len(s.Tag)) + protowire.SizeTag(2) + protowire.SizeFixed32()
}

// scalarSize is what appendScalar appends for s.
func scalarSize(s Scalar) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(scalarValueSize(s))
}

func appendPacked(b []byte, num protowire.Number, xs []float64) []byte {
	if len(xs) == 0 {
		return b
	}
	var p []byte
	for _, x := range xs {
		p = protowire.AppendFixed64(p, math.Float64bits(x))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

// Unmarshal decodes a tensorflow.Event (unknown fields skipped).
func Unmarshal(b []byte) (Event, error) {
	var e Event
	err := walkProto(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			e.WallTime = math.Float64frombits(x)
		case num == 2 && typ == protowire.VarintType:
			e.Step = int64(x)
		case num == 3 && typ == protowire.BytesType:
			e.FileVersion = string(v)
		case num == 5 && typ == protowire.BytesType:
			return walkProto(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != 1 || typ != protowire.BytesType {
					return nil
				}
				return decodeValue(v, &e)
			})
		}
		return nil
	})
	return e, err
}

func decodeValue(b []byte, e *Event) error {
	var tag string
	var scalar *float32
	var histo *Histo
	err := walkProto(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			tag = string(v)
		case num == 2 && typ == protowire.Fixed32Type:
			f := math.Float32frombits(uint32(x))
			scalar = &f
		case num == 8 && typ == protowire.BytesType:
			f, ok, err := tensorScalar(v)
			if err != nil {
				return fmt.Errorf("tensor: %w", err)
			}
			if ok {
				scalar = &f
			}
		case num == 5 && typ == protowire.BytesType:
			h := Histo{}
			histo = &h
			return walkProto(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				if typ == protowire.Fixed64Type {
					f := math.Float64frombits(x)
					switch num {
					case 1:
						h.Min = f
					case 2:
						h.Max = f
					case 3:
						h.Num = f
					case 4:
						h.Sum = f
					case 5:
						h.Sq = f
					case 6:
						h.BucketLimit = append(h.BucketLimit, f)
					case 7:
						h.BucketCount = append(h.BucketCount, f)
					}
					return nil
				}
				if typ == protowire.BytesType && (num == 6 || num == 7) {
					if len(v)%8 != 0 {
						return errors.New("packed doubles: length not a multiple of 8")
					}
					for i := 0; i < len(v); i += 8 {
						f := math.Float64frombits(binary.LittleEndian.Uint64(v[i:]))
						if num == 6 {
							h.BucketLimit = append(h.BucketLimit, f)
						} else {
							h.BucketCount = append(h.BucketCount, f)
						}
					}
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if scalar != nil {
		e.Scalars = append(e.Scalars, Scalar{tag, *scalar})
	}
	if histo != nil {
		histo.Tag = tag
		e.Histos = append(e.Histos, *histo)
	}
	return nil
}

// TensorFlow DataType values of the numeric tensors a scalar summary holds.
const (
	dtFloat    = 1
	dtDouble   = 2
	dtInt32    = 3
	dtInt64    = 9
	dtBfloat16 = 14
	dtHalf     = 19
)

// tensorScalar decodes a TensorProto holding one numeric element (a TF2
// scalar summary). ok is false for tensors of other shapes or types
// (histograms, text, images), which are not scalars.
func tensorScalar(b []byte) (v float32, ok bool, err error) {
	var dtype uint64
	n := int64(1)
	var content []byte
	var vals []float64
	err = walkProto(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			dtype = x
		case num == 2 && typ == protowire.BytesType:
			return walkProto(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != 2 || typ != protowire.BytesType {
					return nil
				}
				return walkProto(v, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) error {
					if num == 1 && typ == protowire.VarintType {
						n *= int64(x)
					}
					return nil
				})
			})
		case num == 4 && typ == protowire.BytesType:
			content = v
		case num == 5 && typ == protowire.Fixed32Type:
			vals = append(vals, float64(math.Float32frombits(uint32(x))))
		case num == 5 && typ == protowire.BytesType:
			for i := 0; i+4 <= len(v); i += 4 {
				vals = append(vals, float64(math.Float32frombits(binary.LittleEndian.Uint32(v[i:]))))
			}
		case num == 6 && typ == protowire.Fixed64Type:
			vals = append(vals, math.Float64frombits(x))
		case num == 6 && typ == protowire.BytesType:
			for i := 0; i+8 <= len(v); i += 8 {
				vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(v[i:])))
			}
		case (num == 7 || num == 10 || num == 13) && typ == protowire.VarintType:
			vals = append(vals, varintValue(num, x))
		case (num == 7 || num == 10 || num == 13) && typ == protowire.BytesType:
			for len(v) > 0 {
				y, k := protowire.ConsumeVarint(v)
				if k < 0 {
					return fmt.Errorf("packed field %d: %w", num, protowire.ParseError(k))
				}
				vals = append(vals, varintValue(num, y))
				v = v[k:]
			}
		}
		return nil
	})
	if err != nil || n != 1 {
		return 0, false, err
	}
	if content != nil {
		switch {
		case dtype == dtFloat && len(content) == 4:
			return math.Float32frombits(binary.LittleEndian.Uint32(content)), true, nil
		case dtype == dtDouble && len(content) == 8:
			return float32(math.Float64frombits(binary.LittleEndian.Uint64(content))), true, nil
		case dtype == dtInt32 && len(content) == 4:
			return float32(int32(binary.LittleEndian.Uint32(content))), true, nil
		case dtype == dtInt64 && len(content) == 8:
			return float32(int64(binary.LittleEndian.Uint64(content))), true, nil
		case dtype == dtHalf && len(content) == 2:
			return halfToFloat32(binary.LittleEndian.Uint16(content)), true, nil
		case dtype == dtBfloat16 && len(content) == 2:
			return math.Float32frombits(uint32(binary.LittleEndian.Uint16(content)) << 16), true, nil
		}
		return 0, false, nil
	}
	if len(vals) != 1 {
		return 0, false, nil
	}
	switch dtype {
	case dtFloat, dtDouble, dtInt32, dtInt64:
		return float32(vals[0]), true, nil
	case dtHalf:
		return halfToFloat32(uint16(vals[0])), true, nil
	case dtBfloat16:
		return math.Float32frombits(uint32(vals[0]) << 16), true, nil
	}
	return 0, false, nil
}

// varintValue reads one element of a varint-encoded repeated field:
// int_val (7) and half_val (13) are int32, int64_val (10) int64.
func varintValue(num protowire.Number, x uint64) float64 {
	if num == 10 {
		return float64(int64(x))
	}
	if num == 13 {
		return float64(uint16(x)) // the half's bits, converted by the caller
	}
	return float64(int32(x))
}

// halfToFloat32 converts IEEE 754 binary16 bits to a float32.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac × 2^-24
		f := float32(frac) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// walkProto calls fn for every field of a protobuf message: v holds bytes
// fields, x holds varint/fixed values.
func walkProto(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("proto tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("proto field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// Histogram buckets xs into n equal-width buckets between their min and max.
func Histogram(tag string, xs []float64, n int) Histo {
	h := Histo{Tag: tag, Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		h.Min, h.Max = math.Min(h.Min, x), math.Max(h.Max, x)
		h.Sum += x
		h.Sq += x * x
	}
	h.Num = float64(len(xs))
	width := (h.Max - h.Min) / float64(n)
	if width <= 0 {
		h.BucketLimit, h.BucketCount = []float64{h.Max}, []float64{h.Num}
		return h
	}
	h.BucketLimit = make([]float64, n)
	h.BucketCount = make([]float64, n)
	for i := range h.BucketLimit {
		h.BucketLimit[i] = h.Min + width*float64(i+1)
	}
	h.BucketLimit[n-1] = h.Max
	for _, x := range xs {
		i := int((x - h.Min) / width)
		if i >= n {
			i = n - 1
		}
		h.BucketCount[i]++
	}
	return h
}

// Writer appends events to one event file, buffered: call Flush to make
// them visible to readers and Close at the end.
type Writer struct {
	f    *os.File
	w    *bufio.Writer
	path string
	buf  []byte
}

// Create makes a new event file events.out.tfevents.<unix>.<host> in dir
// (never truncating an existing one: a second file in the same second gets
// a numbered name) and writes its file_version event at wallTime.
func Create(dir string, unix int64, wallTime float64) (*Writer, error) {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	path := filepath.Join(dir, fmt.Sprintf("%s%d.%s", FilePrefix, unix, host))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	for i := 1; err != nil && os.IsExist(err) && i < 100; i++ {
		path = filepath.Join(dir, fmt.Sprintf("%s%d.%s.%d", FilePrefix, unix, host, i))
		f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	w := &Writer{f: f, w: bufio.NewWriterSize(f, 64<<10), path: path}
	if err := w.Write(Event{WallTime: wallTime, FileVersion: FileVersion}); err != nil {
		f.Close()
		return nil, err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

// Write appends one event record.
func (w *Writer) Write(e Event) error {
	w.buf = AppendRecord(w.buf[:0], Marshal(e))
	if _, err := w.w.Write(w.buf); err != nil {
		return fmt.Errorf("tensorboard %s: %w", w.path, err)
	}
	return nil
}

// Flush writes the buffered records to the file.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("tensorboard %s: %w", w.path, err)
	}
	return nil
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tensorboard %s: %w", w.path, cerr)
	}
	return err
}
