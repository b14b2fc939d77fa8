package prepare

import (
	"slices"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// recordOverlap counts a contaminated document once per eval set it hits.
func (p *pipeline) recordOverlap(rec document.Doc, m decontam.Match) {
	counted := map[string]bool{}
	for _, h := range m.Hits {
		o := p.rep.Overlap[h.EvalSet]
		if o == nil {
			o = &datareport.Overlap{PerSource: map[string]int64{}}
			p.rep.Overlap[h.EvalSet] = o
		}
		if p.itemSeen[h.EvalSet+"\x00"+h.ItemID] == false {
			p.itemSeen[h.EvalSet+"\x00"+h.ItemID] = true
			o.Items++
			if len(o.ItemIDs) < p.cfg.Report.MaxItemIDs {
				o.ItemIDs = append(o.ItemIDs, h.ItemID)
			}
		}
		if counted[h.EvalSet] {
			continue
		}
		counted[h.EvalSet] = true
		o.Docs++
		o.PerSource[rec.Source]++
		if len(o.Examples) < 5 {
			o.Examples = append(o.Examples, datareport.OverlapExample{DocID: rec.ID, NGram: h.NGram})
		}
	}
}

func (p *pipeline) hotspots(clusters []Cluster) []datareport.Hotspot {
	c := slices.Clone(clusters)
	sort.SliceStable(c, func(i, j int) bool {
		if len(c[i].Members) != len(c[j].Members) {
			return len(c[i].Members) > len(c[j].Members)
		}
		return c[i].Kept < c[j].Kept
	})
	if len(c) > p.cfg.Report.Hotspots {
		c = c[:p.cfg.Report.Hotspots]
	}
	out := make([]datareport.Hotspot, len(c))
	for i, cl := range c {
		out[i] = datareport.Hotspot{Size: len(cl.Members), KeptID: cl.Kept, Members: firstN(cl.Members, 5)}
	}
	return out
}

func (p *pipeline) finishReport() {
	r := p.rep
	r.Sources = p.uniq
	r.Totals = map[string]*datareport.StageCount{}
	var all []int32
	for _, s := range p.uniq {
		for name, c := range s.Stages {
			t := r.Totals[name]
			if t == nil {
				t = &datareport.StageCount{}
				r.Totals[name] = t
			}
			t.In.Docs += c.In.Docs
			t.In.Bytes += c.In.Bytes
			t.Out.Docs += c.Out.Docs
			t.Out.Bytes += c.Out.Bytes
		}
		r.Kept.Docs += s.Kept.Docs
		r.Kept.Bytes += s.Kept.Bytes
		s.BytesPerDoc = datareport.PercentilesOf(p.sizes[s.Name])
		all = append(all, p.sizes[s.Name]...)
	}
	r.BytesPerDoc = datareport.PercentilesOf(all)
	if t := r.Totals[datareport.StageExact]; t != nil && t.In.Docs > 0 {
		r.ExactDupRate = float64(t.In.Docs-t.Out.Docs) / float64(t.In.Docs)
	}
	if t := r.Totals[datareport.StageNear]; t != nil && t.In.Docs > 0 {
		r.NearDupRate = float64(t.In.Docs-t.Out.Docs) / float64(t.In.Docs)
	}
	r.TrainValOverlap = map[string]float64{}
	if t := r.Totals[datareport.StageDecontam]; t != nil {
		for _, set := range p.evalSets() {
			o := r.Overlap[set]
			n := int64(0)
			if o != nil {
				n = o.Docs
			}
			rate := 0.0
			if t.In.Docs > 0 {
				rate = float64(n) / float64(t.In.Docs)
			}
			r.TrainValOverlap[set] = rate
		}
	}
	r.TimingsS = p.timings
}
