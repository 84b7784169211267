package main

import (
	"github.com/spf13/pflag"

	"github.com/kubeplug/kubeplug/host/app"
	"github.com/kubeplug/kubeplug/host/webhookcert"
)

// webhookCertFlags are kubeplug run's flags for a webhook certificate the
// host manages itself.
type webhookCertFlags struct {
	secret, service, configName string
	lifetimes                   webhookcert.Lifetimes
}

func (w *webhookCertFlags) add(f *pflag.FlagSet) {
	d := webhookcert.DefaultLifetimes()
	f.StringVar(&w.secret, "webhook-cert-secret", "", "NAMESPACE/NAME of a kubernetes.io/tls Secret in which the host makes, shares between replicas and rotates "+
		"the webhook's CA and serving certificate, patching the caBundle of its webhook configurations (instead of --webhook-cert-dir)")
	f.StringVar(&w.service, "webhook-service", "", "NAMESPACE/NAME of the webhook's Service, whose DNS names the serving certificate is for (with --webhook-cert-secret)")
	f.StringVar(&w.configName, "webhook-config-name", "kubeplug", "name of the webhook configurations whose caBundle the host keeps current (kubeplug webhook-config --name)")
	f.DurationVar(&w.lifetimes.CA, "webhook-ca-lifetime", d.CA, "lifetime of the webhook CA the host makes; a new one is made at 2/3 of it")
	f.DurationVar(&w.lifetimes.Serving, "webhook-cert-lifetime", d.Serving, "lifetime of the webhook serving certificate; it is issued again at 2/3 of it")
	f.DurationVar(&w.lifetimes.Propagation, "webhook-cert-propagation", d.Propagation,
		"how long a new CA is in the caBundle before it signs, and a replaced one stays after (each replica reads the Secret every half of it)")
}

// options returns the app's setting, nil without --webhook-cert-secret.
func (w *webhookCertFlags) options() (*app.WebhookCert, error) {
	if w.secret == "" {
		if w.service != "" {
			return nil, inputErrorf("--webhook-service is for --webhook-cert-secret: give the Secret the host keeps the certificate in")
		}
		return nil, nil
	}
	secret, err := parseRef("--webhook-cert-secret", w.secret)
	if err != nil {
		return nil, err
	}
	if w.service == "" {
		return nil, inputErrorf("--webhook-cert-secret needs --webhook-service NAMESPACE/NAME: the Service the API server reaches the webhook through")
	}
	service, err := parseRef("--webhook-service", w.service)
	if err != nil {
		return nil, err
	}
	if err := w.lifetimes.Validate(); err != nil {
		return nil, inputError(err)
	}
	return &app.WebhookCert{
		SecretNamespace: secret.Namespace, SecretName: secret.Name,
		ServiceNamespace: service.Namespace, ServiceName: service.Name,
		ConfigName: w.configName, Lifetimes: w.lifetimes,
	}, nil
}
