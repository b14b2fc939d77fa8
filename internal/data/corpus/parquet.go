package corpus

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// readParquet streams one text column of a Parquet file, page by page. Pos
// is the 0-based row number.
func (r *reader) readParquet(in Input) error {
	f, err := os.Open(in.Path)
	if err != nil {
		return fmt.Errorf("input %s: %w", in.Path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("input %s: %w", in.Path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return r.problem(Problem{File: in.Path, Unit: "file", Kind: "bad_parquet", Detail: err.Error(), Fatal: true})
	}
	leaf, ok := pf.Schema().Lookup(r.opts.TextField)
	if !ok {
		return r.problem(Problem{File: in.Path, Unit: "file", Kind: "missing_field", Detail: fmt.Sprintf("no column %q", r.opts.TextField), Fatal: true})
	}
	rel := relName(in, in.Path)
	row := int64(0)
	vals := make([]parquet.Value, 256)
	for gi, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		err := func() error {
			defer pages.Close()
			for {
				page, err := pages.ReadPage()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return r.problem(Problem{File: in.Path, Pos: row, Unit: "row", Kind: "bad_parquet", Detail: fmt.Sprintf("row group %d: %v", gi, err), Fatal: true})
				}
				vr := page.Values()
				for {
					n, err := vr.ReadValues(vals)
					for _, v := range vals[:n] {
						if v.RepetitionLevel() > 0 {
							continue // only the first value of a repeated column
						}
						pos := row
						row++
						if v.IsNull() {
							if e := r.problem(Problem{File: in.Path, Pos: pos, Unit: "row", Kind: "missing_field", Detail: fmt.Sprintf("column %q is null", r.opts.TextField)}); e != nil {
								return e
							}
							continue
						}
						d := document.Doc{ID: docID(r.opts.Source, rel, pos), Source: r.opts.Source, Text: string(v.ByteArray()), Meta: map[string]any{}, File: in.Path, Pos: pos}
						if e := r.emit(d, "row"); e != nil {
							return e
						}
					}
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						return r.problem(Problem{File: in.Path, Pos: row, Unit: "row", Kind: "bad_parquet", Detail: err.Error(), Fatal: true})
					}
				}
				parquet.Release(page)
			}
		}()
		if err != nil {
			return err
		}
	}
	return nil
}
