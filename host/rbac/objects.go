package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Labels every object Objects makes carries.
var Labels = map[string]string{
	"app.kubernetes.io/name":       "kubeplug",
	"app.kubernetes.io/managed-by": "kubeplug",
}

// Objects returns r as RBAC objects for kubectl apply: a ClusterRole called
// name with its ClusterRoleBinding, then a Role called name with its
// RoleBinding in each namespace of r.Namespaced (sorted), all bound to the
// ServiceAccount sa.
func Objects(r Rules, name string, sa Ref) []any {
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}}
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: Labels}
	}
	out := []any{
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: meta(""), Rules: r.Cluster,
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(""), Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		},
	}
	for _, ns := range r.namespaces() {
		out = append(out,
			&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: meta(ns), Rules: r.Namespaced[ns],
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: meta(ns), Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			})
	}
	return out
}

func (r Rules) namespaces() []string {
	var out []string
	for ns := range r.Namespaced {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// YAML returns Objects as a multi-document YAML stream.
func YAML(r Rules, name string, sa Ref) ([]byte, error) {
	var docs []string
	for _, o := range Objects(r, name, sa) {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encode %T: %w", o, err)
		}
		docs = append(docs, string(b))
	}
	return []byte(strings.Join(docs, "---\n")), nil
}

// HelmValues returns r as Helm values for charts/kubeplug:
//
//	rbac:
//	  rules: [...]            # the ClusterRole's rules
//	  namespacedRules:        # each namespace's Role's rules
//	    NAMESPACE: [...]
func HelmValues(r Rules) ([]byte, error) {
	ns := r.Namespaced
	if ns == nil {
		ns = map[string][]rbacv1.PolicyRule{}
	}
	v := map[string]any{"rbac": map[string]any{"rules": r.Cluster, "namespacedRules": ns}}
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode helm values: %w", err)
	}
	return b, nil
}
