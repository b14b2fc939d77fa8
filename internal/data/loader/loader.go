package loader

import (
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
)

// Options are the run facts the loader needs besides its [data] config.
type Options struct {
	// SeqLen is T, the tokens per sequence (model.seq_len).
	SeqLen int
	// Seed is the run seed, used when data.seed is 0.
	Seed uint64
	// Schedule is the global batch per step index (see package batchsched
	// for the step numbering): the step with index i reads the global
	// sequences [Schedule.FirstSeq(i), +Schedule.At(i)). kestrel train
	// passes the schedule the trainer runs (train.batch_schedule).
	Schedule batchsched.Schedule
	// ReportBase is the number the run reports for step index 0: kestrel
	// train uses 1, the "step" of metrics.jsonl, whose first optimizer step
	// calls Fill(0, …). Fill, BatchInfo, DescribeStep, Epochs and
	// Stats.Step always take or give the 0-based step index (the
	// datasrc.Source convention); data.stages[].start_step and the step
	// numbers in logs, errors and BatchInfo.Number are reported numbers, so
	// a stage with start_step S is in force from step index S − ReportBase
	// on.
	ReportBase int
	// TotalSteps, when > 0, lets New check max_epochs for the whole run up
	// front and warn about sources that will be repeated.
	TotalSteps int
	// Logger receives warnings (nil = slog.Default()).
	Logger *slog.Logger
}

// ConstantBatch is batchsched.Constant(batch): the schedule of a fixed
// global batch, for tools that run the loader without a trainer.
func ConstantBatch(batch int) batchsched.Schedule { return batchsched.Constant(batch) }

// Loader produces batches as a pure function of (dataset, config, seed,
// step). It implements the trainer's DataSource (SeqLen, SourceNames, Fill,
// ValRows, FillVal) and prefetches the next batches in a goroutine. It is
// safe for concurrent use; Close stops the prefetcher.
type Loader struct {
	name    string
	t       int
	seed    uint64
	spec    PermSpec
	pk      packer
	sched   batchsched.Schedule
	names   []string
	purpose []string // "order/<source>": key purpose of each source's permutation
	train   []TokenStream
	val     []TokenStream
	slots   []int64
	valRows []int
	maxEp   []float64
	mix     *mixture
	log     *slog.Logger
	pf      int
	base    int // Options.ReportBase

	mu      sync.Mutex
	cache   map[int]*entry
	work    chan *entry
	closed  bool
	warned  map[[2]int64]bool
	stats   Stats
	started bool
	padSum  int64
	posSum  int64
}

// Stats is what the loader reports for the monitor.
type Stats struct {
	Step             int       // the most recent step index served by Fill (0-based)
	Batches          int64     // distinct steps served
	WaitSeconds      float64   // total time Fill spent waiting for batches (the numerator of dataloader_stall_frac)
	StepWaitSeconds  float64   // of it, during Step
	MixShare         []float64 // share of Step's rows per source (SourceNames order): source_mix_share/<source>
	PadFraction      float64   // padded positions / positions in Step's batch: pad_fraction
	PadFractionTotal float64   // the same over every step served
	Epochs           []float64 // passes over each source's train sequences consumed through Step
}

// entry is one global batch, computed once (by Fill or the prefetcher).
type entry struct {
	step, batch int
	done        chan struct{}
	inputs      []int32
	targets     []int32
	segs        []int32
	srcs        []int
	pad         int
	epochs      []float64
	err         error
}

// New builds a loader over ds. Errors name the config field or source.
func New(ds *Dataset, cfg Config, opts Options) (*Loader, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if opts.SeqLen < 1 {
		return nil, fmt.Errorf("loader: seq_len %d must be ≥ 1", opts.SeqLen)
	}
	if err := opts.Schedule.Validate(); err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	if ds == nil || len(ds.Sources) == 0 {
		return nil, fmt.Errorf("loader: dataset has no sources")
	}
	l := &Loader{
		name:  ds.Name,
		t:     opts.SeqLen,
		seed:  cfg.Seed,
		spec:  PermSpec{Kind: cfg.Permutation, Rounds: cfg.FeistelRounds, Round: cfg.FeistelRound, LCGStride: cfg.LCGStride},
		pk:    packer{mode: cfg.Packing, t: opts.SeqLen},
		sched: opts.Schedule,
		log:   opts.Logger,
		pf:    cfg.Prefetch,
		base:  opts.ReportBase,
		cache: map[int]*entry{},
	}
	if l.seed == 0 {
		l.seed = opts.Seed
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	ds, err := quarantined(ds, cfg, l.log)
	if err != nil {
		return nil, err
	}
	avail := make([]string, len(ds.Sources))
	for i, s := range ds.Sources {
		avail[i] = s.Name
	}
	// step-0 weights and the chosen sources
	var w0 []float64
	if len(cfg.Sources) == 0 {
		for _, s := range ds.Sources {
			l.addSource(s, 0)
			n := int64(0)
			if s.Train != nil {
				n = s.Train.Len()
			}
			w0 = append(w0, float64(n))
		}
	} else {
		for i, sc := range cfg.Sources {
			k := ds.sourceIndex(sc.Name)
			if k < 0 {
				return nil, fmt.Errorf("data.sources[%d]: dataset %s has no source %q (it has %s)", i, ds.Name, sc.Name, strings.Join(avail, ", "))
			}
			l.addSource(ds.Sources[k], sc.MaxEpochs)
			w0 = append(w0, sc.Weight)
		}
	}
	stages := []mixStage{{startStep: 0, k: cfg.MixBlock}}
	if stages[0].weights, err = normalise(w0, "data.sources"); err != nil {
		return nil, err
	}
	for i, st := range cfg.Stages {
		w := make([]float64, len(l.names))
		for name, x := range st.Weights {
			k := l.sourceIndex(name)
			if k < 0 {
				return nil, fmt.Errorf("data.stages[%d].weights: unknown source %q (the mixture has %s)", i, name, strings.Join(l.names, ", "))
			}
			w[k] = x
		}
		if st.StartStep <= l.base {
			return nil, fmt.Errorf("data.stages[%d]: start_step %d must be after the first step %d (put the first mixture in data.sources)", i, st.StartStep, l.base)
		}
		ms := mixStage{startStep: st.StartStep - l.base, k: cfg.MixBlock, cfg: i + 1}
		if ms.weights, err = normalise(w, fmt.Sprintf("data.stages[%d].weights", i)); err != nil {
			return nil, err
		}
		stages = append(stages, rampStages(stages[len(stages)-1].weights, ms, st.RampSteps, l.sched)...)
	}
	if l.mix, err = newMixture(l.seed, l.spec, stages, l.sched); err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	for _, st := range l.mix.stages {
		for s, c := range st.counts {
			if c > 0 && l.slots[s] == 0 {
				return nil, fmt.Errorf("loader: source %q has no %s sequence of seq_len+1 = %d tokens (train split: %d tokens, %d documents) but weight %.4g from step %d",
					l.names[s], l.pk.mode, l.t+1, lenOf(l.train[s]), docsOf(l.train[s]), st.weights[s], st.startStep+l.base)
			}
			if c == 0 && st.weights[s] > 0 && !st.ramp {
				l.log.Warn("data: source weight too small for the mixing block; it gets no sequences",
					"source", l.names[s], "weight", st.weights[s], "mix_block", cfg.MixBlock, "stage_start_step", st.startStep+l.base)
			}
		}
	}
	for s := range l.names {
		n := l.pk.slots(l.val[s])
		if cfg.ValMaxSeqs > 0 && n > int64(cfg.ValMaxSeqs) {
			n = int64(cfg.ValMaxSeqs)
		}
		l.valRows = append(l.valRows, int(n))
	}
	if opts.TotalSteps > 0 {
		if err := l.checkRepetition(opts.TotalSteps); err != nil {
			return nil, err
		}
	}
	if l.pf > 0 {
		l.work = make(chan *entry, l.pf)
		go l.prefetcher()
	}
	return l, nil
}

// rampStages is the data stage to (its weights from its start step) as the
// loader lays it out: with ramp ≤ 1 the stage itself; with ramp = R > 1,
// R−1 ramp steps whose weights move linearly from prev — step start+j uses
// (1−α)·prev + α·to.weights with α = (j+1)/R — each one block of its
// step's batch, then the stage from start+R−1 on, where α reaches 1.
func rampStages(prev []float64, to mixStage, ramp int, sched batchsched.Schedule) []mixStage {
	if ramp <= 1 {
		return []mixStage{to}
	}
	out := make([]mixStage, 0, ramp)
	for j := 0; j < ramp-1; j++ {
		a := float64(j+1) / float64(ramp)
		w := make([]float64, len(prev))
		for s := range w {
			w[s] = (1-a)*prev[s] + a*to.weights[s]
		}
		step := to.startStep + j
		out = append(out, mixStage{startStep: step, weights: w, k: sched.At(step), cfg: to.cfg, ramp: true, rampAt: a})
	}
	to.startStep += ramp - 1
	return append(out, to)
}

func lenOf(s TokenStream) int64 {
	if s == nil {
		return 0
	}
	return s.Len()
}

func docsOf(s TokenStream) int64 {
	if s == nil {
		return 0
	}
	return s.NumDocs()
}

func (l *Loader) addSource(s Source, maxEp float64) {
	l.names = append(l.names, s.Name)
	l.purpose = append(l.purpose, "order/"+s.Name)
	l.train = append(l.train, s.Train)
	l.val = append(l.val, s.Val)
	l.slots = append(l.slots, l.pk.slots(s.Train))
	l.maxEp = append(l.maxEp, maxEp)
}

func (l *Loader) sourceIndex(name string) int {
	for i, n := range l.names {
		if n == name {
			return i
		}
	}
	return -1
}

func normalise(w []float64, field string) ([]float64, error) {
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return nil, fmt.Errorf("%s: weights sum to %v; at least one must be > 0", field, sum)
	}
	out := make([]float64, len(w))
	for i, x := range w {
		out[i] = x / sum
	}
	return out, nil
}

// checkRepetition warns about sources the run will repeat and refuses a
// run that would exceed a source's max_epochs.
func (l *Loader) checkRepetition(steps int) error {
	ep, err := l.Epochs(steps)
	if err != nil {
		return err
	}
	for s, e := range ep {
		if l.maxEp[s] > 0 && e > l.maxEp[s] {
			return fmt.Errorf("data.sources: source %q would be read %.3g times over the run's %d steps but its max_epochs is %g (lower its weight, raise max_epochs or add data)",
				l.names[s], e, steps, l.maxEp[s])
		}
		if e > 1 {
			l.log.Warn("data: source will be repeated", "source", l.names[s], "passes", math.Round(e*1000)/1000, "steps", steps, "sequences_per_pass", l.slots[s])
		}
	}
	return nil
}

// Epochs returns, per source, the passes over its train sequences consumed
// by the steps before step index step (Epochs(n) covers the first n steps).
func (l *Loader) Epochs(step int) ([]float64, error) {
	return l.epochs(step, nil)
}

func (l *Loader) epochs(step int, c *blockCache) ([]float64, error) {
	if step < 0 {
		step = 0
	}
	cnt, err := l.mix.seqsBefore(l.sched.FirstSeq(step), c)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(cnt))
	for s, c := range cnt {
		if l.slots[s] > 0 {
			out[s] = float64(c) / float64(l.slots[s])
		}
	}
	return out, nil
}

// SeqLen is T.
func (l *Loader) SeqLen() int { return l.t }

// SourceNames names the mixture's sources; Fill's srcs and ValRows/FillVal
// index into it.
func (l *Loader) SourceNames() []string { return append([]string(nil), l.names...) }

// Schedule is the batch schedule the loader was built with.
func (l *Loader) Schedule() batchsched.Schedule { return append(batchsched.Schedule(nil), l.sched...) }

// Slots is the number of train sequences of source s per pass.
func (l *Loader) Slots(s int) int64 { return l.slots[s] }

// cursor is per-goroutine lookup state (block table, current permutations).
type cursor struct {
	bc    blockCache
	perms []permSlot
}

type permSlot struct {
	epoch int64
	p     Permutation
}

// rowRef locates one global sequence.
type rowRef struct {
	src   int
	seq   int64 // the source's sequence number over the run
	epoch int64
	slot  int64
}

func (l *Loader) ref(c *cursor, g int64) (rowRef, error) {
	s, j, err := l.mix.locate(&c.bc, g)
	if err != nil {
		return rowRef{}, err
	}
	m := l.slots[s]
	if m == 0 {
		return rowRef{}, fmt.Errorf("source %q has no sequences", l.names[s])
	}
	if l.maxEp[s] > 0 && float64(j) >= l.maxEp[s]*float64(m) {
		return rowRef{}, fmt.Errorf("source %q exhausted at step %d: max_epochs = %g (%d sequences per pass) and the mixture asks for its sequence %d",
			l.names[s], l.sched.StepOf(g)+l.base, l.maxEp[s], m, j)
	}
	e := j / m
	if c.perms == nil {
		c.perms = make([]permSlot, len(l.names))
	}
	ps := &c.perms[s]
	if ps.p == nil || ps.epoch != e {
		p, err := NewPermutation(l.spec, m, DeriveKey(l.seed, l.purpose[s], uint64(e)))
		if err != nil {
			return rowRef{}, fmt.Errorf("source %q epoch %d: %w", l.names[s], e, err)
		}
		ps.p, ps.epoch = p, e
	}
	return rowRef{src: s, seq: j, epoch: e, slot: ps.p.Index(j % m)}, nil
}

// compute fills e with the whole global batch of e.step.
func (l *Loader) compute(e *entry) {
	t := l.t
	e.inputs = make([]int32, e.batch*t)
	e.targets = make([]int32, e.batch*t)
	e.segs = make([]int32, e.batch*t)
	e.srcs = make([]int, e.batch)
	buf := make([]int32, t+1)
	var c cursor
	g0 := l.sched.FirstSeq(e.step)
	for r := 0; r < e.batch; r++ {
		ref, err := l.ref(&c, g0+int64(r))
		if err != nil {
			e.err = fmt.Errorf("data: step %d row %d: %w", e.step+l.base, r, err)
			return
		}
		if ref.epoch > 0 {
			l.noteRepeat(ref, e.step)
		}
		pad, err := l.pk.fill(l.train[ref.src], ref.slot, e.inputs[r*t:(r+1)*t], e.targets[r*t:(r+1)*t], e.segs[r*t:(r+1)*t], buf)
		if err != nil {
			e.err = fmt.Errorf("data: step %d row %d, source %q: %w", e.step+l.base, r, l.names[ref.src], err)
			return
		}
		e.pad += pad
		e.srcs[r] = ref.src
	}
	ep, err := l.epochs(e.step+1, &c.bc)
	if err != nil {
		e.err = fmt.Errorf("data: step %d: %w", e.step+l.base, err)
		return
	}
	e.epochs = ep
}

// noteRepeat logs once per (source, epoch) that a source is being repeated.
func (l *Loader) noteRepeat(r rowRef, step int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.warned == nil {
		l.warned = map[[2]int64]bool{}
	}
	k := [2]int64{int64(r.src), r.epoch}
	if l.warned[k] {
		return
	}
	l.warned[k] = true
	l.log.Warn("data: source is being repeated", "source", l.names[r.src], "pass", r.epoch+1, "step", step+l.base, "sequences_per_pass", l.slots[r.src])
}

func (l *Loader) prefetcher() {
	for e := range l.work {
		l.compute(e)
		close(e.done)
	}
}

// get returns the finished entry of step, computing it now if the
// prefetcher has not, and queues the next steps.
func (l *Loader) get(step, batch int) *entry {
	l.mu.Lock()
	for s := range l.cache {
		if s < step || s > step+l.pf {
			delete(l.cache, s)
		}
	}
	e := l.cache[step]
	mine := false
	if e == nil || e.batch != batch {
		e = &entry{step: step, batch: batch, done: make(chan struct{})}
		l.cache[step] = e
		mine = true
	}
	if !l.closed {
		for k := 1; k <= l.pf; k++ {
			st := step + k
			if l.cache[st] != nil {
				continue
			}
			ne := &entry{step: st, batch: l.sched.At(st), done: make(chan struct{})}
			select {
			case l.work <- ne:
				l.cache[st] = ne
			default:
			}
		}
	}
	l.mu.Unlock()
	if mine {
		l.compute(e)
		close(e.done)
	}
	<-e.done
	return e
}

// Fill writes rows [row0, row0+n) of the global batch of step index step
// (0-based; batch sequences) into inputs and targets (n·T each), segIDs (n·T, document
// segment ids; may be nil) and srcs (n source indices; may be nil). The
// result depends only on (dataset, config, seed, step); batch must equal
// the schedule's batch for step. Targets equal to PadTarget carry no loss.
func (l *Loader) Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error {
	if step < 0 {
		return fmt.Errorf("data: step index %d is negative", step)
	}
	if want := l.sched.At(step); batch != want {
		return fmt.Errorf("data: step %d: asked for a global batch of %d but the loader's batch schedule gives %d (pass the trainer's batch schedule to the loader)", step+l.base, batch, want)
	}
	if row0 < 0 || n < 0 || row0+n > batch {
		return fmt.Errorf("data: step %d: rows [%d,%d) outside the batch of %d", step+l.base, row0, row0+n, batch)
	}
	t := l.t
	if len(inputs) < n*t || len(targets) < n*t || (segIDs != nil && len(segIDs) < n*t) || (srcs != nil && len(srcs) < n) {
		return fmt.Errorf("data: step %d: buffers too short for %d rows of %d tokens (inputs %d, targets %d, segIDs %d, srcs %d)",
			step+l.base, n, t, len(inputs), len(targets), len(segIDs), len(srcs))
	}
	start := time.Now()
	e := l.get(step, batch)
	wait := time.Since(start).Seconds()
	if e.err != nil {
		return e.err
	}
	copy(inputs[:n*t], e.inputs[row0*t:])
	copy(targets[:n*t], e.targets[row0*t:])
	if segIDs != nil {
		copy(segIDs[:n*t], e.segs[row0*t:])
	}
	if srcs != nil {
		copy(srcs[:n], e.srcs[row0:])
	}
	l.account(e, wait)
	return nil
}

func (l *Loader) account(e *entry, wait float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := &l.stats
	st.WaitSeconds += wait
	if !l.started || st.Step != e.step {
		l.started = true
		st.Step = e.step
		st.Batches++
		st.StepWaitSeconds = 0
		share := make([]float64, len(l.names))
		for _, s := range e.srcs {
			share[s] += 1 / float64(e.batch)
		}
		st.MixShare = share
		pos := int64(e.batch * l.t)
		st.PadFraction = float64(e.pad) / float64(pos)
		l.padSum += int64(e.pad)
		l.posSum += pos
		st.PadFractionTotal = float64(l.padSum) / float64(l.posSum)
		st.Epochs = e.epochs
	}
	st.StepWaitSeconds += wait
}

// Stats returns a copy of the loader's counters.
func (l *Loader) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.MixShare = append([]float64(nil), s.MixShare...)
	s.Epochs = append([]float64(nil), s.Epochs...)
	return s
}

// Close stops the prefetcher. Fill keeps working (synchronously).
func (l *Loader) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		if l.work != nil {
			close(l.work)
		}
	}
	return nil
}

// ValRows is the number of validation sequences of source s.
func (l *Loader) ValRows(s int) int {
	if s < 0 || s >= len(l.valRows) {
		return 0
	}
	return l.valRows[s]
}

// FillVal writes validation rows [row0, row0+n) of source s: the val split
// cut into consecutive sequences (no shuffling), packed like train.
func (l *Loader) FillVal(s, row0, n int, inputs, targets, segIDs []int32) error {
	if s < 0 || s >= len(l.names) {
		return fmt.Errorf("data: val source %d outside [0,%d)", s, len(l.names))
	}
	if row0 < 0 || n < 0 || row0+n > l.valRows[s] {
		return fmt.Errorf("data: val source %q: rows [%d,%d) outside [0,%d)", l.names[s], row0, row0+n, l.valRows[s])
	}
	t := l.t
	if len(inputs) < n*t || len(targets) < n*t || (segIDs != nil && len(segIDs) < n*t) {
		return fmt.Errorf("data: val source %q: buffers too short for %d rows of %d tokens", l.names[s], n, t)
	}
	buf := make([]int32, t+1)
	for r := 0; r < n; r++ {
		var seg []int32
		if segIDs != nil {
			seg = segIDs[r*t : (r+1)*t]
		}
		if _, err := l.pk.fill(l.val[s], int64(row0+r), inputs[r*t:(r+1)*t], targets[r*t:(r+1)*t], seg, buf); err != nil {
			return fmt.Errorf("data: val source %q row %d: %w", l.names[s], row0+r, err)
		}
	}
	return nil
}

// DocSpan is one document (part) inside a row.
type DocSpan struct {
	Doc       int64  // document index in the source's train split
	ID        string // upstream document id when the dataset knows it
	RowPos    int    // first row position holding it
	DocOffset int64  // token offset inside the document of that position
}

// RowInfo says where one row of a batch came from.
type RowInfo struct {
	Row         int
	Source      string
	SourceIndex int
	Seq         int64 // the source's sequence number over the run (epoch·slots + position in the epoch)
	Epoch       int64 // pass over the source (0 = first)
	Slot        int64 // sequence slot in the source (window index for concat, document for bos)
	Offset      int64 // token offset of the row's first token in the source's train split
	Docs        []DocSpan
}

// BatchInfo describes a step's batch: which documents were in it.
type BatchInfo struct {
	Step     int // 0-based step index
	Number   int // the step as the run reports it (Step + Options.ReportBase)
	Batch    int
	FirstSeq int64
	Rows     []RowInfo
}

// BatchInfo recomputes where every row of the batch of step index step
// (0-based, as in Fill) comes from, without reading tokens ("which documents
// were in the batch at the spike?").
func (l *Loader) BatchInfo(step int) (BatchInfo, error) {
	if step < 0 {
		return BatchInfo{}, fmt.Errorf("data: step index %d is negative", step)
	}
	b := BatchInfo{Step: step, Number: step + l.base, Batch: l.sched.At(step), FirstSeq: l.sched.FirstSeq(step)}
	var c cursor
	for r := 0; r < b.Batch; r++ {
		ref, err := l.ref(&c, b.FirstSeq+int64(r))
		if err != nil {
			return b, fmt.Errorf("data: step %d row %d: %w", step+l.base, r, err)
		}
		off, _ := l.pk.span(l.train[ref.src], ref.slot)
		b.Rows = append(b.Rows, RowInfo{
			Row: r, Source: l.names[ref.src], SourceIndex: ref.src, Seq: ref.seq, Epoch: ref.epoch,
			Slot: ref.slot, Offset: off, Docs: l.pk.docsIn(l.train[ref.src], ref.slot),
		})
	}
	return b, nil
}

// Shares is the fraction of rows per source name.
func (b BatchInfo) Shares() map[string]float64 {
	out := map[string]float64{}
	for _, r := range b.Rows {
		out[r.Source] += 1 / float64(len(b.Rows))
	}
	return out
}

// String renders the batch one row per line: source, pass, offset and
// documents (index[@offset-in-doc]).
func (b BatchInfo) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "step %d: %d sequences from global index %d\n", b.Number, b.Batch, b.FirstSeq)
	shares := b.Shares()
	names := make([]string, 0, len(shares))
	for n := range shares {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&sb, "  share %s = %.3f\n", n, shares[n])
	}
	for _, r := range b.Rows {
		fmt.Fprintf(&sb, "  row %d: %s pass %d slot %d tokens@%d docs", r.Row, r.Source, r.Epoch+1, r.Slot, r.Offset)
		for _, d := range r.Docs {
			id := fmt.Sprint(d.Doc)
			if d.ID != "" {
				id = d.ID
			}
			if d.DocOffset > 0 {
				fmt.Fprintf(&sb, " %s@+%d", id, d.DocOffset)
			} else {
				fmt.Fprintf(&sb, " %s", id)
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// DescribeStep is BatchInfo(step) rendered as text, for the monitor's
// spike reports; step is the 0-based index (the text names the reported step).
func (l *Loader) DescribeStep(step int) (string, error) {
	b, err := l.BatchInfo(step)
	if err != nil {
		return "", err
	}
	return b.String(), nil
}
