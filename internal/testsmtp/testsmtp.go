// Package testsmtp is a real SMTP server for tests (emersion/go-smtp) on a
// free local port: it keeps the emails it receives, and refuses every
// recipient whose address starts with "refuse".
package testsmtp

import (
	"context"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is an email the server received.
type Message struct {
	From    string
	To      []string // the envelope's recipients (copies too)
	Header  mail.Header
	Subject string
	Body    string // decoded
}

// Server is a running SMTP server.
type Server struct {
	// Addr is its host:port.
	Addr string

	mu   sync.Mutex
	msgs []Message
	// changed is closed, and replaced, when an email comes.
	changed chan struct{}
}

// Start starts a server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), changed: make(chan struct{})}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// Messages returns the emails received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Wait waits until an email that match accepts has come, or ctx ends.
func (s *Server) Wait(ctx context.Context, match func(Message) bool) (Message, bool) {
	for {
		s.mu.Lock()
		msgs, changed := append([]Message(nil), s.msgs...), s.changed
		s.mu.Unlock()
		for _, m := range msgs {
			if match(m) {
				return m, true
			}
		}
		select {
		case <-ctx.Done():
			return Message{}, false
		case <-changed:
		}
	}
}

type session struct {
	s    *Server
	from string
	to   []string
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }
func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasPrefix(to, "refuse") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox here"}
	}
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	var body io.Reader = m.Body
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(m.Body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		subject = m.Header.Get("Subject")
	}
	msg := Message{From: x.from, To: x.to, Header: m.Header, Subject: subject, Body: strings.ReplaceAll(string(b), "\r\n", "\n")}
	x.s.mu.Lock()
	x.s.msgs = append(x.s.msgs, msg)
	close(x.s.changed)
	x.s.changed = make(chan struct{})
	x.s.mu.Unlock()
	return nil
}
