package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// decodeJSONOutput decodes a JSON output of an Extism plugin into v as the
// host must: its shape checked before anything is allocated for it (the
// same bounds as checkOutputShape), then decoded. The caller checks the
// strings (ownResponse).
//
// encoding/json would replace invalid UTF-8 with U+FFFD and pass it on, so
// the bytes are checked first: a plugin's output is refused for it, as a
// native module's is.
func decodeJSONOutput(out []byte, l Limits, v any) error {
	if !utf8.Valid(out) {
		return errors.New("output: invalid UTF-8: JSON text must be UTF-8")
	}
	if err := checkJSONShape(out, l); err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

// jsonFrame is an array or object checkJSONShape is inside.
type jsonFrame struct {
	array   bool
	wantKey bool   // an object expecting a key (or its end) next
	key     string // an object's current key
	actions bool   // the array is result.actions
}

// checkJSONShape is checkOutputShape for JSON: it refuses an output with more
// elements in result.actions than l.MaxActions, or more array elements and
// object members in all than elementsPerAction times that, by reading its
// tokens before it is decoded. Every element takes at least one byte, so a
// short output skips the walk.
func checkJSONShape(out []byte, l Limits) error {
	maxElements := elementsPerAction * l.MaxActions
	if len(out) <= l.MaxActions {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var stack []jsonFrame
	elements, actions := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		delim, isDelim := tok.(json.Delim)
		if n := len(stack); n > 0 {
			f := &stack[n-1]
			switch {
			case isDelim && (delim == '}' || delim == ']'): // Token matches them
				stack = stack[:n-1]
				continue
			case !f.array && !f.wantKey: // an object's value
				f.wantKey = true
			default: // an object's key, or an array's element
				if !f.array {
					f.key, _ = tok.(string)
					f.wantKey = false
				} else if f.actions {
					if actions++; actions > l.MaxActions {
						return fmt.Errorf("output holds more than %d actions, the limit: raise the module's limits.maxActions if it needs that many in one reconcile, or fix the module", l.MaxActions)
					}
				}
				if elements++; elements > maxElements {
					return fmt.Errorf("output holds more than %d array elements and object members, the limit (%d per action of limits.maxActions): fix the module, or raise limits.maxActions", maxElements, elementsPerAction)
				}
			}
		}
		if isDelim {
			switch delim {
			case '{':
				stack = append(stack, jsonFrame{wantKey: true})
			case '[':
				// encoding/json matches keys without regard to case.
				isActions := len(stack) == 2 && !stack[0].array && strings.EqualFold(stack[0].key, "result") &&
					!stack[1].array && strings.EqualFold(stack[1].key, "actions")
				stack = append(stack, jsonFrame{array: true, actions: isActions})
			}
		}
	}
}
