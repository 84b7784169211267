package demo

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// kubectlTable renders a meta.k8s.io/v1 Table, as the API server answers a
// list asked for with "as=Table", the way `kubectl get` prints it: the
// columns of priority 0, upper-case headers, "<none>" for an empty cell and
// dates as ages at now.
func kubectlTable(raw []byte, now time.Time) (string, error) {
	var t metav1.Table
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", fmt.Errorf("decode table: %w", err)
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	var cols []int
	var head []string
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, i)
			head = append(head, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, row := range t.Rows {
		var cells []string
		for _, i := range cols {
			cells = append(cells, cell(t.ColumnDefinitions[i], row.Cells, i, now))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	return b.String(), nil
}

func cell(def metav1.TableColumnDefinition, cells []any, i int, now time.Time) string {
	if i >= len(cells) || cells[i] == nil || cells[i] == "" {
		return "<none>"
	}
	s := fmt.Sprint(cells[i])
	if def.Type == "date" {
		if at, err := time.Parse(time.RFC3339, s); err == nil {
			return duration.HumanDuration(now.Sub(at))
		}
	}
	return s
}
