package admission

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestScanReviewDropsManagedFields(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"none", `{"request":{"object":{"metadata":{"name":"a"}}}}`, `{"request":{"object":{"metadata":{"name":"a"}}}}`},
		{"only member", `{"request":{"object":{"metadata":{"managedFields":[{},{}]}}}}`, `{"request":{"object":{"metadata":{}}}}`},
		{"first", `{"request":{"object":{"metadata":{"managedFields":[{}] , "name":"a"}}}}`, `{"request":{"object":{"metadata":{"name":"a"}}}}`},
		{"last", `{"request":{"object":{"metadata":{"name":"a", "managedFields":[{}]}}}}`, `{"request":{"object":{"metadata":{"name":"a"}}}}`},
		{"middle", `{"request":{"object":{"metadata":{"name":"a","managedFields":[{}],"uid":"u"}}}}`, `{"request":{"object":{"metadata":{"name":"a","uid":"u"}}}}`},
		{"twice first", `{"request":{"object":{"metadata":{"managedFields":[],"managedFields":[{}],"name":"a"}}}}`, `{"request":{"object":{"metadata":{"name":"a"}}}}`},
		{"twice alone", `{"request":{"object":{"metadata":{"managedFields":[],"managedFields":[{}]}}}}`, `{"request":{"object":{"metadata":{}}}}`},
		{"around a kept one", `{"request":{"object":{"metadata":{"managedFields":[],"name":"a","managedFields":[{}]}}}}`, `{"request":{"object":{"metadata":{"name":"a"}}}}`},
		{"old object, any case, escaped", `{"Request":{"OLDOBJECT":{"metadata":{"name":"a","managed\u0046ields":[{}]}}}}`, `{"Request":{"OLDOBJECT":{"metadata":{"name":"a"}}}}`},
		{"both objects", `{"request":{"object":{"metadata":{"managedFields":[1]}},"oldObject":{"metadata":{"managedFields":[2]}}}}`, `{"request":{"object":{"metadata":{}},"oldObject":{"metadata":{}}}}`},
		{"elsewhere kept", `{"request":{"object":{"spec":{"managedFields":[1]}},"managedFields":[2]},"managedFields":3}`, `{"request":{"object":{"spec":{"managedFields":[1]}},"managedFields":[2]},"managedFields":3}`},
		{"not an object", `{"request":{"object":[{"metadata":{"managedFields":[1]}}]}}`, `{"request":{"object":[{"metadata":{"managedFields":[1]}}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := scanReview([]byte(tc.in))
			got := sh.stripped([]byte(tc.in))
			require.Equal(t, tc.want, string(got))
			require.Equal(t, countValues(t, got), sh.counts)
		})
	}
}

// The count the scan makes is the values the decoder sees, and what it
// leaves decodes as the review did, but with no managedFields.
func FuzzScanReview(f *testing.F) {
	for _, s := range []string{
		`{"request":{"object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}}}}`,
		`{"request":{"uid":"u","oldObject":{"metadata":{"managedFields":[],"labels":{"a":"b"}}},"object":null}}`,
		`[1,2,{"a":[true,false,null,"x\"y"]}]`, `"s"`, `-1.5e3`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		sh := scanReview(body)
		out := sh.stripped(body)
		require.True(t, json.Valid(out), "%q became %q", body, out)
		require.Equal(t, countValues(t, out), sh.counts, "%q", out)
		var review admissionv1.AdmissionReview
		if json.Unmarshal(out, &review) != nil || review.Request == nil {
			return
		}
		for _, raw := range [][]byte{review.Request.Object.Raw, review.Request.OldObject.Raw} {
			var m metav1.PartialObjectMetadata
			if len(raw) > 0 && json.Unmarshal(raw, &m) == nil {
				require.Empty(t, m.ManagedFields, "%q", out)
			}
		}
	})
}

// countValues counts the values of a JSON document as a decoder meets them:
// the top-level value, and every element and member below it; and the
// objects that are an array's elements.
func countValues(t *testing.T, doc []byte) counts {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(string(doc)))
	d.UseNumber()
	var n counts
	var inObject []bool // per open container: an object?
	expectKey := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return n
		}
		require.NoError(t, err)
		if delim, ok := tok.(json.Delim); ok && (delim == '}' || delim == ']') {
			inObject = inObject[:len(inObject)-1]
			expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
			continue
		}
		if expectKey {
			expectKey = false // the key: its value is counted
			continue
		}
		n.values++
		if delim, ok := tok.(json.Delim); ok {
			if delim == '{' && len(inObject) > 0 && !inObject[len(inObject)-1] {
				n.elementObjects++
			}
			inObject = append(inObject, delim == '{')
			expectKey = delim == '{'
			continue
		}
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}
