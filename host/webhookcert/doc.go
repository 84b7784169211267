// Package webhookcert lets the host make and rotate the certificate of its
// admission webhook itself, without cert-manager or hand work: a CA and a
// serving certificate for the webhook Service's DNS names, kept in one
// kubernetes.io/tls Secret that every replica shares (tls.crt, tls.key,
// ca.crt with every CA the API server is to trust, ca.key), served from
// memory, and the caBundle of the host's webhook configurations kept equal
// to ca.crt.
//
// Issuer decides, from the Secret's contents and a clock, what the Secret
// should hold next; it reads no cluster and is tested with a clock of its
// own. Manager carries that out against the API server: it creates the
// Secret only if absent and updates it only at the resourceVersion it read,
// so that replicas agree on one bundle (a loser reads the winner's), and
// patches the caBundles with a resourceVersion test.
//
// Rotation, with lifetimes L (CA) and S (serving) and a propagation time P
// (how long the API server and the other replicas take to see a change):
//
//	CA at 2/3 of L      -> a new CA is added to ca.crt in front of the old
//	                       one; the serving certificate stays (old CA).
//	new CA in ca.crt P  -> the serving certificate is issued again by it.
//	serving at 2/3 of S -> the serving certificate is issued again.
//	serving by new CA P -> the old CA leaves ca.crt.
//
// It imports client-go and k8s.io/api; it must not import the other host
// packages.
package webhookcert
