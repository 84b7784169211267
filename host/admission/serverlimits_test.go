package admission_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
)

// hung bounds how long a test waits for the server to act on a connection:
// reaching it means the server did not, not that it was slow.
const hung = 30 * time.Second

// testLimits are the defaults with the times a test waits for shortened
// and the counts small enough to reach.
func testLimits() admission.ServerLimits {
	lim := admission.DefaultServerLimits()
	lim.ReadHeaderTimeout, lim.ReadTimeout, lim.IdleTimeout = 200*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	return lim
}

func claimsHandler() http.Handler {
	return admission.NewHandler(&admission.Reviewer{}, []*admission.Module{{Name: "m",
		Admitter: &fakeAdmitter{rules: claimRules, answer: &abi.AdmitResponse{Allowed: true}}}})
}

// dialTLS opens a TLS connection to s that trusts anything: the tests here
// are about the server's bounds, not its certificate.
func dialTLS(t *testing.T, s *tlsServer) *tls.Conn {
	t.Helper()
	conn, err := tls.Dial("tcp", s.srv.Addr(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test client of loopback
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedByServer waits (at most hung) until the server closes conn, and
// fails if it does not.
func closedByServer(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(hung)))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", hung)
	}
}

// A connection that completes no TLS handshake, and one that sends no
// request, are closed by the server.
func TestWebhookServerClosesSilentConnections(t *testing.T) {
	s := serveWithin(t, claimsHandler(), testLimits())
	t.Run("no handshake", func(t *testing.T) {
		conn, err := net.Dial("tcp", s.srv.Addr())
		require.NoError(t, err)
		defer conn.Close()
		closedByServer(t, conn)
	})
	t.Run("no request", func(t *testing.T) {
		closedByServer(t, dialTLS(t, s))
	})
	t.Run("idle after a request", func(t *testing.T) {
		conn := dialTLS(t, s)
		body := reviewBody(t, claimCreate())
		_, err := fmt.Fprintf(conn, "POST /admit/m HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, _ = io.Copy(io.Discard, resp.Body)
		closedByServer(t, conn)
	})
}

// A body sent a byte at a time is cut off by the read timeout.
func TestWebhookServerBoundsASlowBody(t *testing.T) {
	s := serveWithin(t, claimsHandler(), testLimits())
	conn := dialTLS(t, s)
	_, err := fmt.Fprintf(conn, "POST /admit/m HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte every 50ms: never idle, never done
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	closedByServer(t, conn)
}

// A header larger than MaxHeaderBytes is refused.
func TestWebhookServerBoundsTheHeader(t *testing.T) {
	lim := testLimits()
	lim.ReadHeaderTimeout = hung
	s := serveWithin(t, claimsHandler(), lim)
	conn := dialTLS(t, s)
	big := strings.Repeat("h", lim.MaxHeaderBytes+8<<10)
	_, err := fmt.Fprintf(conn, "POST /admit/m HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", big)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}

// A body without a Content-Length is cut at MaxBodyBytes.
func TestWebhookServerBoundsAChunkedBody(t *testing.T) {
	lim := testLimits()
	lim.MaxBodyBytes = 64 << 10
	s := serveWithin(t, claimsHandler(), lim)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(strings.Repeat(" ", 128<<10)))
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, "https://"+s.srv.Addr()+"/admit/m", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

// Bodies being read are charged their Content-Length before any byte is
// read: while a stalled request holds most of the budget, the next one that
// does not fit is refused at once with 429, and fits again once the first
// is gone.
func TestWebhookServerBoundsTheBytesInFlight(t *testing.T) {
	lim := testLimits()
	lim.ReadTimeout = time.Minute // the stalled body stays until the test closes it
	lim.MaxInFlightBytes = 4 << 20
	s := serveWithin(t, claimsHandler(), lim)
	stalled := dialTLS(t, s)
	_, err := fmt.Fprintf(stalled, "POST /admit/m HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 3<<20)
	require.NoError(t, err)

	body := reviewBody(t, claimCreate())
	padded := append(append([]byte{}, body...), []byte(strings.Repeat(" ", 300<<10))...)
	deadline := time.Now().Add(hung)
	for {
		code, _, msg := s.post(t, "/admit/m", padded)
		if code == http.StatusTooManyRequests {
			require.Contains(t, msg, "holds its limit of 4194304 bytes for reviews in flight")
			break
		}
		// The stalled request may not have been charged yet.
		require.Equal(t, http.StatusOK, code, msg)
		require.False(t, time.Now().After(deadline), "a request beyond the budget was never refused")
		time.Sleep(10 * time.Millisecond)
	}
	code, _, msg := s.post(t, "/admit/m", body)
	require.Equal(t, http.StatusOK, code, "a small request still fits: %s", msg)

	stalled.Close()
	for {
		code, _, msg := s.post(t, "/admit/m", padded)
		if code == http.StatusOK {
			break
		}
		require.Equal(t, http.StatusTooManyRequests, code, msg)
		require.False(t, time.Now().After(deadline), "the budget was not given back when the stalled request went")
		time.Sleep(10 * time.Millisecond)
	}
}

// Connections beyond MaxConnections wait: with the cap held by
// connections that say nothing, a new one gets no handshake until one of
// them goes.
func TestWebhookServerCapsConnections(t *testing.T) {
	lim := testLimits()
	lim.MaxConnections = 2
	lim.ReadHeaderTimeout, lim.ReadTimeout = time.Minute, time.Minute // the holders stay until the test closes them
	s := serveWithin(t, claimsHandler(), lim)
	var holders []net.Conn
	for range lim.MaxConnections {
		holders = append(holders, dialTLS(t, s))
	}
	conn, err := net.Dial("tcp", s.srv.Addr()) // the kernel's backlog takes it
	require.NoError(t, err)
	defer conn.Close()
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test client of loopback
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Second)))
	err = tc.Handshake()
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a connection beyond the cap was served: %v", err)

	conn.Close() // still in the backlog: the server takes it and drops it
	holders[0].Close()
	again, err := tls.DialWithDialer(&net.Dialer{Timeout: hung}, "tcp", s.srv.Addr(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test client of loopback
	require.NoError(t, err, "a connection is served once one of the cap's goes")
	again.Close()
}

// What a review decodes to is bounded, not only its bytes: 7 MiB of "{},"
// is two million values. In an object's metadata.managedFields, which no
// module needs, they are dropped before decoding, and the module answers;
// anywhere else the review is refused before it is decoded, with 413, and
// the server holds little more than the body.
func TestWebhookServerBoundsWhatAReviewDecodesTo(t *testing.T) {
	const n = 2_300_000 // about 6.6 MiB of "{},"
	fake := &fakeAdmitter{rules: []abi.AdmissionRule{{Operations: []string{"CREATE"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims", "pods"}}},
		answer: &abi.AdmitResponse{Allowed: true}}
	s := serve(t, admission.NewHandler(&admission.Reviewer{}, []*admission.Module{{Name: "m", Admitter: fake}}))
	review := func(kind, resource, object string) []byte {
		return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"` + kind +
			`"},"resource":{"version":"v1","resource":"` + resource + `"},"operation":"CREATE","namespace":"default","name":"x","object":` + object + `}}`)
	}
	empties := strings.TrimSuffix(strings.Repeat("{},", n), ",")

	t.Run("managed fields dropped", func(t *testing.T) {
		body := review("PersistentVolumeClaim", "persistentvolumeclaims", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x","managedFields":[`+empties+`]}}`)
		require.Greater(t, len(body), 6<<20)
		code, out, msg := s.post(t, "/admit/m", body)
		require.Equal(t, http.StatusOK, code, msg)
		require.True(t, out.Response.Allowed)
		require.Empty(t, out.Response.Warnings, "the module answered, not the failure policy")
		require.Len(t, fake.seen, 1)
		require.NotContains(t, string(fake.seen[0].Object.JSON), "managedFields")
		require.Equal(t, "x", fake.seen[0].Object.PersistentVolumeClaim.Metadata.Name)
	})
	t.Run("values elsewhere refused", func(t *testing.T) {
		body := review("Pod", "pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[`+empties+`]}}`)
		goruntime.GC()
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		code, _, msg := s.post(t, "/admit/m", body)
		goruntime.ReadMemStats(&after)
		require.Equal(t, http.StatusRequestEntityTooLarge, code, msg)
		require.Contains(t, msg, "decoding the review needs")
		require.Contains(t, msg, "more than its whole limit of 67108864 bytes for reviews in flight")
		// The body, read and sent (twice each: the client's copy too).
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "the review was decoded")
	})
}
