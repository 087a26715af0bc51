package embedded

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/ora"
)

// keyWalk checks a parsed config file against the Config type by its yaml
// tags, so errors name the key path a user wrote (sources[0].header) rather
// than Go's type names. It records each value's line with its path, to name
// the key in the YAML decoder's type errors too.
type keyWalk struct {
	unknown []string       // one message per unknown key
	lines   map[int]string // line -> the key path of the first value on it
	at      map[string]int // key path -> the line it starts on
}

// mark records the line a key path starts on, the first time it is seen.
func (w *keyWalk) mark(path string, line int) {
	if w.at == nil {
		w.at = map[string]int{}
	}
	if _, ok := w.at[path]; !ok && path != "" {
		w.at[path] = line
	}
}

var (
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (w *keyWalk) walk(n *yaml.Node, t reflect.Type, path string) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			w.walk(c, t, path)
		}
		return
	case yaml.AliasNode:
		w.walk(n.Alias, t, path)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, seen := w.lines[n.Line]; !seen && path != "" {
		w.lines[n.Line] = path
	}
	w.mark(path, n.Line)
	if reflect.PointerTo(t).Implements(yamlUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return // the type reads the node itself
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := map[string]reflect.Type{}
		var names []string
		collectFields(t, fields, &names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a merge key: its mapping's keys are this struct's
				w.walk(v, t, path)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				w.unknown = append(w.unknown, fmt.Sprintf("line %d: unknown key %s (known keys there: %s)",
					k.Line, join(path, k.Value), strings.Join(names, ", ")))
				continue
			}
			w.lines[k.Line] = join(path, k.Value)
			w.mark(join(path, k.Value), k.Line)
			w.walk(v, ft, join(path, k.Value))
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			w.walk(c, t.Elem(), path+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.lines[n.Content[i].Line] = join(path, n.Content[i].Value)
			w.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	}
}

// collectFields maps a struct's yaml keys to their field types, descending
// into ",inline" fields, and lists the keys in declaration order.
func collectFields(t reflect.Type, fields map[string]reflect.Type, names *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, fields, names)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
		*names = append(*names, name)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var typeErrorLine = regexp.MustCompile(`^line (\d+): `)

// explainTypeError prefixes each of the decoder's "line N: ..." messages
// (its type errors, and Duration's) with the key path on that line.
func (w *keyWalk) explainTypeError(err error) error {
	msgs := []string{err.Error()}
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = append([]string(nil), te.Errors...)
	}
	for i, m := range msgs {
		if sub := typeErrorLine.FindStringSubmatch(m); sub != nil {
			line, _ := strconv.Atoi(sub[1])
			if p, ok := w.lines[line]; ok {
				msgs[i] = "line " + sub[1] + ": " + p + ": " + m[len(sub[0]):]
			}
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// explainInvalid words a validation error for the file: the line of the key
// it names (or of its nearest parent the file has), the key, and the
// message, without the error code.
func (w *keyWalk) explainInvalid(err error) string {
	var e *ora.Error
	if !errors.As(err, &e) || e.Field == "" {
		return err.Error()
	}
	msg := e.Field + ": " + e.Message
	for key := e.Field; key != ""; key = parentKey(key) {
		if line, ok := w.at[key]; ok {
			return fmt.Sprintf("line %d: %s", line, msg)
		}
	}
	return msg
}

// parentKey returns the key path one level up: sources[0].secret ->
// sources[0] -> sources -> "".
func parentKey(key string) string {
	if i := strings.LastIndexAny(key, ".["); i > 0 {
		return key[:i]
	}
	return ""
}
