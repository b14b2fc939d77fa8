package optim

// SetTelemetry switches the per-span sums of squares on or off (for the
// overhead benchmark in package optim_test).
func SetTelemetry(o *AdamW, on bool) { o.noTelemetry = !on }
