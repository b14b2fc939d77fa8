package prepare

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/data/corpus"
)

// unit is one piece of work of a distributed run: a whole input file, a
// byte range of a large JSONL or .warc.gz file, or a whole source (one with max_docs
// or max_bytes, whose limits count over all its files in order, and code
// trees). Units are numbered in the global document order — source order,
// then input order, then byte order — and do not depend on the number of
// ranks, so the completion markers of one run serve a rerun of any size.
type unit struct {
	Idx   int
	Src   int
	Parts []corpus.Part
	Bytes int64
}

// lineRange reports whether the unit is a byte range of a split JSONL
// file (whose first line number must be counted).
func (u unit) lineRange(cfg Config) bool {
	return len(u.Parts) == 1 && !u.Parts[0].Whole && cfg.Sources[u.Src].Format == "jsonl"
}

// planUnits cuts the inputs into units of about unitBytes.
func planUnits(cfg Config, inputs [][]corpus.Input, unitBytes int64) ([]unit, error) {
	var us []unit
	add := func(u unit) {
		u.Idx = len(us)
		us = append(us, u)
	}
	for si, s := range cfg.Sources {
		whole := s.MaxDocs > 0 || s.MaxBytes > 0 || s.Format == "code"
		var all unit
		all.Src = si
		for _, in := range inputs[si] {
			st, err := os.Stat(in.Path)
			if err != nil {
				return nil, fmt.Errorf("source %q: input %s: %w", s.Name, in.Path, err)
			}
			if whole {
				all.Parts = append(all.Parts, corpus.Part{Input: in, Whole: true})
				all.Bytes += st.Size()
				continue
			}
			if st.IsDir() || !corpus.Splittable(s.Format, in.Path) || st.Size() <= unitBytes {
				add(unit{Src: si, Parts: []corpus.Part{{Input: in, Whole: true}}, Bytes: st.Size()})
				continue
			}
			pts, err := corpus.SplitPoints(s.Format, in.Path, st.Size(), unitBytes)
			if err != nil {
				return nil, fmt.Errorf("source %q: %w", s.Name, err)
			}
			for k := 0; k+1 < len(pts); k++ {
				add(unit{Src: si, Parts: []corpus.Part{{Input: in, Start: pts[k], End: pts[k+1]}}, Bytes: pts[k+1] - pts[k]})
			}
		}
		if whole {
			add(all)
		}
	}
	return us, nil
}

// balance assigns units to ranks, largest first to the least loaded rank
// (ties: the smaller unit index, the lower rank). owner[i] is unit i's rank.
func balance(us []unit, size int) []int {
	order := make([]int, len(us))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(us[b].Bytes, us[a].Bytes) })
	load := make([]int64, size)
	owner := make([]int, len(us))
	for _, i := range order {
		r := 0
		for k := 1; k < size; k++ {
			if load[k] < load[r] {
				r = k
			}
		}
		owner[i] = r
		load[r] += max(us[i].Bytes, 1)
	}
	return owner
}

// numberLines sets FirstLine of every byte-range unit: each rank counts the
// newlines of its own ranges, the counts are exchanged, and the first line
// of a range is one plus the newlines of the ranges before it in its file.
func numberLines(c comm.Comm, cfg Config, us []unit, owner []int) error {
	mine := map[int]int64{}
	var err error
	for _, u := range us {
		if !u.lineRange(cfg) || owner[u.Idx] != c.Rank() {
			continue
		}
		p := u.Parts[0]
		n, e := corpus.CountLines(p.Input.Path, p.Start, p.End)
		if e != nil {
			err = e
			break
		}
		mine[u.Idx] = n
	}
	if err := agree(c, "count lines", err); err != nil {
		return err
	}
	mb, err := gobBytes(mine)
	if err != nil {
		return err
	}
	all, err := c.AllGatherBytes(mb)
	if err != nil {
		return fmt.Errorf("prepare: count lines: %w", err)
	}
	counts := map[int]int64{}
	for r, b := range all {
		var m map[int]int64
		if err := unGob(b, &m); err != nil {
			return fmt.Errorf("prepare: line counts from rank %d: %w", r, err)
		}
		for k, v := range m {
			counts[k] = v
		}
	}
	next := map[string]int64{} // "src\x00path" → first line of the next range
	for i := range us {
		if !us[i].lineRange(cfg) {
			continue
		}
		p := &us[i].Parts[0]
		key := fmt.Sprint(us[i].Src, "\x00", p.Input.Path)
		if p.Start == 0 {
			next[key] = 1
		}
		n, ok := counts[i]
		if !ok {
			return fmt.Errorf("prepare: no line count for unit %d (%s)", i, p.Input.Path)
		}
		p.FirstLine = next[key]
		next[key] += n
	}
	return nil
}

// unitKey identifies a unit's completion marker: the run's fingerprint
// (config, inputs' sizes and times) and the unit itself.
func unitKey(fp string, unitBytes int64, u unit) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n%d %d\n", fp, unitBytes, u.Idx, u.Src)
	for _, p := range u.Parts {
		fmt.Fprintf(h, "%s\t%v\t%d\t%d\t%d\n", p.Input.Path, p.Whole, p.Start, p.End, p.FirstLine)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// gobBytes encodes v with encoding/gob.
func gobBytes(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, fmt.Errorf("prepare: encode %T: %w", v, err)
	}
	return b.Bytes(), nil
}

func unGob(b []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	return nil
}
