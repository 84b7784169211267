package policy

import (
	"fmt"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
)

// StorageClass parameters that name the secret external-provisioner passes
// to CreateVolume and DeleteVolume: the current keys, the deprecated ones,
// and the default keys it falls back to when neither is set.
const (
	ParamProvisionerSecretName      = "csi.storage.k8s.io/provisioner-secret-name"
	ParamProvisionerSecretNamespace = "csi.storage.k8s.io/provisioner-secret-namespace"
	ParamDeprecatedSecretName       = "csiProvisionerSecretName"
	ParamDeprecatedSecretNamespace  = "csiProvisionerSecretNamespace"
	ParamDefaultSecretName          = "csi.storage.k8s.io/secret-name"
	ParamDefaultSecretNamespace     = "csi.storage.k8s.io/secret-namespace"
)

// Template tokens a deletion can resolve. At deletion external-provisioner
// knows the claim only by claimRef's namespace and name, so
// ${pvc.annotations['...']}, which provisioning accepts in names, fails.
const (
	tokenPVName       = "pv.name"
	tokenPVCName      = "pvc.name"
	tokenPVCNamespace = "pvc.namespace"
)

// secretKeys is one way a StorageClass may name a secret.
type secretKeys struct {
	what                                string
	name, namespace                     string
	deprecatedName, deprecatedNamespace string // "" when none
}

var (
	provisionerSecretKeys = secretKeys{
		what: "provisioner", name: ParamProvisionerSecretName, namespace: ParamProvisionerSecretNamespace,
		deprecatedName: ParamDeprecatedSecretName, deprecatedNamespace: ParamDeprecatedSecretNamespace,
	}
	defaultSecretKeys = secretKeys{what: "default", name: ParamDefaultSecretName, namespace: ParamDefaultSecretNamespace}
)

// checkDeletionSecret fails when the secret external-provisioner's
// handleSecretsForDeletion would choose for v cannot be resolved. The host
// makes the same choice when it deletes the volume, and passes the secret
// it chose (never one a module names); this check only lets the module
// report a misconfigured class (rule D5) before asking. The choice:
//   - both deletion-secret annotations on the PV: the secret they name, or
//     none when either is empty;
//   - otherwise, when the PV's StorageClass exists and claimRef is set: the
//     provisioner secret of its parameters (else the default secret), with
//     ${pv.name}, ${pvc.namespace} and ${pvc.name} resolved;
//   - otherwise none: the deletion goes ahead without secrets, because the
//     class may have been deleted since the volume was provisioned.
//
// It fails when the class names the secret inconsistently or in a way that
// cannot be resolved.
func checkDeletionSecret(v *volume) error {
	_, err := deletionSecret(v)
	return err
}

// deletionSecret returns the secret chosen for v, nil for none.
func deletionSecret(v *volume) (*abi.SecretReference, error) {
	ann := v.pv.Metadata.Annotations
	name, hasName := ann[AnnDeletionSecretName]
	ns, hasNamespace := ann[AnnDeletionSecretNamespace]
	if hasName && hasNamespace {
		if name == "" || ns == "" {
			return nil, nil
		}
		return &abi.SecretReference{Namespace: ns, Name: name}, nil
	}
	ref := v.pv.Spec.ClaimRef
	if v.class == nil || ref == nil {
		return nil, nil
	}
	return classSecret(v.class, v.pv.Metadata.Name, ref.Namespace, ref.Name)
}

// classSecret resolves the provisioner secret class names for the volume pv
// of claim namespace/name, as external-provisioner's getSecretReference does.
func classSecret(class *abi.StorageClass, pv, namespace, name string) (*abi.SecretReference, error) {
	keys := provisionerSecretKeys
	nameT, nsT, err := keys.templates(class)
	if err != nil {
		return nil, err
	}
	if nameT == "" && nsT == "" {
		keys = defaultSecretKeys
		if nameT, nsT, err = keys.templates(class); err != nil {
			return nil, err
		}
	}
	if nameT == "" && nsT == "" {
		return nil, nil
	}

	// The namespace may not depend on the claim's name, which the claim's
	// author chooses.
	secretNS, err := resolve(class, keys.namespace, nsT, map[string]string{tokenPVName: pv, tokenPVCNamespace: namespace})
	if err != nil {
		return nil, err
	}
	if !isDNS1123Label(secretNS) {
		return nil, fmt.Errorf("%w: StorageClass %q parameter %s %q resolves to %q, which is not a valid namespace name",
			ErrSecretRef, class.Metadata.Name, keys.namespace, nsT, secretNS)
	}
	secretName, err := resolve(class, keys.name, nameT, map[string]string{tokenPVName: pv, tokenPVCName: name, tokenPVCNamespace: namespace})
	if err != nil {
		return nil, err
	}
	if !isDNS1123Subdomain(secretName) {
		return nil, fmt.Errorf("%w: StorageClass %q parameter %s %q resolves to %q, which is not a valid secret name",
			ErrSecretRef, class.Metadata.Name, keys.name, nameT, secretName)
	}
	return &abi.SecretReference{Namespace: secretNS, Name: secretName}, nil
}

// templates returns the name and namespace templates class gives under k,
// both "" when it gives none. A class must give both or neither, each once
// and not empty.
func (k secretKeys) templates(class *abi.StorageClass) (name, namespace string, err error) {
	params := class.Parameters
	pick := func(current, old string) (value, key string, n int) {
		if old != "" {
			if v, ok := params[old]; ok {
				value, key, n = v, old, n+1
			}
		}
		if v, ok := params[current]; ok {
			value, key, n = v, current, n+1
		}
		return value, key, n
	}
	name, nameKey, names := pick(k.name, k.deprecatedName)
	namespace, nsKey, namespaces := pick(k.namespace, k.deprecatedNamespace)
	switch {
	case names > 1 || namespaces > 1:
		dup := k.namespace
		if names > 1 {
			dup = k.name
		}
		return "", "", fmt.Errorf("%w: StorageClass %q gives the %s secret under both %s and its deprecated key; keep only %s and %s",
			ErrSecretParams, class.Metadata.Name, k.what, dup, k.name, k.namespace)
	case names != namespaces:
		return "", "", fmt.Errorf("%w: StorageClass %q gives the %s secret's %s but not its %s; set both %s and %s",
			ErrSecretParams, class.Metadata.Name, k.what, given(names > 0), given(names == 0), k.name, k.namespace)
	case names == 1 && (name == "" || namespace == ""):
		return "", "", fmt.Errorf("%w: StorageClass %q sets %s or %s to an empty value; give both a value or remove both",
			ErrSecretParams, class.Metadata.Name, nameKey, nsKey)
	}
	return name, namespace, nil
}

func given(name bool) string {
	if name {
		return "name"
	}
	return "namespace"
}

// resolve expands template, the value of class's parameter key, with params.
func resolve(class *abi.StorageClass, key, template string, params map[string]string) (string, error) {
	out, missing := expand(template, params)
	if len(missing) > 0 {
		known := make([]string, 0, len(params))
		for _, t := range []string{tokenPVName, tokenPVCNamespace, tokenPVCName} {
			if _, ok := params[t]; ok {
				known = append(known, "${"+t+"}")
			}
		}
		return "", fmt.Errorf("%w: StorageClass %q parameter %s %q uses %s, which cannot be resolved when a volume is deleted; use %s",
			ErrSecretTemplate, class.Metadata.Name, key, template, strings.Join(missing, ", "), strings.Join(known, ", "))
	}
	return out, nil
}
