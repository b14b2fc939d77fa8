package prepare

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// startProgress shows a progress bar when opts.Progress is a terminal and
// logs periodic lines otherwise. It returns a stop function.
func (p *pipeline) startProgress(ctx context.Context) func() {
	every, err := time.ParseDuration(p.cfg.LogEvery)
	if err != nil || every <= 0 {
		every = 5 * time.Second
	}
	var total int64
	for _, ins := range p.inputs {
		for _, in := range ins {
			if st, err := os.Stat(in.Path); err == nil && !st.IsDir() {
				total += st.Size()
			}
		}
	}
	var bar *progressbar.ProgressBar
	if f, ok := p.opts.Progress.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions64(max(total, 1),
			progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription("prepare"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		every = 250 * time.Millisecond
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				if bar != nil {
					bar.Finish()
				}
				return
			case <-ctx.Done():
				return
			case <-t.C:
				docs, mb := p.readDocs.Load(), float64(p.readBytes.Load())/1e6
				rate := mb / time.Since(start).Seconds()
				if bar != nil {
					bar.Describe(fmt.Sprintf("prepare: %d docs, %.1f MB text, %.1f MB/s", docs, mb, rate))
					bar.Set64(min(p.inBytes.Load(), total))
				} else if p.opts.Progress != nil {
					p.opts.Log.Info("prepare progress", "docs", docs, "text_mb", fmt.Sprintf("%.1f", mb), "mb_per_s", fmt.Sprintf("%.1f", rate), "input_mb", fmt.Sprintf("%.1f/%.1f", float64(p.inBytes.Load())/1e6, float64(total)/1e6))
				}
			}
		}
	}()
	return func() {
		select {
		case <-done:
		default:
			close(done)
		}
		<-stopped
	}
}
