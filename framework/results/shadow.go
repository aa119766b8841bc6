package results

// Shadow is one shadow policy's what-if over the run's plan requests
// (framework/stages/shadow): the hits, misses and evictions it would have
// had on the serving policy's exact stream, the rows that would have
// crossed the link, and the modeled time those would cost. It moved no
// row and touched no training; its modeled time is not part of the run's
// modeled clock.
type Shadow struct {
	// Stage is the shadow stage that ran it.
	Stage string `json:"stage"`
	// Plugin and Size are the policy and its cache.size as written; Rows
	// is the capacity per table they come to.
	Plugin string  `json:"plugin"`
	Size   float64 `json:"size"`
	Rows   int64   `json:"rows_per_table"`
	// Hits, Misses and Evictions count the training batches' lookups
	// (duplicates included) and evicted rows, as results' cache does.
	Hits      int64   `json:"hits"`
	Misses    int64   `json:"misses"`
	Evictions int64   `json:"evictions"`
	HitRate   float64 `json:"hit_rate"`
	// LinkBytes are the rows that would cross the link (to_device: the
	// distinct missed rows placed in a slot; to_host: the victims), whole
	// rows with their optimizer state, over the training batches.
	LinkBytes map[string]int64 `json:"bytes_per_link"`
	// Link is the device whose link the bytes are costed on; ModeledLinkMs
	// is that cost (modeled, both directions at once, as exchange
	// charges), 0 without a link.
	Link          string  `json:"link,omitempty"`
	ModeledLinkMs float64 `json:"modeled_link_ms"`
	// PlanWallMs is the wall time its own plan calls took, over every
	// batch (measured): what the shadow cost the machine.
	PlanWallMs float64 `json:"plan_wall_ms"`
	// Batches is how many batches it planned, held-out ones included.
	Batches int `json:"batches"`
	// BehindBatches is how many batches its stage had still to plan when
	// the serving path ended, and DrainMs how long the run then waited
	// for them (measured): shadows run beside the serving path, at a low
	// priority when out of process, and catch up at the end.
	BehindBatches int64   `json:"behind_batches"`
	DrainMs       float64 `json:"drain_ms"`
}
