package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// disagreement finds the host's log line for a disagreement on one key and
// the first action only the reference asked for.
var disagreement = regexp.MustCompile(`msg="shadow disagrees" .*key=(\S+) .*only in the module compared with: (\S+) (\S+) (\S+)`)

// shadowVendor: retentionlite, a vendor's cheaper take on KEP-1847, runs in
// shadow beside the reference retention module (compareWith: retention). It
// agrees while a set is created; on a scale-down under whenScaled: Delete,
// which it does not implement, it disagrees, and the host says where.
func shadowVendor(ctx context.Context, d *demo) error {
	d.n.say("host.yaml runs retentionlite, a vendor's take on KEP-1847, with mode: shadow and compareWith: retention.")
	d.n.say("On every reconcile of the reference module the host calls the vendor's module with the same input,")
	d.n.say("compares the two answers and executes only the reference's.")
	set, err := readSet(d.Root, "story3-delete-both.yaml")
	if err != nil {
		return err
	}
	set.Namespace, set.Name = "shadow", "ledger"
	if err := ensureNamespace(ctx, d.client, set.Namespace); err != nil {
		return err
	}
	s, err := setctl.Create(ctx, d.client, set)
	if err != nil {
		return err
	}
	st := &story{d: d, s: s, set: set}
	key := set.Namespace + "/" + set.Name
	d.n.step("created StatefulSet %s, 2 replicas, whenDeleted: Delete, whenScaled: Delete, with its pods and claims", key)
	if err := st.decided(ctx, map[int32]int{0: 1, 1: 1}, 0, 1); err != nil {
		return err
	}
	if line := d.disagreementOn(key); line != nil {
		return fmt.Errorf("the vendor's module disagreed on the new set: %s", line[0])
	}
	m, err := testenv.Scrape(d.host.addr)
	if err != nil {
		return err
	}
	d.n.say("Both modules gave the claims to the set: they agree (kubeplug_shadow_agreements_total is %.0f so far in this demo).",
		m.Sum("kubeplug_shadow_agreements_total", "module", "retentionlite"))

	if err := st.s.SetReplicas(ctx, 1); err != nil {
		return err
	}
	d.n.step("scaled %s to 1: replica 1 is condemned", key)
	if err := st.decided(ctx, map[int32]int{1: 2}, 1); err != nil {
		return err
	}
	var found []string
	err = d.await(ctx, "the host's report of the disagreement", func(context.Context) (bool, error) {
		found = d.disagreementOn(key)
		return found != nil, nil
	})
	if err != nil {
		return err
	}
	d.n.step("the host logged: shadow disagrees, key=%s: only the reference asked for %s on %s %s", found[1], found[2], found[3], found[4])
	d.n.say("The reference module gave claim %s to its pod, so that the claim is deleted with the pod, as", st.claimName(1))
	d.n.say("whenScaled: Delete says. The vendor's module would have left it to the set: it does not implement")
	d.n.say("whenScaled, and under it the volume would be kept until the whole set is deleted. Nothing of the")
	d.n.say("vendor's was executed; an operator reads this in the log and in kubeplug_shadow_disagreements_total")
	d.n.say("before swapping the candidate in.")
	return recordCase(ctx, d, key)
}

// recordCase turns the live set into a kubeplug test case with kubeplug
// record, adds an expectation, and runs it offline against the reference
// module: the situation the two modules disagreed on, kept as a test.
func recordCase(ctx context.Context, d *demo, key string) error {
	dir, err := os.MkdirTemp("", "kubeplug-demo-record-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "ledger.yaml")
	out, err := exec.CommandContext(ctx, d.Kubeplug, "record", "--kubeconfig", d.kubeconfig,
		"--subject", "statefulset/"+key, "--name", "ledger after the scale-down", "-o", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubeplug record: %v\n%s", err, out)
	}
	recorded, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var kinds []string
	for _, m := range recordedKind.FindAllStringSubmatch(string(recorded), -1) {
		kinds = append(kinds, m[1])
	}
	d.n.step("kubeplug record --subject statefulset/%s wrote %s: %d objects (%s), as the module saw them",
		key, filepath.Base(file), len(kinds), strings.Join(kinds, ", "))
	// The reference module already did what the state asks: on this state
	// it must do nothing more. That is the expectation to keep.
	if err := os.WriteFile(file, append(recorded, []byte("expect:\n  noActions: true\n")...), 0o644); err != nil {
		return err
	}
	out, err = exec.CommandContext(ctx, d.Kubeplug, "test", "--module", filepath.Join(d.Guests, "retention.wasm"), file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubeplug test on the recorded case: %v\n%s", err, out)
	}
	d.n.step("kubeplug test --module retention.wasm %s (with expect: noActions added): %s", filepath.Base(file), strings.TrimSpace(firstLine(string(out))))
	d.n.say("The live situation is now a test case that runs without a cluster, ready for the vendor's next version.")
	return nil
}

// recordedKind finds the kinds of the objects of a recorded case.
var recordedKind = regexp.MustCompile(`(?m)^  kind: (\S+)$`)

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// disagreementOn returns the submatches of the host's first "shadow
// disagrees" line about key, or nil.
func (d *demo) disagreementOn(key string) []string {
	for line := range strings.Lines(d.host.log.String()) {
		if m := disagreement.FindStringSubmatch(line); m != nil && m[1] == key {
			return m
		}
	}
	return nil
}
