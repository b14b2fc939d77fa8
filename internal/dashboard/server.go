package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kestrel-lm/kestrel/internal/hostcheck"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/monitor"
)

//go:embed web
var webFS embed.FS

// Server is the read-only dashboard: the embedded UI plus a JSON API over
// the runs it was given. It never serves a path it was not given.
type Server struct {
	runsDir  string   // scanned for runs (subdirectories holding metrics.jsonl)
	explicit []string // run directories named on the command line
	poll     time.Duration
	// writeIdle is how long a response may wait on a client that takes no
	// data before the connection is dropped (every write moves the deadline).
	writeIdle time.Duration
	// hostNames are the names besides IP literals the Host header may carry:
	// the host of the listen address when it is a name (see checkHost).
	hostNames []string

	mu   sync.Mutex
	runs map[string]*Run // by name
}

// New returns a server for the explicit run directories plus every run found
// under runsDir (which may be empty or missing).
func New(runsDir string, runDirs []string) (*Server, error) {
	s := &Server{runsDir: runsDir, poll: time.Second, writeIdle: 30 * time.Second, runs: map[string]*Run{}}
	for _, d := range runDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", d, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", d, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("run %s: not a directory", d)
		}
		s.explicit = append(s.explicit, abs)
	}
	s.scan()
	return s, nil
}

// Preload reads every known run's metrics in the background, so the first
// page load finds them parsed.
func (s *Server) Preload() {
	s.mu.Lock()
	runs := make([]*Run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		if err := r.refresh(); err != nil {
			slog.Warn("dashboard: preload", "run", r.Name, "err", err)
		}
	}
}

// scan (re)discovers runs. Names are directory base names, made unique.
func (s *Server) scan() {
	dirs := append([]string(nil), s.explicit...)
	if s.runsDir != "" {
		entries, _ := os.ReadDir(s.runsDir)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			d := filepath.Join(s.runsDir, e.Name())
			if isRunDir(d) {
				if abs, err := filepath.Abs(d); err == nil {
					dirs = append(dirs, abs)
				}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byDir := map[string]*Run{}
	for _, r := range s.runs {
		byDir[r.Dir] = r
	}
	for _, d := range dirs {
		if _, ok := byDir[d]; ok {
			continue
		}
		name := filepath.Base(d)
		for i := 2; s.runs[name] != nil; i++ {
			name = fmt.Sprintf("%s-%d", filepath.Base(d), i)
		}
		r := &Run{Name: name, Dir: d, data: newRunData(d), root: runRoot(d)}
		s.runs[name] = r
		byDir[d] = r
	}
}

func isRunDir(d string) bool {
	for _, f := range []string{rundir.MetricsName, rundir.StoreName, rundir.ConfigName} {
		if _, err := os.Stat(filepath.Join(d, f)); err == nil {
			return true
		}
	}
	return false
}

// run looks a run up by name only; request parameters never become paths.
func (s *Server) run(name string) (*Run, error) {
	s.mu.Lock()
	r, ok := s.runs[name]
	s.mu.Unlock()
	if !ok {
		s.scan()
		s.mu.Lock()
		r, ok = s.runs[name]
		s.mu.Unlock()
	}
	if !ok {
		return nil, fmt.Errorf("no run named %q", name)
	}
	if err := r.refresh(); err != nil {
		return nil, err
	}
	return r, nil
}

// Handler returns the HTTP handler of the dashboard. It refuses requests
// whose Host header does not name the server (DNS rebinding, see checkHost)
// and drops a client that takes no data for a while (see writeDeadlines).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web")
	mux.Handle("GET /", noDirListing(http.FileServerFS(static)))
	mux.HandleFunc("GET /api/panels", handlePanels)
	mux.HandleFunc("GET /api/runs", s.handleRuns)
	mux.HandleFunc("GET /api/names", s.handleNames)
	mux.HandleFunc("GET /api/metrics", s.handleMetrics)
	mux.HandleFunc("GET /api/events", s.handleEvents)
	mux.HandleFunc("GET /api/run", s.handleRunInfo)
	mux.HandleFunc("GET /api/stream", s.handleStream)
	mux.HandleFunc("GET /api/samples", s.handleSamples) // samples.go
	mux.HandleFunc("GET /api/compare", s.handleCompare) // compare.go
	mux.HandleFunc("GET /files/{run}/{name...}", s.handleFile)
	return s.checkHost(s.writeDeadlines(securityHeaders(mux)))
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
		h.ServeHTTP(w, r)
	})
}

func noDirListing(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") && r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Warn("dashboard: write response", "err", err)
	}
}

func httpError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// handlePanels serves the panel layout from the metric registry
// (monitor.PanelGroups): groups of panels, each with the patterns of the
// names it draws.
func handlePanels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, monitor.PanelGroups())
}

// RunSummary is one entry of /api/runs.
type RunSummary struct {
	Name     string    `json:"name"`
	Rows     int       `json:"rows"`
	LastStep float64   `json:"last_step"`
	Updated  time.Time `json:"updated"`
	Alerts   int       `json:"alerts"`
	Metrics  int       `json:"metrics"`
}

func (s *Server) handleRuns(w http.ResponseWriter, _ *http.Request) {
	s.scan()
	s.mu.Lock()
	runs := make([]*Run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	sort.Slice(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	out := make([]RunSummary, 0, len(runs))
	for _, r := range runs {
		if err := r.refresh(); err != nil {
			slog.Warn("dashboard: refresh", "run", r.Name, "err", err)
		}
		d := r.data
		d.mu.RLock()
		sum := RunSummary{Name: r.Name, Rows: d.Rows, Updated: d.modTime, Alerts: len(d.alerts), Metrics: len(d.Names()), LastStep: math.NaN()}
		if d.Rows > 0 {
			sum.LastStep = d.Step[d.Rows-1]
		}
		d.mu.RUnlock()
		if math.IsNaN(sum.LastStep) {
			sum.LastStep = 0
		}
		out = append(out, sum)
	}
	writeJSON(w, out)
}

func (s *Server) handleNames(w http.ResponseWriter, req *http.Request) {
	r, err := s.run(req.URL.Query().Get("run"))
	if err != nil {
		httpError(w, http.StatusNotFound, err)
		return
	}
	r.data.mu.RLock()
	names := r.data.Names()
	r.data.mu.RUnlock()
	writeJSON(w, names)
}

func (s *Server) handleMetrics(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	r, err := s.run(q.Get("run"))
	if err != nil {
		httpError(w, http.StatusNotFound, err)
		return
	}
	maxPoints := 2000
	if v := q.Get("max_points"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			httpError(w, http.StatusBadRequest, fmt.Errorf("max_points must be a non-negative integer, got %q", v))
			return
		}
		maxPoints = n
	}
	var names []string
	for _, n := range strings.Split(q.Get("names"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	// Reduce the series under the lock (Downsample copies what it keeps)
	// and release it before encoding and writing: a client that does not
	// read must not hold the run's lock (every other request for the run
	// refreshes it under that lock).
	d := r.data
	d.mu.Lock() // Column may pad columns
	xs, err := d.Axis(q.Get("x"))
	if err != nil {
		d.mu.Unlock()
		httpError(w, http.StatusBadRequest, err)
		return
	}
	if len(names) == 0 {
		names = d.Names()
	}
	idx := d.RowOrder(xs)
	x := make([]float64, len(idx))
	for i, k := range idx {
		x[i] = xs[k]
	}
	series := make([]*Envelope, len(names)) // nil: the run has no such metric
	y := make([]float32, len(idx))
	for i, name := range names {
		col := d.Column(name)
		if col == nil {
			continue
		}
		for j, k := range idx {
			y[j] = col[k]
		}
		e := Downsample(x, y, maxPoints)
		series[i] = &e
	}
	d.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	buf := make([]byte, 0, 1<<16)
	buf = append(buf, `{"run":`...)
	buf = strconv.AppendQuote(buf, r.Name)
	buf = append(buf, `,"x":`...)
	buf = strconv.AppendQuote(buf, q.Get("x"))
	buf = append(buf, `,"series":{`...)
	for i, name := range names {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, name)
		buf = append(buf, ':')
		if series[i] == nil {
			buf = append(buf, "null"...)
			continue
		}
		buf = appendEnvelope(buf, *series[i])
		series[i] = nil
		if len(buf) > 1<<20 {
			if _, err := w.Write(buf); err != nil {
				return
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "}}\n"...)
	_, _ = w.Write(buf)
}

func appendFloats(buf []byte, v []float64) []byte {
	buf = append(buf, '[')
	for i, f := range v {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendFloat(buf, f)
	}
	return append(buf, ']')
}

// appendFloat writes f as JSON; NaN and ±Inf become null (JSON has no such
// numbers; the events API reports non-finite values separately).
func appendFloat(buf []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(buf, "null"...)
	}
	return strconv.AppendFloat(buf, f, 'g', 7, 64)
}

func appendEnvelope(buf []byte, e Envelope) []byte {
	buf = append(buf, `{"n":`...)
	buf = strconv.AppendInt(buf, int64(e.N), 10)
	buf = append(buf, `,"downsampled":`...)
	buf = strconv.AppendBool(buf, e.Down)
	buf = append(buf, `,"x":`...)
	buf = appendXs(buf, e.X)
	buf = append(buf, `,"y":`...)
	buf = appendFloats(buf, e.Y)
	if e.Down {
		buf = append(buf, `,"lo":`...)
		buf = appendFloats(buf, e.Lo)
		buf = append(buf, `,"hi":`...)
		buf = appendFloats(buf, e.Hi)
	}
	return append(buf, '}')
}

// appendXs writes x values exactly (steps and token counts are integers
// beyond float32's precision).
func appendXs(buf []byte, v []float64) []byte {
	buf = append(buf, '[')
	for i, f := range v {
		if i > 0 {
			buf = append(buf, ',')
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			buf = append(buf, "null"...)
			continue
		}
		buf = strconv.AppendFloat(buf, f, 'g', -1, 64)
	}
	return append(buf, ']')
}

func (s *Server) handleEvents(w http.ResponseWriter, req *http.Request) {
	r, err := s.run(req.URL.Query().Get("run"))
	if err != nil {
		httpError(w, http.StatusNotFound, err)
		return
	}
	d := r.data
	d.mu.RLock()
	evs := make([]Event, 0, len(d.events)+len(d.alerts))
	evs = append(evs, d.events...)
	for _, a := range d.alerts {
		// Place alerts on the token and time axes using the row of their step.
		a.Tokens, a.Time = d.lookup(a.Step)
		evs = append(evs, a)
	}
	d.mu.RUnlock()
	evs = append(evs, checkpointEvents(r.root)...)
	evs = append(evs, interventionEvents(r.root)...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Step < evs[j].Step })
	for i := range evs {
		sanitize(&evs[i])
	}
	writeJSON(w, evs)
}

func sanitize(e *Event) {
	for _, p := range []*float64{&e.Step, &e.Tokens, &e.Time} {
		if math.IsNaN(*p) || math.IsInf(*p, 0) {
			*p = -1
		}
	}
}

// lookup returns tokens and time of the last row with the given step.
func (d *runData) lookup(step float64) (float64, float64) {
	for i := d.Rows - 1; i >= 0; i-- {
		if d.Step[i] == step {
			return d.Tokens[i], d.Time[i]
		}
	}
	return math.NaN(), math.NaN()
}

var checkpointRe = regexp.MustCompile(`^step-(\d+)$`)

// checkpointEvents lists committed checkpoints of the run directory.
func checkpointEvents(root runRoot) []Event {
	entries, err := root.readDir(rundir.CheckpointsName)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("dashboard: checkpoints not listed", "err", err)
		}
		return nil
	}
	var out []Event
	for _, e := range entries {
		m := checkpointRe.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		step, _ := strconv.ParseFloat(m[1], 64)
		out = append(out, Event{Step: step, Tokens: -1, Time: -1, Kind: "checkpoint", Title: "checkpoint " + e.Name()})
	}
	return out
}

// RunInfo is /api/run: what the run page shows.
type RunInfo struct {
	Name       string          `json:"name"`
	Config     string          `json:"config"`             // config.toml text
	ConfigFlat map[string]any  `json:"config_flat"`        // section.key → value, for comparing runs
	Manifest   json.RawMessage `json:"manifest"`           // manifest.json
	DataReport json.RawMessage `json:"data_report"`        // the run's data_report.json (a copy of the dataset's report.json), if any
	Files      []string        `json:"files"`              // downloadable files (/files/<run>/<name>)
	TensorBrd  []string        `json:"tensorboard"`        // event files in the run directory
	Rows       int             `json:"rows"`               // metric lines read
	BadLines   int             `json:"bad_lines"`          // lines that did not parse
	FirstBad   string          `json:"first_bad"`          // where the first bad line is
	Alerts     []Event         `json:"alerts"`             // alerts.jsonl
	Dir        string          `json:"dir"`                // run directory
	Updated    time.Time       `json:"updated"`            // metrics.jsonl modification time
	Problems   []string        `json:"problems,omitempty"` // run files that exist but were not read, and why
	Extra      map[string]any  `json:"extra,omitempty"`    // reserved
}

// servedFiles are the run files /files serves, besides report/*.png|md.
var servedFiles = []string{rundir.ConfigName, rundir.ManifestName, rundir.MetricsName, rundir.AlertsName, rundir.TraceName}

// dataReportFile is the dataset's report.json as the run keeps it. The
// dashboard reads nothing outside the run directories it serves, so the
// dataset directory named by the config's data.path is not read: a config is
// written by whoever produced the run directory, and following it would make
// any run a pointer to any file on the machine.
const dataReportFile = rundir.DataReportName

func (s *Server) handleRunInfo(w http.ResponseWriter, req *http.Request) {
	r, err := s.run(req.URL.Query().Get("run"))
	if err != nil {
		httpError(w, http.StatusNotFound, err)
		return
	}
	info := RunInfo{Name: r.Name, Dir: r.Dir}
	// read returns a run file's contents; a file that exists but is refused
	// (outside the run, not regular, too large) is listed in Problems.
	read := func(name string) []byte {
		b, err := r.root.readFile(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			info.Problems = append(info.Problems, err.Error())
			slog.Warn("dashboard: run file not read", "run", r.Name, "err", err)
		}
		return b
	}
	if b := read(rundir.ConfigName); b != nil {
		info.Config = string(b)
		info.ConfigFlat = flattenTOML(b)
	}
	if b := read(rundir.ManifestName); b != nil && json.Valid(b) {
		info.Manifest = b
	}
	if b := read(dataReportFile); b != nil && json.Valid(b) {
		info.DataReport = b
	}
	for _, f := range servedFiles {
		if _, err := r.root.stat(f); err == nil {
			info.Files = append(info.Files, f)
		}
	}
	if entries, err := r.root.readDir(rundir.ReportName); err == nil {
		for _, e := range entries {
			if reportFileRe.MatchString(e.Name()) {
				if _, err := r.root.stat("report/" + e.Name()); err == nil {
					info.Files = append(info.Files, "report/"+e.Name())
				}
			}
		}
	}
	if entries, err := r.root.readDir("."); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tfeventsPrefix) {
				info.TensorBrd = append(info.TensorBrd, e.Name())
			}
		}
	}
	d := r.data
	d.mu.RLock()
	info.Rows, info.BadLines, info.FirstBad, info.Updated = d.Rows, d.BadLines, d.FirstBad, d.modTime
	info.Alerts = append([]Event(nil), d.alerts...)
	if p := d.alertProblem(); p != "" {
		info.Problems = append(info.Problems, p)
	}
	d.mu.RUnlock()
	for i := range info.Alerts {
		sanitize(&info.Alerts[i])
	}
	writeJSON(w, info)
}

// tfeventsPrefix starts the names of TensorBoard event files.
const tfeventsPrefix = "events.out.tfevents."

var reportFileRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.(png|md|svg|json)$`)

// handleFile serves a whitelisted file of a run. The run is looked up by
// name, the file name must be one of servedFiles, report/<safe name> or an
// event file, and it is opened through the run's root, so no request can
// reach outside the run directory (not through a symlink either).
func (s *Server) handleFile(w http.ResponseWriter, req *http.Request) {
	r, err := s.run(req.PathValue("run"))
	if err != nil {
		httpError(w, http.StatusNotFound, err)
		return
	}
	name := req.PathValue("name")
	allowed := false
	for _, f := range servedFiles {
		allowed = allowed || name == f
	}
	if rest, ok := strings.CutPrefix(name, "report/"); ok && reportFileRe.MatchString(rest) {
		allowed = true
	}
	if strings.HasPrefix(name, tfeventsPrefix) && !strings.ContainsAny(name, `/\`) {
		allowed = true
	}
	if !allowed {
		httpError(w, http.StatusNotFound, fmt.Errorf("file %q is not served", name))
		return
	}
	f, fi, err := r.root.open(name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("dashboard: file refused", "run", r.Name, "err", err)
		}
		httpError(w, http.StatusNotFound, fmt.Errorf("file %q of run %s is not served (missing, outside the run directory or not a regular file)", name, r.Name))
		return
	}
	defer f.Close()
	http.ServeContent(w, req, path.Base(name), fi.ModTime(), f)
}

// handleStream sends a server-sent event whenever the run's metrics grow,
// so the page updates without reloading.
func (s *Server) handleStream(w http.ResponseWriter, req *http.Request) {
	r, err := s.run(req.URL.Query().Get("run"))
	if err != nil {
		httpError(w, http.StatusNotFound, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	last := -1
	lastAlerts := -1
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		if err := r.refresh(); err != nil {
			slog.Warn("dashboard: refresh", "run", r.Name, "err", err)
		}
		r.data.mu.RLock()
		rows, alerts := r.data.Rows, len(r.data.alerts)
		r.data.mu.RUnlock()
		if rows != last || alerts != lastAlerts {
			last, lastAlerts = rows, alerts
			// Each write moves the write deadline (writeDeadlines), so a
			// reader that stops taking events is dropped, a quiet stream not.
			if _, err := fmt.Fprintf(w, "event: update\ndata: {\"rows\":%d,\"alerts\":%d}\n\n", rows, alerts); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				if !errors.Is(err, http.ErrNotSupported) {
					return
				}
			}
		}
		select {
		case <-req.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// ListenAndServe serves the dashboard on addr until ctx is cancelled. It
// calls ready with the bound address (useful with port 0) once listening.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard: listen %s: %w", addr, err)
	}
	s.hostNames = append(s.hostNames, hostcheck.Names(addr)...) // --addr myhost:8077: Host "myhost:8077" is this server
	// Write deadlines are per write (writeDeadlines), not a WriteTimeout,
	// which would cut every event stream after the same time.
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("dashboard: %w", err)
	}
}
