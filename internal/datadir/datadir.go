// Package datadir locates kestrel's shipped data (../shared/data, or the
// directory named by $KESTREL_DATA) and expands ${KESTREL_DATA} in paths.
package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// Env is the environment variable that points at the data directory.
const Env = "KESTREL_DATA"

// Placeholder is the token in config paths that expands to the data directory.
const Placeholder = "${KESTREL_DATA}"

// Root returns the data directory: $KESTREL_DATA when set, otherwise the
// first shared/data found walking up from the working directory (so both
// the repository root and a package directory under test find ../shared/data).
func Root() (string, error) {
	if d := os.Getenv(Env); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("$%s=%q is not a directory", Env, d)
		}
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared", "data")
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("data directory not found: set $%s or place the data in ../shared/data (searched upwards from %s)", Env, wd)
}

// Expand replaces ${KESTREL_DATA} in p with the data directory. Paths
// without the placeholder are returned unchanged, without looking for data.
func Expand(p string) (string, error) {
	if !strings.Contains(p, Placeholder) {
		return p, nil
	}
	root, err := Root()
	if err != nil {
		return "", fmt.Errorf("expand %q: %w", p, err)
	}
	return strings.ReplaceAll(p, Placeholder, root), nil
}

// Path returns the absolute path of rel inside the data directory, or an
// error naming what is missing. Tests use it to find shipped files.
func Path(rel string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, rel)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("shipped data %s: %w", rel, err)
	}
	return p, nil
}

// Resolve expands ${KESTREL_DATA} in every string reachable from v, a
// pointer to a struct: fields (named in errors by their toml tag), slice
// and array elements, map values, through pointers. Slices, maps and
// pointers are copied before anything in them changes, so a shallow copy
// of a config can be resolved without touching the original's backing
// arrays. The data directory is looked up once, and only when a path
// holds the placeholder; when it cannot be found the error names the
// first key that needed it (data.train: expand "${KESTREL_DATA}/…": …).
func Resolve(v any) error { return ResolveAt(v, "") }

// ResolveAt is Resolve for a value that sits at key in a larger
// document (a config section): errors name prefix.field.
func ResolveAt(v any, key string) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("datadir: Resolve wants a non-nil pointer, got %T", v)
	}
	r := resolver{}
	r.walk(rv.Elem(), key)
	return r.err
}

// resolver carries the data directory (found at the first placeholder)
// and the first error through a Resolve walk.
type resolver struct {
	root string
	err  error
}

func (r *resolver) walk(v reflect.Value, path string) {
	if r.err != nil {
		return
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if !strings.Contains(s, Placeholder) || !v.CanSet() {
			return
		}
		if r.root == "" {
			root, err := Root()
			if err != nil {
				r.err = fmt.Errorf("%s: expand %q: %w", path, s, err)
				return
			}
			r.root = root
		}
		v.SetString(strings.ReplaceAll(s, Placeholder, r.root))
	case reflect.Pointer:
		if v.IsNil() || !v.CanSet() {
			return
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(v.Elem())
		v.Set(c)
		r.walk(c.Elem(), path)
	case reflect.Slice:
		if v.IsNil() || !v.CanSet() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		v.Set(c)
		for i := 0; i < c.Len(); i++ {
			r.walk(c.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			r.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			r.walk(e, fmt.Sprintf("%s.%v", path, k))
			c.SetMapIndex(k, e)
		}
		v.Set(c)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := strings.Split(f.Tag.Get("toml"), ",")[0]
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if path != "" {
				name = path + "." + name
			}
			r.walk(v.Field(i), name)
		}
	}
}
