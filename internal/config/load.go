package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// SystemFile is the site-wide configuration file.
const SystemFile = "/etc/schedmate/config.yaml"

// EnvPrefix starts every environment variable schedmate reads as
// configuration: SCHEDMATE_STORE_PATH sets store.path.
const EnvPrefix = "SCHEDMATE_"

// maxFileBytes bounds a configuration file; anything larger is refused.
const maxFileBytes = 1 << 20

// LoadOptions say where configuration comes from.
type LoadOptions struct {
	// File is the one file given with --config; it replaces the default
	// files and must exist.
	File string
	// SystemFile and UserFile override the default file locations (tests).
	SystemFile, UserFile string
	// Environ is the environment as KEY=VALUE pairs; nil means os.Environ().
	Environ []string
	// Flags are values set explicitly on the command line, by key
	// ("log.level").
	Flags map[string]string
}

// Origin tells where a key's value came from.
type Origin struct {
	// Kind is "default", "file", "env" or "flag".
	Kind string `json:"kind"`
	// Name is the file path, variable name or flag name.
	Name string `json:"name,omitempty"`
}

// String formats the value for messages.
func (o Origin) String() string {
	if o.Name == "" {
		return o.Kind
	}
	return o.Kind + " " + o.Name
}

// Loaded is a loaded configuration with where each value came from.
type Loaded struct {
	Config *Config
	// Files are the configuration files that were read, in order.
	Files []string
	// Origins maps each dotted key to the source of its value.
	Origins map[string]Origin
}

// KeyError reports a bad configuration key or value with its source.
type KeyError struct {
	Origin Origin
	Key    string
	Line   int
	Reason string
}

// Error returns the message.
func (e *KeyError) Error() string {
	where := e.Origin.String()
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.Origin.Name, e.Line)
	}
	return fmt.Sprintf("%s: %s: %s", where, e.Key, e.Reason)
}

// Errors is a list of configuration problems, all reported at once.
type Errors []error

// Error returns the message.
func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return "invalid configuration:\n  " + strings.Join(msgs, "\n  ")
}

// UserFile returns $XDG_CONFIG_HOME/schedmate/config.yaml (or
// ~/.config/schedmate/config.yaml).
func UserFile(environ []string) string {
	if dir := lookupEnv(environ, "XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "schedmate", "config.yaml")
	}
	if home := lookupEnv(environ, "HOME"); home != "" {
		return filepath.Join(home, ".config", "schedmate", "config.yaml")
	}
	return ""
}

// Load reads the configuration with precedence flag > environment > file >
// default, and validates it. Every unknown key or bad value is reported
// with its file (and line), key and reason.
func Load(opts LoadOptions) (*Loaded, error) {
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	def := Default()
	keys := leafKeys(reflect.TypeOf(*def), "")
	v := viper.New()
	v.SetConfigType("yaml")
	origins := map[string]Origin{}
	setDefaults(v, def, origins)

	var files []string
	var problems Errors
	candidates, required := configFiles(opts, environ)
	for _, path := range candidates {
		data, err := readFile(path)
		if errors.Is(err, os.ErrNotExist) && !required {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
		files = append(files, path)
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			problems = append(problems, &KeyError{Origin: Origin{"file", path}, Key: "(file)", Reason: "not valid YAML: " + err.Error()})
			continue
		}
		found := checkKnown(&root, path, &problems)
		if err := v.MergeConfig(bytes.NewReader(data)); err != nil {
			problems = append(problems, &KeyError{Origin: Origin{"file", path}, Key: "(file)", Reason: err.Error()})
			continue
		}
		for _, k := range found {
			origins[k] = Origin{"file", path}
		}
	}
	for _, k := range keys {
		name := EnvName(k)
		if val, ok := lookupEnvOK(environ, name); ok {
			v.Set(k, val)
			origins[k] = Origin{"env", name}
		}
	}
	flagKeys := make([]string, 0, len(opts.Flags))
	for k := range opts.Flags {
		flagKeys = append(flagKeys, k)
	}
	sort.Strings(flagKeys)
	for _, k := range flagKeys {
		v.Set(k, opts.Flags[k])
		origins[k] = Origin{"flag", "--" + strings.ReplaceAll(k[strings.LastIndex(k, ".")+1:], "_", "-")}
	}

	cfg := &Config{}
	for _, k := range keys {
		if err := decodeKey(v, k, cfg); err != nil {
			problems = append(problems, &KeyError{Origin: origins[k], Key: k, Reason: err.Error(), Line: 0})
		}
	}
	if len(problems) == 0 {
		for _, e := range cfg.Validate() {
			e.Origin = origins[e.Key]
			problems = append(problems, e)
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &Loaded{Config: cfg, Files: files, Origins: origins}, nil
}

// EnvName returns the environment variable that sets a dotted key.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Keys lists every dotted configuration key.
func Keys() []string { return leafKeys(reflect.TypeOf(Config{}), "") }

func configFiles(opts LoadOptions, environ []string) (paths []string, required bool) {
	if opts.File != "" {
		return []string{opts.File}, true
	}
	system := opts.SystemFile
	if system == "" {
		system = SystemFile
	}
	user := opts.UserFile
	if user == "" {
		user = UserFile(environ)
	}
	paths = []string{system}
	if user != "" && user != system {
		paths = append(paths, user)
	}
	return paths, false
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	if fi.Size() > maxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxFileBytes)
	}
	buf := new(bytes.Buffer)
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func setDefaults(v *viper.Viper, def *Config, origins map[string]Origin) {
	var walk func(rv reflect.Value, prefix string)
	walk = func(rv reflect.Value, prefix string) {
		rt := rv.Type()
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			key := joinKey(prefix, f.Tag.Get("mapstructure"))
			if f.Type.Kind() == reflect.Struct {
				walk(rv.Field(i), key)
				continue
			}
			v.SetDefault(key, rv.Field(i).Interface())
			origins[key] = Origin{Kind: "default"}
		}
	}
	walk(reflect.ValueOf(*def), "")
}

func leafKeys(rt reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		key := joinKey(prefix, f.Tag.Get("mapstructure"))
		if f.Type.Kind() == reflect.Struct {
			out = append(out, leafKeys(f.Type, key)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// fieldByKey finds the struct field for a dotted key.
func fieldByKey(cfg *Config, key string) reflect.Value {
	rv := reflect.ValueOf(cfg).Elem()
	for _, part := range strings.Split(key, ".") {
		rt := rv.Type()
		for i := 0; i < rt.NumField(); i++ {
			if rt.Field(i).Tag.Get("mapstructure") == part {
				rv = rv.Field(i)
				break
			}
		}
	}
	return rv
}

// decodeKey converts one key's merged value into its typed field, so a bad
// value is reported for exactly that key.
func decodeKey(v *viper.Viper, key string, cfg *Config) error {
	field := fieldByKey(cfg, key)
	raw := v.Get(key)
	switch field.Interface().(type) {
	case time.Duration:
		s := fmt.Sprint(raw)
		if d, ok := raw.(time.Duration); ok {
			field.Set(reflect.ValueOf(d))
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (examples: 500ms, 2s, 5m)", s)
		}
		field.Set(reflect.ValueOf(d))
		return nil
	}
	tmp := viper.New()
	tmp.SetConfigType("yaml")
	tmp.Set("x", raw)
	target := reflect.New(field.Type())
	if err := tmp.UnmarshalKey("x", target.Interface()); err != nil {
		return fmt.Errorf("%v is not a valid %s", raw, describeKind(field.Type()))
	}
	field.Set(target.Elem())
	return nil
}

func describeKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Map:
		return "map of names to numbers"
	default:
		return t.Kind().String()
	}
}

// checkKnown walks a parsed file and reports keys the schema does not have,
// with their line; it returns the known leaf keys the file sets.
func checkKnown(root *yaml.Node, path string, problems *Errors) []string {
	if len(root.Content) == 0 {
		return nil
	}
	var found []string
	var walk func(n *yaml.Node, t reflect.Type, prefix string)
	walk = func(n *yaml.Node, t reflect.Type, prefix string) {
		if n.Kind != yaml.MappingNode {
			*problems = append(*problems, &KeyError{Origin: Origin{"file", path}, Key: orRoot(prefix), Line: n.Line, Reason: "expected a mapping of keys"})
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			key := joinKey(prefix, k.Value)
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				*problems = append(*problems, &KeyError{Origin: Origin{"file", path}, Key: key, Line: k.Line, Reason: "unknown key" + suggest(t, k.Value)})
				continue
			}
			if f.Type.Kind() == reflect.Struct {
				walk(val, f.Type, key)
				continue
			}
			found = append(found, key)
		}
	}
	walk(root.Content[0], reflect.TypeOf(Config{}), "")
	return found
}

func orRoot(prefix string) string {
	if prefix == "" {
		return "(top level)"
	}
	return prefix
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("mapstructure") == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func suggest(t reflect.Type, name string) string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		names = append(names, t.Field(i).Tag.Get("mapstructure"))
	}
	return " (known: " + strings.Join(names, ", ") + ")"
}

func lookupEnv(environ []string, name string) string {
	v, _ := lookupEnvOK(environ, name)
	return v
}

func lookupEnvOK(environ []string, name string) (string, bool) {
	prefix := name + "="
	for i := len(environ) - 1; i >= 0; i-- {
		if strings.HasPrefix(environ[i], prefix) {
			return environ[i][len(prefix):], true
		}
	}
	return "", false
}
