// Package check is `kubeplug check`: it proves a module against the
// states a live cluster shows and `kubeplug test` never does, in the manner
// of Sieve (OSDI'22). For each case it runs the case once unperturbed (the
// run of `kubeplug test`), then again under each perturbation of four
// classes and of a fifth that combines two, through the same
// casetest.Session and so through controller.Reconcile, the executor and
// memcluster's preconditions:
//
//   - crash: the host stops after each prefix of a round's writes (the
//     whole round's too: a restart between two rounds, and after a phase's
//     last round, which wrote nothing), and a fresh host (a new controller
//     with no memory of its own last writes, and a new module instance)
//     goes on;
//   - stale: for one round (or up to MaxStaleRounds in a row, while each
//     changes the cluster), the objects of one kind, of every kind, or of
//     every kind but one are shown as they were some writes ago, as lagging
//     informers show them, on the live host (whose guard for its own last
//     writes applies) and on a restarted one; the module's writes meet the
//     API server's resourceVersion and uid preconditions;
//   - unobserved: the host does not run between two steps, so it never
//     sees the state between them;
//   - interleave: a step's writes are split, and the host settles between
//     a prefix of them and the rest;
//   - unobserved-stale: the host does not run between step i and step
//     i+1, and then one round after step i+1 is a stale one, its views
//     counted in the writes of that run (planned from the unobserved
//     run's versions, explored last, at most MaxCompound per case).
//
// Every run starts on a fresh host and, when Options.NewGuest is set, a
// fresh module instance, as a host process does: nothing a module
// remembers from another run carries over. A crash, and a stale round on a
// restarted host, resume from the state the run they were planned from
// kept there (fork.go): a fresh host takes over at that point. Each
// perturbed run is held to the unperturbed one by the oracles of
// Violation, and reported as the perturbation took effect. Exploration is
// exhaustive within bounds (every round, every prefix, every kind, lags up
// to MaxLag), deduplicated by the state a perturbation leads to, and ends
// at the budget (Options.Deadline and Executions, checked wherever time
// passes) or when a run would keep more than its bound of the cluster's
// versions (keep.go).
//
// check imports casetest, controller, memcluster, actions, abi and
// internal/input (for sizes in messages); like casetest it loads no module
// itself and talks to no real cluster.
package check
