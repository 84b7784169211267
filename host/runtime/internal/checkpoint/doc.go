// Package checkpoint rewrites a WebAssembly module so that it calls back into
// the host at regular intervals, which is how the runtime interrupts a guest
// that runs past its deadline without paying for an exit to Go at every loop.
//
// Insert adds to the module one mutable i32 global (the countdown) and one
// imported function () -> i32 (the checkpoint). At the head of every loop,
// and on entry to every function whose body does not begin with a loop, the
// rewritten code runs
//
//	global.get $countdown
//	if
//	  global.get $countdown  i32.const 1  i32.sub  global.set $countdown
//	else
//	  call $checkpoint  global.set $countdown
//	end
//
// so the host's checkpoint runs once every interval counted checks and
// decides whether the guest may go on (it returns the next interval) or must
// stop (it panics, which ends the call). Any execution that does not end
// passes infinitely many loop heads or function entries, so no guest can run
// forever between two checkpoints, whether it loops or recurses.
//
// A loop head alone does not bound the time between two checks: one pass
// through a loop whose body is one long straight stretch runs the whole
// body. So the same sequence is also inserted wherever a path from the last
// check would run more than MaxStretch instructions without passing another
// (the count of a path follows branches to where they land, and a call to
// a function the module defines ends it, since the callee runs a check
// before it can return). Every instruction run is then in the stretch of
// some counted check, and no check's stretch holds more than 2×MaxStretch
// instructions (its own and, for an entry, its caller's after the call).
//
// Adding an imported function shifts the index of every function the module
// defines by one; Insert renumbers calls, ref.func, exports, the start
// function, element segments, global initializers and the name section.
// DWARF sections (.debug_*) and a sourceMappingURL describe code offsets that
// no longer hold, so they are dropped; function names survive.
//
// Memory layout of the change, for a module with F imported functions and
// G globals (imported and defined):
//
//	function index F      the checkpoint import (appended to the imports)
//	function index F+1..  the module's own functions, formerly F..
//	global index G        the countdown (appended to the globals)
//	type index T          () -> i32 (appended to the types)
//
// This package imports only the standard library. It knows nothing of
// wazero or of kubeplug's ABI.
package checkpoint
