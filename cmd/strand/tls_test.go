package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue makes a certificate for 127.0.0.1 (a server) or a common name (a
// client) and writes it and its key to dir/name.pem and dir/name.key.
func (ca *testCA) issue(t *testing.T, dir, name string, serial int64, server bool) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	writePEM(t, certFile, "CERTIFICATE", der)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startTLSServer starts `strand server` with args and waits for its
// /readyz over https, trusting ca.
func startTLSServer(t *testing.T, bin, addr string, ca *testCA, env []string, args ...string) (logPath string) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "strand"), append([]string{"server", "--listen", addr, "--console=false"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	client := httpsClient(ca, nil)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get("https://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return logPath
			}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the server exited: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the server is not ready over https after 60s: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func httpsClient(ca *testCA, cert *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg := &tls.Config{RootCAs: pool}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

// TestTLS serves the API over HTTPS with client certificates: a client
// that trusts the CA and brings a token or a certificate the client CA
// signed is served as its user; plain HTTP, an untrusted server and a
// certificate of another CA are refused; a certificate replaced on disk is
// served without a restart.
func TestTLS(t *testing.T) {
	bin := binaries(t, "strand")
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("STRAND_TOKEN", "")
	storeURL := "sqlite://" + filepath.Join(dir, "strand.db")
	ca, clientCA, otherCA := newTestCA(t, dir, "ca"), newTestCA(t, dir, "client-ca"), newTestCA(t, dir, "other-ca")
	srvCert, srvKey := ca.issue(t, dir, "server", 10, true)
	ciCert, ciKey := clientCA.issue(t, dir, "ci", 11, false)
	strangerCert, strangerKey := otherCA.issue(t, dir, "stranger", 12, false)
	nobodyCert, nobodyKey := clientCA.issue(t, dir, "nobody", 13, false)

	if out, code := runIn(t, "the admin's password\n", "user", "create", "root", "--admin", "--password-stdin", "--store", storeURL); code != 0 {
		t.Fatalf("user create: %s", out)
	}
	for _, args := range [][]string{{"user", "create", "ci", "--service"}, {"user", "grant", "ci", "--roles", "writer"}} {
		if out, code := runIn(t, "", append(args, "--store", storeURL)...); code != 0 {
			t.Fatalf("%v: %s", args, out)
		}
	}
	addr := freePort(t)
	startTLSServer(t, bin, addr, ca, nil, "--store", storeURL, "--tls-cert", srvCert, "--tls-key", srvKey, "--tls-client-ca", clientCA.file)
	url := "https://" + addr
	whoami := func(args ...string) (string, int) {
		return runIn(t, "", append([]string{"whoami", "--server", url, "--retry-for", "1ms", "-o", "json"}, args...)...)
	}

	if out, _ := whoami("--ca-file", ca.file); !strings.Contains(out, "unauthenticated") {
		t.Fatalf("whoami over TLS without credentials: %s", out)
	}
	if out, code := whoami("--ca-file", ca.file, "--cert-file", ciCert, "--key-file", ciKey); code != 0 || !strings.Contains(out, `"name": "ci"`) {
		t.Fatalf("whoami with ci's certificate: %d %s", code, out)
	}
	if out, code := runIn(t, "", "workflow", "start", "tls-1", "--type", "T", "--queue", "q", "--server", url, "--retry-for", "1ms",
		"--ca-file", ca.file, "--cert-file", ciCert, "--key-file", ciKey); code != 0 {
		t.Fatalf("start with ci's certificate: %d %s", code, out)
	}
	if out, _ := whoami("--ca-file", ca.file, "--cert-file", nobodyCert, "--key-file", nobodyKey); !strings.Contains(out, `no user \"nobody\"`) && !strings.Contains(out, `no user "nobody"`) {
		t.Fatalf("a certificate of no user: %s", out)
	}
	if out, code := whoami(); code == 0 || !strings.Contains(out, "certificate") {
		t.Fatalf("whoami trusting the system's roots only: %d %s", code, out)
	}
	if out, code := whoami("--ca-file", ca.file, "--cert-file", strangerCert, "--key-file", strangerKey); code == 0 {
		t.Fatalf("a certificate of another CA was taken: %s", out)
	}
	if out, code := runIn(t, "", "whoami", "--server", "http://"+addr, "--retry-for", "1ms"); code == 0 {
		t.Fatalf("plain HTTP to the TLS port was served: %s", out)
	}
	out, code := runIn(t, "the admin's password\n", "login", "--server", url, "--ca-file", ca.file, "--name", "root", "--password-stdin")
	if code != 0 {
		t.Fatalf("login over TLS: %s", out)
	}
	if out, code := whoami("--ca-file", ca.file); code != 0 || !strings.Contains(out, `"name": "root"`) {
		t.Fatalf("whoami with the token of the login: %d %s", code, out)
	}

	// A new certificate on disk is served to new connections.
	serial := func() int64 {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: httpsClient(ca, nil).Transport.(*http.Transport).TLSClientConfig.RootCAs})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if s := serial(); s != 10 {
		t.Fatalf("serial %d, want 10", s)
	}
	time.Sleep(1100 * time.Millisecond) // a new modification time
	ca.issue(t, dir, "server", 20, true)
	eventually(t, "the new certificate served", func() bool { return serial() == 20 })
}

// TestClusterTLS runs two nodes over PostgreSQL that serve HTTPS, control
// access and call each other with the cluster's secret: a run whose shard
// the other node owns is served through it; the peering route refuses a
// user (even a cluster admin), a wrong secret and no credentials.
func TestClusterTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	bin := binaries(t, "strand")
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("STRAND_TOKEN", "")
	base := testdb.PostgresURL(t)
	storeURL := testdb.WithSearchPath(t, base, testdb.NewSchema(t, base))
	ca := newTestCA(t, dir, "ca")
	cert, key := ca.issue(t, dir, "node", 2, true)
	if out, code := runIn(t, "", "user", "create", "ops", "--service", "--admin", "--store", storeURL); code != 0 {
		t.Fatalf("user create: %s", out)
	}
	out, code := runIn(t, "", "token", "create", "--user", "ops", "--store", storeURL, "-o", "json")
	if code != 0 {
		t.Fatalf("token create: %s", out)
	}
	token := between(out, `"token": "`, `"`)
	const secret = "the cluster secret, at least 16 bytes"
	env := []string{"STRAND_CLUSTER_SECRET=" + secret}
	common := []string{"--store", storeURL, "--tls-cert", cert, "--tls-key", key, "--tls-ca", ca.file, "--shards", "16", "--node-ttl", "5s"}
	a, b := freePort(t), freePort(t)
	startTLSServer(t, bin, a, ca, env, append(common, "--node-id", "a")...)
	logB := startTLSServer(t, bin, b, ca, env, append(common, "--node-id", "b")...)
	client := httpsClient(ca, nil)
	call := func(method, url, auth, body string) (int, string) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(msg)
	}
	eventually(t, "both nodes owning shards", func() bool {
		_, body := call("GET", "https://"+a+"/api/v1/shards", "Bearer "+token, "")
		var list struct {
			Shards []struct{ Owner string } `json:"shards"`
		}
		json.Unmarshal([]byte(body), &list)
		owners := map[string]bool{}
		for _, s := range list.Shards {
			owners[s.Owner] = true
		}
		return owners["a"] && owners["b"]
	})
	cli := []string{"--server", "https://" + a, "--ca-file", ca.file, "--token", token, "--retry-for", "20s"}
	for i := range 16 {
		id := fmt.Sprintf("peer-%d", i)
		if out, code := runIn(t, "", append([]string{"workflow", "start", id, "--type", "T", "--queue", "q"}, cli...)...); code != 0 {
			b, _ := os.ReadFile(logB)
			t.Fatalf("start %s through node a: %d %s\nnode b's log:\n%s", id, code, out, tail(string(b), 40))
		}
		if out, code := runIn(t, "", append([]string{"workflow", "describe", id}, cli...)...); code != 0 || !strings.Contains(out, id) {
			t.Fatalf("describe %s through node a: %d %s", id, code, out)
		}
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Node not the secret", 401}, {"Bearer " + token, 403}} {
		if got, body := call("POST", "https://"+a+"/api/v1/peer/poll", c.auth, "{}"); got != c.want {
			t.Errorf("peering call with %q: %d, want %d (%s)", c.auth, got, c.want, body)
		}
	}
	if got, body := call("POST", "https://"+a+"/api/v1/peer/no-such-op", "Node "+secret, "{}"); got == 401 || got == 403 {
		t.Errorf("peering call with the secret: %d (%s)", got, body)
	}
}
