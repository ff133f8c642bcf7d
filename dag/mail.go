package dag

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
)

// TLS modes of a MailServer.
const (
	// MailSTARTTLS: a plain connection that is upgraded with STARTTLS; a
	// server that does not offer it is refused.
	MailSTARTTLS = "starttls"
	// MailTLS: TLS from the first byte (port 465, "SMTPS").
	MailTLS = "tls"
	// MailPlain: no TLS (a relay on the same host or network).
	MailPlain = "none"
)

// MailServer is the SMTP server alert emails go through (strand server
// --smtp-server and its neighbours).
type MailServer struct {
	// Addr is host:port.
	Addr string
	// From is the sender's address.
	From string
	// User and Password, when set, log in (PLAIN, only over TLS or to
	// localhost). The password is never shown back.
	User     string
	Password string
	// TLS is starttls (default), tls or none.
	TLS string
	// Timeout bounds one email's sending (default 30s).
	Timeout time.Duration
	// TLSConfig, when set, checks the server's certificate (default: the
	// system's roots, for the host of Addr).
	TLSConfig *tls.Config
}

// Check checks the settings.
func (m *MailServer) Check() error {
	host, port, err := net.SplitHostPort(m.Addr)
	if err != nil || host == "" || port == "" {
		return api.InvalidArgument("smtp-server", "want HOST:PORT, got %q", m.Addr)
	}
	if m.From == "" {
		return api.InvalidArgument("smtp-from", "an SMTP server needs the sender's address (--smtp-from)")
	}
	if err := checkAddress("smtp-from", m.From); err != nil {
		return err
	}
	switch m.TLS {
	case "":
		m.TLS = MailSTARTTLS
	case MailSTARTTLS, MailTLS, MailPlain:
	default:
		return api.InvalidArgument("smtp-tls", "want starttls, tls or none, got %q", m.TLS)
	}
	if (m.User == "") != (m.Password == "") {
		return api.InvalidArgument("smtp-user", "--smtp-user and --smtp-password go together")
	}
	return nil
}

// String describes the server without its password.
func (m *MailServer) String() string {
	s := fmt.Sprintf("%s from %s (TLS: %s)", m.Addr, m.From, m.TLS)
	if m.User != "" {
		s += " as " + m.User
	}
	return s
}

// Send sends a plain text email and returns what the server answered.
func (m *MailServer) Send(ctx context.Context, to, cc []string, subject, body string) (string, error) {
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, _, _ := net.SplitHostPort(m.Addr)
	tc := m.TLSConfig
	if tc == nil {
		tc = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	var conn net.Conn
	var err error
	if m.TLS == MailTLS {
		conn, err = (&tls.Dialer{Config: tc}).DialContext(ctx, "tcp", m.Addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", m.Addr)
	}
	if err != nil {
		return "", fmt.Errorf("SMTP server %s: %w", m.Addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return "", fmt.Errorf("SMTP server %s: %w", m.Addr, err)
	}
	defer c.Close()
	if m.TLS == MailSTARTTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return "", &mailRefused{fmt.Errorf("SMTP server %s does not offer STARTTLS (set --smtp-tls none for a server without TLS)", m.Addr)}
		}
		if err := c.StartTLS(tc); err != nil {
			return "", fmt.Errorf("SMTP server %s: STARTTLS: %w", m.Addr, err)
		}
	}
	if m.User != "" {
		if err := c.Auth(smtp.PlainAuth("", m.User, m.Password, host)); err != nil {
			return "", fmt.Errorf("SMTP server %s: log in as %s: %w", m.Addr, m.User, err)
		}
	}
	if err := c.Mail(m.From); err != nil {
		return "", fmt.Errorf("SMTP server %s: sender %s: %w", m.Addr, m.From, err)
	}
	for _, rcpt := range append(append([]string{}, to...), cc...) {
		if err := c.Rcpt(rcpt); err != nil {
			return "", fmt.Errorf("SMTP server %s: recipient %s: %w", m.Addr, rcpt, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return "", fmt.Errorf("SMTP server %s: %w", m.Addr, err)
	}
	if _, err := w.Write(m.message(to, cc, subject, body)); err != nil {
		return "", fmt.Errorf("SMTP server %s: %w", m.Addr, err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("SMTP server %s: %w", m.Addr, err)
	}
	_ = c.Quit()
	return fmt.Sprintf("accepted by %s for %s", m.Addr, strings.Join(append(append([]string{}, to...), cc...), ", ")), nil
}

// message is the email's text: its header and its body, UTF-8 in
// quoted-printable, lines ending CRLF.
func (m *MailServer) message(to, cc []string, subject, body string) []byte {
	var b bytes.Buffer
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	_, domain, _ := strings.Cut(m.From, "@")
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", m.From)
	h("To", strings.Join(to, ", "))
	if len(cc) > 0 {
		h("Cc", strings.Join(cc, ", "))
	}
	h("Subject", mime.QEncoding.Encode("utf-8", subject))
	h("Date", time.Now().Format(time.RFC1123Z))
	h("Message-ID", fmt.Sprintf("<%s@%s>", hex.EncodeToString(id), domain))
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}

// mailRefused is a refusal that sending again will not change.
type mailRefused struct{ err error }

func (e *mailRefused) Error() string { return e.err.Error() }
func (e *mailRefused) Unwrap() error { return e.err }

// permanentMailError says whether an SMTP failure is for good: a 5xx
// answer, or a refusal of ours; a 4xx answer or a network failure may
// pass.
func permanentMailError(err error) bool {
	var refused *mailRefused
	if errors.As(err, &refused) {
		return true
	}
	var te *textproto.Error
	return errors.As(err, &te) && te.Code >= 500
}
