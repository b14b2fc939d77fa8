package runlog

import (
	"database/sql"
	"fmt"
	"os"
	"strings"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// A Log whose Path ends in ".sqlite" reads a metrics store as the monitor
// writes it (monitor.OpenStore, `kestrel train`'s metrics.sqlite, `kestrel
// watch --store`): table samples(step, tokens, time, vals) with one JSON
// object of values per step. Rows are read incrementally by rowid, so a live
// store can be followed like a growing metrics.jsonl.

// IsSQLite reports whether path names a metrics store rather than a JSONL file.
func IsSQLite(path string) bool {
	return strings.HasSuffix(path, ".sqlite") || strings.HasSuffix(path, ".db")
}

func openStore(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("metrics store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// refreshSQLite reads the sample rows added since the last call.
func (l *Log) refreshSQLite() error {
	if _, err := os.Stat(l.Path); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("metrics: %w", err)
	}
	db, err := openStore(l.Path)
	if err != nil {
		return err
	}
	defer db.Close()
	var maxID int64
	if err := db.QueryRow("SELECT IFNULL(MAX(rowid), 0) FROM samples").Scan(&maxID); err != nil {
		return fmt.Errorf("metrics store %s: %w (is it a kestrel metrics.sqlite?)", l.Path, err)
	}
	if maxID < l.offset {
		l.reset() // the store was recreated
	}
	rows, err := db.Query("SELECT rowid, step, tokens, time, vals FROM samples WHERE rowid > ? ORDER BY rowid", l.offset)
	if err != nil {
		return fmt.Errorf("metrics store %s: %w (is it a kestrel metrics.sqlite?)", l.Path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, step, tokens int64
			t                float64
			vals             string
		)
		if err := rows.Scan(&id, &step, &tokens, &t, &vals); err != nil {
			return fmt.Errorf("metrics store %s: %w", l.Path, err)
		}
		l.offset = id
		l.lineNo++
		// vals is one JSON object of the step's values; the axes come from
		// their columns.
		if perr := ParseLine([]byte(vals), l.rec); perr != nil {
			l.badRow(id, perr)
			continue
		}
		l.rec.set("step", float64(step))
		l.rec.set("tokens_seen", float64(tokens))
		l.rec.set("unix_time", t)
		l.Add(l.rec)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("metrics store %s: %w", l.Path, err)
	}
	return nil
}

func (l *Log) badRow(id int64, err error) {
	l.BadLines++
	if l.FirstBad == "" {
		l.FirstBad = fmt.Sprintf("%s: samples row %d: %v", l.Path, id, err)
	}
}

// StoreAlerts returns the alerts rows of the metrics store at path added
// after rowid `after`, and the last rowid read. A missing file is not an
// error.
func StoreAlerts(path string, after int64) ([]Alert, int64, error) {
	if _, err := os.Stat(path); err != nil {
		if os.IsNotExist(err) {
			return nil, after, nil
		}
		return nil, after, fmt.Errorf("metrics store: %w", err)
	}
	db, err := openStore(path)
	if err != nil {
		return nil, after, err
	}
	defer db.Close()
	return queryAlerts(db, path, after)
}
