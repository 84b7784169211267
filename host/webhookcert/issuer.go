package webhookcert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"
)

// Keys of the Secret.
const (
	KeyCert   = "tls.crt" // the serving certificate
	KeyKey    = "tls.key" // its key
	KeyCA     = "ca.crt"  // every CA to trust, newest first: the caBundle
	KeyCAKey  = "ca.key"  // the newest CA's key
	maxCAs    = 4         // CAs ca.crt may hold; more is not ours
	maxSecret = 64 << 10  // bytes of the Secret's data read at most
)

// Lifetimes say how long certificates live and how long a change takes to
// reach everyone who must see it.
type Lifetimes struct {
	// CA is the CA's lifetime; default 10 years. A new CA is made at 2/3
	// of it.
	CA time.Duration
	// Serving is the serving certificate's lifetime; default 1 year. It
	// is issued again at 2/3 of it.
	Serving time.Duration
	// Propagation is how long a change of the Secret and the caBundle
	// takes to reach the API server and every replica (each reads the
	// Secret again every Propagation/2); default 10 minutes.
	Propagation time.Duration
}

// DefaultLifetimes returns the defaults.
func DefaultLifetimes() Lifetimes {
	return Lifetimes{CA: 10 * 365 * 24 * time.Hour, Serving: 365 * 24 * time.Hour, Propagation: 10 * time.Minute}
}

// Validate checks that a rotation fits: every step of it must finish before
// the certificate it replaces expires.
func (l Lifetimes) Validate() error {
	switch {
	case l.CA <= 0 || l.Serving <= 0 || l.Propagation <= 0:
		return errors.New("webhook certificate lifetimes and propagation must be positive")
	case l.Serving > l.CA:
		return fmt.Errorf("the serving certificate's lifetime (%s) must not exceed the CA's (%s)", l.Serving, l.CA)
	case 3*l.Propagation >= l.Serving:
		return fmt.Errorf("the propagation time (%s) must be under a third of the serving certificate's lifetime (%s): "+
			"a certificate renewed at 2/3 of its life waits that long for a new CA", l.Propagation, l.Serving)
	}
	return nil
}

// backdate is how far before its issue a certificate is valid, for clocks
// a little behind ours.
const backdate = time.Minute

// Issuer decides what the Secret holds.
type Issuer struct {
	// DNSNames are the serving certificate's names: the Service's
	// NAME.NAMESPACE.svc and NAME.NAMESPACE.svc.cluster.local.
	DNSNames  []string
	Lifetimes Lifetimes
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rand is the key and serial source; default crypto/rand.
	Rand io.Reader
}

// ServiceDNSNames are the names the API server reaches Service
// namespace/name by.
func ServiceDNSNames(namespace, name string) []string {
	return []string{name + "." + namespace + ".svc", name + "." + namespace + ".svc.cluster.local"}
}

// Bundle is what the Secret holds, parsed.
type Bundle struct {
	// CAs are the CAs to trust, newest first; CAs[0] signs.
	CAs        []*x509.Certificate
	caKey      crypto.Signer
	Serving    *x509.Certificate
	servingKey crypto.Signer
}

// Parse reads the Secret's data. A Secret that is not a bundle this package
// wrote (a key missing, a certificate that does not parse, a CA key that is
// not the newest CA's) is an error: the Issuer then starts over.
func Parse(data map[string][]byte) (*Bundle, error) {
	n := 0
	for _, v := range data {
		n += len(v)
	}
	if n > maxSecret {
		return nil, fmt.Errorf("the Secret holds %d bytes, more than the %d a webhook certificate bundle takes", n, maxSecret)
	}
	var b Bundle
	var err error
	if b.CAs, err = parseCerts(data[KeyCA], maxCAs); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyCA, err)
	}
	servings, err := parseCerts(data[KeyCert], 1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyCert, err)
	}
	b.Serving = servings[0]
	if b.caKey, err = parseKey(data[KeyCAKey], b.CAs[0]); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyCAKey, err)
	}
	if b.servingKey, err = parseKey(data[KeyKey], b.Serving); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyKey, err)
	}
	return &b, nil
}

func parseCerts(p []byte, most int) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for len(bytes.TrimSpace(p)) > 0 {
		var blk *pem.Block
		blk, p = pem.Decode(p)
		if blk == nil || blk.Type != "CERTIFICATE" {
			return nil, errors.New("not a PEM certificate")
		}
		if len(out) == most {
			return nil, fmt.Errorf("more than %d certificates", most)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no certificate")
	}
	return out, nil
}

func parseKey(p []byte, cert *x509.Certificate) (crypto.Signer, error) {
	blk, _ := pem.Decode(p)
	if blk == nil {
		return nil, errors.New("not a PEM key")
	}
	k, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	if !k.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the key is not the certificate's")
	}
	return k, nil
}

// Data is the bundle as the Secret's data.
func (b *Bundle) Data() (map[string][]byte, error) {
	caKey, err := keyPEM(b.caKey)
	if err != nil {
		return nil, err
	}
	key, err := keyPEM(b.servingKey)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		KeyCert: certPEM(b.Serving), KeyKey: key, KeyCA: b.TrustPEM(), KeyCAKey: caKey,
	}, nil
}

// TrustPEM is the caBundle: every CA to trust, newest first.
func (b *Bundle) TrustPEM() []byte {
	var out []byte
	for _, c := range b.CAs {
		out = append(out, certPEM(c)...)
	}
	return out
}

// TLSCertificate is the serving certificate and its key, with the CA that
// issued it.
func (b *Bundle) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{b.Serving.Raw}, PrivateKey: b.servingKey, Leaf: b.Serving}
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k crypto.Signer) ([]byte, error) {
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key of type %T", k)
	}
	der, err := x509.MarshalECPrivateKey(ek)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// issued is when c was issued (it is valid from backdate before).
func issued(c *x509.Certificate) time.Time { return c.NotBefore.Add(backdate) }

// renewAt is 2/3 of c's life.
func renewAt(c *x509.Certificate) time.Time {
	return issued(c).Add(c.NotAfter.Sub(issued(c)) * 2 / 3)
}

// signedBy reports whether ca issued c.
func signedBy(c, ca *x509.Certificate) bool { return c.CheckSignatureFrom(ca) == nil }

// Next returns what b (nil: no Secret, or one that does not parse) should
// become now, whether that differs from b, and when Next should be asked
// again at the latest. The result is b itself when nothing changes.
func (is *Issuer) Next(b *Bundle) (next *Bundle, changed bool, recheck time.Time, err error) {
	if err := is.Lifetimes.Validate(); err != nil {
		return nil, false, time.Time{}, err
	}
	now := is.now()
	if b == nil || !now.Before(b.CAs[0].NotAfter) {
		b = &Bundle{}
		changed = true
	} else {
		b = &Bundle{CAs: slices.Clone(b.CAs), caKey: b.caKey, Serving: b.Serving, servingKey: b.servingKey}
	}
	// Expired CAs are trusted no more.
	b.CAs = slices.DeleteFunc(b.CAs, func(c *x509.Certificate) bool {
		expired := !now.Before(c.NotAfter)
		changed = changed || expired
		return expired
	})
	if len(b.CAs) == 0 || !now.Before(renewAt(b.CAs[0])) {
		ca, key, err := is.newCA(now)
		if err != nil {
			return nil, false, time.Time{}, err
		}
		b.CAs = append([]*x509.Certificate{ca}, b.CAs...)
		if len(b.CAs) > maxCAs {
			b.CAs = b.CAs[:maxCAs]
		}
		b.caKey = key
		changed = true
	}
	ca := b.CAs[0]
	propagated := !now.Before(issued(ca).Add(is.Lifetimes.Propagation))
	usable := b.Serving != nil && now.Before(b.Serving.NotAfter) && slices.ContainsFunc(b.CAs, func(c *x509.Certificate) bool { return signedBy(b.Serving, c) })
	stale := usable && (!now.Before(renewAt(b.Serving)) || !slices.Equal(b.Serving.DNSNames, is.DNSNames) || !signedBy(b.Serving, ca))
	if !usable || stale && propagated {
		cert, key, err := is.newServing(now, ca, b.caKey)
		if err != nil {
			return nil, false, time.Time{}, err
		}
		b.Serving, b.servingKey = cert, key
		changed, stale = true, false
	}
	// Once every replica serves the certificate of the newest CA, the
	// older ones are trusted no more.
	servedByNewest := signedBy(b.Serving, ca)
	if len(b.CAs) > 1 && servedByNewest && !now.Before(issued(b.Serving).Add(is.Lifetimes.Propagation)) {
		b.CAs = b.CAs[:1]
		changed = true
	}

	// The next moment one of the steps above may apply. A step that is
	// due but waits (a stale certificate, for the new CA to propagate)
	// is asked again when the wait ends.
	times := []time.Time{renewAt(ca), renewAt(b.Serving), b.Serving.NotAfter}
	if stale || !servedByNewest {
		times = append(times, issued(ca).Add(is.Lifetimes.Propagation))
	}
	if len(b.CAs) > 1 {
		times = append(times, issued(b.Serving).Add(is.Lifetimes.Propagation))
		for _, c := range b.CAs[1:] {
			times = append(times, c.NotAfter)
		}
	}
	recheck = b.CAs[0].NotAfter
	for _, t := range times {
		if t.After(now) && t.Before(recheck) {
			recheck = t
		}
	}
	return b, changed, recheck, nil
}

func (is *Issuer) now() time.Time {
	if is.Now != nil {
		return is.Now()
	}
	return time.Now()
}

func (is *Issuer) rand() io.Reader {
	if is.Rand != nil {
		return is.Rand
	}
	return rand.Reader
}

func (is *Issuer) newCA(now time.Time) (*x509.Certificate, crypto.Signer, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kubeplug webhook CA " + now.UTC().Format(time.RFC3339)},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return is.sign(now, is.Lifetimes.CA, tmpl, nil, nil)
}

func (is *Issuer) newServing(now time.Time, ca *x509.Certificate, caKey crypto.Signer) (*x509.Certificate, crypto.Signer, error) {
	if len(is.DNSNames) == 0 {
		return nil, nil, errors.New("the serving certificate needs DNS names: give the webhook Service")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: is.DNSNames[0]},
		DNSNames:    slices.Clone(is.DNSNames),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	// A serving certificate never outlives its CA.
	life := min(is.Lifetimes.Serving, ca.NotAfter.Sub(now))
	return is.sign(now, life, tmpl, ca, caKey)
}

// sign makes a key and a certificate of tmpl valid from backdate before now
// for life, signed by parent (itself when nil).
func (is *Issuer) sign(now time.Time, life time.Duration, tmpl, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), is.rand())
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(is.rand(), new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-backdate)
	tmpl.NotAfter = now.Add(life)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(is.rand(), tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate: %w", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return c, key, nil
}
