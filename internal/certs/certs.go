// Package certs reads the TLS certificates a server serves and a client
// trusts from PEM files, and serves a certificate that is replaced on disk
// without a restart.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// Reloader serves a certificate and key from files, reading them again
// when either file's modification time changes (looked at most once a
// second, at a handshake). A pair that no longer loads (a half-written
// file) leaves the last good one in use.
type Reloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	cert              *tls.Certificate
	certMod, keyMod   time.Time
	checked           time.Time
	now               func() time.Time
}

// NewReloader loads the pair once; an error names the bad file.
func NewReloader(certFile, keyFile string) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, now: time.Now}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reloader) load() error {
	cs, err := os.Stat(r.certFile)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	ks, err := os.Stat(r.keyFile)
	if err != nil {
		return fmt.Errorf("tls key: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.certMod, r.keyMod = &cert, cs.ModTime(), ks.ModTime()
	return nil
}

// GetCertificate is tls.Config's: the current certificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= time.Second {
		r.checked = now
		cs, err1 := os.Stat(r.certFile)
		ks, err2 := os.Stat(r.keyFile)
		if err1 == nil && err2 == nil && (!cs.ModTime().Equal(r.certMod) || !ks.ModTime().Equal(r.keyMod)) {
			r.load() // on failure the last good pair stays
		}
	}
	return r.cert, nil
}

// Pool reads a PEM bundle of CA certificates.
func Pool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("ca file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("ca file %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// ServerConfig is the TLS configuration of a server serving certFile and
// keyFile; with clientCA set, it asks clients for a certificate and
// verifies the one given against it (a client without one may still call
// with a token).
func ServerConfig(certFile, keyFile, clientCA string) (*tls.Config, error) {
	rl, err := NewReloader(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{GetCertificate: rl.GetCertificate, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pool, err := Pool(clientCA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// ClientConfig is the TLS configuration of a client that trusts caFile
// (the system's roots when empty) and, with certFile and keyFile, presents
// that certificate.
func ClientConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := Pool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("a client certificate needs both its file and its key's")
	}
	if certFile != "" {
		rl, err := NewReloader(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return rl.GetCertificate(nil) }
	}
	return cfg, nil
}
