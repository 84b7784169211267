// Package config reads the host configuration file of `kubeplug run`
// (host.yaml): the modules to run, with their scope, configuration, mode and
// limits; the CSI drivers the host may delete volumes for; and the informer
// resync period. README.md in this directory documents the format.
//
// Load refuses a file with anything wrong in it (an unknown field, a bad
// value, a duplicate name, a module file that does not exist) and reports
// every problem at once, one per line, each naming the file, the line, the
// field and what to write instead:
//
//	host.yaml:14: modules[1].limits.memory: "64Q" is not a quantity; use e.g. 64Mi
//
// so that the host never starts on a configuration it would misread.
//
// This package reads files but opens nothing else: it imports the standard
// library, go.yaml.in/yaml/v3, k8s.io/apimachinery's labels, resource and
// validation packages, abi (for subject names), host/runtime (for Limits) and
// host/internal/input (bounded reads of files and YAML).
// It must not import client-go or any other host package.
package config
