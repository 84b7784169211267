package actions

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeplug/kubeplug/abi"
)

// StorageClass parameters that name the provisioner secret, as
// external-provisioner reads them for DeleteVolume: the current keys, the
// deprecated ones, and the default keys used when neither is set.
const (
	ParamProvisionerSecretName      = "csi.storage.k8s.io/provisioner-secret-name"
	ParamProvisionerSecretNamespace = "csi.storage.k8s.io/provisioner-secret-namespace"
	ParamDeprecatedSecretName       = "csiProvisionerSecretName"
	ParamDeprecatedSecretNamespace  = "csiProvisionerSecretNamespace"
	ParamDefaultSecretName          = "csi.storage.k8s.io/secret-name"
	ParamDefaultSecretNamespace     = "csi.storage.k8s.io/secret-namespace"
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

// deletionSecret returns the Secret the host passes to DeleteVolume for v,
// nil for none, chosen as external-provisioner's handleSecretsForDeletion
// chooses it, so that a driver gets the same credentials from kubeplug as
// from its own provisioner:
//   - both deletion-secret annotations on the PV: the Secret they name, or
//     none unless both are set;
//   - otherwise the provisioner secret of the PV's StorageClass (else its
//     default secret), with ${pv.name}, ${pvc.namespace} and ${pvc.name}
//     resolved from the PV and its claimRef; none when the class is gone or
//     names none. The class of an in-tree volume migrated to CSI is read as
//     csi-translation-lib translates it (migratedClassParameters).
//
// It fails when the class names the secret in a way that cannot be resolved
// at deletion; external-provisioner then fails the deletion and retries.
func (e *Executor) deletionSecret(ctx context.Context, v PersistentVolume, name string) (*abi.SecretReference, error) {
	secretName, hasName := v.Annotations[AnnDeletionSecretName]
	secretNS, hasNamespace := v.Annotations[AnnDeletionSecretNamespace]
	if hasName && hasNamespace {
		if secretName == "" || secretNS == "" {
			return nil, nil
		}
		return &abi.SecretReference{Namespace: secretNS, Name: secretName}, nil
	}
	class := v.StorageClassName
	if c, ok := v.Annotations[annBetaStorageClass]; ok {
		class = c
	}
	if class == "" || v.ClaimRef == nil {
		return nil, nil
	}
	params, err := e.Cluster.CurrentClassParameters(ctx, class)
	switch {
	case apierrors.IsNotFound(err):
		// The class may have been deleted since the volume was made;
		// external-provisioner deletes without secrets then.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read StorageClass %q for the deletion secret: %w", class, err)
	}
	if v.InTreePlugin != "" {
		if params, err = migratedClassParameters(v.InTreePlugin, params); err != nil {
			return nil, fmt.Errorf("%w: StorageClass %q of in-tree plugin %s: %w; fix the class's parameters and the deletion is retried",
				ErrSecretParams, class, v.InTreePlugin, err)
		}
	}
	ref, err := classSecret(params, name, v.ClaimRef.Namespace, v.ClaimRef.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: StorageClass %q: %w; fix the class's parameters and the deletion is retried", ErrSecretParams, class, err)
	}
	return ref, nil
}

// classSecret resolves the provisioner secret params name for the volume pv
// of claim namespace/name, as external-provisioner's getSecretReference does
// for a claim known only by its claimRef.
func classSecret(params map[string]string, pv, namespace, name string) (*abi.SecretReference, error) {
	nameT, nsT, err := provisionerSecretKeys.templates(params)
	if err != nil {
		return nil, err
	}
	if nameT == "" && nsT == "" {
		if nameT, nsT, err = defaultSecretKeys.templates(params); err != nil {
			return nil, err
		}
	}
	if nameT == "" && nsT == "" {
		return nil, nil
	}
	// The namespace may not depend on the claim's name, which the claim's
	// author chooses.
	ns, err := resolveTemplate(nsT, map[string]string{"pv.name": pv, "pvc.namespace": namespace})
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, fmt.Errorf("secret namespace %q resolves to %q, which is not a valid namespace name", nsT, ns)
	}
	secret, err := resolveTemplate(nameT, map[string]string{"pv.name": pv, "pvc.namespace": namespace, "pvc.name": name})
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Subdomain(secret)) > 0 {
		return nil, fmt.Errorf("secret name %q resolves to %q, which is not a valid secret name", nameT, secret)
	}
	return &abi.SecretReference{Namespace: ns, Name: secret}, nil
}

// templates returns the name and namespace templates params give under k,
// both "" when they give none. Both or neither must be given, each once and
// not empty.
func (k secretKeys) templates(params map[string]string) (name, namespace string, err error) {
	pick := func(current, old string) (value string, n int) {
		if v, ok := params[old]; ok && old != "" {
			value, n = v, n+1
		}
		if v, ok := params[current]; ok {
			value, n = v, n+1
		}
		return value, n
	}
	name, names := pick(k.name, k.deprecatedName)
	namespace, namespaces := pick(k.namespace, k.deprecatedNamespace)
	switch {
	case names > 1 || namespaces > 1:
		return "", "", fmt.Errorf("the %s secret is given under both %s/%s and a deprecated key", k.what, k.name, k.namespace)
	case names != namespaces:
		return "", "", fmt.Errorf("the %s secret needs both %s and %s", k.what, k.name, k.namespace)
	case names == 1 && (name == "" || namespace == ""):
		return "", "", fmt.Errorf("the %s secret's name or namespace is empty", k.what)
	}
	return name, namespace, nil
}

// resolveTemplate expands template with os.Expand, as external-provisioner
// does, and fails on a token params lacks.
func resolveTemplate(template string, params map[string]string) (string, error) {
	var missing []string
	out := os.Expand(template, func(k string) string {
		v, ok := params[k]
		if !ok && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		known := make([]string, 0, len(params))
		for k := range params {
			known = append(known, "${"+k+"}")
		}
		slices.Sort(known)
		return "", fmt.Errorf("%q uses %s, which cannot be resolved when a volume is deleted; use %s",
			template, strings.Join(missing, ", "), strings.Join(known, ", "))
	}
	return out, nil
}
