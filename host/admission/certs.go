package admission

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// CertWatcher serves the key pair of a directory (tls.crt, tls.key) and
// loads it again when the files change, as controller-runtime's certwatcher
// does (RATIONALE.md, "Why fsnotify and not controller-runtime's
// certwatcher?"). It watches the directory rather than the files: a Secret
// mounted in a pod is updated by swapping a symlink, which replaces the
// files without writing them. A pair that does not load keeps the previous
// one in service.
type CertWatcher struct {
	crt, key string
	log      *slog.Logger
	current  atomic.Pointer[tls.Certificate]
	watcher  *fsnotify.Watcher
	done     chan struct{}
	once     sync.Once
}

// NewCertWatcher loads dir's key pair and starts watching it.
func NewCertWatcher(dir string, log *slog.Logger) (*CertWatcher, error) {
	w := &CertWatcher{
		crt: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"),
		log: log, done: make(chan struct{}),
	}
	if err := w.load(); err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch webhook certificate: %w", err)
	}
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch webhook certificate directory %s: %w", dir, err)
	}
	w.watcher = fw
	go w.watch()
	return w, nil
}

func (w *CertWatcher) load() error {
	c, err := loadKeyPair(w.crt, w.key)
	if err != nil {
		return fmt.Errorf("webhook certificate: load %s and %s: %w: put the serving certificate and its key there (a kubernetes.io/tls Secret mounted at --webhook-cert-dir has them)", w.crt, w.key, err)
	}
	w.current.Store(&c)
	return nil
}

// loadKeyPair is tls.LoadX509KeyPair through the host's bounded reader:
// the files are mounted from a Secret, and a FIFO or a huge file there must
// not hang or grow the webhook server.
func loadKeyPair(crt, key string) (tls.Certificate, error) {
	crtPEM, err := input.ReadFile(crt, input.MaxSmallBytes, "serving certificate")
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := input.ReadFile(key, input.MaxSmallBytes, "serving certificate's key")
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(crtPEM, keyPEM)
}

func (w *CertWatcher) watch() {
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.watcher.Events:
			if !ok {
				return
			}
			if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) == 0 {
				continue
			}
			if err := w.load(); err != nil {
				// Often the second of the two files is not written yet;
				// its own event loads the pair.
				w.log.Debug("webhook certificate not reloaded", "err", err)
				continue
			}
			w.log.Info("webhook certificate reloaded", "file", ev.Name)
		case err, ok := <-w.watcher.Errors:
			if !ok {
				return
			}
			w.log.Warn("watching the webhook certificate", "err", err)
		}
	}
}

// GetCertificate is tls.Config.GetCertificate.
func (w *CertWatcher) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return w.current.Load(), nil
}

// Close stops watching.
func (w *CertWatcher) Close() {
	w.once.Do(func() {
		close(w.done)
		w.watcher.Close()
	})
}
