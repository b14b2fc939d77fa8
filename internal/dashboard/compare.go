package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/compare"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// handleCompare answers GET /api/compare?runs=A,B[,…][&window=N]: the
// comparison `kestrel compare --json` prints (internal/compare) of the
// runs the dashboard overlays, each after the first against the first. One
// run alone must be a branch whose parent this dashboard serves too; the
// dashboard reads no run it does not serve.
func (s *Server) handleCompare(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	var dirs []string
	for _, n := range strings.Split(q.Get("runs"), ",") {
		if n == "" {
			continue
		}
		r, err := s.run(n)
		if err != nil {
			httpError(w, http.StatusNotFound, err)
			return
		}
		if err := checkCompareFiles(r); err != nil {
			httpError(w, http.StatusForbidden, err)
			return
		}
		dirs = append(dirs, r.Dir)
	}
	if len(dirs) == 0 {
		httpError(w, http.StatusBadRequest, errors.New("compare: name the runs, as runs=A,B"))
		return
	}
	if len(dirs) == 1 {
		parent, err := s.parentOf(dirs[0])
		if err != nil {
			httpError(w, http.StatusNotFound, err)
			return
		}
		dirs = []string{parent, dirs[0]}
	}
	var o compare.Options
	if v := q.Get("window"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			httpError(w, http.StatusBadRequest, fmt.Errorf("compare: window=%q: want a number of steps > 0", v))
			return
		}
		o.Window = n
	}
	rep, err := compare.Compare(dirs, o)
	if err != nil {
		httpError(w, http.StatusUnprocessableEntity, err)
		return
	}
	b, err := json.Marshal(rep)
	if err != nil {
		httpError(w, http.StatusInternalServerError, fmt.Errorf("compare: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(b, '\n'))
}

// compareFiles are the run files internal/compare reads by path.
var compareFiles = []string{rundir.MetricsName, rundir.AlertsName, runlog.InterventionsFile, rundir.ConfigName, runlog.ManifestFile, runlog.BranchFile}

// checkCompareFiles refuses a run whose files compare reads lead out of
// the run or are not regular files (runRoot.check), as every other
// endpoint does.
func checkCompareFiles(r *Run) error {
	for _, n := range compareFiles {
		if err := r.root.check(n); err != nil {
			return fmt.Errorf("compare: run %s: %w", r.Name, err)
		}
	}
	return nil
}

// parentOf is the directory of the served run that the branch in dir
// started from.
func (s *Server) parentOf(dir string) (string, error) {
	p, err := runlog.ReadBranch(dir)
	if err != nil {
		return "", err
	}
	if p == nil {
		return "", fmt.Errorf("compare: %s is no branch (no %s): select two runs to compare", dir, runlog.BranchFile)
	}
	want, err := os.Stat(p.Run)
	if err == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.runs {
			if st, err := os.Stat(r.Dir); err == nil && os.SameFile(st, want) {
				if err := checkCompareFiles(r); err != nil {
					return "", err
				}
				return r.Dir, nil
			}
		}
	}
	return "", fmt.Errorf("compare: the branch's parent %s is not a run this dashboard serves (kestrel dash BRANCH PARENT serves both)", p.Run)
}
