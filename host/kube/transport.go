package kube

import (
	"net/http"

	"k8s.io/client-go/rest"
)

// RequestObserver is told of every request the host makes to the API
// server: its HTTP method, and the response's status code (0 when the
// request failed without one).
type RequestObserver func(method string, code int)

// CountRequests makes every client built from config report its requests to
// observe, after whatever transport wrapper config already has. Counting at
// the client transport sees exactly what the host sends, which is how one
// shows that a converged cluster costs no writes.
func CountRequests(config *rest.Config, observe RequestObserver) {
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			observe(req.Method, code)
			return resp, err
		})
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
