package shufflereport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// A plot this command writes carries a PNG text chunk right after the
// header chunk (byte 33: the 8-byte signature and IHDR's 25 bytes), which
// marks it as kestrel's own: WrotePlot finds it there, so --out replaces
// an earlier plot but no other file.
const (
	pngSigLen  = 8
	ihdrEnd    = pngSigLen + 4 + 4 + 13 + 4 // length, type, data, CRC
	markerText = "Software\x00kestrel data shuffle-report"
)

var pngSig = []byte("\x89PNG\r\n\x1a\n")

// markerChunk is the tEXt chunk that marks a plot.
var markerChunk = func() []byte {
	body := append([]byte("tEXt"), markerText...)
	c := binary.BigEndian.AppendUint32(nil, uint32(len(markerText)))
	c = append(c, body...)
	return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(body))
}()

// markPNG inserts markerChunk after the IHDR chunk of png.
func markPNG(png []byte) ([]byte, error) {
	if len(png) < ihdrEnd || !bytes.Equal(png[:pngSigLen], pngSig) || string(png[12:16]) != "IHDR" || binary.BigEndian.Uint32(png[8:12]) != 13 {
		return nil, errors.New("the encoder wrote no PNG header")
	}
	out := make([]byte, 0, len(png)+len(markerChunk))
	out = append(out, png[:ihdrEnd]...)
	out = append(out, markerChunk...)
	return append(out, png[ihdrEnd:]...), nil
}

// WrotePlot reports whether path is a regular file that this command
// wrote as a plot (its marker chunk right after the PNG header). A link
// is followed here; the output rule refuses it anyway.
func WrotePlot(path string) bool {
	f, err := fileguard.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, ihdrEnd+len(markerChunk))
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return bytes.Equal(head[:pngSigLen], pngSig) && bytes.Equal(head[ihdrEnd:], markerChunk)
}
