// Command kubeplug is the kubeplug host's command line: `kubeplug inspect`
// describes a module file, `kubeplug test` runs case files against a module
// without a cluster, `kubeplug harness` serves a module to the sdk's test
// harness, and `kubeplug version` prints versions.
//
// Exit codes: 0 success; 1 a failure of what was asked (a failing case, a
// file that is not a usable module); 2 unusable input (bad flags or
// arguments, unreadable files, malformed case files). Commands return an
// *exitError to choose the code; main only maps it.
//
// Each command lives in a file of its own and is added in newRootCommand.
// The command package may import every host package; nothing imports it.
package main
