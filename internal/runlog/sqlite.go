package runlog

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

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
	return scanSamples(db, l.Path, l.offset, l.rec, func(id int64, perr error) {
		l.offset = id
		l.lineNo++
		if perr != nil {
			l.badRow(id, perr)
			return
		}
		l.Add(l.rec)
	})
}

// scanSamples reads the samples rows after rowid `after` in order, parsing
// each into rec (its values, then the axes step, tokens_seen and unix_time
// from their columns), and calls fn with the row id and the parse error.
func scanSamples(db *sql.DB, path string, after int64, rec *Record, fn func(id int64, perr error)) error {
	rows, err := db.Query("SELECT rowid, step, tokens, time, vals FROM samples WHERE rowid > ? ORDER BY rowid", after)
	if err != nil {
		return fmt.Errorf("metrics store %s: %w (is it a kestrel metrics.sqlite?)", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, step, tokens int64
			t                float64
			vals             string
		)
		if err := rows.Scan(&id, &step, &tokens, &t, &vals); err != nil {
			return fmt.Errorf("metrics store %s: %w", path, err)
		}
		if perr := ParseLine([]byte(vals), rec); perr != nil {
			fn(id, perr)
			continue
		}
		rec.set("step", float64(step))
		rec.set("tokens_seen", float64(tokens))
		rec.set("unix_time", t)
		fn(id, nil)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("metrics store %s: %w", path, err)
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

// StoreRow is one step's values read back from a metrics store.
type StoreRow struct {
	Step, Tokens int64
	Time         time.Time
	Values       map[string]float64
}

// ReadStore reads a metrics.sqlite back: one row per step ordered by step
// (its samples rows merged; NULL values come back as NaN), and the alerts
// in insertion order.
func ReadStore(path string) ([]StoreRow, []Alert, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("metrics store: %w", err)
	}
	db, err := openStore(path)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	byStep := map[int64]*StoreRow{}
	var steps []int64
	rec := NewRecord()
	err = scanSamples(db, path, 0, rec, func(id int64, perr error) {
		if perr != nil {
			return
		}
		sv, _ := rec.Num("step")
		step := int64(sv)
		row := byStep[step]
		if row == nil {
			tok, _ := rec.Num("tokens_seen")
			t, _ := rec.Num("unix_time")
			sec, frac := math.Modf(t)
			row = &StoreRow{Step: step, Tokens: int64(tok), Time: time.Unix(int64(sec), int64(frac*1e9)), Values: map[string]float64{}}
			byStep[step] = row
			steps = append(steps, step)
		}
		rec.Each(func(name string, v float64) {
			if !axes[name] {
				row.Values[name] = v
			}
		})
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
	out := make([]StoreRow, 0, len(steps))
	for _, st := range steps {
		out = append(out, *byStep[st])
	}
	alerts, _, err := queryAlerts(db, path, 0)
	if err != nil {
		return nil, nil, err
	}
	return out, alerts, nil
}

// queryAlerts reads the alerts rows after rowid `after` and returns them
// with the last rowid read.
func queryAlerts(db *sql.DB, path string, after int64) ([]Alert, int64, error) {
	rows, err := db.Query("SELECT rowid, time, step, tokens, severity, rule, metric, value, threshold, message, verdict, action, runbook, evidence FROM alerts WHERE rowid > ? ORDER BY rowid", after)
	if err != nil {
		return nil, after, fmt.Errorf("metrics store %s: alerts: %w", path, err)
	}
	defer rows.Close()
	var out []Alert
	for rows.Next() {
		var (
			id, step, tokens                                               sql.NullInt64
			t, value, threshold                                            sql.NullFloat64
			sev, rule, metric, message, verdict, action, runbook, evidence sql.NullString
		)
		if err := rows.Scan(&id, &t, &step, &tokens, &sev, &rule, &metric, &value, &threshold, &message, &verdict, &action, &runbook, &evidence); err != nil {
			return nil, after, fmt.Errorf("metrics store %s: alerts: %w", path, err)
		}
		after = id.Int64
		a := Alert{Step: step.Int64, Tokens: tokens.Int64, Severity: Severity(sev.String), Rule: rule.String, Metric: metric.String,
			Value: math.NaN(), Threshold: math.NaN(), Message: message.String, Verdict: verdict.String, Action: action.String,
			Runbook: runbook.String, Evidence: evidence.String}
		if t.Valid && t.Float64 > 0 {
			sec, frac := math.Modf(t.Float64)
			a.Time = time.Unix(int64(sec), int64(frac*1e9))
		}
		if value.Valid {
			a.Value = value.Float64
		}
		if threshold.Valid {
			a.Threshold = threshold.Float64
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, after, fmt.Errorf("metrics store %s: alerts: %w", path, err)
	}
	return out, after, nil
}
