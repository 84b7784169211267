package webhookcert_test

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/webhookcert"
)

// clock is a clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

var lifetimes = webhookcert.Lifetimes{CA: 90 * time.Hour, Serving: 30 * time.Hour, Propagation: time.Hour}

func newIssuer(c *clock) *webhookcert.Issuer {
	return &webhookcert.Issuer{DNSNames: webhookcert.ServiceDNSNames("kp", "webhook"), Lifetimes: lifetimes, Now: c.now}
}

// next runs the issuer on b and round-trips the result through the Secret's
// data, as the Manager stores it.
func next(t *testing.T, is *webhookcert.Issuer, b *webhookcert.Bundle) (*webhookcert.Bundle, bool, time.Time) {
	t.Helper()
	n, changed, recheck, err := is.Next(b)
	require.NoError(t, err)
	data, err := n.Data()
	require.NoError(t, err)
	back, err := webhookcert.Parse(data)
	require.NoError(t, err)
	return back, changed, recheck
}

// verifies reports whether the API server, trusting b's caBundle, accepts
// the serving certificate s at the clock's time for the Service's name.
func verifies(t *testing.T, c *clock, trust *webhookcert.Bundle, s *x509.Certificate) bool {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(trust.TrustPEM()))
	_, err := s.Verify(x509.VerifyOptions{Roots: pool, DNSName: "webhook.kp.svc", CurrentTime: c.t})
	return err == nil
}

func TestFirstBundle(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, changed, recheck := next(t, newIssuer(c), nil)
	require.True(t, changed)
	require.Len(t, b.CAs, 1)
	require.Equal(t, []string{"webhook.kp.svc", "webhook.kp.svc.cluster.local"}, b.Serving.DNSNames)
	require.True(t, verifies(t, c, b, b.Serving))
	require.WithinDuration(t, c.t.Add(20*time.Hour), recheck, time.Second, "the serving certificate renews at 2/3 of 30h")

	// Nothing to do before then: the same bundle, unchanged.
	c.advance(19 * time.Hour)
	again, changed, _ := next(t, newIssuer(c), b)
	require.False(t, changed)
	require.Equal(t, b.Serving.Raw, again.Serving.Raw)
}

// The serving certificate is issued again at 2/3 of its life, by the same
// CA: the caBundle does not change.
func TestServingRenewsAtTwoThirds(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, _, _ := next(t, newIssuer(c), nil)
	c.advance(20*time.Hour + time.Second)
	r, changed, _ := next(t, newIssuer(c), b)
	require.True(t, changed)
	require.NotEqual(t, b.Serving.Raw, r.Serving.Raw)
	require.Equal(t, b.TrustPEM(), r.TrustPEM())
	require.True(t, verifies(t, c, b, r.Serving), "the old caBundle trusts the new certificate")
}

// A CA rotation never leaves the API server without a caBundle that trusts
// what every replica serves: the new CA joins the bundle first; the serving
// certificate follows it a propagation time later; the old CA leaves a
// propagation time after that. At each step, what any replica may still
// serve (the previous step's certificate) and what the API server may still
// trust (the previous step's caBundle) fit together.
func TestCARotationKeepsTrust(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	is := newIssuer(c)
	b, _, _ := next(t, is, nil)
	oldCA := b.CAs[0]
	// Walk to the CA's 2/3 (60h), renewing the serving certificate on the
	// way as the Manager would.
	for {
		n, _, recheck := next(t, is, b)
		b = n
		if len(n.CAs) > 1 {
			break
		}
		require.True(t, recheck.After(c.t), "recheck must move forward")
		c.t = recheck.Add(time.Second)
	}
	// Step 1: two CAs, the serving certificate still the old CA's.
	require.Len(t, b.CAs, 2)
	require.Equal(t, oldCA.Raw, b.CAs[1].Raw)
	require.NoError(t, b.Serving.CheckSignatureFrom(oldCA))
	step1 := b

	// Before the propagation time: nothing more.
	c.advance(lifetimes.Propagation - 2*time.Second)
	b2, changed, recheck := next(t, is, step1)
	require.False(t, changed)
	require.Equal(t, step1.Serving.Raw, b2.Serving.Raw)
	// Step 2: the serving certificate of the new CA.
	c.t = recheck.Add(time.Second)
	step2, changed, recheck := next(t, is, step1)
	require.True(t, changed)
	require.Len(t, step2.CAs, 2)
	require.NoError(t, step2.Serving.CheckSignatureFrom(step2.CAs[0]))
	require.True(t, verifies(t, c, step1, step2.Serving), "the API server may still hold step 1's caBundle")
	require.True(t, verifies(t, c, step2, step1.Serving), "a replica may still serve step 1's certificate")
	// Step 3: the old CA leaves.
	c.t = recheck.Add(time.Second)
	step3, changed, _ := next(t, is, step2)
	require.True(t, changed)
	require.Len(t, step3.CAs, 1)
	require.Equal(t, step2.Serving.Raw, step3.Serving.Raw)
	require.True(t, verifies(t, c, step3, step3.Serving))
	require.True(t, verifies(t, c, step2, step3.Serving), "the API server may still hold step 2's caBundle")
	require.False(t, verifies(t, c, step3, step1.Serving), "the old CA is trusted no more")
}

// A Service renamed gets a certificate for its names.
func TestNewNamesNewCertificate(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, _, _ := next(t, newIssuer(c), nil)
	c.advance(2 * time.Hour)
	is := newIssuer(c)
	is.DNSNames = webhookcert.ServiceDNSNames("kp", "other")
	r, changed, _ := next(t, is, b)
	require.True(t, changed)
	require.Equal(t, is.DNSNames, r.Serving.DNSNames)
}

// What is not a bundle of ours is refused by Parse; the Manager then
// starts over.
func TestParseRefuses(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, _, _ := next(t, newIssuer(c), nil)
	good, err := b.Data()
	require.NoError(t, err)
	other, _, _ := next(t, newIssuer(c), nil)
	otherData, err := other.Data()
	require.NoError(t, err)
	for name, change := range map[string]func(map[string][]byte){
		"no ca.crt":           func(d map[string][]byte) { delete(d, webhookcert.KeyCA) },
		"garbage tls.crt":     func(d map[string][]byte) { d[webhookcert.KeyCert] = []byte("junk") },
		"another CA's key":    func(d map[string][]byte) { d[webhookcert.KeyCAKey] = otherData[webhookcert.KeyCAKey] },
		"another serving key": func(d map[string][]byte) { d[webhookcert.KeyKey] = otherData[webhookcert.KeyKey] },
		"too many CAs": func(d map[string][]byte) {
			d[webhookcert.KeyCA] = append(append(append(append(append([]byte{}, good[webhookcert.KeyCA]...), good[webhookcert.KeyCA]...), good[webhookcert.KeyCA]...), good[webhookcert.KeyCA]...), good[webhookcert.KeyCA]...)
		},
		"larger than a bundle": func(d map[string][]byte) { d["padding"] = make([]byte, 64<<10) },
	} {
		t.Run(name, func(t *testing.T) {
			d := map[string][]byte{}
			for k, v := range good {
				d[k] = v
			}
			change(d)
			_, err := webhookcert.Parse(d)
			require.Error(t, err)
		})
	}
}

func TestLifetimesValidate(t *testing.T) {
	require.NoError(t, webhookcert.DefaultLifetimes().Validate())
	require.NoError(t, lifetimes.Validate())
	require.Error(t, webhookcert.Lifetimes{CA: time.Hour, Serving: 2 * time.Hour, Propagation: time.Minute}.Validate())
	require.Error(t, webhookcert.Lifetimes{CA: time.Hour, Serving: time.Hour, Propagation: 20 * time.Minute}.Validate())
	require.Error(t, webhookcert.Lifetimes{}.Validate())
}
