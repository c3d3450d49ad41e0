package socks

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// step is one exchange of a scripted proxy: it reads len(expect) bytes,
// which must equal expect, then writes send.
type step struct{ expect, send []byte }

// scripted runs steps against the client side of a pipe and closes.
func scripted(t *testing.T, steps []step) (net.Conn, chan error) {
	client, server := net.Pipe()
	errc := make(chan error, 1)
	go func() {
		defer server.Close()
		for _, s := range steps {
			got := make([]byte, len(s.expect))
			if _, err := io.ReadFull(server, got); err != nil {
				errc <- err
				return
			}
			if !bytes.Equal(got, s.expect) {
				errc <- errors.New("proxy got " + string(got) + ", want " + string(s.expect))
				return
			}
			if _, err := server.Write(s.send); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	return client, errc
}

var (
	greetNoAuth = []byte{5, 1, 0}
	greetAuth   = []byte{5, 2, 0, 2}
	okV4        = []byte{5, 0, 0, 1, 1, 2, 3, 4, 0x04, 0x38}
	reqIP       = []byte{5, 1, 0, 1, 11, 210, 0, 2, 0, 80}
	reqName     = append([]byte{5, 1, 0, 3, 12}, append([]byte("allowed.test"), 1, 187)...)
	credMsg     = append(append([]byte{1, 4}, "user"...), append([]byte{6}, "s3cret"...)...)
)

func TestHandshake(t *testing.T) {
	auth := &Auth{Username: "user", Password: "s3cret"}
	for _, tt := range []struct {
		name  string
		auth  *Auth
		host  string
		port  uint16
		steps []step
		want  error  // errors.Is target; nil: success
		text  string // expected in the error text
	}{
		{"no auth, ip", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, okV4}}, nil, ""},
		{"user/pass, name", auth, "allowed.test", 443, []step{{greetAuth, []byte{5, 2}}, {credMsg, []byte{1, 0}}, {reqName, okV4}}, nil, ""},
		{"auth offered, none needed", auth, "11.210.0.2", 80, []step{{greetAuth, []byte{5, 0}}, {reqIP, okV4}}, nil, ""},
		{"bound name", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, append([]byte{5, 0, 0, 3, 3}, 'a', 'b', 'c', 0, 1)}}, nil, ""},
		{"bound v6", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, append([]byte{5, 0, 0, 4}, make([]byte, 18)...)}}, nil, ""},
		{"wrong password", auth, "11.210.0.2", 80, []step{{greetAuth, []byte{5, 2}}, {credMsg, []byte{1, 1}}}, ErrAuth, "authentication failed"},
		{"no acceptable method", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0xff}}}, ErrNoMethod, "no acceptable"},
		{"method not offered", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 2}}}, ErrProtocol, "not offered"},
		{"not socks5", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte("HT")}}, ErrProtocol, "version 72"},
		{"bad auth version", auth, "11.210.0.2", 80, []step{{greetAuth, []byte{5, 2}}, {credMsg, []byte{5, 0}}}, ErrProtocol, "auth version"},
		{"refused", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, []byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}}}, nil, "connection refused"},
		{"ruleset", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, []byte{5, 2, 0, 1, 0, 0, 0, 0, 0, 0}}}, nil, "not allowed by ruleset"},
		{"unknown code", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, []byte{5, 42, 0, 1, 0, 0, 0, 0, 0, 0}}}, nil, "unknown code 42"},
		{"closed in greeting", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5}}}, ErrProtocol, "closed during method selection"},
		{"closed in reply", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, []byte{5, 0, 0, 1, 1}}}, ErrProtocol, "closed during reply address"},
		{"bad reply atyp", nil, "11.210.0.2", 80, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, []byte{5, 0, 0, 9}}}, ErrProtocol, "address type 9"},
		{"name too long", nil, strings.Repeat("a", 256), 80, []step{{greetNoAuth, []byte{5, 0}}}, nil, "1-255 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, errc := scripted(t, tt.steps)
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			err := Handshake(c, tt.auth, tt.host, tt.port)
			switch {
			case tt.want == nil && tt.text == "":
				if err != nil {
					t.Fatalf("Handshake: %v", err)
				}
				c.Close()
				if perr := <-errc; perr != nil {
					t.Errorf("proxy side: %v", perr)
				}
			case err == nil:
				t.Fatalf("Handshake succeeded, want %v %q", tt.want, tt.text)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("err = %v, want %v", err, tt.want)
			case !strings.Contains(err.Error(), tt.text):
				t.Errorf("err = %q, want it to say %q", err, tt.text)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error holds the password: %v", err)
			}
		})
	}
}

// TestReplyErrorCode: a refused CONNECT is a *ReplyError with its code.
func TestReplyErrorCode(t *testing.T) {
	c, _ := scripted(t, []step{{greetNoAuth, []byte{5, 0}}, {reqIP, []byte{5, 4, 0, 1, 0, 0, 0, 0, 0, 0}}})
	defer c.Close()
	var re *ReplyError
	if err := Handshake(c, nil, "11.210.0.2", 80); !errors.As(err, &re) || re.Code != 4 {
		t.Fatalf("err = %v, want ReplyError 4", err)
	}
}
