// Package alerts tests deploy/prometheus/prometheusrule.yaml, the alerts
// shipped for the host's metrics, as promtool would: the rules parse and
// validate with Prometheus' own rulefmt and PromQL parser, and each alert
// fires on a synthetic series that should fire it, evaluated by Prometheus'
// rule engine, and not on one that should not.
//
// It is a module of its own so that github.com/prometheus/prometheus, a
// test-only dependency, stays out of the host's module graph and binary.
package alerts
