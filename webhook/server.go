package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Server is controller-runtime's webhook server with gopf's certificates:
// give it to the manager as ctrl.Options.WebhookServer, then call Setup.
// Besides serving, it keeps its certificates fresh while it runs and knows
// how the API server reaches it, which Setup uses for the webhook
// configurations.
type Server struct {
	ctrlwebhook.Server

	opts  Options
	certs *certificates
	// beside are run while the server serves (see runWhileServing).
	beside []func(ctx context.Context) error
}

// NewServer prepares a webhook server: it fills in the defaults of opts
// (choosing a free port when none is given), and makes or loads the
// certificates, so that a problem with them is reported before the manager
// starts; certificates kept in a Secret (Options.CertSecret) are made or
// read when the server starts.
func NewServer(opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("gopf webhook server: %w", err)
	}
	certs := &certificates{
		dir:       opts.CertDir,
		fromFiles: opts.CertificatesFromFiles,
		name:      opts.Name,
		hosts:     opts.Hosts,
		validity:  opts.CertValidity,
		now:       time.Now,
		log:       ctrl.Log.WithName("gopf").WithName("webhook"),
	}
	inner := ctrlwebhook.Options{
		Host:    opts.Host,
		Port:    opts.Port,
		TLSOpts: append([]func(*tls.Config){}, opts.TLSOpts...),
	}
	if opts.CertificatesFromFiles {
		for _, name := range []string{certFile, keyFile} {
			if _, err := os.Stat(filepath.Join(opts.CertDir, name)); err != nil {
				return nil, fmt.Errorf("gopf webhook server: certificates from files: %w", err)
			}
		}
		inner.CertDir, inner.CertName, inner.KeyName = opts.CertDir, certFile, keyFile
	} else {
		inner.TLSOpts = append(inner.TLSOpts, func(c *tls.Config) { c.GetCertificate = certs.getCertificate })
	}
	if opts.CertSecret == nil {
		certs.store = dirStore{dir: opts.CertDir}
		if err := certs.refresh(context.Background(), renewal{}); err != nil {
			return nil, fmt.Errorf("gopf webhook server: certificates in %s: %w", opts.CertDir, err)
		}
	}
	return &Server{Server: ctrlwebhook.NewServer(inner), opts: opts, certs: certs}, nil
}

// Options returns the server's options with the defaults filled in: the
// port chosen, the URL, the certificate folder.
func (s *Server) Options() Options { return s.opts }

// CABundle returns the PEM certificates the API server should trust to
// reach the server (nil for certificates from files without a ca.crt).
func (s *Server) CABundle() []byte { return s.certs.caBundle() }

// Start serves until ctx is done, checking the certificates every
// Options.CheckInterval meanwhile, and running what the webhooks need
// beside it (see runWhileServing). With Options.CertSecret it first makes
// or reads the certificates.
func (s *Server) Start(ctx context.Context) error {
	if s.opts.CertSecret != nil {
		if !s.certs.hasStore() {
			return fmt.Errorf("gopf webhook server: the certificate Secret %s/%s needs webhook.Setup or webhook.SetupFinalizers with this server's manager", s.opts.CertSecret.Namespace, s.opts.CertSecret.Name)
		}
		if err := s.certs.refresh(ctx, renewal{}); err != nil {
			return fmt.Errorf("gopf webhook server: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.keepCertificates(ctx)
	}()
	for _, fn := range s.beside {
		wg.Go(func() {
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				s.certs.log.Error(err, "stopped beside the webhook server")
			}
		})
	}
	err := s.Server.Start(ctx)
	cancel()
	wg.Wait()
	return err
}

// runWhileServing has Start run fn beside the server, with a context that
// ends when the server stops, and return only once fn has returned: what a
// webhook reads (a watch of the shards' Leases) lives as long as the
// server that serves it. Call it before the server starts.
func (s *Server) runWhileServing(fn func(ctx context.Context) error) {
	s.beside = append(s.beside, fn)
}

// keepCertificates refreshes the certificates periodically until ctx is
// done.
func (s *Server) keepCertificates(ctx context.Context) {
	ticker := time.NewTicker(s.opts.CheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := s.certs.refresh(ctx, renewal{}); err != nil && ctx.Err() == nil {
				s.certs.log.Error(err, "checking the webhook certificates")
			}
		}
	}
}

// clientConfig tells the API server how to reach path on this server, and
// which CAs to trust.
func (s *Server) clientConfig(path string, bundle []byte) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: bundle}
	if svc := s.opts.Service; svc != nil {
		p, port := path, svc.Port
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Path: &p, Port: &port}
		return cc
	}
	u := strings.TrimSuffix(s.opts.URL, "/") + path
	cc.URL = &u
	return cc
}
