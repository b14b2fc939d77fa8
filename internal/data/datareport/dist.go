package datareport

// DistReport describes a distributed `kestrel prepare` (mpirun/srun): how
// the work was split and what each rank held and spent.
type DistReport struct {
	Ranks     int         `json:"ranks"`
	Units     int         `json:"units"`      // work units (files, byte ranges of large JSONL files, limited sources)
	UnitBytes int64       `json:"unit_bytes"` // target bytes per byte range
	PerRank   []RankStats `json:"per_rank"`
}

// RankStats is one rank's share of a distributed prepare.
type RankStats struct {
	Rank        int    `json:"rank"`
	Host        string `json:"host"`
	Workers     int    `json:"workers"`
	Units       int    `json:"units"`
	UnitsReused int    `json:"units_reused"` // skipped: finished by an earlier run (completion marker)
	InputBytes  int64  `json:"input_bytes"`
	Docs        int64  `json:"docs"` // documents read
	// ExactIndexBytes and NearIndexBytes are the rank's partition of the
	// dedup indexes: the hashes (and band keys) it owns, with their
	// document references and ids, as held in memory.
	ExactIndexBytes  int64              `json:"exact_index_bytes"`
	NearIndexBytes   int64              `json:"near_index_bytes"`
	IndexBytesPerDoc float64            `json:"index_bytes_per_doc"` // (exact + near) / documents entering exact dedup in the whole job
	PeakRSSBytes     int64              `json:"peak_rss_bytes"`      // VmHWM (Linux; 0 elsewhere)
	TimingsS         map[string]float64 `json:"timings_s"`
}
