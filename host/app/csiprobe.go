package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/csi"
	"github.com/kubeplug/kubeplug/host/metrics"
)

// Reasons of the events a CSI driver's probe records on the host's object.
const (
	// ReasonCSIDriverNotReady (Warning): a configured driver does not
	// answer its probe, or answers as another driver or one that cannot
	// delete volumes.
	ReasonCSIDriverNotReady = "CSIDriverNotReady"
	// ReasonCSIDriverReady (Normal): it answers again.
	ReasonCSIDriverReady = "CSIDriverReady"
)

// The times between probes of a CSI driver (csiProber): after a probe that
// failed, from CSIProbeRetry doubling up to CSIProbeEvery; after one that
// passed, CSIProbeEvery. Each probe is two calls, each bounded by the
// driver's timeout.
const (
	CSIProbeRetry = time.Second
	CSIProbeEvery = time.Minute
)

// csiProber probes the host's CSI drivers from its start (csi.Client.Probe:
// what the first DeleteVolume would ask), so that a driver that does not
// answer, or answers as another driver or one that cannot delete volumes,
// shows before a volume waits on it: in /readyz's answer, which it does not
// fail (RATIONALE.md, "Why does a CSI driver that does not answer leave the
// host ready?"), in kubeplug_csi_driver_ready, in the log and as a Warning
// event on the host's Pod. A driver is probed again with backoff until it
// answers, which clears the note and says so, then every CSIProbeEvery, so
// that one that goes away later shows too.
type csiProber struct {
	probe func(ctx context.Context, driver string) error
	ready *metrics.Readiness
	gauge *prometheus.GaugeVec
	// event records an event of the given type and reason on the host's
	// object.
	event func(eventType, reason, message string)
	log   *slog.Logger
	// retry is the first wait after a failed probe, doubling up to every;
	// every the wait after one that passed.
	retry, every time.Duration
}

// probeDrivers probes the drivers of volumes (csiProber) until ctx ends
// or the func it returns is called, which waits for the probes to end;
// their events are the host's, recorded through rl.
func probeDrivers(ctx context.Context, volumes *csi.Client, ready *metrics.Readiness, m *metrics.Metrics, rl *Reloader, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	p := &csiProber{probe: volumes.Probe, ready: ready, gauge: m.CSIDriverReady, log: log,
		event: func(eventType, reason, msg string) { rl.hostEvent("", eventType, reason, msg) },
		retry: CSIProbeRetry, every: CSIProbeEvery}
	wait := p.start(ctx, volumes.Drivers())
	return func() { cancel(); wait() }
}

// start probes each of drivers in a goroutine of its own until ctx ends;
// the func it returns waits for them to end.
func (p *csiProber) start(ctx context.Context, drivers []string) (wait func()) {
	var wg sync.WaitGroup
	for _, d := range drivers {
		wg.Go(func() { p.run(ctx, d) })
	}
	return wg.Wait
}

// run probes driver until ctx ends.
func (p *csiProber) run(ctx context.Context, driver string) {
	note := fmt.Sprintf("csi driver %q", driver)
	p.gauge.WithLabelValues(driver).Set(0) // until it answers
	failing := false
	delay := p.retry
	for {
		err := p.probe(ctx, driver)
		if ctx.Err() != nil {
			return
		}
		wait := p.every
		if err == nil {
			p.gauge.WithLabelValues(driver).Set(1)
			p.ready.Note(note, "")
			if failing {
				p.log.Info("CSI driver answers again", "driver", driver)
				p.event(abi.EventNormal, ReasonCSIDriverReady, fmt.Sprintf("CSI driver %q answers: the host deletes its volumes again", driver))
			}
			failing, delay = false, p.retry
		} else {
			p.gauge.WithLabelValues(driver).Set(0)
			p.ready.Note(note, err.Error()+"; its volumes wait until it answers, the rest of the host is unaffected")
			if !failing {
				p.log.Warn("CSI driver does not answer; its volumes wait until it does, probing again with backoff", "driver", driver, "err", err)
				p.event(abi.EventWarning, ReasonCSIDriverNotReady,
					fmt.Sprintf("%v; volumes of %q are not deleted until it answers, the host probes it again with backoff", err, driver))
			}
			failing = true
			wait, delay = delay, min(2*delay, p.every)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
