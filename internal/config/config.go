// Package config is kestrel's configuration system: typed defaults gathered
// from the packages that own each section, strict TOML decoding with
// internal/tomlstrict (unknown keys are errors naming the key, file and line), `--section.key=value` overrides
// with type checks, and the resolved config a run writes into its directory.
package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/dashboard"
	"github.com/kestrel-lm/kestrel/internal/data/clean"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/samples"
	"github.com/kestrel-lm/kestrel/internal/tomlstrict"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// Run is the [run] section: what names and seeds a run.
type Run struct {
	Name string `toml:"name" comment:"run name (the default output directory is runs/<name>)"`
	Seed uint64 `toml:"seed" comment:"master seed; every random stream of the run derives from it"`
}

// Config is the whole kestrel configuration. Each section's type and
// defaults live in the package that uses it.
type Config struct {
	Run        Run                    `toml:"run"`
	Model      model.Config           `toml:"model"`
	Optim      optim.Config           `toml:"optim"`
	Train      train.Config           `toml:"train"`
	Checkpoint train.CheckpointConfig `toml:"checkpoint"`
	Init       train.InitConfig       `toml:"init"`
	Debug      faults.Config          `toml:"debug"`
	Rescue     rewind.RescueConfig    `toml:"rescue"`
	Eval       evalcfg.Config         `toml:"eval"`
	Data       loader.Config          `toml:"data"`
	Prepare    prepare.Config         `toml:"prepare"`
	Monitor    monitor.Config         `toml:"monitor"`
	Dash       dashboard.Config       `toml:"dash"`
	Samples    samples.Config         `toml:"samples"`
}

// Default returns the complete default configuration.
func Default() Config {
	return Config{
		Run:        Run{Name: "run", Seed: 1337},
		Model:      model.DefaultConfig(),
		Optim:      optim.DefaultConfig(),
		Train:      train.DefaultConfig(),
		Checkpoint: train.DefaultCheckpointConfig(),
		Init:       train.DefaultInitConfig(),
		Debug:      faults.Default(),
		Rescue:     rewind.DefaultRescueConfig(),
		Eval:       evalcfg.Default(),
		Data:       loader.DefaultConfig(),
		Prepare:    prepare.DefaultConfig(),
		Monitor:    monitor.DefaultConfig(),
		Dash:       dashboard.DefaultConfig(),
		Samples:    samples.DefaultConfig(),
	}
}

// Load returns defaults overlaid with the TOML file at path (if path is not
// empty) and then with overrides, in that order of increasing precedence.
// A nan or inf float is refused wherever it comes from: the file's error
// names the file, line and key, an override's the flag, and the resolved
// config is checked once more by CheckFinite.
func Load(path string, overrides []Override) (Config, error) {
	cfg := Default()
	if path != "" {
		data, err := ReadFile(path)
		if err != nil {
			return cfg, err
		}
		if err := Decode(data, path, &cfg); err != nil {
			return cfg, err
		}
	}
	for _, o := range overrides {
		if err := o.Apply(&cfg); err != nil {
			return cfg, err
		}
	}
	if err := CheckFinite(cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// RunSections are the sections a training run opens files from: its
// data, its warm-start checkpoint and its held-out texts.
var RunSections = []string{"data", "init", "eval"}

// Resolve returns cfg with every ${KESTREL_DATA} in the paths of the
// given sections (all of them when none is given) expanded to the data
// directory (datadir.ResolveAt): the one place a config's paths are
// resolved. cfg itself is left as given (its slices are copied, not
// shared): it is the form a run writes to config.toml and hashes into
// config_hash (Hash, WriteFile, Marshal), so a run directory moves between
// machines; the returned config is the one files are opened from. A
// missing data directory is an error naming the key that needed it; the
// other sections keep their placeholders, so a run that reads nothing
// from the data directory needs none (prepare's default decontamination
// sets name it).
func Resolve(cfg Config, sections ...string) (Config, error) {
	v := reflect.ValueOf(&cfg).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, ok := fieldPath(t.Field(i), "")
		if !ok || len(sections) > 0 && !slices.Contains(sections, name) {
			continue
		}
		if err := datadir.ResolveAt(v.Field(i).Addr().Interface(), name); err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
	}
	return cfg, nil
}

// ReadFile reads the config file at path: a regular file only (a FIFO or
// a device such as /dev/zero is refused naming it, not waited on or read
// forever) and at most tomlstrict.MaxBytes, the bound of a TOML document.
// Every config file kestrel reads goes through it.
func ReadFile(path string) ([]byte, error) {
	return fileguard.ReadFile(path, tomlstrict.MaxBytes) // its errors name the path
}

// CheckFinite refuses every float of cfg that is NaN or ±Inf, naming each
// by its config path (optim.max_grad_norm, data.sources[1].weight,
// data.stages[0].weights.web, optim.multistep_factors[2]). It walks the
// whole config by reflection, so a field added to any section is covered
// without being listed; range checks stay in each section's Validate.
// NaN passes every comparison, so a range check alone lets it through.
func CheckFinite(cfg Config) error {
	var errs []error
	nonFiniteFloats(reflect.ValueOf(cfg), "", func(path string, x float64) {
		errs = append(errs, fmt.Errorf("config: %s = %v: not a finite number (nan and inf are refused)", path, x))
	})
	return errors.Join(errs...)
}

// nonFiniteFloats calls bad for every NaN or ±Inf float reachable from v:
// struct fields by their toml name, slice and array elements by index,
// map values by key (in sorted order), through pointers and interfaces.
func nonFiniteFloats(v reflect.Value, path string, bad func(path string, x float64)) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if x := v.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
			bad(path, x)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			nonFiniteFloats(v.Elem(), path, bad)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			nonFiniteFloats(v.Index(i), fmt.Sprintf("%s[%d]", path, i), bad)
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			nonFiniteFloats(v.MapIndex(k), fmt.Sprintf("%s.%v", path, k), bad)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if p, ok := fieldPath(t.Field(i), path); ok {
				nonFiniteFloats(v.Field(i), p, bad)
			}
		}
	}
}

// Decode strictly decodes TOML data into cfg (on top of what cfg holds)
// with tomlstrict. name labels errors (a file path, or a flag). An unknown
// key is an error naming the key and its line; a value of the wrong type
// names the line too. The per-source filter overlays
// (prepare.sources[].filters), which prepare applies later on top of each
// source's filter set, are checked here against clean.Config so that their
// errors name the file and line as well.
func Decode(data []byte, name string, cfg *Config) error {
	if err := tomlstrict.Decode(data, name, cfg); err != nil {
		return err
	}
	return checkFilterOverlays(data, name)
}

// filterOverlays is the typed view of the filter overlays in a config file.
type filterOverlays struct {
	Prepare struct {
		Sources []struct {
			Filters clean.Config `toml:"filters"`
		} `toml:"sources"`
	} `toml:"prepare"`
}

// checkFilterOverlays decodes data (already decoded into a Config) into
// filterOverlays. Every key the Config has is unknown to filterOverlays
// and ignored; what is left are keys under a filters table that
// clean.Config lacks (the decoder names keys of inline tables by their
// table and leaf, which a Config path never matches) and values of the
// wrong type.
func checkFilterOverlays(data []byte, name string) error {
	var f filterOverlays
	inFilters := func(key []string) bool {
		return len(key) > 3 && key[0] == "prepare" && key[1] == "sources" && key[2] == "filters"
	}
	err := tomlstrict.DecodeFiltered(data, name, &f, func(key []string) bool {
		return inFilters(key) || !hasPath(reflect.TypeOf(Config{}), key)
	})
	tomlstrict.Each(err, func(e *tomlstrict.Error) {
		if k := strings.Split(e.Key, "."); e.IsUnknownKey() && !inFilters(k) {
			// an inline table's key, named by the decoder as prepare.sources.<leaf>
			e.Key, e.In = k[len(k)-1], "a prepare.sources filters table"
		}
	})
	return err
}

// hasPath reports whether the TOML key path exists in struct type t:
// struct fields by their toml name, slices by their element, and any key
// under a map.
func hasPath(t reflect.Type, key []string) bool {
	for len(key) > 0 {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			return true
		case reflect.Struct:
		default:
			return false
		}
		found := false
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.IsExported() && strings.Split(f.Tag.Get("toml"), ",")[0] == key[0] {
				t, key, found = f.Type, key[1:], true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Marshal renders cfg as TOML with a comment above every field.
func Marshal(cfg Config) ([]byte, error) {
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.SetIndentTables(false)
	if err := enc.Encode(cfg); err != nil {
		return nil, fmt.Errorf("config: encode: %w", err)
	}
	return buf.Bytes(), nil
}

// MarshalDocumented is Marshal followed by the fields the rendering leaves
// out because they are empty by default (lists such as optim.knobs), each
// as a comment with its documentation: what `kestrel config --defaults`
// prints, so every field is documented in one place.
func MarshalDocumented(cfg Config) ([]byte, error) {
	b, err := Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var tail bytes.Buffer
	for _, f := range Fields() {
		i := strings.LastIndexByte(f.Path, '.')
		section, key := f.Path[:max(i, 0)], f.Path[i+1:]
		if bytes.Contains(b, []byte("\n"+key+" = ")) && bytes.Contains(b, []byte("["+section+"]")) ||
			bytes.Contains(b, []byte("[["+f.Path+"]]")) {
			continue
		}
		if tail.Len() == 0 {
			tail.WriteString("\n# Fields left out above because they are empty by default:\n")
		}
		fmt.Fprintf(&tail, "#\n# %s (%s): %s\n", f.Path, f.Type, f.Comment)
	}
	return append(b, tail.Bytes()...), nil
}

// Hash is the hex SHA-256 of the canonical TOML rendering of cfg. Runs record
// it so a resume with a different config is noticed.
func Hash(cfg Config) (string, error) {
	b, err := Marshal(cfg)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// WriteFile writes the resolved config to path atomically (temp file, fsync,
// rename), with a header saying what it is.
func WriteFile(path string, cfg Config) error {
	b, err := Marshal(cfg)
	if err != nil {
		return err
	}
	head := []byte("# kestrel resolved config: defaults + file + command-line overrides.\n# Re-run with: kestrel train --config <this file>\n\n")
	if err := atomicfile.WriteFile(path, append(head, b...)); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// Field describes one settable leaf of the config, as `section.key`.
type Field struct {
	Path    string       // dotted TOML path, e.g. "model.d_model"
	Type    reflect.Type // Go type of the field
	Comment string       // the field's documentation
}

// Fields lists every leaf field of the config that can be set with a flag,
// sorted by path. Arrays of tables (such as prepare.sources) are listed as a
// whole and take a TOML value.
func Fields() []Field {
	var out []Field
	walk(reflect.TypeOf(Config{}), "", &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func walk(t reflect.Type, prefix string, out *[]Field) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		path, ok := fieldPath(f, prefix)
		if !ok {
			continue
		}
		if f.Type.Kind() == reflect.Struct && !isLeafStruct(f.Type) {
			walk(f.Type, path, out)
			continue
		}
		*out = append(*out, Field{Path: path, Type: f.Type, Comment: f.Tag.Get("comment")})
	}
}

// isLeafStruct reports struct types that encode as a single TOML value.
func isLeafStruct(t reflect.Type) bool {
	_, ok := reflect.New(t).Interface().(interface{ UnmarshalText([]byte) error })
	return ok
}

// Override is one `--section.key=value` from the command line.
type Override struct {
	Path  string // dotted path, e.g. "optim.lr"
	Value string // raw text as typed
}

// OverrideFlag is a command-line value (it implements pflag.Value) for
// the field at Path: each --Path=value appends an Override to *Dst in the
// order given, so later flags win over earlier ones.
type OverrideFlag struct {
	Path string
	Dst  *[]Override
	set  string
}

// String returns the last value set.
func (v *OverrideFlag) String() string { return v.set }

// Type names the flag's value in help texts.
func (v *OverrideFlag) Type() string { return "value" }

// Set records one --Path=value.
func (v *OverrideFlag) Set(s string) error {
	v.set = s
	*v.Dst = append(*v.Dst, Override{Path: v.Path, Value: s})
	return nil
}

// Apply sets the override on cfg. String fields take the text as is; other
// fields take a TOML value (numbers, true/false, ["a", "b"], [1, 2]).
// Errors name the flag.
func (o Override) Apply(cfg *Config) error {
	var field *Field
	for _, f := range Fields() {
		if f.Path == o.Path {
			f := f
			field = &f
			break
		}
	}
	if field == nil {
		return fmt.Errorf("flag --%s: unknown config field (see kestrel config --defaults)", o.Path)
	}
	val := o.Value
	if field.Type.Kind() == reflect.String || isLeafStruct(field.Type) {
		val = tomlString(val)
	}
	dot := strings.LastIndex(o.Path, ".")
	var doc string
	if dot < 0 {
		doc = fmt.Sprintf("%s = %s\n", o.Path, val)
	} else {
		doc = fmt.Sprintf("[%s]\n%s = %s\n", o.Path[:dot], o.Path[dot+1:], val)
	}
	trial := *cfg
	if err := decodeValue([]byte(doc), &trial); err != nil {
		var te *tomlstrict.Error
		if errors.As(err, &te) && te.IsNonFinite() {
			if te.Key == o.Path {
				return fmt.Errorf("flag --%s=%s: want a finite number (nan and inf are refused)", o.Path, o.Value)
			}
			return fmt.Errorf("flag --%s=%s: %s: want a finite number (nan and inf are refused)", o.Path, o.Value, te.Key)
		}
		return fmt.Errorf("flag --%s=%s: want %s: %v", o.Path, o.Value, typeName(field.Type), err)
	}
	*cfg = trial
	return nil
}

// decodeValue decodes one override rendered as a TOML document; its
// errors carry only the message (the caller names the flag), except a
// non-finite number, returned as the *tomlstrict.Error that names its key.
func decodeValue(doc []byte, cfg *Config) error {
	err := tomlstrict.Decode(doc, "", cfg)
	var te *tomlstrict.Error
	switch {
	case errors.As(err, &te) && te.IsNonFinite():
		return te
	case errors.As(err, &te) && te.IsUnknownKey():
		return fmt.Errorf("unknown key %q", te.Key)
	case te != nil:
		return errors.New(te.Msg)
	}
	return err
}

func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a TOML array such as [1, 2] or [\"a\"]"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}

// fieldPath is the dotted TOML path of struct field f under prefix (its
// toml tag name, else its Go name); ok is false for unexported fields and
// those tagged "-".
func fieldPath(f reflect.StructField, prefix string) (path string, ok bool) {
	name := strings.Split(f.Tag.Get("toml"), ",")[0]
	if !f.IsExported() || name == "-" {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	if prefix == "" {
		return name, true
	}
	return prefix + "." + name, true
}
