// Package dashboard serves the live web panel of `kestrel dash`: a
// read-only HTTP server with embedded assets over runs' metric stores.
package dashboard

// Config is the [dash] section of a run config.
type Config struct {
	Addr    string `toml:"addr" comment:"listen address (loopback by default)"`
	RunsDir string `toml:"runs_dir" comment:"directory whose subdirectories are runs"`
}

// DefaultConfig returns the defaults of the [dash] section.
func DefaultConfig() Config { return Config{Addr: "127.0.0.1:8077", RunsDir: "runs"} }
