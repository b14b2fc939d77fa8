package runlog

import (
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// storeSchema is the layout of metrics.sqlite, the run's metric store; time
// is Unix seconds. Each step is one row of samples with its values as a
// JSON object in the run directory's one number encoding (non-finite values
// as "NaN", "Infinity", "-Infinity"; one insert per step keeps the writer
// cheap); an evaluation adds a samples row of its values too, so the
// metrics view presents every metric as (step, tokens, time, name, value)
// rows, NULL for a non-finite value. events holds checkpoints, evaluations and resumes; alerts the
// fired rules (as alerts.jsonl); run the run's identity (name, config and
// manifest hashes).
const storeSchema = `
CREATE TABLE IF NOT EXISTS run(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS samples(step INTEGER NOT NULL, tokens INTEGER NOT NULL, time REAL NOT NULL, vals TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS samples_step ON samples(step);
CREATE VIEW IF NOT EXISTS metrics(step, tokens, time, name, value) AS
  SELECT s.step, s.tokens, s.time, j.key, CASE WHEN j.type IN ('integer', 'real') THEN j.value END FROM samples s, json_each(s.vals) j;
CREATE TABLE IF NOT EXISTS events(step INTEGER, tokens INTEGER, time REAL, kind TEXT, ok INTEGER, path TEXT, detail TEXT, data TEXT);
CREATE TABLE IF NOT EXISTS alerts(step INTEGER, tokens INTEGER, time REAL, severity TEXT, rule TEXT, metric TEXT, value REAL, threshold REAL, message TEXT, verdict TEXT, action TEXT, runbook TEXT, evidence TEXT);
`

// Store writes metrics.sqlite. Writes are queued to a background
// goroutine that commits them in batched transactions, so a training step
// only pays for building the rows.
type Store struct {
	db   *sql.DB
	path string
	ch   chan storeBatch
	done chan struct{}
	mu   sync.Mutex
	err  error
	// FlushEvery bounds how long rows wait before they are committed.
	flushEvery time.Duration
	busy       atomic.Int64 // nanoseconds spent committing
}

// Busy is the time the background writer spent committing so far (the
// store's CPU cost beside the training step).
func (s *Store) Busy() time.Duration { return time.Duration(s.busy.Load()) }

type metricRow struct {
	step, tokens int64
	time         float64
	name         string
	value        float64
}

type storeBatch struct {
	metrics []metricRow
	event   *Event
	alert   *Alert
	kv      [2]string
	sync    chan struct{}
}

// OpenStore opens (creating if needed) the store at path and starts its
// writer goroutine.
func OpenStore(path string) (*Store, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=5000"} {
		if _, err := db.Exec(p); err != nil {
			db.Close()
			return nil, fmt.Errorf("store %s: %s: %w", path, p, err)
		}
	}
	if _, err := db.Exec(storeSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: schema: %w", path, err)
	}
	s := &Store{db: db, path: path, ch: make(chan storeBatch, 1024), done: make(chan struct{}), flushEvery: 500 * time.Millisecond}
	go s.loop()
	return s, nil
}

// SetRunInfo records a key/value of the run table (name, config hash …).
func (s *Store) SetRunInfo(key, value string) { s.ch <- storeBatch{kv: [2]string{key, value}} }

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// WriteValues queues one samples row: the values of a step at time t.
func (s *Store) WriteValues(step, tokens int64, t time.Time, values map[string]float64) error {
	if err := s.Err(); err != nil {
		return err
	}
	if len(values) == 0 {
		return nil
	}
	rows := make([]metricRow, 0, len(values))
	ut := unix(t)
	for k, v := range values {
		rows = append(rows, metricRow{step, tokens, ut, k, v})
	}
	s.ch <- storeBatch{metrics: rows}
	return nil
}

// WriteEvent queues an event.
func (s *Store) WriteEvent(e *Event) error {
	cp := *e
	s.ch <- storeBatch{event: &cp}
	return s.Err()
}

// WriteAlert queues an alert.
func (s *Store) WriteAlert(a *Alert) error {
	cp := *a
	s.ch <- storeBatch{alert: &cp}
	return s.Err()
}

// Sync waits until everything queued so far is committed.
func (s *Store) Sync() error {
	c := make(chan struct{})
	s.ch <- storeBatch{sync: c}
	<-c
	return s.Err()
}

// Err returns the first write error, if any.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Store) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = fmt.Errorf("store %s: %w", s.path, err)
	}
	s.mu.Unlock()
}

// Close commits what is queued and closes the database.
func (s *Store) Close() error {
	close(s.ch)
	<-s.done
	err := s.db.Close()
	if e := s.Err(); e != nil {
		return e
	}
	return err
}

func (s *Store) loop() {
	defer close(s.done)
	var pending []storeBatch
	n := 0
	tick := time.NewTicker(s.flushEvery)
	defer tick.Stop()
	flush := func() {
		if len(pending) == 0 {
			return
		}
		t0 := time.Now()
		if err := s.commit(pending); err != nil {
			s.setErr(err)
		}
		s.busy.Add(int64(time.Since(t0)))
		for _, b := range pending {
			if b.sync != nil {
				close(b.sync)
			}
		}
		pending, n = pending[:0], 0
	}
	for {
		select {
		case b, ok := <-s.ch:
			if !ok {
				flush()
				return
			}
			pending = append(pending, b)
			n += len(b.metrics) + 1
			if b.sync != nil || n >= 8192 {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func nullable(v float64) any {
	if !finite(v) {
		return nil
	}
	return v
}

func (s *Store) commit(bs []storeBatch) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.Prepare("INSERT INTO samples(step, tokens, time, vals) VALUES(?,?,?,?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	var js []byte
	for _, b := range bs {
		if len(b.metrics) > 0 {
			js = appendValuesJSON(js[:0], b.metrics)
			r := b.metrics[0]
			if _, err := ins.Exec(r.step, r.tokens, r.time, string(js)); err != nil {
				return err
			}
		}
		if e := b.event; e != nil {
			data := marshalValues(e.Values)
			if e.Kind == EventEval && len(e.Values) > 0 {
				rows := make([]metricRow, 0, len(e.Values))
				for k, v := range e.Values {
					rows = append(rows, metricRow{e.Step, e.Tokens, unix(e.Time), k, v})
				}
				js = appendValuesJSON(js[:0], rows)
				if _, err := ins.Exec(e.Step, e.Tokens, unix(e.Time), string(js)); err != nil {
					return err
				}
			}
			ok := 0
			if e.OK {
				ok = 1
			}
			if _, err := tx.Exec("INSERT INTO events(step, tokens, time, kind, ok, path, detail, data) VALUES(?,?,?,?,?,?,?,?)",
				e.Step, e.Tokens, unix(e.Time), e.Kind, ok, e.Path, e.Detail, data); err != nil {
				return err
			}
		}
		if a := b.alert; a != nil {
			if _, err := tx.Exec("INSERT INTO alerts(step, tokens, time, severity, rule, metric, value, threshold, message, verdict, action, runbook, evidence) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
				a.Step, a.Tokens, unix(a.Time), string(a.Severity), a.Rule, a.Metric, nullable(a.Value), nullable(a.Threshold), a.Message, a.Verdict, a.Action, a.Runbook, a.Evidence); err != nil {
				return err
			}
		}
		if b.kv[0] != "" {
			if _, err := tx.Exec("INSERT OR REPLACE INTO run(key, value) VALUES(?,?)", b.kv[0], b.kv[1]); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// appendValuesJSON writes rows' names and values as one JSON object, sorted
// by name, in the one number encoding.
func appendValuesJSON(b []byte, rows []metricRow) []byte {
	slices.SortFunc(rows, func(a, b metricRow) int { return strings.Compare(a.name, b.name) }) // names are unique: the order sort.Slice gave
	b = append(b, '{')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, r.name)
		b = append(b, ':')
		b = AppendFloat(b, r.value)
	}
	return append(b, '}')
}
