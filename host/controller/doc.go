// Package controller runs modules against the cluster: one rate-limited work
// queue and a pool of workers per module; each reconcile builds the module's
// input from the informer caches, calls the module, and hands its result to
// the executor. Wire maps events on every watched kind to the subject keys
// of the modules that care. Reconcile is the one reconcile pipeline: the
// workers call it, and so does `kubeplug test` (casetest); it recovers
// panics, and nothing a module returns reaches a metric label unchecked.
//
// It imports the runtime, snapshot and actions packages and knows nothing of
// client-go beyond the work queue and informer event handlers.
package controller
