package app

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/host/config"
)

// TestWarnRestartOnly: a reload names every setting it cannot apply,
// apiQPS and shard among them (both set up once, at start).
func TestWarnRestartOnly(t *testing.T) {
	var buf bytes.Buffer
	old := &config.File{APIQPS: 50}
	r := &Reloader{file: old, log: slog.New(slog.NewTextHandler(&buf, nil))}

	r.warnRestartOnly(&config.File{APIQPS: 50})
	require.Empty(t, buf.String(), "nothing changed")

	r.warnRestartOnly(&config.File{APIQPS: 100, Shard: config.Shard{LabelSelector: labels.SelectorFromSet(labels.Set{"shard": "a"})}})
	require.Contains(t, buf.String(), "fields=\"[apiQPS shard]\"")
}
