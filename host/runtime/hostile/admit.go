package hostile

import "context"

// admitGuests are the admission classes: modules with an admit hook only,
// which the host serves as webhooks and `kubeplug test` runs through
// admission cases. They reconcile nothing, so they are kept apart from the
// action-level guests, whose tests expect every module to reconcile.
var admitGuests = []guest{
	{"patch-copy-bomb", StageCall, "exceeds the work limit of"},
}

// AdmitGuests builds the corpus's admission guests as Guests builds the
// others.
//
//	mods, err := hostile.AdmitGuests(ctx, "go", t.TempDir())
func AdmitGuests(ctx context.Context, goBin, outDir string) ([]Module, error) {
	return buildGuests(ctx, goBin, outDir, admitGuests)
}
