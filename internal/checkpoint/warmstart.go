package checkpoint

// WarmStartReport lists what a warm-start took from its checkpoint. It is
// logged, stored in state.json and written to the run's manifest.json.
type WarmStartReport struct {
	From        string   `json:"from"`
	Mode        string   `json:"mode"`
	SourceStep  int      `json:"source_step"`
	Copied      []string `json:"copied"`      // same name and shape: copied
	Initialized []string `json:"initialized"` // absent from the checkpoint: freshly initialised
	Mismatched  []string `json:"mismatched"`  // same name, other shape: freshly initialised
	Unused      []string `json:"unused"`      // in the checkpoint only
}
